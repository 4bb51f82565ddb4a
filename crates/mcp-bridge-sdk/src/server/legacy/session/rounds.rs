//! The bridge's own requests to the client (`b-1`, `b-2`, ...): the input
//! requests of the upstream's rounds and the sign-in consent, each waiting
//! in the pending table for its answer.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use crate::client::{Hook, InputHooks};
use mcp_bridge_protocol::method::{Method, MethodCall, NotificationsCancelled};
use mcp_bridge_protocol::types::{ElicitRequestParams, InputRequest, InputRequests, InputResponse, InputResponses};
use mcp_bridge_protocol::{ErrorObject, JsonRpcNotification, JsonRpcRequest, Message, RequestId};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::LegacySession;
use crate::server::legacy::input;
use crate::server::legacy::translate::{Cause, error_for};

/// One input request of a round, sent to the client, waiting for its answer.
struct Waiting {
    /// The upstream's key of the input request.
    key: String,
    /// The bridge's id of the request to the client (`b-<n>`).
    id: String,
    request: InputRequest,
    answer: oneshot::Receiver<Result<Value, String>>,
}

impl LegacySession {
    pub(super) fn is_input_id(&self, id: &RequestId) -> bool {
        matches!(id, RequestId::String(s) if s.starts_with(self.options.profile.request_id_prefix))
    }

    /// Resolves an answer of the client to a `b-` request at once; any
    /// other response (numeric, unknown, late or second answer) is dropped.
    pub(super) fn resolve_input(&self, id: &RequestId, answer: Result<Value, String>) {
        let waiting = match id {
            RequestId::String(s) if self.is_input_id(id) => self.state().pending.remove(s),
            _ => None,
        };
        match waiting {
            Some(tx) => {
                let _ = tx.send(answer);
            }
            None => tracing::debug!(%id, "a response that answers no request of the bridge; dropped"),
        }
    }

    /// Gives the sign-in gate a way to ask the client, when the client
    /// declared URL elicitations: an `elicitation/create` in URL mode with
    /// the authorization URL, answered within the input time limit.
    pub(super) fn offer_consent(self: &Arc<Self>) {
        let Some(hook) = self.state().on_initialized.take() else { return };
        let can_ask = self.state().client_capabilities.elicitation.as_ref().is_some_and(|e| e.supports_url());
        if !can_ask {
            hook(None);
            return;
        }
        // Weak: the consent lives in the upstream's OAuth client, which the
        // front end owns.
        let frontend = Arc::downgrade(self);
        hook(Some(Arc::new(move |prompt: crate::server::legacy::frontend::SignInPrompt| {
            let frontend = frontend.clone();
            Box::pin(async move {
                let frontend = frontend.upgrade().ok_or("the client is gone")?;
                let request = prompt.input_request();
                let token = frontend.stop_slots.child_token();
                let answers = frontend
                    .run_round(InputRequests::from([("sign_in".to_owned(), request)]), &token, None)
                    .await
                    .map_err(|_| "the client did not answer the sign-in request".to_owned())?;
                Ok(matches!(
                    answers.get("sign_in"),
                    Some(InputResponse::Elicit(answer)) if answer.action == mcp_bridge_protocol::types::ElicitAction::Accept
                ))
            })
        })));
    }

    /// The hooks of a 2025-11-25 upstream's own requests (elicitation,
    /// sampling, roots): each is asked of the client as a round of one
    /// (a `b-` request), its answer checked and given back. Weak: the hooks
    /// live in the upstream's client, which the session owns.
    /// `related`: the client's request they are asked for, when known (on
    /// HTTP the round goes on that request's stream).
    pub(super) fn relay_hooks(self: &Arc<Self>, related: Option<RequestId>) -> InputHooks {
        let session = Arc::downgrade(self);
        let mut hooks = InputHooks::new();
        hooks.elicit_form = Some(relayed(
            session.clone(),
            related.clone(),
            |p| InputRequest::Elicit(MethodCall::new(ElicitRequestParams::Form(p))),
            |r| match r {
                InputResponse::Elicit(answer) => Some(answer),
                _ => None,
            },
        ));
        hooks.elicit_url = Some(relayed(
            session.clone(),
            related.clone(),
            |p| InputRequest::Elicit(MethodCall::new(ElicitRequestParams::Url(p))),
            |r| match r {
                InputResponse::Elicit(answer) => Some(answer),
                _ => None,
            },
        ));
        hooks.sample = Some(relayed(
            session.clone(),
            related.clone(),
            |p| InputRequest::CreateMessage(MethodCall::new(p)),
            |r| match r {
                InputResponse::CreateMessage(answer) => Some(*answer),
                _ => None,
            },
        ));
        hooks.list_roots = Some(relayed(
            session,
            related,
            |()| InputRequest::ListRoots(MethodCall::new(Default::default())),
            |r| match r {
                InputResponse::ListRoots(answer) => Some(answer.roots),
                _ => None,
            },
        ));
        hooks
    }

    /// Sends one round of input requests to the client, all registered
    /// before the first goes out, and waits for every answer. `Err(None)`:
    /// cancelled (no response); `Err(Some(_))`: the error for the client.
    pub(super) async fn run_round(
        &self,
        requests: InputRequests,
        token: &CancellationToken,
        related: Option<&RequestId>,
    ) -> Result<InputResponses, Option<ErrorObject>> {
        let prefix = self.options.profile.request_id_prefix;
        let mut waiting: Vec<Waiting> = Vec::new();
        {
            let pending = &mut self.state().pending;
            for (key, request) in requests {
                let id = format!("{prefix}{}", self.last_input_id.fetch_add(1, Ordering::Relaxed) + 1);
                let (tx, answer) = oneshot::channel();
                pending.insert(id.clone(), tx);
                waiting.push(Waiting { key, id, request, answer });
            }
        }
        for w in &waiting {
            let (method, params) = input::client_request(&w.request);
            let request = JsonRpcRequest::new(RequestId::String(w.id.clone()), method, params);
            self.send(Message::Request(request), related).await;
        }
        let ids: Vec<String> = waiting.iter().map(|w| w.id.clone()).collect();
        let deadline = tokio::time::sleep(self.options.input_timeout);
        tokio::pin!(deadline);
        let mut answers = InputResponses::new();
        for Waiting { key, request, answer: rx, .. } in waiting {
            let answer = tokio::select! {
                answer = rx => answer,
                _ = token.cancelled() => {
                    self.abandon(&ids, related).await;
                    return Err(None);
                }
                _ = &mut deadline => {
                    self.abandon(&ids, related).await;
                    let limit = self.options.input_timeout.as_millis();
                    return Err(Some(error_for(Cause::InputTimeout, Some(json!({ "key": key, "timeout_ms": limit })))));
                }
            };
            let checked = match answer {
                Ok(Ok(value)) => input::check_answer(&key, &request, value).map_err(|e| e.to_string()),
                Ok(Err(reason)) => Err(reason),
                Err(_) => Err("no answer".into()),
            };
            match checked {
                Ok(response) => {
                    answers.insert(key, response);
                }
                Err(reason) => {
                    self.abandon(&ids, related).await;
                    return Err(Some(error_for(
                        Cause::InvalidClientAnswer,
                        Some(json!({ "key": key, "reason": reason })),
                    )));
                }
            }
        }
        Ok(answers)
    }

    /// Removes a round's entries first, then tells the client that each
    /// request it has not answered is cancelled; a late answer then finds
    /// no entry and is dropped.
    pub(super) async fn abandon(&self, ids: &[String], related: Option<&RequestId>) {
        let unanswered: Vec<String> = {
            let pending = &mut self.state().pending;
            ids.iter().filter(|id| pending.remove(*id).is_some()).cloned().collect()
        };
        for id in unanswered {
            let params = json!({ "requestId": id, "reason": "the request it belonged to ended" });
            let cancelled = JsonRpcNotification::new(NotificationsCancelled::NAME, Some(params));
            self.send(Message::Notification(cancelled), related).await;
        }
    }
}

/// A hook that asks the client one input request, made by `wrap` from the
/// hook's params, and reads the answer back with `unwrap`.
fn relayed<P: Send + 'static, R: Send + 'static>(
    session: Weak<LegacySession>,
    related: Option<RequestId>,
    wrap: fn(P) -> InputRequest,
    unwrap: fn(InputResponse) -> Option<R>,
) -> Hook<P, R> {
    crate::client::hook(move |params| {
        let (session, related) = (session.clone(), related.clone());
        async move {
            let session = session.upgrade().ok_or("the client is gone")?;
            let token = session.stop_slots.child_token();
            let round = InputRequests::from([("relayed".to_owned(), wrap(params))]);
            let asked = session.run_round(round, &token, related.as_ref()).await;
            let mut answers = asked.map_err(|refused| match refused {
                Some(error) => error.message,
                None => "the client's session ended".to_owned(),
            })?;
            answers.remove("relayed").and_then(unwrap).ok_or_else(|| "the client answered another kind".to_owned())
        }
    })
}

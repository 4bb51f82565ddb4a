//! Forwarded requests: time limits, the upstream's input rounds answered
//! through the client, log messages at the client's level, and resource
//! subscriptions on the listener.

use std::sync::Arc;

use crate::RequestOptions;
use crate::client::Reply;
use mcp_bridge_protocol::method::{
    Method, NotificationsMessage, NotificationsProgress, PromptsListChanged, ResourcesListChanged, ResourcesSubscribe,
    ResourcesUnsubscribe, ResourcesUpdated, ToolsCall, ToolsListChanged,
};
use mcp_bridge_protocol::rounds::{MAX_ROUNDS, RoundError, Rounds, Step};
use mcp_bridge_protocol::trace::TraceContext;
use mcp_bridge_protocol::types::{LoggingLevel, LoggingMessageNotificationParams, ProgressNotificationParams};
use mcp_bridge_protocol::{ErrorObject, JsonRpcNotification, JsonRpcRequest, Message, RequestId};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{ClientLogLevel, LegacySession, Lifecycle, Outgoing, Payload};
use crate::server::legacy::classify;
use crate::server::legacy::input;
use crate::server::legacy::notify::{self, Listener};
use crate::server::legacy::translate::{self, Cause, error_for};
use crate::server::legacy::upstream::{Failed, Upstream};

impl LegacySession {
    /// The listener, started on first use when the upstream is ready and the
    /// initialize result declared change notifications.
    pub(super) fn listener(&self) -> Option<Listener> {
        let mut state = self.state();
        let super::State { declared, lifecycle, listener, identity, legacy_upstream, .. } = &mut *state;
        let Lifecycle::Ready(upstream) = lifecycle else { return None };
        // A 2025-11-25 upstream sends its change notifications itself.
        if !declared.any() || *legacy_upstream {
            return None;
        }
        let declared = *declared;
        Some(
            listener
                .get_or_insert_with(|| {
                    let who = identity.clone();
                    notify::start(upstream.clone(), declared, self.out.clone(), self.log_level.clone(), who)
                })
                .clone(),
        )
    }

    pub(super) async fn change_subscription(self: Arc<Self>, request: JsonRpcRequest, token: CancellationToken) {
        let method = if request.method == ResourcesSubscribe::NAME {
            ResourcesSubscribe::NAME
        } else {
            ResourcesUnsubscribe::NAME
        };
        let outcome = match classify::parse_subscription(method, request.params.as_ref()) {
            Err(e) => Err(error_for(Cause::InvalidParams, Some(json!(e.to_string())))),
            Ok(uri) => match self.listener() {
                None => Err(error_for(Cause::MethodNotFound, None)),
                Some(listener) => {
                    let change = async {
                        if method == ResourcesSubscribe::NAME {
                            listener.subscribe(uri).await
                        } else {
                            listener.unsubscribe(uri).await
                        }
                    };
                    tokio::select! {
                        outcome = change => outcome.map(|()| json!({})),
                        // `respond` frees the slot and, the token being
                        // cancelled, answers nothing.
                        _ = token.cancelled() => Err(error_for(Cause::Closed, None)),
                    }
                }
            },
        };
        self.respond(request.id, outcome).await;
    }

    pub(super) async fn forward(
        self: Arc<Self>,
        upstream: Upstream,
        mut request: JsonRpcRequest,
        token: CancellationToken,
    ) {
        let method = request.method.clone();
        let mut forwarded = translate::forward_params(self.options.profile, request.params.take());
        let in_flight = self.observe(&request, &forwarded.params, &mut forwarded.meta);
        let limit = self.options.timeouts.for_method(&method);
        let related = request.id.clone();
        let on_progress = forwarded.progress_token.clone().map(|client_token| {
            let (out, related) = (self.out.clone(), related.clone());
            let callback: crate::client::ProgressCallback = Arc::new(move |p: &ProgressNotificationParams| {
                let mut params = p.clone();
                params.progress_token = client_token.clone();
                params.meta = None;
                let n = JsonRpcNotification::new(NotificationsProgress::NAME, serde_json::to_value(params).ok());
                if out.try_send(Outgoing::related(Message::Notification(n), &related)).is_err() {
                    tracing::debug!("output queue full; a progress notification was dropped");
                }
            });
            callback
        });
        // Over HTTP the upstream's log messages come on the request's own
        // stream; they reach the client at its level, as on stdio.
        let (out, level) = (self.out.clone(), self.log_level.clone());
        let on_log: crate::client::LogCallback = Arc::new(move |message: &LoggingMessageNotificationParams| {
            if let Ok(params) = serde_json::to_value(message) {
                let n = JsonRpcNotification::new(NotificationsMessage::NAME, Some(params));
                forward_log(&out, &level, &n, Some(&related));
            }
        });
        let (identity, per_request) = {
            let state = self.state();
            (state.identity.clone(), state.relays_per_request)
        };
        let hooks = per_request.then(|| self.relay_hooks(Some(request.id.clone())));
        let mut options = RequestOptions::default()
            .with_timeout(limit)
            .with_max_total_timeout(limit)
            .with_cancel(token.clone())
            .with_on_log(on_log)
            .with_meta(forwarded.meta)
            .with_allow_input_required(true)
            // The callbacks only queue (`try_send`): run on the reader, they
            // need no queue of the request's own.
            .with_inline_notifications(true);
        (options.on_behalf_of, options.hooks) = (identity, hooks);
        (options.log_level, options.on_progress) = (self.log_level.get(), on_progress);
        let id = request.id;
        let listener = self.state().listener.clone();
        if let Some(listener) = listener {
            // A change this request causes must reach the client: it goes
            // upstream once the first listen stream is live.
            let first_stream = tokio::time::timeout(notify::LISTEN_FIRST_WAIT, listener.settled());
            tokio::select! {
                _ = first_stream => {}
                () = token.cancelled() => {}
            }
        }
        let outcome = {
            // Pinned here, not moved into `watched`: see its doc.
            let work = std::pin::pin!(self.run_rounds(&upstream, &id, &method, forwarded.params, &options, &token));
            let what = crate::server::legacy::watch::Forwarded { id: &id, method: &method };
            crate::server::legacy::watch::watched(what, work).await
        };
        match outcome {
            Some(Ok(Answer::Line(line))) => {
                // Only an unobserved session makes lines (see `run_rounds`).
                debug_assert!(in_flight.is_none(), "an observed request's result goes as a tree");
                self.respond_with(id, Payload::Line(line)).await;
            }
            Some(outcome) => {
                let outcome = outcome.map(|answer| match answer {
                    Answer::Tree(value) => value,
                    Answer::Line(_) => unreachable!("matched above"),
                });
                if let Some(in_flight) = in_flight {
                    in_flight.finish(match &outcome {
                        Ok(result) => crate::telemetry::result_error_type(result),
                        Err(error) => Some(error.code.to_string()),
                    });
                }
                self.respond(id, outcome).await;
            }
            None => {
                self.state().slots.finish(&id);
            }
        }
    }

    /// With an observer, the request's operation under way; its span, a
    /// child of the client's trace context, goes on in `meta` as the
    /// upstream request's parent.
    fn observe(
        &self,
        request: &JsonRpcRequest,
        params: &serde_json::Map<String, Value>,
        meta: &mut serde_json::Map<String, Value>,
    ) -> Option<crate::telemetry::InFlight> {
        // An in-process server observes its own requests.
        if matches!(self.config, crate::server::legacy::upstream::UpstreamConfig::Memory { .. }) {
            return None;
        }
        let observer = self.options.observer.clone()?;
        let span = crate::telemetry::Span::child_of(TraceContext::from_meta(meta).as_ref());
        span.context().write_to(meta);
        let client = self.state().identity.as_ref().map(|identity| identity.info().name.clone());
        let operation = crate::telemetry::Operation {
            side: crate::telemetry::Side::Server,
            method: request.method.clone(),
            target: crate::telemetry::target_of(&request.method, Some(params)),
            request_id: Some(crate::telemetry::id_text(&request.id)),
            protocol_version: Some(mcp_bridge_protocol::legacy::PROTOCOL_VERSION.to_owned()),
            principal: None,
            client_name: client,
            started: std::time::SystemTime::now(),
            duration: Default::default(),
            error_type: None,
            span,
        };
        Some(crate::telemetry::InFlight::start(observer, operation))
    }

    /// Sends a forwarded request and answers its input rounds through the
    /// client, at most [`MAX_ROUNDS`] of them (the protocol crate's
    /// [`Rounds`], as the SDK's client). `None` means no response
    /// (cancelled).
    pub(super) async fn run_rounds(
        &self,
        upstream: &Upstream,
        client_id: &RequestId,
        method: &str,
        params: serde_json::Map<String, Value>,
        options: &RequestOptions,
        token: &CancellationToken,
    ) -> Option<Result<Answer, ErrorObject>> {
        let mut rounds = Rounds::new(params, MAX_ROUNDS);
        // Unobserved on a host that writes lines, a result the upstream sent
        // as a line goes on as one (see `translate::raw`).
        let by_line = self.writes_lines && self.options.observer.is_none();
        loop {
            let sent_at = std::time::Instant::now();
            // Traced, a round records the id it went out with upstream.
            let traced;
            let round_options = if options.diagnostics.is_none() && tracing::enabled!(tracing::Level::DEBUG) {
                traced = options.clone().with_diagnostics(Default::default());
                &traced
            } else {
                options
            };
            // Boxed: the SDK's request future is large; inline, every slot task
            // would be that much larger, and moved whole when it is spawned.
            let exchanged =
                Box::pin(upstream.relay(method, std::borrow::Cow::Borrowed(rounds.params()), round_options)).await;
            trace_exchange(client_id, rounds.round(), method, round_options, &exchanged, sent_at.elapsed());
            let reply = match exchanged {
                Ok(Reply::Raw(raw)) if by_line => {
                    match translate::raw::response_line(method, raw, upstream.origin(), client_id) {
                        Ok(line) => return Some(Ok(Answer::Line(line))),
                        Err(raw) => Ok(Reply::Raw(raw)),
                    }
                }
                other => other,
            };
            let tree = match reply {
                Ok(reply) => reply.into_value(method).map_err(Failed::from),
                Err(failed) => Err(failed),
            };
            let value = match tree {
                Ok(value) => value,
                Err(Failed { error: crate::Error::Rpc { error }, .. })
                    if rounds.carries_state() && error.code == mcp_bridge_protocol::error_code::INVALID_PARAMS =>
                {
                    return Some(state_refused(method, error).map(Answer::Tree));
                }
                Err(failed) => return translate::errors::error_of_failed(&failed, method).map(Err),
            };
            let declared = self.state().client_capabilities.clone();
            let requests = match rounds.on_result(value, &declared) {
                Ok(Step::Done(value)) => {
                    return Some(Ok(Answer::Tree(translate::shape_result(method, value, upstream.origin()))));
                }
                Ok(Step::Ask(requests)) => requests,
                Err(RoundError::TooManyRounds { limit }) => {
                    return Some(Err(error_for(Cause::TooManyRounds, Some(json!(limit)))));
                }
                Err(RoundError::Refused(refusal)) => return Some(Err(input::round_refused(&refusal))),
                Err(other) => return Some(Err(error_for(Cause::InvalidResponse, Some(json!(other.to_string()))))),
            };
            // Boxed: rounds are rare and their future is large; every slot task would carry its size.
            let answers = match Box::pin(self.run_round(requests, token, Some(client_id))).await {
                Ok(answers) => answers,
                Err(end) => return end.map(Err),
            };
            rounds.answered(answers);
        }
    }
}

/// A forwarded request's result for the client.
pub(super) enum Answer {
    /// As a tree.
    Tree(Value),
    /// As the line of its response (see `translate::raw`).
    Line(mcp_bridge_protocol::SplicedLine),
}

/// The answer when the upstream refuses the `requestState` of a round
/// (-32602 on a retry): a tool result the user can read for `tools/call`,
/// an error with that text for the other methods.
fn state_refused(method: &str, error: ErrorObject) -> Result<Value, ErrorObject> {
    const TEXT: &str =
        "The server did not accept the answers to its questions (they may have expired). Please try again.";
    if method == ToolsCall::NAME {
        Ok(json!({ "content": [{ "type": "text", "text": TEXT }], "isError": true }))
    } else {
        let mut refused = ErrorObject::new(error.code, TEXT);
        refused.data = error.data;
        Err(refused)
    }
}

/// The tracer's line for one exchange with the upstream (seed:
/// Diagnostics): the client's request id, the round, the id it went out
/// with upstream, the method, the outcome and the time it took.
fn trace_exchange(
    client_id: &RequestId,
    round: usize,
    method: &str,
    options: &RequestOptions,
    exchanged: &Result<Reply, Failed>,
    took: std::time::Duration,
) {
    // On the path of every request: nothing is formatted unless it is logged.
    if !tracing::enabled!(tracing::Level::DEBUG) {
        return;
    }
    let outcome = match exchanged {
        Ok(Reply::Tree(value)) => value.get("resultType").and_then(Value::as_str).unwrap_or("complete").to_owned(),
        Ok(Reply::Raw(raw)) => raw
            .member("resultType")
            .and_then(|kind| serde_json::from_str(kind).ok())
            .unwrap_or_else(|| "complete".to_owned()),
        Err(failed) => format!("failed: {}", failed.error),
    };
    let upstream_id = options.diagnostics.as_ref().and_then(|d| d.lock().ok()?.request_id.clone());
    let upstream_id = upstream_id.map_or_else(|| "-".to_owned(), |id| id.to_string());
    tracing::debug!(
        "exchange: request {client_id} round {round} upstream {upstream_id} {method}: {outcome} in {} ms",
        took.as_millis()
    );
}

/// Forwards a notification of the upstream that belongs to no request: a
/// log message at the client's level; a 2025-11-25 upstream's change
/// notifications as they came (`relays_changes`); a 2026-07-28 upstream's
/// are dropped, since it sends real ones only on a listen stream.
pub(super) fn forward_unrouted(
    out: &mpsc::Sender<Outgoing>,
    level: &ClientLogLevel,
    n: &JsonRpcNotification,
    relays_changes: bool,
) {
    let change = matches!(
        n.method.as_str(),
        ToolsListChanged::NAME | PromptsListChanged::NAME | ResourcesListChanged::NAME | ResourcesUpdated::NAME
    );
    if !change {
        return forward_log(out, level, n, None);
    }
    if !relays_changes {
        // A 2026-07-28 server's change outside any listen stream: the
        // client hears of changes from the streams the bridge opened.
        tracing::debug!(method = %n.method, "a change notification outside a listen stream was dropped");
        return;
    }
    if out.try_send(Outgoing::unrelated(Message::Notification(n.clone()))).is_err() {
        tracing::debug!(method = %n.method, "output queue full; a change notification was dropped");
    }
}

/// Forwards an upstream log message to the client when it is at or above
/// the level of the last `logging/setLevel`.
pub(super) fn forward_log(
    out: &mpsc::Sender<Outgoing>,
    level: &ClientLogLevel,
    n: &JsonRpcNotification,
    related: Option<&RequestId>,
) {
    if n.method != NotificationsMessage::NAME {
        tracing::debug!(method = %n.method, "upstream notification for no request dropped");
        return;
    }
    let Some(params) = n.params.as_ref() else { return };
    let Ok(message_level) = serde_json::from_value::<LoggingLevel>(params["level"].clone()) else { return };
    let wanted = level.get();
    if wanted.is_some_and(|w| message_level >= w) {
        let mut params = params.clone();
        if let Some(obj) = params.as_object_mut() {
            obj.remove("_meta");
        }
        let forwarded = JsonRpcNotification::new(NotificationsMessage::NAME, Some(params));
        let message = Message::Notification(forwarded);
        if out.try_send(Outgoing { payload: Payload::Message(message), related: related.cloned() }).is_err() {
            tracing::debug!("output queue full; a log message was dropped");
        }
    }
}

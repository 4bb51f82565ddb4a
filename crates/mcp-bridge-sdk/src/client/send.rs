//! How one request travels: its time limit and input rounds, its `_meta`,
//! the retries a lost connection or a known error allows, the wire
//! exchange with its cancel, and the notifications that come with it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use mcp_bridge_protocol::meta::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROGRESS_TOKEN_KEY, PROTOCOL_VERSION_KEY,
    is_sdk_owned_request_key, validate_key,
};
use mcp_bridge_protocol::method::{Initialize, Method, ToolsCall};
use mcp_bridge_protocol::rounds::{RoundError, Rounds, Step};
use mcp_bridge_protocol::{JsonRpcRequest, Message, RequestId, error_code};
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use super::options::Callbacks;
use super::reply::Reply;
use super::router::{Pending, Route, cancelled_notification, event_queue};
use super::time_limit::TimeLimit;
use super::{Client, RequestOptions, Spoken, era, input, server_requests, to_json};
use crate::error::{Error, Result};
use crate::limits::{MAX_LOST_STREAM_RETRIES, MAX_TOTAL_TIMEOUT};

impl Client {
    /// [`Client::request_raw`] without the cache; also says how many input
    /// rounds it took.
    pub(super) async fn request_rounds(
        &self,
        method: &str,
        params: Map<String, Value>,
        options: &RequestOptions,
    ) -> Result<(Value, usize)> {
        let limit = self.time_limit(options);
        let legacy = self.spoken().is_some_and(Spoken::is_legacy);
        if options.allow_input_required {
            // The caller runs the rounds: nothing to keep for a retry.
            let value = self.send_once(method, &params, options, limit, legacy).await?.into_value(method)?;
            options.diagnose(|d| d.rounds = 0);
            return Ok((value, 0));
        }
        let max_rounds = self.inner.options.max_input_rounds;
        let capabilities = options.on_behalf_of.as_ref().map_or(&self.inner.options.capabilities, |o| o.capabilities());
        let mut rounds = Rounds::new(params, max_rounds);
        loop {
            let value = self.send_once(method, rounds.params(), options, limit, legacy).await?.into_value(method)?;
            let requests = match rounds.on_result(value, capabilities) {
                Ok(Step::Done(value)) => {
                    options.diagnose(|d| d.rounds = rounds.round());
                    return Ok((value, rounds.round()));
                }
                Ok(Step::Ask(requests)) => requests,
                Err(RoundError::TooManyRounds { limit }) => {
                    return Err(Error::TooManyRounds { method: method.to_owned(), limit });
                }
                Err(RoundError::InvalidResult { reason }) => {
                    return Err(Error::InvalidResponse { method: method.to_owned(), reason });
                }
                Err(RoundError::Refused(refusal)) => return Err(refusal.into()),
                Err(other) => {
                    return Err(Error::InvalidResponse { method: method.to_owned(), reason: other.to_string() });
                }
            };
            // Boxed: rounds are rare and their future is large; every request would carry its size.
            let answers = Box::pin(input::answer_checked_round(requests, &self.inner.options.hooks)).await?;
            rounds.answered(answers);
        }
    }

    /// A request's time limit from now: its own, or the client's, within
    /// its total.
    pub(super) fn time_limit(&self, options: &RequestOptions) -> Option<TimeLimit> {
        let timeout = options
            .timeout
            .unwrap_or(self.inner.options.request_timeout)
            .min(options.max_total_timeout.unwrap_or(MAX_TOTAL_TIMEOUT));
        Some(TimeLimit::starting_now(timeout))
    }

    /// The `_meta` of a request: the caller's entries (checked), then the
    /// SDK's own, which always win; in the 2025-11-25 form (`legacy`) only
    /// the progress token (the session carries the rest).
    pub(super) fn build_meta(
        &self,
        id: &RequestId,
        options: &RequestOptions,
        legacy: bool,
    ) -> Result<Map<String, Value>> {
        let mut meta = Map::new();
        for (key, value) in &options.meta {
            if let Err(rule) = validate_key(key) {
                return Err(Error::InvalidMeta { key: key.clone(), reason: rule.to_string() });
            }
            if is_sdk_owned_request_key(key) {
                return Err(Error::InvalidMeta { key: key.clone(), reason: "the SDK sets this key itself".into() });
            }
            meta.insert(key.clone(), value.clone());
        }
        if legacy {
            meta.insert(PROGRESS_TOKEN_KEY.into(), id.to_value());
            return Ok(meta);
        }
        let opts = &self.inner.options;
        let (stamp, capabilities) = match &options.on_behalf_of {
            Some(identity) => (identity.stamp()?, identity.capabilities()),
            None => (self.inner.stamp.get(&opts.info, &opts.capabilities)?, &opts.capabilities),
        };
        let capabilities = match declared(capabilities, options) {
            std::borrow::Cow::Borrowed(_) => stamp.capabilities.clone(),
            std::borrow::Cow::Owned(with_tasks) => to_json(&with_tasks)?,
        };
        meta.insert(PROTOCOL_VERSION_KEY.into(), json!(opts.protocol_version));
        meta.insert(CLIENT_INFO_KEY.into(), stamp.info.clone());
        meta.insert(CLIENT_CAPABILITIES_KEY.into(), capabilities);
        if let Some(level) = options.log_level.or(opts.log_level) {
            meta.insert(LOG_LEVEL_KEY.into(), to_json(&level)?);
        }
        meta.insert(PROGRESS_TOKEN_KEY.into(), id.to_value());
        Ok(meta)
    }

    /// One request and its response: sent again (new id) after a lost
    /// connection when the retry policy allows, once after -32022 when the
    /// server lists our version as supported, and once after -32020 on a
    /// tool call, when `tools/list` was read again.
    pub(super) async fn send_once(
        &self,
        method: &str,
        params: &Map<String, Value>,
        options: &RequestOptions,
        limit: Option<TimeLimit>,
        legacy: bool,
    ) -> Result<Reply> {
        let mut lost = 0;
        loop {
            match self.send_checked(method, params, options, limit, legacy).await {
                Err(Error::Closed) if lost < MAX_LOST_STREAM_RETRIES && options.retry.allows(method) => {
                    lost += 1;
                    tracing::debug!(method, attempt = lost, "connection lost before the response; sending again");
                }
                other => return other,
            }
        }
    }

    pub(super) async fn send_checked(
        &self,
        method: &str,
        params: &Map<String, Value>,
        options: &RequestOptions,
        limit: Option<TimeLimit>,
        legacy: bool,
    ) -> Result<Reply> {
        match self.exchange_reply(method, params, options, limit, legacy).await {
            // The tool's header annotations may have changed: read the list
            // again (the transport learns them) and send once more.
            Err(Error::Rpc { error }) if error.code == error_code::HEADER_MISMATCH && method == ToolsCall::NAME => {
                tracing::debug!("header mismatch on tools/call; reading tools/list again");
                // The re-read is part of this call: its cancel and what is left of its time limit.
                let reread = RequestOptions {
                    cancel: options.cancel.clone(),
                    timeout: limit.map(|l| l.left()),
                    ..Default::default()
                };
                match Box::pin(self.list_all_tools(&reread)).await {
                    Err(Error::Timeout { .. }) => return Err(limit.map_or(Error::Closed, |l| l.error(method))),
                    Err(Error::Cancelled { .. }) => return Err(Error::Cancelled { method: method.to_owned() }),
                    other => other?,
                };
                self.exchange_reply(method, params, options, limit, legacy).await
            }
            Err(Error::Rpc { error }) if error.code == error_code::UNSUPPORTED_PROTOCOL_VERSION => {
                let ours = &self.inner.options.protocol_version;
                let listed = error.data.as_ref().and_then(|d| d.get("supported")).and_then(Value::as_array);
                if listed.is_some_and(|l| l.iter().any(|v| v == ours)) {
                    self.exchange_reply(method, params, options, limit, legacy).await
                } else {
                    options.diagnose(|d| d.rpc_error = Some(error.clone()));
                    Err(Error::Rpc { error })
                }
            }
            Err(Error::Rpc { error }) => {
                options.diagnose(|d| d.rpc_error = Some(error.clone()));
                Box::pin(self.doubt_cached_verdict(&error, options)).await;
                Err(Error::Rpc { error })
            }
            other => other,
        }
    }

    /// Who answers the server's requests on a request's stream, when its
    /// options name hooks of their own.
    pub(super) fn asker(&self, options: &RequestOptions) -> Option<server_requests::Asker> {
        let hooks = options.hooks.clone()?;
        let capabilities = match &options.on_behalf_of {
            Some(identity) => Arc::new(identity.capabilities().clone()),
            None => Arc::new(self.inner.options.capabilities.clone()),
        };
        Some(Arc::new(server_requests::Answerer { capabilities, hooks }))
    }

    /// Checks a cached 2026-07-28 verdict when an answer could be a
    /// 2025-11-25 server's (-32601, -32600, -32602: also what a 2026-07-28
    /// server says of a bad call): only the probe's own answer decides, so
    /// `server/discover` is asked once. When it says 2025-11-25, the verdict
    /// is forgotten: this request fails, the next client probes.
    pub(super) async fn doubt_cached_verdict(
        &self,
        error: &mcp_bridge_protocol::ErrorObject,
        options: &RequestOptions,
    ) {
        let inner = &self.inner;
        if !era::answer_says_legacy(error) || !inner.modern_from_cache.swap(false, Ordering::Relaxed) {
            return;
        }
        let probe = RequestOptions { cancel: options.cancel.clone(), timeout: options.timeout, ..Default::default() };
        let (outcome, status) = self.probe(&probe).await;
        let says_legacy = outcome.as_ref().is_err_and(|answer| era::probe_says_legacy(answer, status));
        if !says_legacy {
            return;
        }
        if let (Some(cache), Some(address)) = (&inner.options.era_cache, &inner.address) {
            tracing::info!("the server no longer speaks 2026-07-28; its cached era is forgotten");
            cache.forget(address);
        }
    }

    /// [`Client::exchange_reply`] with its result as a tree.
    pub(super) async fn exchange(
        &self,
        method: &str,
        params: &Map<String, Value>,
        options: &RequestOptions,
        limit: Option<TimeLimit>,
        legacy: bool,
    ) -> Result<Value> {
        self.exchange_reply(method, params, options, limit, legacy).await?.into_value(method)
    }

    /// One request on the wire and its response, in the 2026-07-28 form or
    /// (`legacy`) the 2025-11-25 one. Takes the params by reference: the one
    /// copy is the one sent (the callers keep theirs for a retry).
    pub(super) async fn exchange_reply(
        &self,
        method: &str,
        params: &Map<String, Value>,
        options: &RequestOptions,
        limit: Option<TimeLimit>,
        legacy: bool,
    ) -> Result<Reply> {
        let inner = &self.inner;
        let id = RequestId::Number(inner.next_id.fetch_add(1, Ordering::Relaxed));
        options.diagnose(|d| d.request_id = Some(id.clone()));
        let mut params = params.clone();
        params.insert("_meta".into(), Value::Object(self.build_meta(&id, options, legacy)?));
        let (reply_tx, reply_rx) = oneshot::channel();
        let callbacks = Arc::new(Callbacks::new(options, inner.options.on_notification.as_ref()));
        let (route, events) = route_for(options, &callbacks);
        inner.router.register(
            id.clone(),
            Pending {
                reply: reply_tx,
                route,
                method: method.to_owned(),
                diagnostics: options.diagnostics.clone(),
                answers: self.asker(options),
            },
        )?;
        let request = JsonRpcRequest::new(id.clone(), method, Some(Value::Object(params)));
        if inner.out.send(Message::Request(request)).await.is_err() {
            inner.router.forget(&id);
            return Err(Error::Closed);
        }
        let mut abandoned = CancelWhenAbandoned {
            client: self,
            id: Some(id.clone()),
            // `initialize` is never cancelled (the specification's rule).
            tell_server: method != Initialize::NAME,
        };
        let outcome = self.await_reply(method, reply_rx, events, &callbacks, options, limit).await;
        abandoned.id = None;
        if matches!(outcome, Err(Error::Cancelled { .. } | Error::Timeout { .. })) && inner.router.forget(&id) {
            let cancelled = options.cancel.as_ref().is_some_and(tokio_util::sync::CancellationToken::is_cancelled);
            let reason = if cancelled { "cancelled by the client" } else { "timed out" };
            let _ = inner.out.send(Message::Notification(cancelled_notification(&id, reason))).await;
        }
        outcome
    }

    /// Waits for a request's reply, handing its notifications to the
    /// callbacks as they come (and those that came before the reply), until
    /// the caller's cancel or the time limit.
    pub(super) async fn await_reply(
        &self,
        method: &str,
        mut reply_rx: oneshot::Receiver<Result<Reply>>,
        mut events: Option<mpsc::Receiver<Box<mcp_bridge_protocol::JsonRpcNotification>>>,
        callbacks: &Callbacks,
        options: &RequestOptions,
        limit: Option<TimeLimit>,
    ) -> Result<Reply> {
        let cancel = options.cancel.clone().unwrap_or_default();
        let limit = limit.filter(|_| self.inner.timed);
        let expired = async {
            match &limit {
                Some(limit) => limit.expired().await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(expired);
        let outcome = loop {
            tokio::select! {
                biased;
                Some(n) = async { match events.as_mut() { Some(rx) => rx.recv().await, None => None } } => {
                    callbacks.deliver(&n);
                }
                reply = &mut reply_rx => break reply.unwrap_or(Err(Error::Closed)),
                _ = cancel.cancelled() => break Err(Error::Cancelled { method: method.to_owned() }),
                () = &mut expired => break Err(limit.map_or(Error::Closed, |l| l.error(method))),
            }
        };
        // Notifications that came before the response still reach the caller.
        if let Some(rx) = events.as_mut() {
            while let Ok(n) = rx.try_recv() {
                callbacks.deliver(&n);
            }
        }
        outcome
    }
}

/// Where a request's notifications go: delivered on the reader
/// (`inline_notifications`), or queued for the request's own task.
pub(super) fn route_for(
    options: &RequestOptions,
    callbacks: &Arc<Callbacks>,
) -> (Route, Option<mpsc::Receiver<Box<mcp_bridge_protocol::JsonRpcNotification>>>) {
    if options.inline_notifications {
        (Route::Inline(callbacks.clone()), None)
    } else {
        let (tx, rx) = event_queue();
        (Route::Queued(tx), Some(rx))
    }
}

/// The capabilities a request declares: the client's, with the Tasks
/// extension added when the request's caller uses tasks (so no client has
/// to list it up front to follow a task).
fn declared<'a>(
    capabilities: &'a mcp_bridge_protocol::types::ClientCapabilities,
    options: &RequestOptions,
) -> std::borrow::Cow<'a, mcp_bridge_protocol::types::ClientCapabilities> {
    #[cfg(feature = "tasks")]
    if options.uses_tasks {
        let mut with_tasks = capabilities.clone();
        let extensions = with_tasks.extensions.get_or_insert_default();
        extensions.entry(mcp_bridge_protocol::types::TASKS_EXTENSION.to_owned()).or_insert(json!({}));
        return std::borrow::Cow::Owned(with_tasks);
    }
    #[cfg(not(feature = "tasks"))]
    let _ = options;
    std::borrow::Cow::Borrowed(capabilities)
}

/// A request on the wire whose caller may stop waiting (its future
/// dropped: a gateway's client gone, a `select!` that took another
/// branch): then the server is told with `notifications/cancelled`, as for
/// a cancel, so that it stops the work nobody waits for.
struct CancelWhenAbandoned<'a> {
    client: &'a Client,
    /// The request, until its reply came (or its cancel was sent).
    id: Option<RequestId>,
    /// Whether the server hears of it (else it is only forgotten here).
    tell_server: bool,
}

impl Drop for CancelWhenAbandoned<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let inner = &self.client.inner;
        if !inner.router.forget(&id) || !self.tell_server {
            return;
        }
        let cancelled = Message::Notification(cancelled_notification(&id, "the caller stopped waiting"));
        // Drop cannot wait: a full queue hands the notification to a task.
        if let Err(mpsc::error::TrySendError::Full(cancelled)) = inner.out.try_send(cancelled)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let out = inner.out.clone();
            runtime.spawn(async move {
                let _ = out.send(cancelled).await;
            });
        }
    }
}

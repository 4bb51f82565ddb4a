//! The client: stamps `_meta` on every request, routes responses and
//! notifications, runs multi round-trip requests through the input hooks,
//! and gives owned, typed results.

mod cache;
mod connect;
pub mod era;
mod era_cache;
mod extensions;
pub mod input;
mod legacy_listen;
mod listen;
mod methods;
mod options;
mod router;
mod server_requests;
#[cfg(feature = "tasks")]
mod task_store;
#[cfg(feature = "tasks")]
mod tasks;
mod time_limit;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use mcp_bridge_protocol::meta::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROGRESS_TOKEN_KEY, PROTOCOL_VERSION_KEY,
    is_sdk_owned_request_key, validate_key,
};
use mcp_bridge_protocol::method::{Method, ServerDiscover, ToolsCall};
use mcp_bridge_protocol::rounds::{RoundError, Rounds, Step};
use mcp_bridge_protocol::types::{CallToolResult, Icon, Tool};
use mcp_bridge_protocol::{JsonRpcRequest, Message, RequestId, error_code};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use cache::ResultCache;
pub use cache::{CacheMode, CacheOptions};
pub use era::{Era, Spoken};
pub use era_cache::{EraCache, VERDICT_TTL, Verdict};
pub use listen::{GapCause, ListenGap, ListenGapCallback, ListenRecovery};
use methods::{cursor_params, tool_call_params};
use options::Callbacks;
pub use options::{
    ClientIdentity, ClientOptions, Diagnostics, Hook, InputHooks, LogCallback, NotificationCallback, ProgressCallback,
    RequestOptions, RetryPolicy, hook,
};
use router::{Pending, Route, Router, cancelled_notification, event_queue};
#[cfg(feature = "tasks")]
pub use task_store::{TaskRecord, TaskStore};
#[cfg(feature = "tasks")]
pub use tasks::{ResumedTask, ToolOutcome, task_of_notification, task_result};
use time_limit::TimeLimit;

use crate::error::{Error, Result};
#[cfg(feature = "icons")]
use crate::icons::{IconError, IconWanted, Image};
use crate::limits::{MAX_LOST_STREAM_RETRIES, MAX_TOTAL_TIMEOUT};
use crate::transport::Transport;
#[cfg(feature = "stdio")]
use crate::transport::stdio::ChildProcess;

pub use crate::limits::CLOSE_GRACE;

/// An MCP client on one transport, of revision 2026-07-28 or, with a server
/// that speaks only that, 2025-11-25 (see [`Era`]). Cheap to clone: clones
/// share the connection.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    options: ClientOptions,
    router: Arc<Router>,
    out: mpsc::Sender<Message>,
    next_id: AtomicI64,
    #[cfg(feature = "stdio")]
    process: Option<ChildProcess>,
    /// Time limits do not apply on the in-memory link.
    timed: bool,
    /// Output schemas from `tools/list`, to check `structuredContent`.
    #[cfg(feature = "validation")]
    output_schemas: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
    /// Results with a lifetime, when the options enable the cache.
    cache: Option<Arc<ResultCache>>,
    /// The transport's credential, which private cached results belong to.
    credential: crate::transport::Credential,
    /// The endpoint URL of a network transport, the origin of its icons.
    #[cfg(feature = "icons")]
    endpoint: Option<String>,
    /// The transport's tasks and the client's (router, answerer): they
    /// end with the client.
    tasks: crate::task_group::TaskGroup,
    /// The era settled with the server, at the first request.
    spoken: tokio::sync::OnceCell<Spoken>,
    /// The result of the `server/discover` probe, for the caller whose
    /// request was that discover.
    probed: Mutex<Option<Value>>,
    /// Where the server is, as the era cache knows it.
    address: Option<String>,
    /// The era is 2026-07-28 on the cache's word alone: a first answer of
    /// a legacy server proves the verdict wrong.
    modern_from_cache: std::sync::atomic::AtomicBool,
}

impl Drop for ClientInner {
    /// The last clone is gone: nothing will read or send again.
    fn drop(&mut self) {
        self.tasks.cancel();
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("info", &self.inner.options.info).finish_non_exhaustive()
    }
}

impl Client {
    /// A client on `transport`. Must be called inside a tokio runtime: the
    /// client's reader runs on a task of its own, which ends, with the
    /// transport's, at [`Client::close`] or when the last clone is dropped.
    pub fn new(options: ClientOptions, transport: Transport) -> Self {
        let router = Arc::new(Router::new(options.max_pending));
        let timed = transport.timed;
        let cache = options.cache.enabled.then(|| Arc::new(ResultCache::new(options.cache)));
        let (to_answerer, server_requests) = mpsc::channel(crate::limits::OUTGOING_QUEUE);
        let answerer = server_requests::Answerer {
            capabilities: Arc::new(options.capabilities.clone()),
            hooks: options.hooks.clone(),
        };
        let tasks = transport.tasks;
        tasks.spawn(answerer.run(server_requests, transport.outgoing.clone()));
        tasks.spawn_to_finish(
            CLOSE_GRACE,
            router.clone().run(
                transport.incoming,
                transport.outgoing.clone(),
                options.on_notification.clone(),
                to_answerer,
                tasks.stopping(),
            ),
        );
        Client {
            inner: Arc::new(ClientInner {
                options,
                router,
                out: transport.outgoing,
                next_id: AtomicI64::new(1),
                #[cfg(feature = "stdio")]
                process: transport.process,
                timed,
                #[cfg(feature = "validation")]
                output_schemas: Mutex::default(),
                cache,
                credential: transport.credential,
                #[cfg(feature = "icons")]
                endpoint: transport.endpoint,
                tasks,
                spoken: tokio::sync::OnceCell::new(),
                probed: Mutex::default(),
                address: transport.address,
                modern_from_cache: Default::default(),
            }),
        }
    }

    /// The server process, when the transport is a child process.
    #[cfg(feature = "stdio")]
    pub fn process(&self) -> Option<&ChildProcess> {
        self.inner.process.as_ref()
    }

    /// Closes the connection, on every transport: a child process is
    /// stopped as [`ChildProcess::close`] describes, and its exit status
    /// returned; an HTTP connection ends its requests and a 2025-11-25
    /// session, a WebSocket sends its close frame, a socket is shut (each
    /// at most [`CLOSE_GRACE`] waiting for the server). Requests still
    /// waiting, and any sent later, fail with [`Error::Closed`]. Every task
    /// of the client has ended when it returns.
    pub async fn close(&self) -> Option<std::process::ExitStatus> {
        #[cfg(feature = "stdio")]
        let status = match &self.inner.process {
            Some(process) => process.close().await,
            None => None,
        };
        #[cfg(not(feature = "stdio"))]
        let status = None;
        if !self.inner.tasks.stop(CLOSE_GRACE).await {
            tracing::debug!("a transport task was still ending when the close grace ran out");
        }
        status
    }

    /// The icon to show among `icons` (of a tool, a prompt, a resource or
    /// the server), as [`crate::icons::select`] ranks them under the
    /// client's policy, for this transport's endpoint.
    #[cfg(feature = "icons")]
    pub fn select_icon<'a>(&self, icons: &'a [Icon], wanted: &IconWanted) -> Option<&'a Icon> {
        crate::icons::select(icons, wanted, self.inner.endpoint.as_deref(), &self.inner.options.icons)
    }

    /// Fetches and checks an icon under the client's policy: https icons of
    /// the endpoint's origin (or a trusted one) and data: icons.
    ///
    /// # Errors
    /// The [`IconError`] of the rule the icon breaks.
    #[cfg(feature = "icons")]
    pub async fn fetch_icon(&self, icon: &Icon) -> std::result::Result<Image, IconError> {
        crate::icons::fetch(icon, self.inner.endpoint.as_deref(), &self.inner.options.icons).await
    }

    /// Drops every cached result (see [`CacheOptions`]).
    pub fn invalidate_cache(&self) {
        if let Some(cache) = &self.inner.cache {
            cache.clear();
        }
    }

    /// Sends any request by name and returns its raw result, after the
    /// input rounds (or the `InputRequiredResult` itself with
    /// `allow_input_required`): what a bridge forwards, or a method this
    /// SDK has no type for ([`Client::request`] for those it has).
    /// Discovery, list and read results come from the cache when it is on
    /// and holds a fresh one (see [`CacheOptions`] and [`CacheMode`]).
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn request_raw(
        &self,
        method: &str,
        params: Map<String, Value>,
        options: &RequestOptions,
    ) -> Result<Value> {
        let spoken = self.connect(options).await?;
        // The probe's discover result answers the discover that caused it, no other request.
        let probed = self.inner.probed.lock().unwrap_or_else(|e| e.into_inner()).take();
        if method == ServerDiscover::NAME {
            if let Spoken::Legacy(initialized) = spoken {
                return to_json(&era::discover_of_initialize(initialized));
            }
            if let Some(probed) = probed {
                return Ok(probed);
            }
        }
        let cache = self
            .inner
            .cache
            .as_ref()
            .filter(|_| options.cache_mode != CacheMode::Bypass && cache::cacheable(method, &params));
        let Some(cache) = cache else { return self.request_rounds(method, params, options).await.map(|(v, _)| v) };
        let credential = self.inner.credential.digest().await;
        cache.saw_credential(credential);
        if options.cache_mode == CacheMode::Default
            && let Some(value) = cache.get(method, &params, credential)
        {
            options.diagnose(|d| d.from_cache = true);
            return Ok(value);
        }
        match self.request_rounds(method, params.clone(), options).await {
            Ok((value, rounds)) => {
                // A result reached through input rounds answered this caller's input.
                if rounds == 0 {
                    cache.put(method, &params, &value, credential);
                }
                Ok(value)
            }
            Err(Error::Rpc { error }) if error.code == error_code::INVALID_PARAMS && params.contains_key("cursor") => {
                // The cursor is stale: so may the pages around it be.
                cache.drop_method(method);
                Err(Error::Rpc { error })
            }
            Err(e) => Err(e),
        }
    }

    /// [`Client::request_raw`] without the cache; also says how many input
    /// rounds it took.
    async fn request_rounds(
        &self,
        method: &str,
        params: Map<String, Value>,
        options: &RequestOptions,
    ) -> Result<(Value, usize)> {
        let timeout = options
            .timeout
            .unwrap_or(self.inner.options.request_timeout)
            .min(options.max_total_timeout.unwrap_or(MAX_TOTAL_TIMEOUT));
        let limit = Some(TimeLimit::starting_now(timeout));
        let legacy = self.spoken().is_some_and(Spoken::is_legacy);
        if options.allow_input_required {
            // The caller runs the rounds: nothing to keep for a retry.
            let value = self.send_once(method, &params, options, limit, legacy).await?;
            options.diagnose(|d| d.rounds = 0);
            return Ok((value, 0));
        }
        let max_rounds = self.inner.options.max_input_rounds;
        let capabilities = options.on_behalf_of.as_ref().map_or(&self.inner.options.capabilities, |o| &o.capabilities);
        let mut rounds = Rounds::new(params, max_rounds);
        loop {
            let value = self.send_once(method, rounds.params(), options, limit, legacy).await?;
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

    /// The `_meta` of a request: the caller's entries (checked), then the
    /// SDK's own, which always win; in the 2025-11-25 form (`legacy`) only
    /// the progress token (the session carries the rest).
    fn build_meta(&self, id: &RequestId, options: &RequestOptions, legacy: bool) -> Result<Map<String, Value>> {
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
        let (info, capabilities) = match &options.on_behalf_of {
            Some(identity) => (&identity.info, &identity.capabilities),
            None => (&opts.info, &opts.capabilities),
        };
        meta.insert(PROTOCOL_VERSION_KEY.into(), json!(opts.protocol_version));
        meta.insert(CLIENT_INFO_KEY.into(), to_json(info)?);
        meta.insert(CLIENT_CAPABILITIES_KEY.into(), to_json(&declared(capabilities, options))?);
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
    async fn send_once(
        &self,
        method: &str,
        params: &Map<String, Value>,
        options: &RequestOptions,
        limit: Option<TimeLimit>,
        legacy: bool,
    ) -> Result<Value> {
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

    async fn send_checked(
        &self,
        method: &str,
        params: &Map<String, Value>,
        options: &RequestOptions,
        limit: Option<TimeLimit>,
        legacy: bool,
    ) -> Result<Value> {
        match self.exchange(method, params, options, limit, legacy).await {
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
                self.exchange(method, params, options, limit, legacy).await
            }
            Err(Error::Rpc { error }) if error.code == error_code::UNSUPPORTED_PROTOCOL_VERSION => {
                let ours = &self.inner.options.protocol_version;
                let listed = error.data.as_ref().and_then(|d| d.get("supported")).and_then(Value::as_array);
                if listed.is_some_and(|l| l.iter().any(|v| v == ours)) {
                    self.exchange(method, params, options, limit, legacy).await
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
    fn asker(&self, options: &RequestOptions) -> Option<server_requests::Asker> {
        let hooks = options.hooks.clone()?;
        let capabilities = match &options.on_behalf_of {
            Some(identity) => Arc::new(identity.capabilities.clone()),
            None => Arc::new(self.inner.options.capabilities.clone()),
        };
        Some(Arc::new(server_requests::Answerer { capabilities, hooks }))
    }

    /// Checks a cached 2026-07-28 verdict when an answer could be a
    /// 2025-11-25 server's (-32601, -32600, -32602: also what a 2026-07-28
    /// server says of a bad call): only the probe's own answer decides, so
    /// `server/discover` is asked once. When it says 2025-11-25, the verdict
    /// is forgotten: this request fails, the next client probes.
    async fn doubt_cached_verdict(&self, error: &mcp_bridge_protocol::ErrorObject, options: &RequestOptions) {
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

    /// One request on the wire and its response, in the 2026-07-28 form or
    /// (`legacy`) the 2025-11-25 one. Takes the params by reference: the one
    /// copy is the one sent (the callers keep theirs for a retry).
    async fn exchange(
        &self,
        method: &str,
        params: &Map<String, Value>,
        options: &RequestOptions,
        limit: Option<TimeLimit>,
        legacy: bool,
    ) -> Result<Value> {
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
        let outcome = self.await_reply(method, reply_rx, events, &callbacks, options, limit).await;
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
    async fn await_reply(
        &self,
        method: &str,
        mut reply_rx: oneshot::Receiver<Result<Value>>,
        mut events: Option<mpsc::Receiver<Box<mcp_bridge_protocol::JsonRpcNotification>>>,
        callbacks: &Callbacks,
        options: &RequestOptions,
        limit: Option<TimeLimit>,
    ) -> Result<Value> {
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

    #[cfg(feature = "validation")]
    fn remember_output_schemas(&self, tools: &[Tool]) {
        let mut schemas = self.inner.output_schemas.lock().unwrap_or_else(|e| e.into_inner());
        for tool in tools {
            match tool.output_schema.as_ref().map(|s| jsonschema::validator_for(&Value::Object(s.clone()))) {
                Some(Ok(v)) => {
                    schemas.insert(tool.name.clone(), Arc::new(v));
                }
                Some(Err(e)) => tracing::warn!(tool = %tool.name, "output schema does not compile: {e}"),
                None => {
                    schemas.remove(&tool.name);
                }
            }
        }
    }

    #[cfg(feature = "validation")]
    fn check_structured_content(&self, name: &str, result: &CallToolResult, options: &RequestOptions) {
        let validator = self.inner.output_schemas.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned();
        let (Some(validator), false) = (validator, result.is_error == Some(true)) else { return };
        let content = result.structured_content.clone().unwrap_or(Value::Null);
        if let Some(error) = validator.iter_errors(&content).next() {
            tracing::warn!(tool = name, "structuredContent does not match the output schema: {error}");
            options.diagnose(|d| d.structured_content_invalid = true);
        }
    }

    /// Without the `validation` feature no output schema is checked.
    #[cfg(not(feature = "validation"))]
    fn remember_output_schemas(&self, _tools: &[Tool]) {}

    #[cfg(not(feature = "validation"))]
    fn check_structured_content(&self, _name: &str, _result: &CallToolResult, _options: &RequestOptions) {}
}

/// Where a request's notifications go: delivered on the reader
/// (`inline_notifications`), or queued for the request's own task.
fn route_for(
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

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value> {
    serde_json::to_value(value).map_err(|e| Error::InvalidRequest { reason: e.to_string() })
}

fn parse_result<T: DeserializeOwned>(method: &str, value: Value) -> Result<T> {
    serde_json::from_value(value)
        .map_err(|e| Error::InvalidResponse { method: method.to_owned(), reason: e.to_string() })
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

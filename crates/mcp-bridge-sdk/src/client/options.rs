//! Options of the client and of one request, and the callbacks that receive
//! a request's notifications.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::method::MethodCall;
use mcp_bridge_protocol::method::{Method, NotificationsMessage, NotificationsProgress};
use mcp_bridge_protocol::types::{
    ClientCapabilities, ElicitRequestFormParams, ElicitRequestUrlParams, ElicitResult, Implementation, LoggingLevel,
    LoggingMessageNotificationParams, ProgressNotificationParams, Root,
};
use mcp_bridge_protocol::types::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, InputRequest, InputResponse,
};
use mcp_bridge_protocol::{ErrorObject, JsonRpcNotification, RequestId};
use serde_json::{Map, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::limits::{
    MAX_AUTO_PAGES, MAX_INPUT_ROUNDS, MAX_PENDING_REQUESTS, MAX_PROGRESS_RATE_PER_S, MAX_TASK_POLLS, REQUEST_TIMEOUT,
};
use crate::{BoxError, BoxFuture};

/// A callback for notifications; it gets a reference valid during the call.
pub type NotificationCallback = Arc<dyn Fn(&JsonRpcNotification) + Send + Sync>;
/// A callback for progress notifications.
pub type ProgressCallback = Arc<dyn Fn(&ProgressNotificationParams) + Send + Sync>;
/// A callback for log messages.
pub type LogCallback = Arc<dyn Fn(&LoggingMessageNotificationParams) + Send + Sync>;

/// An input hook: answers one kind of input request. An `Err` is the
/// reason the hook could not answer. [`hook`] makes one of an async
/// closure.
pub type Hook<P, R> = Arc<dyn Fn(P) -> BoxFuture<Result<R, BoxError>> + Send + Sync>;

/// An input hook of an async function or closure, whose error is any
/// error (or a `String`).
pub fn hook<P, R, F, Fut, E>(answer: F) -> Hook<P, R>
where
    F: Fn(P) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    E: Into<BoxError>,
{
    Arc::new(move |params| {
        let answer = answer(params);
        Box::pin(async move { answer.await.map_err(Into::into) })
    })
}

/// The client's answers to a server's input requests (multi round-trip).
/// A kind without a hook, or not declared in the client's capabilities, is
/// refused.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct InputHooks {
    /// Answers form elicitations; the answer is checked against the schema.
    pub elicit_form: Option<Hook<ElicitRequestFormParams, ElicitResult>>,
    /// Shows a URL to the user; the SDK never opens it itself.
    pub elicit_url: Option<Hook<ElicitRequestUrlParams, ElicitResult>>,
    /// Answers sampling requests.
    pub sample: Option<Hook<CreateMessageRequestParams, CreateMessageResult>>,
    /// Lists the roots; each must be a `file://` URI.
    pub list_roots: Option<Hook<(), Vec<Root>>>,
}

impl std::fmt::Debug for InputHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InputHooks")
            .field("elicit_form", &self.elicit_form.is_some())
            .field("elicit_url", &self.elicit_url.is_some())
            .field("sample", &self.sample.is_some())
            .field("list_roots", &self.list_roots.is_some())
            .finish()
    }
}

impl InputHooks {
    /// No hooks: every input request is refused.
    pub fn new() -> Self {
        InputHooks::default()
    }

    /// Answers form elicitations with `answer` (see [`hook`]).
    pub fn on_form<F, Fut, E>(mut self, answer: F) -> Self
    where
        F: Fn(ElicitRequestFormParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        self.elicit_form = Some(hook(answer));
        self
    }

    /// Shows URL elicitations to the user with `answer`.
    pub fn on_url<F, Fut, E>(mut self, answer: F) -> Self
    where
        F: Fn(ElicitRequestUrlParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        self.elicit_url = Some(hook(answer));
        self
    }

    /// Answers sampling requests with `answer`.
    pub fn on_sampling<F, Fut, E>(mut self, answer: F) -> Self
    where
        F: Fn(CreateMessageRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        self.sample = Some(hook(answer));
        self
    }

    /// Lists the roots with `answer`.
    pub fn on_roots<F, Fut, E>(mut self, answer: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<Root>, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        self.list_roots = Some(hook(move |()| answer()));
        self
    }

    /// Answers every kind of input request through `answer`, which gets
    /// the request whole and gives the response: for a gateway that passes
    /// its servers' requests on to its own client. A response of another
    /// kind than its request is refused.
    pub fn relay<F, Fut, E>(answer: F) -> Self
    where
        F: Fn(InputRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<InputResponse, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        let answer: Hook<InputRequest, InputResponse> = hook(answer);
        InputHooks {
            elicit_form: Some(relayed(
                &answer,
                |p| InputRequest::Elicit(MethodCall::new(ElicitRequestParams::Form(p))),
                elicited,
            )),
            elicit_url: Some(relayed(
                &answer,
                |p| InputRequest::Elicit(MethodCall::new(ElicitRequestParams::Url(p))),
                elicited,
            )),
            sample: Some(relayed(
                &answer,
                |p| InputRequest::CreateMessage(MethodCall::new(p)),
                |r| match r {
                    InputResponse::CreateMessage(result) => Some(*result),
                    _ => None,
                },
            )),
            list_roots: Some(relayed(
                &answer,
                |()| InputRequest::ListRoots(MethodCall::new(None)),
                |r| match r {
                    InputResponse::ListRoots(result) => Some(result.roots),
                    _ => None,
                },
            )),
        }
    }
}

fn elicited(response: InputResponse) -> Option<ElicitResult> {
    match response {
        InputResponse::Elicit(result) => Some(result),
        _ => None,
    }
}

/// A hook of one kind that asks the request-wide `answer`: `wrap` makes
/// the request, `unwrap` takes the response of the kind wanted.
fn relayed<P: Send + 'static, R: 'static>(
    answer: &Hook<InputRequest, InputResponse>,
    wrap: fn(P) -> InputRequest,
    unwrap: fn(InputResponse) -> Option<R>,
) -> Hook<P, R> {
    let answer = answer.clone();
    Arc::new(move |params| {
        let request = wrap(params);
        let method = request.method().unwrap_or_default().to_owned();
        let answered = answer(request);
        Box::pin(async move {
            unwrap(answered.await?).ok_or_else(|| BoxError::from(format!("the answer to {method} is of another kind")))
        })
    })
}

/// How a client identifies itself and what it can do.
#[derive(Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// The client's name and version, sent on every request.
    pub info: Implementation,
    /// The client's capabilities, sent on every request.
    pub capabilities: ClientCapabilities,
    /// The protocol version sent on every request.
    pub protocol_version: String,
    /// Which era to speak: [`super::Era::Auto`] (the default) asks
    /// `server/discover` first and falls back to 2025-11-25.
    pub era: super::Era,
    /// The version asked for in a 2025-11-25 `initialize`.
    pub legacy_protocol_version: String,
    /// Where [`super::Era::Auto`] remembers what each server speaks, so a
    /// later client of the same server skips the probe; none by default
    /// (every client probes). Clients given clones share it.
    pub era_cache: Option<super::EraCache>,
    /// The log level of every request unless a request sets its own.
    pub log_level: Option<LoggingLevel>,
    /// Answers to input requests.
    pub hooks: InputHooks,
    /// Notifications that belong to no request (a log message on stdio,
    /// for one), and those routed to a request whose options have no
    /// `on_notification` (but progress and log messages, which go only to
    /// the request's own callbacks).
    pub on_notification: Option<NotificationCallback>,
    /// Time of a request when its options give none.
    pub request_timeout: Duration,
    /// The most requests waiting for their answer at once; one more fails
    /// at once with [`crate::Error::Busy`] instead of queueing without end.
    pub max_pending: usize,
    /// The most input rounds one request may take before it fails with
    /// [`crate::Error::TooManyRounds`]; [`MAX_INPUT_ROUNDS`] by default.
    pub max_input_rounds: usize,
    /// The most pages `list_all_tools` and the other `list_all_*` read,
    /// following `nextCursor`; [`MAX_AUTO_PAGES`] by default (a server whose
    /// cursor never ends cannot keep the client reading).
    pub max_pages: usize,
    /// The most `tasks/get` polls `await_task` makes of one task before it
    /// cancels the task and fails with [`crate::Error::TaskPollBudget`];
    /// [`MAX_TASK_POLLS`] by default (0: cancel without polling). The time
    /// limit applies as well: raise both to follow a task for longer.
    pub max_task_polls: usize,
    /// The result cache; off by default.
    pub cache: super::CacheOptions,
    /// What the client accepts as an icon.
    #[cfg(feature = "icons")]
    pub icons: crate::icons::IconPolicy,
    /// Where the tasks this client follows are recorded, to resume them
    /// after a restart ([`super::Client::resume_tasks`]); none by default.
    #[cfg(feature = "tasks")]
    pub task_store: Option<super::TaskStore>,
    /// Hears of every request the client sends: its method, target,
    /// duration and error, in a span whose trace context goes to the
    /// server in the request's `_meta` (see [`crate::telemetry`]); none by
    /// default.
    pub observer: Option<Arc<dyn crate::telemetry::Observer>>,
}

crate::setters::with_setters! {
    ClientOptions {
        value with_capabilities => capabilities: ClientCapabilities,
        value with_protocol_version => protocol_version: impl Into<String>,
        value with_era => era: super::Era,
        value with_legacy_protocol_version => legacy_protocol_version: impl Into<String>,
        some with_era_cache => era_cache: super::EraCache,
        some with_log_level => log_level: LoggingLevel,
        value with_hooks => hooks: InputHooks,
        some with_on_notification => on_notification: NotificationCallback,
        value with_request_timeout => request_timeout: Duration,
        value with_max_pending => max_pending: usize,
        value with_max_input_rounds => max_input_rounds: usize,
        value with_max_pages => max_pages: usize,
        value with_max_task_polls => max_task_polls: usize,
        value with_cache => cache: super::CacheOptions,
        #[cfg(feature = "icons")]
    value with_icons => icons: crate::icons::IconPolicy,
        #[cfg(feature = "tasks")]
    some with_task_store => task_store: super::TaskStore,
        some with_observer => observer: Arc<dyn crate::telemetry::Observer>,
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("info", &self.info)
            .field("capabilities", &self.capabilities)
            .field("protocol_version", &self.protocol_version)
            .field("era", &self.era)
            .field("hooks", &self.hooks)
            .finish_non_exhaustive()
    }
}

impl ClientOptions {
    /// Options for a client with this name and version and no capabilities.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ClientOptions {
            info: Implementation::new(name, version),
            capabilities: ClientCapabilities::default(),
            protocol_version: mcp_bridge_protocol::PROTOCOL_VERSION.to_owned(),
            era: super::Era::default(),
            legacy_protocol_version: mcp_bridge_protocol::legacy::PROTOCOL_VERSION.to_owned(),
            era_cache: None,
            log_level: None,
            hooks: InputHooks::default(),
            on_notification: None,
            request_timeout: REQUEST_TIMEOUT,
            max_pending: MAX_PENDING_REQUESTS,
            max_input_rounds: MAX_INPUT_ROUNDS,
            max_pages: MAX_AUTO_PAGES,
            max_task_polls: MAX_TASK_POLLS,
            cache: super::CacheOptions::default(),
            #[cfg(feature = "icons")]
            icons: crate::icons::IconPolicy::default(),
            #[cfg(feature = "tasks")]
            task_store: None,
            observer: None,
        }
    }
}

/// What the client found out about one request besides its result.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Diagnostics {
    /// The JSON-RPC error, when the server answered with one.
    pub rpc_error: Option<ErrorObject>,
    /// A tool result's `structuredContent` does not match the tool's output
    /// schema (the result is still returned).
    pub structured_content_invalid: bool,
    /// Input rounds the request took.
    pub rounds: usize,
    /// The HTTP status of the last response to the request, also when it
    /// failed (Streamable HTTP only): tells a wrong path (404) from an
    /// answer that is not valid.
    pub http_status: Option<u16>,
    /// The result came from the client's cache, not from the server.
    pub from_cache: bool,
    /// The request settled the era: the server did not know
    /// `server/discover`, so the client spoke 2025-11-25.
    pub fell_back_to_legacy: bool,
    /// The request settled the era from [`super::ClientOptions::era_cache`],
    /// without the probe.
    pub era_from_cache: bool,
    /// The id the request last went out with (a retry or an input round
    /// goes out with a new one): what the server's own log shows of it.
    pub request_id: Option<RequestId>,
}

/// What to do when the connection is lost before a response arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RetryPolicy {
    /// Send idempotent methods (discovery, lists, reads, prompts,
    /// completion) again with a new id; fail the others.
    #[default]
    Auto,
    /// Never send again.
    Never,
    /// Send every method again, `tools/call` and `subscriptions/listen`
    /// included.
    Force,
}

impl RetryPolicy {
    pub(crate) fn allows(self, method: &str) -> bool {
        match self {
            RetryPolicy::Never => false,
            RetryPolicy::Force => true,
            RetryPolicy::Auto => mcp_bridge_protocol::methods::is_idempotent(method),
        }
    }
}

/// Options of one request.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct RequestOptions {
    /// Time for the whole request, all input rounds included; the client's
    /// default when `None`, never more than `max_total_timeout`.
    pub timeout: Option<Duration>,
    /// Upper bound of `timeout`; [`crate::limits::MAX_TOTAL_TIMEOUT`] when
    /// `None`. A bridge raises it for tool calls that run for an hour.
    pub max_total_timeout: Option<Duration>,
    /// Cancels the request (the server is told).
    pub cancel: Option<CancellationToken>,
    /// Progress of the request, at most 50 a second.
    pub on_progress: Option<ProgressCallback>,
    /// Log messages routed to the request.
    pub on_log: Option<LogCallback>,
    /// Other notifications routed to the request (listen events).
    pub on_notification: Option<NotificationCallback>,
    /// Call the callbacks on the reader as each notification arrives, so a
    /// notification reaches its callback before any response written after it.
    pub inline_notifications: bool,
    /// The log level of this request.
    pub log_level: Option<LoggingLevel>,
    /// More `_meta` entries (trace context, vendor keys); keys the SDK owns
    /// and invalid keys are refused before anything is sent.
    pub meta: Map<String, Value>,
    /// Return an `InputRequiredResult` as it is instead of running the hooks.
    pub allow_input_required: bool,
    /// What to do when the connection is lost before the response, at most
    /// [`crate::limits::MAX_LOST_STREAM_RETRIES`] times.
    pub retry: RetryPolicy,
    /// Filled in with what the client found out.
    pub diagnostics: Option<Arc<Mutex<Diagnostics>>>,
    /// How this request uses the client's result cache.
    pub cache_mode: super::CacheMode,
    /// Who the request is sent for when not this client: a gateway that
    /// sends for several users stamps each request with its user's client
    /// info and capabilities (2026-07-28 carries both in every request's
    /// `_meta`). `None`: the client's own.
    pub on_behalf_of: Option<Arc<ClientIdentity>>,
    /// Answers the server's own requests that come on this request's stream
    /// (a 2025-11-25 server over Streamable HTTP asks while it handles the
    /// request), checked against `on_behalf_of`'s capabilities when set:
    /// a gateway answers each user's server requests through that user.
    /// `None`: the client's hooks.
    pub hooks: Option<InputHooks>,
    /// Whether the request declares the Tasks extension whatever the
    /// client's capabilities say: set by the methods whose caller uses
    /// tasks (`tasks/*`, `call_tool_or_task`, a listen for task ids).
    #[cfg(feature = "tasks")]
    pub(crate) uses_tasks: bool,
}

crate::setters::with_setters! {
    RequestOptions {
        some with_timeout => timeout: Duration,
        some with_max_total_timeout => max_total_timeout: Duration,
        some with_cancel => cancel: CancellationToken,
        some with_on_progress => on_progress: ProgressCallback,
        some with_on_log => on_log: LogCallback,
        some with_on_notification => on_notification: NotificationCallback,
        value with_inline_notifications => inline_notifications: bool,
        some with_log_level => log_level: LoggingLevel,
        value with_meta => meta: Map<String, Value>,
        value with_allow_input_required => allow_input_required: bool,
        value with_retry => retry: RetryPolicy,
        some with_diagnostics => diagnostics: Arc<Mutex<Diagnostics>>,
        value with_cache_mode => cache_mode: super::CacheMode,
        some with_on_behalf_of => on_behalf_of: Arc<ClientIdentity>,
        some with_hooks => hooks: InputHooks,
    }
}

/// The client info and capabilities a request is stamped with. It does not
/// change once made: its JSON is made once, at its first request.
#[derive(Debug, Clone)]
pub struct ClientIdentity {
    info: Implementation,
    capabilities: ClientCapabilities,
    stamp: super::stamps::StampCell,
}

impl ClientIdentity {
    /// The identity of a client with this info and these capabilities.
    pub fn new(info: Implementation, capabilities: ClientCapabilities) -> Self {
        ClientIdentity { info, capabilities, stamp: Default::default() }
    }

    /// Name and version.
    pub fn info(&self) -> &Implementation {
        &self.info
    }

    /// What that client can do.
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }

    /// Its `_meta` entries as JSON.
    pub(crate) fn stamp(&self) -> crate::Result<&super::stamps::Stamp> {
        self.stamp.get(&self.info, &self.capabilities)
    }
}

impl PartialEq for ClientIdentity {
    fn eq(&self, other: &Self) -> bool {
        self.info == other.info && self.capabilities == other.capabilities
    }
}

impl std::fmt::Debug for RequestOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestOptions")
            .field("timeout", &self.timeout)
            .field("inline_notifications", &self.inline_notifications)
            .field("log_level", &self.log_level)
            .field("allow_input_required", &self.allow_input_required)
            .finish_non_exhaustive()
    }
}

impl RequestOptions {
    /// These options for a request whose caller uses tasks.
    #[cfg(feature = "tasks")]
    pub(crate) fn using_tasks(&self) -> RequestOptions {
        RequestOptions { uses_tasks: true, ..self.clone() }
    }

    pub(crate) fn diagnose(&self, f: impl FnOnce(&mut Diagnostics)) {
        if let Some(d) = &self.diagnostics {
            f(&mut d.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }
}

/// Hands a request's notifications to its callbacks, with the progress
/// rate limit applied.
pub(crate) struct Callbacks {
    on_progress: Option<ProgressCallback>,
    on_log: Option<LogCallback>,
    on_notification: Option<NotificationCallback>,
    window: Mutex<(Instant, u32)>,
}

impl Callbacks {
    /// The callbacks of one request. A notification other than progress
    /// and log messages goes to the request's `on_notification`, else to the
    /// client's (as the client guide says); progress and log messages
    /// without their callback are dropped.
    pub(crate) fn new(options: &RequestOptions, client_level: Option<&NotificationCallback>) -> Self {
        Callbacks {
            on_progress: options.on_progress.clone(),
            on_log: options.on_log.clone(),
            on_notification: options.on_notification.clone().or_else(|| client_level.cloned()),
            window: Mutex::new((Instant::now(), 0)),
        }
    }

    fn progress_allowed(&self) -> bool {
        let mut window = self.window.lock().unwrap_or_else(|e| e.into_inner());
        if window.0.elapsed() >= Duration::from_secs(1) {
            *window = (Instant::now(), 0);
        }
        window.1 += 1;
        window.1 <= MAX_PROGRESS_RATE_PER_S
    }

    pub(crate) fn deliver(&self, n: &JsonRpcNotification) {
        let params = n.params.clone().unwrap_or(Value::Null);
        match n.method.as_str() {
            NotificationsProgress::NAME if self.on_progress.is_some() => {
                if let (Some(cb), Ok(p)) = (&self.on_progress, serde_json::from_value(params))
                    && self.progress_allowed()
                {
                    cb(&p);
                }
            }
            NotificationsMessage::NAME if self.on_log.is_some() => {
                if let (Some(cb), Ok(p)) = (&self.on_log, serde_json::from_value(params)) {
                    cb(&p);
                }
            }
            NotificationsProgress::NAME | NotificationsMessage::NAME => {}
            _ => {
                if let Some(cb) = &self.on_notification {
                    cb(n);
                }
            }
        }
    }
}

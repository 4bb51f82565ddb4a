//! The legacy stdio server for one client connection: the lifecycle, the
//! reader, one task (slot) per admitted request, the single writer of
//! stdout, the watcher of the upstream, and the two ways to end (end of
//! input, loss of the upstream).
//!
//! ```text
//!  stdin ─▶ reader (never waits for a slot) ─┬─ answers itself: ping, setLevel,
//!                                            │  server/discover, bad lines, lifecycle
//!                                            └─▶ slot task ─▶ Upstream ─▶ child
//!  stdout ◀── writer task ◀── every frame (one line each, never interleaved)
//! ```
//!
//! Lifecycle: `awaiting_initialize` → (first initialize) `initializing` →
//! (discover result) `ready`; a failed initialize goes back to
//! `awaiting_initialize`; the end of input or the loss of the upstream goes
//! to `closing`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_protocol::types::{
    ClientCapabilities, InputRequest, InputRequests, InputResponse, InputResponses, LoggingLevel,
    LoggingMessageNotificationParams, ProgressNotificationParams,
};
use mcp_protocol::{
    ErrorObject, Frame, JsonRpcErrorResponse, JsonRpcNotification, JsonRpcRequest, JsonRpcResultResponse, Message,
    RequestId, ShapeRule, decode_message,
};
use mcp_sdk::RequestOptions;
use mcp_sdk::transport::lines::{FrameReader, finish_writer, write_lines};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::input;
use crate::legacy::{self, NotificationClass, RequestClass};
use crate::notify::{self, Declared, Listener};
use crate::profile::Profile;
use crate::translate::{self, Cause, ReplyMask, error_for};
use crate::upstream::{Upstream, UpstreamConfig, describe_exit};

/// Frames queued for the writer before senders wait.
const OUTPUT_QUEUE: usize = 1024;

/// Time limits of forwarded requests, by method.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    /// The list requests and `completion/complete`.
    pub list: Duration,
    /// `prompts/get` and `resources/read`.
    pub read: Duration,
    /// `tools/call`: long, because tools can be; the client's cancel is the
    /// outer limit.
    pub call: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts { list: Duration::from_secs(120), read: Duration::from_secs(120), call: Duration::from_secs(3600) }
    }
}

impl Timeouts {
    fn for_method(&self, method: &str) -> Duration {
        match method {
            "tools/call" => self.call,
            "prompts/get" | "resources/read" => self.read,
            _ => self.list,
        }
    }
}

/// How a front end behaves.
#[derive(Debug, Clone)]
pub struct FrontendOptions {
    /// The client family.
    pub profile: &'static Profile,
    /// Longest line accepted from the client.
    pub max_line_bytes: usize,
    /// Deepest nesting accepted from the client.
    pub max_depth: usize,
    /// Requests handled at once; one more is answered -32603 at once.
    pub max_in_flight: usize,
    /// Time limit of `server/discover` at initialize.
    pub discover_timeout: Duration,
    /// Time the requests in flight get at the end.
    pub shutdown_grace: Duration,
    /// Time limits of forwarded requests.
    pub timeouts: Timeouts,
    /// Time the client gets to answer one round of input requests.
    pub input_timeout: Duration,
}

impl Default for FrontendOptions {
    fn default() -> Self {
        FrontendOptions {
            profile: &crate::profile::VSCODE,
            max_line_bytes: mcp_protocol::DEFAULT_MAX_LINE_BYTES,
            max_depth: mcp_protocol::CLIENT_MAX_DEPTH,
            max_in_flight: 256,
            discover_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(2),
            timeouts: Timeouts::default(),
            input_timeout: Duration::from_secs(3600),
        }
    }
}

/// Calls the front end makes to its host (the executable).
#[derive(Default)]
pub struct Hooks {
    /// Called at the end of the input, before the shutdown waits: the
    /// executable starts its watchdog here.
    pub on_eof: Option<Box<dyn FnOnce() + Send>>,
    /// Called with the process id (and group id) of each upstream child
    /// started, so the watchdog can stop its group.
    pub on_upstream_started: Option<Arc<dyn Fn(u32) + Send + Sync>>,
    /// Called at the client's `notifications/initialized` with the way to
    /// ask the client to let the user sign in (a URL elicitation), or
    /// `None` when the client cannot show one: the sign-in gate takes it.
    pub on_initialized: Option<OnInitialized>,
}

/// Receives the way to ask the client about a sign-in (see [`Hooks`]).
pub type OnInitialized = Box<dyn FnOnce(Option<crate::signin::Consent>) + Send>;

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("on_eof", &self.on_eof.is_some())
            .field("on_upstream_started", &self.on_upstream_started.is_some())
            .field("on_initialized", &self.on_initialized.is_some())
            .finish()
    }
}

/// How a front end ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome {
    /// The client closed its input (exit code 0).
    Eof,
    /// The upstream server was lost (exit code 1).
    UpstreamExited,
}

/// One input request of a round, sent to the client, waiting for its answer.
struct Waiting {
    /// The upstream's key of the input request.
    key: String,
    /// The bridge's id of the request to the client (`b-<n>`).
    id: String,
    request: InputRequest,
    answer: oneshot::Receiver<Result<Value, String>>,
}

/// The lifecycle state.
enum Lifecycle {
    AwaitingInitialize,
    Initializing,
    Ready(Upstream),
    Closing,
}

struct Frontend {
    options: FrontendOptions,
    config: UpstreamConfig,
    lifecycle: Mutex<Lifecycle>,
    out: mpsc::Sender<Message>,
    /// Client requests in flight, by id, with their cancel tokens.
    slots: Mutex<HashMap<RequestId, CancellationToken>>,
    tasks: TaskTracker,
    /// Parent of every slot's token.
    stop_slots: CancellationToken,
    /// The level of the last `logging/setLevel`.
    log_level: Arc<Mutex<Option<LoggingLevel>>>,
    /// Fired when the upstream is lost.
    lost: CancellationToken,
    on_upstream_started: Option<Arc<dyn Fn(u32) + Send + Sync>>,
    /// The capabilities the client declared in `initialize`.
    client_capabilities: Mutex<ClientCapabilities>,
    /// The bridge's own requests to the client (`b-1`, ...) waiting for
    /// their answer, by id.
    pending: Mutex<HashMap<String, oneshot::Sender<Result<Value, String>>>>,
    /// The number of the last `b-` id.
    last_input_id: AtomicU64,
    /// What the initialize result declared about change notifications.
    declared: Mutex<Declared>,
    /// The listen stream's owner, once started.
    listener: Mutex<Option<Listener>>,
    /// Taken at the first `notifications/initialized`.
    on_initialized: Mutex<Option<OnInitialized>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Serves one legacy client on `input`/`output` in front of the upstream of
/// `config`, until the input ends or the upstream is lost.
///
/// # Errors
/// An I/O error of the input or the output.
pub async fn run<R, W>(
    input: R,
    output: W,
    config: UpstreamConfig,
    options: FrontendOptions,
    mut hooks: Hooks,
) -> std::io::Result<RunOutcome>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, mut rx) = mpsc::channel(OUTPUT_QUEUE);
    let stop_writer = CancellationToken::new();
    let writer_stop = stop_writer.clone();
    let writer = tokio::spawn(async move { write_lines(output, &mut rx, writer_stop).await });
    let frontend = Arc::new(Frontend {
        options: options.clone(),
        config,
        lifecycle: Mutex::new(Lifecycle::AwaitingInitialize),
        out,
        slots: Mutex::default(),
        tasks: TaskTracker::new(),
        stop_slots: CancellationToken::new(),
        log_level: Arc::default(),
        lost: CancellationToken::new(),
        on_upstream_started: hooks.on_upstream_started.clone(),
        client_capabilities: Mutex::default(),
        pending: Mutex::default(),
        last_input_id: AtomicU64::new(0),
        declared: Mutex::default(),
        listener: Mutex::default(),
        on_initialized: Mutex::new(hooks.on_initialized.take()),
    });
    let mut reader = FrameReader::new(input, options.max_line_bytes);

    let outcome = loop {
        let frame = tokio::select! {
            frame = reader.next() => frame,
            _ = frontend.lost.cancelled() => break RunOutcome::UpstreamExited,
        };
        match frame {
            Ok(Some(frame)) => frontend.handle_frame(frame).await,
            Ok(None) => break RunOutcome::Eof,
            Err(e) => {
                tracing::warn!("reading stdin failed: {e}");
                break RunOutcome::Eof;
            }
        }
    };

    let upstream = std::mem::replace(&mut *lock(&frontend.lifecycle), Lifecycle::Closing);
    if let Some(listener) = lock(&frontend.listener).take() {
        listener.stop();
    }
    match outcome {
        RunOutcome::Eof => {
            tracing::debug!("end of input; shutting down");
            if let Some(on_eof) = hooks.on_eof.take() {
                on_eof();
            }
            frontend.cancel_all();
            frontend.wait_slots().await;
        }
        RunOutcome::UpstreamExited => {
            frontend.answer_all(Cause::UpstreamExited);
            // The reader keeps answering -32603 until the output closes.
            tokio::select! {
                _ = frontend.wait_slots() => {}
                _ = async {
                    while let Ok(Some(frame)) = reader.next().await {
                        frontend.handle_frame(frame).await;
                    }
                    std::future::pending::<()>().await
                } => {}
            }
        }
    }
    drop(reader);
    // The writer ends when the last sender (held by the front end) is gone.
    drop(frontend);
    let written = finish_writer(writer, stop_writer, options.shutdown_grace).await;
    if let Lifecycle::Ready(upstream) = upstream {
        upstream.close().await;
    }
    written?;
    Ok(outcome)
}

impl Frontend {
    async fn send(&self, message: Message) {
        // A closed writer means the client is gone; nothing to tell it.
        let _ = self.out.send(message).await;
    }

    async fn reply(&self, id: RequestId, result: Value) {
        self.send(Message::Result(JsonRpcResultResponse::new(id, result))).await;
    }

    async fn fail(&self, id: Option<RequestId>, error: ErrorObject) {
        self.send(Message::Error(JsonRpcErrorResponse::new(id, error))).await;
    }

    async fn fail_with(&self, id: Option<RequestId>, cause: Cause, detail: Option<Value>) {
        self.fail(id, error_for(cause, detail)).await;
    }

    async fn handle_frame(self: &Arc<Self>, frame: Frame) {
        let line = match frame {
            Frame::Line(line) => line,
            Frame::TooLong(line) => {
                let detail = json!(self.options.max_line_bytes);
                return self.fail_with(line.recover_id(), Cause::LineTooLong, Some(detail)).await;
            }
        };
        match decode_message(&line, self.options.max_depth) {
            Ok(Message::Request(request)) => self.handle_request(request).await,
            Ok(Message::Notification(n)) => self.handle_notification(n),
            Ok(Message::Result(r)) => self.resolve_input(&r.id, Ok(r.result)),
            Ok(Message::Error(e)) => match e.id {
                Some(id) => self.resolve_input(&id, Err(format!("the client answered with error {}", e.error.code))),
                None => tracing::debug!("an error response without id from the client; dropped"),
            },
            Err(mcp_protocol::DecodeError::InvalidShape { rule: ShapeRule::ResponseIdType, .. }) => {
                tracing::debug!("a response with an id that is not a string or an integer; dropped");
            }
            Err(e) => {
                let id = e.reply_id(&line);
                // A bad line with the id of a request of the bridge is an
                // answer that is not valid, not a request to answer.
                if let Some(id) = id.as_ref().filter(|id| self.is_input_id(id)) {
                    return self.resolve_input(id, Err("the answer is not valid JSON-RPC".into()));
                }
                let (cause, detail) = translate::errors::cause_of_decode_error(&e);
                self.fail_with(id, cause, detail).await;
            }
        }
    }

    /// The listener, started on first use when the upstream is ready and the
    /// initialize result declared change notifications.
    fn listener(&self) -> Option<Listener> {
        let declared = *lock(&self.declared);
        let Lifecycle::Ready(upstream) = &*lock(&self.lifecycle) else { return None };
        if !declared.any() {
            return None;
        }
        let mut listener = lock(&self.listener);
        Some(
            listener
                .get_or_insert_with(|| {
                    notify::start(upstream.clone(), declared, self.out.clone(), self.log_level.clone())
                })
                .clone(),
        )
    }

    async fn change_subscription(self: Arc<Self>, request: JsonRpcRequest, token: CancellationToken) {
        let method =
            if request.method == "resources/subscribe" { "resources/subscribe" } else { "resources/unsubscribe" };
        let outcome = match legacy::parse_subscription(method, request.params.as_ref()) {
            Err(e) => Err(error_for(Cause::InvalidParams, Some(json!(e.to_string())))),
            Ok(uri) => match self.listener() {
                None => Err(error_for(Cause::MethodNotFound, None)),
                Some(listener) => {
                    let change = async {
                        if method == "resources/subscribe" {
                            listener.subscribe(uri).await
                        } else {
                            listener.unsubscribe(uri).await
                        }
                    };
                    tokio::select! {
                        outcome = change => outcome.map(|()| json!({})),
                        _ = token.cancelled() => return,
                    }
                }
            },
        };
        self.respond(request.id, outcome).await;
    }

    fn is_input_id(&self, id: &RequestId) -> bool {
        matches!(id, RequestId::String(s) if s.starts_with(self.options.profile.request_id_prefix))
    }

    /// Resolves an answer of the client to a `b-` request at once; any
    /// other response (numeric, unknown, late or second answer) is dropped.
    fn resolve_input(&self, id: &RequestId, answer: Result<Value, String>) {
        let waiting = match id {
            RequestId::String(s) if self.is_input_id(id) => lock(&self.pending).remove(s),
            _ => None,
        };
        match waiting {
            Some(tx) => {
                let _ = tx.send(answer);
            }
            None => tracing::debug!(%id, "a response that answers no request of the bridge; dropped"),
        }
    }

    fn handle_notification(self: &Arc<Self>, n: JsonRpcNotification) {
        match legacy::classify_notification(&n.method) {
            NotificationClass::Initialized => {
                self.listener();
                self.offer_consent();
            }
            NotificationClass::Cancelled => {
                if let Some(id) = legacy::cancelled_request_id(n.params.as_ref())
                    && let Some(token) = lock(&self.slots).get(&id)
                {
                    token.cancel();
                }
            }
            NotificationClass::RootsListChanged | NotificationClass::Other => {
                tracing::debug!(method = %n.method, "notification noted");
            }
        }
    }

    /// Gives the sign-in gate a way to ask the client, when the client
    /// declared URL elicitations: an `elicitation/create` in URL mode with
    /// the authorization URL, answered within the input time limit.
    fn offer_consent(self: &Arc<Self>) {
        let Some(hook) = lock(&self.on_initialized).take() else { return };
        let can_ask = lock(&self.client_capabilities).elicitation.as_ref().is_some_and(|e| e.supports_url());
        if !can_ask {
            hook(None);
            return;
        }
        // Weak: the consent lives in the upstream's OAuth client, which the
        // front end owns.
        let frontend = Arc::downgrade(self);
        hook(Some(Arc::new(move |url: String| {
            let frontend = frontend.clone();
            Box::pin(async move {
                let frontend = frontend.upgrade().ok_or("the client is gone")?;
                let request = input::url_consent_request(&url).map_err(|e| e.to_string())?;
                let token = frontend.stop_slots.child_token();
                let answers = frontend
                    .run_round(InputRequests::from([("sign_in".to_owned(), request)]), &token)
                    .await
                    .map_err(|_| "the client did not answer the sign-in request".to_owned())?;
                Ok(matches!(
                    answers.get("sign_in"),
                    Some(InputResponse::Elicit(answer)) if answer.action == mcp_protocol::types::ElicitAction::Accept
                ))
            })
        })));
    }

    async fn handle_request(self: &Arc<Self>, request: JsonRpcRequest) {
        let id = request.id.clone();
        let class = legacy::classify_request(&request.method);
        match class {
            RequestClass::Ping => return self.reply(id, json!({})).await,
            RequestClass::SetLevel => {
                return match legacy::parse_set_level(request.params.as_ref()) {
                    Ok(level) => {
                        *lock(&self.log_level) = Some(level);
                        self.reply(id, json!({})).await
                    }
                    Err(e) => self.fail_with(Some(id), Cause::InvalidParams, Some(json!(e.to_string()))).await,
                };
            }
            RequestClass::Discover => return self.fail_with(Some(id), Cause::MethodNotFound, None).await,
            _ => {}
        }
        enum Next {
            Answer(Cause, Option<Value>),
            Initialize,
            Forward(Upstream),
            Subscription,
        }
        let next = {
            let mut lifecycle = lock(&self.lifecycle);
            match (&*lifecycle, class) {
                (Lifecycle::AwaitingInitialize, RequestClass::Initialize) => {
                    *lifecycle = Lifecycle::Initializing;
                    Next::Initialize
                }
                (Lifecycle::Initializing | Lifecycle::Ready(_), RequestClass::Initialize) => {
                    Next::Answer(Cause::AlreadyInitialized, None)
                }
                (Lifecycle::AwaitingInitialize | Lifecycle::Initializing, _) => {
                    if legacy::has_modern_meta(request.params.as_ref()) {
                        Next::Answer(
                            Cause::MethodNotFound,
                            Some(json!("this server speaks 2025-11-25; send initialize")),
                        )
                    } else {
                        Next::Answer(Cause::NotInitialized, None)
                    }
                }
                (Lifecycle::Closing, _) => Next::Answer(Cause::UpstreamExited, None),
                (Lifecycle::Ready(upstream), RequestClass::Forward) => Next::Forward(upstream.clone()),
                (Lifecycle::Ready(_), RequestClass::Subscribe | RequestClass::Unsubscribe) => {
                    if lock(&self.declared).subscribe {
                        Next::Subscription
                    } else {
                        Next::Answer(Cause::MethodNotFound, Some(json!("the server has no resource subscriptions")))
                    }
                }
                (Lifecycle::Ready(_), _) => Next::Answer(Cause::MethodNotFound, None),
            }
        };
        match next {
            Next::Answer(cause, detail) => self.fail_with(Some(id), cause, detail).await,
            Next::Initialize => {
                self.admit(request, |frontend, request, token| frontend.initialize(request, token)).await
            }
            Next::Forward(upstream) => {
                self.admit(request, move |frontend, request, token| frontend.forward(upstream, request, token)).await
            }
            Next::Subscription => {
                self.admit(request, |frontend, request, token| frontend.change_subscription(request, token)).await
            }
        }
    }

    /// Starts a slot for the request, or answers at once when the limit is
    /// reached (the reader never waits for a slot).
    async fn admit<F, Fut>(self: &Arc<Self>, request: JsonRpcRequest, work: F)
    where
        F: FnOnce(Arc<Frontend>, JsonRpcRequest, CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (id, is_initialize) = (request.id.clone(), request.method == "initialize");
        let refused = {
            let mut slots = lock(&self.slots);
            if slots.len() >= self.options.max_in_flight {
                Some((Cause::TooManyRequests, Some(json!(self.options.max_in_flight))))
            } else if slots.contains_key(&id) {
                Some((Cause::InvalidRequestShape, Some(json!("the id is already in flight"))))
            } else {
                let token = self.stop_slots.child_token();
                slots.insert(id.clone(), token.clone());
                self.tasks.spawn(work(self.clone(), request, token));
                None
            }
        };
        if let Some((cause, detail)) = refused {
            if is_initialize {
                *lock(&self.lifecycle) = Lifecycle::AwaitingInitialize;
            }
            self.fail_with(Some(id), cause, detail).await;
        }
    }

    /// Writes a slot's response, once, unless it was cancelled or already
    /// answered (by the loss of the upstream).
    async fn respond(&self, id: RequestId, outcome: Result<Value, ErrorObject>) {
        let live = match lock(&self.slots).remove(&id) {
            Some(token) => !token.is_cancelled(),
            None => false,
        };
        if live {
            match outcome {
                Ok(result) => self.reply(id, result).await,
                Err(error) => self.fail(Some(id), error).await,
            }
        }
    }

    async fn initialize(self: Arc<Self>, request: JsonRpcRequest, token: CancellationToken) {
        let id = request.id.clone();
        let outcome = tokio::select! {
            outcome = self.start_upstream(&request) => outcome,
            _ = token.cancelled() => Err(None),
        };
        match outcome {
            Ok((upstream, result)) => {
                let lost_upstream = upstream.clone();
                *lock(&self.lifecycle) = Lifecycle::Ready(upstream);
                let frontend = self.clone();
                // The watcher ends with the slots, so it never keeps the
                // writer open after the end of the input.
                self.tasks.spawn(async move {
                    let status = tokio::select! {
                        status = lost_upstream.lost() => status,
                        _ = frontend.stop_slots.cancelled() => return,
                    };
                    if matches!(*lock(&frontend.lifecycle), Lifecycle::Ready(_)) {
                        tracing::warn!("the MCP server stopped with {}", describe_exit(status));
                        frontend.lost.cancel();
                    }
                });
                self.respond(id, Ok(result)).await;
            }
            Err(error) => {
                *lock(&self.lifecycle) = Lifecycle::AwaitingInitialize;
                match error {
                    Some(error) => self.respond(id, Err(error)).await,
                    None => {
                        lock(&self.slots).remove(&id);
                    }
                }
            }
        }
    }

    /// Starts the upstream and asks it `server/discover`; stops it again on
    /// failure. `Err(None)` never comes from here (cancellation is the
    /// caller's).
    async fn start_upstream(&self, request: &JsonRpcRequest) -> Result<(Upstream, Value), Option<ErrorObject>> {
        let params = legacy::parse_initialize(request.params.as_ref())
            .map_err(|e| Some(error_for(Cause::InvalidParams, Some(json!(e.to_string())))))?;
        let out = self.out.clone();
        let log_level = self.log_level.clone();
        let on_unrouted: crate::upstream::OnUnrouted = Arc::new(move |n: &JsonRpcNotification| {
            forward_log(&out, &log_level, n);
        });
        let upstream_capabilities = input::upstream_capabilities(&params.capabilities);
        *lock(&self.client_capabilities) = params.capabilities;
        let upstream = Upstream::connect(&self.config, params.client_info, upstream_capabilities, on_unrouted)
            .map_err(|e| {
                tracing::error!("cannot start the MCP server: {e}");
                let cause = match self.config {
                    crate::upstream::UpstreamConfig::Http(_) => Cause::ConnectFailed,
                    _ => Cause::SpawnFailed,
                };
                Some(error_for(cause, None))
            })?;
        if let (Some(pid), Some(hook)) = (upstream.process_id(), &self.on_upstream_started) {
            hook(pid);
        }
        let limit = self.options.discover_timeout;
        match upstream.discover(limit).await {
            Ok(discover) => {
                let mask = ReplyMask { list_changed: true, subscribe: true };
                let result = translate::initialize_result(self.options.profile, &discover, mask);
                let caps = &result.capabilities;
                let on = |v: Option<bool>| v == Some(true);
                *lock(&self.declared) = Declared {
                    tools: on(caps.tools.as_ref().and_then(|c| c.list_changed)),
                    prompts: on(caps.prompts.as_ref().and_then(|c| c.list_changed)),
                    resources: on(caps.resources.as_ref().and_then(|c| c.list_changed)),
                    subscribe: on(caps.resources.as_ref().and_then(|c| c.subscribe)),
                };
                let value = serde_json::to_value(result)
                    .map_err(|e| Some(error_for(Cause::InvalidResponse, Some(json!(e.to_string())))))?;
                Ok((upstream, value))
            }
            Err(failed) => {
                tracing::warn!("server/discover failed: {}", failed.error);
                upstream.close().await;
                let error = match failed.error {
                    _ if failed.sign_in.is_some() || matches!(failed.http_status, Some(401 | 403)) => {
                        translate::errors::error_of_failed(&failed, "server/discover")
                            .unwrap_or_else(|| error_for(Cause::DiscoverFailed, None))
                    }
                    mcp_sdk::Error::Rpc { error } => {
                        let mut error = translate::upstream_error(&error);
                        error.data = Some(json!({ "cause": "discover_failed", "detail": error.message }));
                        error
                    }
                    mcp_sdk::Error::Timeout { .. } => {
                        error_for(Cause::DiscoverFailed, Some(json!({ "timeout_ms": limit.as_millis() })))
                    }
                    // Not discover's own failure: the cause of the SDK's error
                    // (upstream_exited, closed, transport_failed, ...).
                    _ => translate::errors::error_of_failed(&failed, "server/discover")
                        .unwrap_or_else(|| error_for(Cause::Closed, None)),
                };
                Err(Some(error))
            }
        }
    }

    async fn forward(self: Arc<Self>, upstream: Upstream, request: JsonRpcRequest, token: CancellationToken) {
        let method = request.method.clone();
        let forwarded = translate::forward_params(self.options.profile, request.params.as_ref());
        let limit = self.options.timeouts.for_method(&method);
        let on_progress = forwarded.progress_token.clone().map(|client_token| {
            let out = self.out.clone();
            let callback: mcp_sdk::client::ProgressCallback = Arc::new(move |p: &ProgressNotificationParams| {
                let mut params = p.clone();
                params.progress_token = client_token.clone();
                params.meta = None;
                let n = JsonRpcNotification::new("notifications/progress", serde_json::to_value(params).ok());
                if out.try_send(Message::Notification(n)).is_err() {
                    tracing::debug!("output queue full; a progress notification was dropped");
                }
            });
            callback
        });
        // Over HTTP the upstream's log messages come on the request's own
        // stream; they reach the client at its level, as on stdio.
        let (out, level) = (self.out.clone(), self.log_level.clone());
        let on_log: mcp_sdk::client::LogCallback = Arc::new(move |message: &LoggingMessageNotificationParams| {
            if let Ok(params) = serde_json::to_value(message) {
                forward_log(&out, &level, &JsonRpcNotification::new("notifications/message", Some(params)));
            }
        });
        let options = RequestOptions {
            timeout: Some(limit),
            max_total_timeout: Some(limit),
            cancel: Some(token.clone()),
            on_log: Some(on_log),
            log_level: *lock(&self.log_level),
            meta: forwarded.meta,
            on_progress,
            allow_input_required: true,
            ..Default::default()
        };
        let id = request.id;
        let work = self.run_rounds(&upstream, &id, &method, forwarded.params, &options, &token);
        match crate::watch::watched(crate::watch::Forwarded { id: &id, method: &method }, work).await {
            Some(outcome) => self.respond(id, outcome).await,
            None => {
                lock(&self.slots).remove(&id);
            }
        }
    }

    /// Sends a forwarded request and answers its input rounds through the
    /// client, at most [`input::MAX_ROUNDS`] of them. `None` means no
    /// response (cancelled).
    async fn run_rounds(
        &self,
        upstream: &Upstream,
        client_id: &RequestId,
        method: &str,
        mut params: serde_json::Map<String, Value>,
        options: &RequestOptions,
        token: &CancellationToken,
    ) -> Option<Result<Value, ErrorObject>> {
        let mut sent_state = false;
        for round in 0..=input::MAX_ROUNDS {
            let sent_at = std::time::Instant::now();
            let exchanged = upstream.request(method, params.clone(), options).await;
            trace_exchange(client_id, round, method, &exchanged, sent_at.elapsed());
            let value = match exchanged {
                Ok(value) => value,
                Err(crate::upstream::Failed { error: mcp_sdk::Error::Rpc { error }, .. })
                    if sent_state && error.code == mcp_protocol::error_code::INVALID_PARAMS =>
                {
                    return Some(state_refused(method, error));
                }
                Err(failed) => return translate::errors::error_of_failed(&failed, method).map(Err),
            };
            if value.get("resultType").and_then(Value::as_str) != Some("input_required") {
                return Some(Ok(translate::shape_result(method, value, upstream.origin())));
            }
            if round == input::MAX_ROUNDS {
                break;
            }
            let needed: mcp_protocol::types::InputRequiredResult = match serde_json::from_value(value) {
                Ok(needed) => needed,
                Err(e) => return Some(Err(error_for(Cause::InvalidResponse, Some(json!(e.to_string()))))),
            };
            let requests = needed.input_requests.unwrap_or_default();
            let declared = lock(&self.client_capabilities).clone();
            if let Err(refused) = input::check_round(&requests, &declared) {
                return Some(Err(error_for(refused.cause, Some(refused.detail))));
            }
            let answers = match self.run_round(requests, token).await {
                Ok(answers) => answers,
                Err(end) => return end.map(Err),
            };
            params.remove("inputResponses");
            params.remove("requestState");
            if !answers.is_empty() {
                params.insert("inputResponses".into(), serde_json::to_value(&answers).unwrap_or(Value::Null));
            }
            sent_state = needed.request_state.is_some();
            if let Some(state) = needed.request_state {
                params.insert("requestState".into(), json!(state));
            }
        }
        Some(Err(error_for(Cause::TooManyRounds, Some(json!(input::MAX_ROUNDS)))))
    }

    /// Sends one round of input requests to the client, all registered
    /// before the first goes out, and waits for every answer. `Err(None)`:
    /// cancelled (no response); `Err(Some(_))`: the error for the client.
    async fn run_round(
        &self,
        requests: InputRequests,
        token: &CancellationToken,
    ) -> Result<InputResponses, Option<ErrorObject>> {
        let prefix = self.options.profile.request_id_prefix;
        let mut waiting: Vec<Waiting> = Vec::new();
        {
            let mut pending = lock(&self.pending);
            for (key, request) in requests {
                let id = format!("{prefix}{}", self.last_input_id.fetch_add(1, Ordering::Relaxed) + 1);
                let (tx, answer) = oneshot::channel();
                pending.insert(id.clone(), tx);
                waiting.push(Waiting { key, id, request, answer });
            }
        }
        for w in &waiting {
            let (method, params) = input::client_request(&w.request);
            self.send(Message::Request(JsonRpcRequest::new(RequestId::String(w.id.clone()), method, params))).await;
        }
        let ids: Vec<String> = waiting.iter().map(|w| w.id.clone()).collect();
        let deadline = tokio::time::sleep(self.options.input_timeout);
        tokio::pin!(deadline);
        let mut answers = InputResponses::new();
        for Waiting { key, request, answer: rx, .. } in waiting {
            let answer = tokio::select! {
                answer = rx => answer,
                _ = token.cancelled() => {
                    self.abandon(&ids).await;
                    return Err(None);
                }
                _ = &mut deadline => {
                    self.abandon(&ids).await;
                    let limit = self.options.input_timeout.as_millis();
                    return Err(Some(error_for(Cause::InputTimeout, Some(json!({ "key": key, "timeout_ms": limit })))));
                }
            };
            let checked = match answer {
                Ok(Ok(value)) => input::check_answer(&key, &request, value),
                Ok(Err(reason)) => Err(reason),
                Err(_) => Err("no answer".into()),
            };
            match checked {
                Ok(response) => {
                    answers.insert(key, response);
                }
                Err(reason) => {
                    self.abandon(&ids).await;
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
    async fn abandon(&self, ids: &[String]) {
        let unanswered: Vec<String> = {
            let mut pending = lock(&self.pending);
            ids.iter().filter(|id| pending.remove(*id).is_some()).cloned().collect()
        };
        for id in unanswered {
            let params = json!({ "requestId": id, "reason": "the request it belonged to ended" });
            self.send(Message::Notification(JsonRpcNotification::new("notifications/cancelled", Some(params)))).await;
        }
    }

    /// Cancels every slot; none of them answers.
    fn cancel_all(&self) {
        for (_, token) in lock(&self.slots).drain() {
            token.cancel();
        }
        self.stop_slots.cancel();
    }

    /// Answers every slot with `cause`, then cancels it.
    fn answer_all(&self, cause: Cause) {
        let slots: Vec<(RequestId, CancellationToken)> = lock(&self.slots).drain().collect();
        for (id, token) in slots {
            let error = error_for(cause, None);
            if self.out.try_send(Message::Error(JsonRpcErrorResponse::new(Some(id), error))).is_err() {
                tracing::debug!("output queue full; an error response was dropped");
            }
            token.cancel();
        }
        self.stop_slots.cancel();
    }

    /// Waits for the slots to end, at most the grace period.
    async fn wait_slots(&self) {
        self.tasks.close();
        if tokio::time::timeout(self.options.shutdown_grace, self.tasks.wait()).await.is_err() {
            tracing::debug!(left = self.tasks.len(), "slots still running after the grace period");
        }
    }
}

/// The answer when the upstream refuses the `requestState` of a round
/// (-32602 on a retry): a tool result the user can read for `tools/call`,
/// an error with that text for the other methods.
fn state_refused(method: &str, error: ErrorObject) -> Result<Value, ErrorObject> {
    const TEXT: &str =
        "The server did not accept the answers to its questions (they may have expired). Please try again.";
    if method == "tools/call" {
        Ok(json!({ "content": [{ "type": "text", "text": TEXT }], "isError": true }))
    } else {
        let mut refused = ErrorObject::new(error.code, TEXT);
        refused.data = error.data;
        Err(refused)
    }
}

/// The tracer's line for one exchange with the upstream (seed:
/// Diagnostics): the client's request id, the round, the method, the
/// outcome and the time it took.
fn trace_exchange(
    client_id: &RequestId,
    round: usize,
    method: &str,
    exchanged: &Result<Value, crate::upstream::Failed>,
    took: std::time::Duration,
) {
    let outcome = match exchanged {
        Ok(value) => value.get("resultType").and_then(Value::as_str).unwrap_or("complete").to_owned(),
        Err(failed) => format!("failed: {}", failed.error),
    };
    tracing::debug!("exchange: request {client_id} round {round} {method}: {outcome} in {} ms", took.as_millis());
}

/// Forwards an upstream log message to the client when it is at or above
/// the level of the last `logging/setLevel`.
fn forward_log(out: &mpsc::Sender<Message>, level: &Mutex<Option<LoggingLevel>>, n: &JsonRpcNotification) {
    if n.method != "notifications/message" {
        tracing::debug!(method = %n.method, "upstream notification for no request dropped");
        return;
    }
    let Some(params) = n.params.as_ref() else { return };
    let Ok(message_level) = serde_json::from_value::<LoggingLevel>(params["level"].clone()) else { return };
    let wanted = *lock(level);
    if wanted.is_some_and(|w| message_level >= w) {
        let mut params = params.clone();
        if let Some(obj) = params.as_object_mut() {
            obj.remove("_meta");
        }
        let forwarded = JsonRpcNotification::new("notifications/message", Some(params));
        if out.try_send(Message::Notification(forwarded)).is_err() {
            tracing::debug!("output queue full; a log message was dropped");
        }
    }
}

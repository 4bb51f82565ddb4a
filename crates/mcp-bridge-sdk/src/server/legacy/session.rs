//! The legacy (2025-11-25) side of the bridge for one client, at the level
//! of messages: decoded messages in, messages out on a channel, no lines
//! and no stdio. The stdio bridge ([`crate::server::legacy::frontend`]) puts its reader and
//! writer around it; the embedded bridge and HTTP sessions can too.
//!
//! One lock guards the session's state (`State`): it is never held across
//! an await, and nothing takes another lock while holding it (the client's
//! log level is an atomic cell, read by the upstream's callbacks).
//!
//! - this file: the lifecycle, the admission of requests (one task, a
//!   slot, per request) and the end;
//! - `start`: `initialize`: the upstream started and asked
//!   `server/discover`;
//! - `forward`: forwarded requests with their input rounds, log
//!   messages, subscriptions;
//! - `rounds`: the bridge's own requests to the client (`b-1`, ...).

mod forward;
mod rounds;
mod start;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mcp_bridge_protocol::method::{Initialize, Method};
use mcp_bridge_protocol::slots::{Kind, SlotRefusal, Slots};
use mcp_bridge_protocol::types::{ClientCapabilities, LoggingLevel};
use mcp_bridge_protocol::{
    DecodeError, ErrorObject, JsonRpcErrorResponse, JsonRpcNotification, JsonRpcRequest, JsonRpcResultResponse,
    Message, RequestId, ShapeRule,
};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::server::legacy::classify::{self, NotificationClass, RequestClass};
use crate::server::legacy::frontend::{FrontendOptions, OnInitialized};
use crate::server::legacy::notify::{Declared, Listener};
use crate::server::legacy::translate::{self, Cause, error_for};
use crate::server::legacy::upstream::{Upstream, UpstreamConfig};

/// The lifecycle state.
#[derive(Default)]
enum Lifecycle {
    #[default]
    AwaitingInitialize,
    Initializing,
    Ready(Upstream),
    Closing,
}

/// What the session keeps, under its one lock.
#[derive(Default)]
struct State {
    lifecycle: Lifecycle,
    /// Client requests in flight, by id, with their cancel tokens: the
    /// protocol crate's table, as the SDK server's.
    slots: Slots<CancellationToken>,
    /// The capabilities the client declared in `initialize`.
    client_capabilities: ClientCapabilities,
    /// The bridge's own requests to the client (`b-1`, ...) waiting for
    /// their answer, by id.
    pending: HashMap<String, oneshot::Sender<Result<Value, String>>>,
    /// What the initialize result declared about change notifications.
    declared: Declared,
    /// The listen stream's owner, once started.
    listener: Option<Listener>,
    /// Taken at the first `notifications/initialized`.
    on_initialized: Option<OnInitialized>,
    /// The client's info and the capabilities the upstream sees, stamped on
    /// every request (a shared upstream serves several clients).
    identity: Option<Arc<crate::client::ClientIdentity>>,
    /// What the upstream sends for no request, kept while the session lives
    /// (a shared upstream's fanout holds it weakly).
    unrouted: Option<crate::server::legacy::upstream::OnUnrouted>,
    /// The upstream speaks 2025-11-25: subscriptions and change
    /// notifications are its own, relayed.
    legacy_upstream: bool,
    /// A shared 2025-11-25 upstream's requests that come on the stream of
    /// one of this session's requests are relayed to this session's client,
    /// on that request's stream (over HTTP; its other requests belong to no
    /// session).
    relays_per_request: bool,
}

/// The level of the client's last `logging/setLevel`, read by the
/// upstream's callbacks without a lock.
#[derive(Debug, Default)]
pub(crate) struct ClientLogLevel(AtomicU8);

impl ClientLogLevel {
    const LEVELS: [LoggingLevel; 8] = [
        LoggingLevel::Debug,
        LoggingLevel::Info,
        LoggingLevel::Notice,
        LoggingLevel::Warning,
        LoggingLevel::Error,
        LoggingLevel::Critical,
        LoggingLevel::Alert,
        LoggingLevel::Emergency,
    ];

    /// The level, or `None` before the first `logging/setLevel`.
    pub(crate) fn get(&self) -> Option<LoggingLevel> {
        let stored = usize::from(self.0.load(Ordering::Relaxed));
        stored.checked_sub(1).and_then(|i| Self::LEVELS.get(i).copied())
    }

    fn set(&self, level: LoggingLevel) {
        let index = Self::LEVELS.iter().position(|l| *l == level).unwrap_or(0);
        self.0.store(u8::try_from(index + 1).unwrap_or(1), Ordering::Relaxed);
    }
}

/// A message for the client, with the client request it belongs to: the
/// response to it, its progress and log messages, the bridge's input
/// requests of its rounds and their cancellations. Change notifications
/// belong to none. A transport with one stream per request (HTTP) routes
/// by it; stdio writes the message.
#[derive(Debug)]
pub(crate) struct Outgoing {
    /// What is written.
    pub payload: Payload,
    /// The id of the client request it belongs to.
    pub related: Option<RequestId>,
}

/// What an [`Outgoing`] writes.
#[derive(Debug)]
pub(crate) enum Payload {
    /// A message.
    Message(Message),
    /// A response already made as its line (a result the upstream sent as
    /// a line, passed on without a tree); only for a host that writes
    /// lines.
    Line(mcp_bridge_protocol::SplicedLine),
}

impl Outgoing {
    /// A message that belongs to no request.
    pub(crate) fn unrelated(message: Message) -> Outgoing {
        Outgoing { payload: Payload::Message(message), related: None }
    }

    /// A message that belongs to the client request `id`.
    pub(crate) fn related(message: Message, id: &RequestId) -> Outgoing {
        Outgoing { payload: Payload::Message(message), related: Some(id.clone()) }
    }

    /// The message, read back from its line when it was written as one.
    pub(crate) fn into_message(self) -> Option<Message> {
        match self.payload {
            Payload::Message(message) => Some(message),
            // Only a host that writes lines gets lines (`SessionHooks::writes_lines`).
            Payload::Line(line) => {
                let mut bytes = Vec::with_capacity(line.len());
                line.append_to(&mut bytes);
                let message = mcp_bridge_protocol::decode_message(&bytes, usize::MAX);
                debug_assert!(message.is_ok(), "a host that reads messages got a line it cannot read");
                message.ok()
            }
        }
    }
}

impl crate::transport::lines::Outbound for Outgoing {
    fn append_line(&self, out: &mut Vec<u8>) {
        match &self.payload {
            Payload::Message(message) => mcp_bridge_protocol::append_message_line(out, message),
            Payload::Line(line) => line.append_to(out),
        }
    }

    fn as_slices(&self) -> Option<(Vec<&[u8]>, usize)> {
        match &self.payload {
            Payload::Line(line) => Some((line.slices(), line.len())),
            Payload::Message(_) => None,
        }
    }

    fn into_buffer(self) -> Option<Vec<u8>> {
        match self.payload {
            Payload::Line(line) => Some(line.into_buffer()),
            Payload::Message(_) => None,
        }
    }
}

/// One legacy client's session in front of one upstream.
pub(crate) struct LegacySession {
    options: FrontendOptions,
    config: UpstreamConfig,
    out: mpsc::Sender<Outgoing>,
    state: Mutex<State>,
    tasks: TaskTracker,
    /// Parent of every slot's token.
    stop_slots: CancellationToken,
    /// Fired when the upstream is lost.
    lost: CancellationToken,
    on_upstream_started: Option<Arc<dyn Fn(u32) + Send + Sync>>,
    on_log_level: Option<crate::server::legacy::frontend::OnLogLevel>,
    log_level: Arc<ClientLogLevel>,
    /// The number of the last `b-` id.
    last_input_id: AtomicU64,
    /// Whether the host writes lines (stdio), so a response may go as one.
    writes_lines: bool,
}

impl std::fmt::Debug for LegacySession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacySession").field("options", &self.options).finish_non_exhaustive()
    }
}

/// What a session tells its host (see [`crate::server::legacy::frontend::Hooks`]).
#[derive(Default)]
pub(crate) struct SessionHooks {
    /// Gets the process id of each child started.
    pub on_upstream_started: Option<Arc<dyn Fn(u32) + Send + Sync>>,
    /// Called at the client's `notifications/initialized`.
    pub on_initialized: Option<OnInitialized>,
    /// Called with the level of each `logging/setLevel`.
    pub on_log_level: Option<crate::server::legacy::frontend::OnLogLevel>,
    /// Whether the host writes the session's messages as lines (stdio): a
    /// result the upstream sent as a line may then go on as one.
    pub writes_lines: bool,
}

impl std::fmt::Debug for SessionHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHooks")
            .field("on_upstream_started", &self.on_upstream_started.is_some())
            .field("on_initialized", &self.on_initialized.is_some())
            .field("on_log_level", &self.on_log_level.is_some())
            .finish()
    }
}

impl LegacySession {
    /// A session in front of the upstream of `config`, writing every message
    /// for the client to `out`, telling its host what `hooks` ask for.
    pub(crate) fn new(
        config: UpstreamConfig,
        options: FrontendOptions,
        out: mpsc::Sender<Outgoing>,
        hooks: SessionHooks,
    ) -> Arc<LegacySession> {
        let SessionHooks { on_upstream_started, on_initialized, on_log_level, writes_lines } = hooks;
        let max_in_flight = options.limits.max_in_flight;
        Arc::new(LegacySession {
            options,
            config,
            out,
            state: Mutex::new(State { on_initialized, slots: Slots::new(max_in_flight), ..State::default() }),
            tasks: TaskTracker::new(),
            stop_slots: CancellationToken::new(),
            lost: CancellationToken::new(),
            on_upstream_started,
            on_log_level,
            log_level: Arc::default(),
            last_input_id: AtomicU64::new(0),
            writes_lines,
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Handles one decoded message of the client. Never waits for a
    /// request to finish: each runs in its own slot.
    pub(crate) async fn handle(self: &Arc<Self>, message: Message) {
        match message {
            Message::Request(request) => self.handle_request(request).await,
            Message::Notification(n) => self.handle_notification(n),
            Message::Result(r) => self.resolve_input(&r.id, Ok(r.result)),
            Message::Error(e) => match e.id {
                Some(id) => self.resolve_input(&id, Err(format!("the client answered with error {}", e.error.code))),
                None => tracing::debug!("an error response without id from the client; dropped"),
            },
        }
    }

    /// Handles what the client sent that does not decode: `id` is the one
    /// recovered from it. A bad answer to a request of the bridge resolves
    /// that request as not valid; anything else gets its error.
    async fn handle_undecodable(&self, id: Option<RequestId>, error: &DecodeError) {
        if let DecodeError::InvalidShape { rule: ShapeRule::ResponseIdType, .. } = error {
            return tracing::debug!("a response with an id that is not a string or an integer; dropped");
        }
        if let Some(id) = id.as_ref().filter(|id| self.is_input_id(id)) {
            return self.resolve_input(id, Err("the answer is not valid JSON-RPC".into()));
        }
        let (cause, detail) = translate::errors::cause_of_decode_error(error);
        self.fail_with(id, cause, detail).await;
    }

    /// Completes when the upstream is lost.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub(crate) async fn upstream_lost(&self) {
        self.lost.cancelled().await;
    }

    /// Ends the session at the end of the client's input: every slot is
    /// cancelled (none answers), they get the shutdown grace, and the
    /// upstream is given back for the caller to close once the output is
    /// written.
    pub(crate) async fn end_of_input(&self) -> Option<Upstream> {
        let upstream = self.close();
        self.cancel_all();
        self.wait_slots().await;
        upstream
    }

    /// Ends the session after the loss of the upstream: every slot is
    /// answered `upstream_exited`, then cancelled. The caller keeps handing
    /// messages over (they are answered the same) until [`LegacySession::wait_slots`]
    /// completes.
    pub(crate) fn upstream_exited(&self) -> Option<Upstream> {
        let upstream = self.close();
        self.answer_all(Cause::UpstreamExited);
        upstream
    }

    /// Moves to `closing`; stops the listener; gives the upstream back.
    fn close(&self) -> Option<Upstream> {
        let (lifecycle, listener) = {
            let mut state = self.state();
            (std::mem::replace(&mut state.lifecycle, Lifecycle::Closing), state.listener.take())
        };
        if let Some(listener) = listener {
            listener.stop();
        }
        match lifecycle {
            Lifecycle::Ready(upstream) => Some(upstream),
            _ => None,
        }
    }

    /// Sends a message to the client, tagged with the request it belongs to.
    pub(super) async fn send(&self, message: Message, related: Option<&RequestId>) {
        // A closed writer means the client is gone; nothing to tell it.
        let _ = self.out.send(Outgoing { payload: Payload::Message(message), related: related.cloned() }).await;
    }

    pub(super) async fn reply(&self, id: RequestId, result: Value) {
        self.send(Message::Result(JsonRpcResultResponse::new(id.clone(), result)), Some(&id)).await;
    }

    pub(super) async fn fail(&self, id: Option<RequestId>, error: ErrorObject) {
        let related = id.clone();
        self.send(Message::Error(JsonRpcErrorResponse::new(id, error)), related.as_ref()).await;
    }

    pub(super) async fn fail_with(&self, id: Option<RequestId>, cause: Cause, detail: Option<Value>) {
        self.fail(id, error_for(cause, detail)).await;
    }

    pub(super) fn handle_notification(self: &Arc<Self>, n: JsonRpcNotification) {
        match classify::classify_notification(&n.method) {
            NotificationClass::Initialized => {
                // Before the initialize result it means nothing (the seed's
                // lifecycle table): a sign-in of the start still opens the
                // browser, and the client is asked nothing yet.
                if !matches!(self.state().lifecycle, Lifecycle::Ready(_)) {
                    return tracing::debug!("notifications/initialized before the initialize result; ignored");
                }
                self.listener();
                self.offer_consent();
            }
            NotificationClass::Cancelled => {
                let token = n.cancelled_request().and_then(|id| self.state().slots.cancel(&id).cloned());
                if let Some(token) = token {
                    token.cancel();
                }
            }
            NotificationClass::RootsListChanged | NotificationClass::Other => {
                tracing::debug!(method = %n.method, "notification noted");
            }
        }
    }

    pub(super) async fn handle_request(self: &Arc<Self>, request: JsonRpcRequest) {
        let id = request.id.clone();
        let class = classify::classify_request(&request.method);
        match class {
            RequestClass::Ping => return self.reply(id, json!({})).await,
            RequestClass::SetLevel => {
                return match classify::parse_set_level(request.params.as_ref()) {
                    Ok(level) => {
                        self.log_level.set(level);
                        if let Some(hook) = &self.on_log_level {
                            hook(level);
                        }
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
            let mut state = self.state();
            match (&state.lifecycle, class) {
                (Lifecycle::AwaitingInitialize, RequestClass::Initialize) => {
                    state.lifecycle = Lifecycle::Initializing;
                    Next::Initialize
                }
                (Lifecycle::Initializing | Lifecycle::Ready(_), RequestClass::Initialize) => {
                    Next::Answer(Cause::AlreadyInitialized, None)
                }
                (Lifecycle::AwaitingInitialize | Lifecycle::Initializing, _) => {
                    if classify::has_modern_meta(request.params.as_ref()) {
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
                (Lifecycle::Ready(upstream), RequestClass::Subscribe | RequestClass::Unsubscribe)
                    if state.legacy_upstream =>
                {
                    Next::Forward(upstream.clone())
                }
                (Lifecycle::Ready(_), RequestClass::Subscribe | RequestClass::Unsubscribe) => {
                    if state.declared.subscribe {
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
    pub(super) async fn admit<F, Fut>(self: &Arc<Self>, request: JsonRpcRequest, work: F)
    where
        F: FnOnce(Arc<LegacySession>, JsonRpcRequest, CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (id, is_initialize) = (request.id.clone(), request.method == Initialize::NAME);
        let token = self.stop_slots.child_token();
        let admitted = self.state().slots.admit(id.clone(), Kind::Request, token.clone());
        let refused = match admitted {
            Ok(()) => {
                self.tasks.spawn(work(self.clone(), request, token));
                None
            }
            Err(SlotRefusal::TooMany { limit }) => Some((Cause::TooManyRequests, Some(json!(limit)))),
            Err(SlotRefusal::DuplicateId { .. }) => {
                Some((Cause::InvalidRequestShape, Some(json!("the id is already in flight"))))
            }
        };
        if let Some((cause, detail)) = refused {
            if is_initialize {
                self.state().lifecycle = Lifecycle::AwaitingInitialize;
            }
            self.fail_with(Some(id), cause, detail).await;
        }
    }

    /// Writes a slot's response, once, unless it was cancelled or already
    /// answered (by the loss of the upstream).
    pub(super) async fn respond(&self, id: RequestId, outcome: Result<Value, ErrorObject>) {
        let message = match outcome {
            Ok(result) => Message::Result(JsonRpcResultResponse::new(id.clone(), result)),
            Err(error) => Message::Error(JsonRpcErrorResponse::new(Some(id.clone()), error)),
        };
        self.respond_with(id, Payload::Message(message)).await;
    }

    /// [`LegacySession::respond`] with the response made already.
    pub(super) async fn respond_with(&self, id: RequestId, response: Payload) {
        let live = self.state().slots.finish(&id).is_some_and(|token| !token.is_cancelled());
        if live {
            // A closed writer means the client is gone; nothing to tell it.
            let _ = self.out.send(Outgoing { payload: response, related: Some(id) }).await;
        }
    }

    /// Cancels every slot; none of them answers.
    pub(super) fn cancel_all(&self) {
        let slots = self.state().slots.drain();
        for slot in slots {
            slot.handle.cancel();
        }
        self.stop_slots.cancel();
    }

    /// Answers every slot with `cause`, then cancels it.
    pub(super) fn answer_all(&self, cause: Cause) {
        let slots = self.state().slots.drain();
        for slot in slots {
            // A request the client cancelled gets no answer, even now.
            if slot.answerable {
                let error = error_for(cause, None);
                let message = Message::Error(JsonRpcErrorResponse::new(Some(slot.id.clone()), error));
                if self.out.try_send(Outgoing::related(message, &slot.id)).is_err() {
                    tracing::debug!("output queue full; an error response was dropped");
                }
            }
            slot.handle.cancel();
        }
        self.stop_slots.cancel();
    }

    /// Waits for the slots to end, at most the grace period.
    pub(crate) async fn wait_slots(&self) {
        self.tasks.close();
        if tokio::time::timeout(self.options.limits.shutdown_grace, self.tasks.wait()).await.is_err() {
            tracing::debug!(left = self.tasks.len(), "slots still running after the grace period");
        }
    }
}

impl crate::server::frames::Receiver for Arc<LegacySession> {
    async fn message(&self, message: Message) {
        self.handle(message).await;
    }

    async fn undecodable(&self, id: Option<RequestId>, error: &DecodeError) {
        self.handle_undecodable(id, error).await;
    }

    async fn too_long(&self, id: Option<RequestId>) {
        let detail = json!(self.options.limits.max_line_bytes);
        self.fail_with(id, Cause::LineTooLong, Some(detail)).await;
    }
}

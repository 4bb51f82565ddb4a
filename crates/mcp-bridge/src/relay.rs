//! A request's rounds between a 2026-07-28 client of mcp-bridge (the
//! gateway's, `--listen`'s) and the server that answers it.
//!
//! A 2026-07-28 server asks with an `InputRequiredResult`: it becomes
//! mcp-bridge's own, the server's `requestState` sealed inside mcp-bridge's
//! state, and the client's retry is the server's next round.
//!
//! A 2025-11-25 server asks in the middle of the call, with a request of
//! its own (`elicitation/create`, `sampling/createMessage`): the call goes
//! on running while the request becomes the gateway's `InputRequiredResult`
//! (key [`ASK`], the waiting call's number in the state); the client's
//! retry answers the server's request and picks the call up again. Over
//! HTTP the request comes on the call's stream, so it is the call's. A
//! stdio server's request names no call: it goes to the server's call
//! under way when there is exactly one; with none, or several (they may be
//! different clients'), it is refused at once.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::types::{
    ClientCapabilities, ElicitationCapability, Implementation, InputRequest, InputRequests, InputResponse,
    InputResponses, LoggingMessageNotificationParams, Outcome, ProgressNotificationParams, RootsCapability,
    SamplingCapability,
};
use mcp_bridge_sdk::client::{ClientIdentity, InputHooks};
use mcp_bridge_sdk::server::{Reply, RequestContext};
use mcp_bridge_sdk::{ClientOptions, HandlerError, RequestOptions};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// The key of a 2026-07-28 server's `requestState` in mcp-bridge's state.
const UPSTREAM_STATE: &str = "upstream";
/// The key, in mcp-bridge's state, of the number of a call that waits for
/// the client's answer to its server's request.
const WAITING: &str = "waiting";
/// The key of a 2025-11-25 server's request among mcp-bridge's input
/// requests.
const ASK: &str = "ask";
/// How long a call waits for the client's answer: as long as the sealed
/// state that names it lives (a person filling a form).
const WAIT_LIMIT: Duration = mcp_bridge_sdk::server::DEFAULT_STATE_TTL;
/// Calls kept waiting at once; beyond, the one that waited longest is
/// dropped (its client went away without answering, most likely).
const MAX_WAITING: usize = 64;
/// Progress and log messages kept for a call while nobody passes them on;
/// more are dropped (they only report).
const NOTES_KEPT: usize = 64;

/// The client's answer to a server's request, or why there is none.
type Answer = Result<InputResponse, String>;

/// A server's own request on its way to the client, and where its answer goes.
struct Ask {
    request: InputRequest,
    answer: oneshot::Sender<Answer>,
}

/// The requests one server makes while its tools run.
struct Asking {
    sender: mpsc::Sender<Ask>,
    receiver: tokio::sync::Mutex<mpsc::Receiver<Ask>>,
    /// The server's calls under way (running or waiting for an answer).
    calls: AtomicUsize,
}

impl Asking {
    fn new() -> Self {
        let (sender, receiver) = mpsc::channel(16);
        Asking { sender, receiver: tokio::sync::Mutex::new(receiver), calls: AtomicUsize::new(0) }
    }

    /// Hands `request`, which names no call, to the one call of this
    /// server under way; the client's answer.
    async fn ask(&self, request: InputRequest) -> Answer {
        match self.calls.load(Ordering::SeqCst) {
            1 => ask_through(&self.sender, request).await,
            0 => Err("mcp-bridge passes a server's requests to its client only while one of its tools runs".into()),
            _ => Err("several calls of this server are under way and the request names none of them".into()),
        }
    }

    /// The next request of this server.
    ///
    /// # Cancel safety
    /// Cancel safe: a request not yet received stays for the next caller.
    async fn next(&self) -> Option<Ask> {
        self.receiver.lock().await.recv().await
    }
}

/// Sends `request` to the call behind `sender`; the client's answer.
async fn ask_through(sender: &mpsc::Sender<Ask>, request: InputRequest) -> Answer {
    let (answer, answered) = oneshot::channel();
    sender.send(Ask { request, answer }).await.map_err(|_| "the call ended".to_owned())?;
    answered.await.unwrap_or_else(|_| Err("the call ended before the client answered".into()))
}

/// The next request for `call`: asked on its own stream, or its server's
/// asked on none.
///
/// # Cancel safety
/// Cancel safe, as both receivers are.
async fn next_ask(own: &mut mpsc::Receiver<Ask>, server: &Asking) -> Ask {
    tokio::select! {
        Some(ask) = own.recv() => ask,
        Some(ask) = server.next() => ask,
        else => std::future::pending().await,
    }
}

/// Counts a call under way at its server for as long as it lives.
struct UnderWay(Arc<Asking>);

impl UnderWay {
    fn new(asking: Arc<Asking>) -> Self {
        asking.calls.fetch_add(1, Ordering::SeqCst);
        UnderWay(asking)
    }
}

impl Drop for UnderWay {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A progress or log message of a call, to pass on to the client.
enum Note {
    Progress(ProgressNotificationParams),
    Log(LoggingMessageNotificationParams),
}

/// One round of a request at its server, however it was sent: its outcome.
pub(crate) type Round<R> = Pin<Box<dyn Future<Output = mcp_bridge_sdk::Result<Outcome<R>>> + Send>>;

/// Why a round gives no reply.
pub(crate) enum Failure {
    /// The round cannot go on (a retry that names no waiting call, the
    /// client gone): the error for the client as it is.
    Handler(HandlerError),
    /// The server's error, or why it could not be reached.
    Upstream(mcp_bridge_sdk::Error),
}

/// A request at its server, across the client's rounds. Dropped, it is
/// cancelled at the server.
struct Call<R> {
    round: Round<R>,
    notes: mpsc::Receiver<Note>,
    /// The server's requests on the call's own stream (HTTP).
    asks: mpsc::Receiver<Ask>,
    server: UnderWay,
}

/// A call whose server waits for the client's answer.
struct Waiting<R> {
    call: Call<R>,
    answer: oneshot::Sender<Answer>,
    since: Instant,
}

/// The calls waiting for an answer, by number.
struct WaitingCalls<R> {
    last: u64,
    calls: HashMap<u64, Waiting<R>>,
}

impl<R> Default for WaitingCalls<R> {
    fn default() -> Self {
        WaitingCalls { last: 0, calls: HashMap::new() }
    }
}

/// How requests are passed on to their servers: each server's own
/// requests and the calls that wait for the client's answers.
pub(crate) struct Relays<R> {
    /// Each server's, by name; made at its first use (a server added by a
    /// reload too).
    asking: Mutex<HashMap<String, Arc<Asking>>>,
    waiting: Mutex<WaitingCalls<R>>,
}

impl<R: Send + 'static> Relays<R> {
    /// The relays of no request yet.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Relays { asking: Mutex::default(), waiting: Mutex::default() })
    }

    /// Forgets the requests of `name` (a server's instance that ended).
    pub(crate) fn forget(&self, name: &str) {
        lock(&self.asking).remove(name);
    }

    /// The requests of the server `name`.
    fn asking(&self, name: &str) -> Arc<Asking> {
        lock(&self.asking).entry(name.to_owned()).or_insert_with(|| Arc::new(Asking::new())).clone()
    }

    /// How the gateway speaks to the server `name`: as mcp-bridge,
    /// declaring every kind of request it passes on, each answered by the
    /// client through a call under way. Whether a client is asked is
    /// decided per call, by what that client declared (see `drive`).
    pub(crate) fn client_options(&self, name: &str) -> ClientOptions {
        let asking = self.asking(name);
        let mut options = ClientOptions::new("mcp-bridge", env!("CARGO_PKG_VERSION"));
        options.capabilities = ClientCapabilities {
            elicitation: Some(ElicitationCapability {
                form: Some(Default::default()),
                url: Some(Default::default()),
                ..Default::default()
            }),
            sampling: Some(SamplingCapability::default()),
            roots: Some(RootsCapability::default()),
            ..Default::default()
        };
        options.hooks = InputHooks::relay(move |request| {
            let asking = asking.clone();
            async move { asking.ask(request).await }
        });
        options
    }

    /// One round of a request for the client of `ctx` at the server
    /// `server`: the call waiting for the answers `state` names picked up
    /// again, or a new one (a first round, or a 2026-07-28 server's next
    /// round) that `start` sends with the server's own round fields and
    /// the options that pass its progress, log messages and requests on.
    /// Runs until the call ends or its server asks the client something.
    pub(crate) async fn round(
        &self,
        server: &str,
        state: Option<&Value>,
        responses: InputResponses,
        ctx: &RequestContext,
        start: impl FnOnce(Option<InputResponses>, Option<String>, RequestOptions) -> Round<R>,
    ) -> Result<Reply<R>, Failure> {
        if let Some(number) = state.and_then(|s| s.get(WAITING)).and_then(Value::as_u64) {
            let call = self.resume(number, responses).map_err(Failure::Handler)?;
            return self.drive(call, ctx).await;
        }
        let asking = self.asking(server);
        let request_state = state.and_then(|s| s.get(UPSTREAM_STATE)).and_then(Value::as_str).map(str::to_owned);
        let responses = (!responses.is_empty()).then_some(responses);
        let (notes_to, notes) = mpsc::channel(NOTES_KEPT);
        let progress_to = notes_to.clone();
        let (ask_to, asks) = mpsc::channel(4);
        let own_asks = InputHooks::relay(move |request| {
            let ask_to = ask_to.clone();
            async move { ask_through(&ask_to, request).await }
        });
        let options = options_for(ctx)
            .with_hooks(own_asks)
            .with_inline_notifications(true)
            .with_allow_input_required(true)
            .with_on_progress(Arc::new(move |p| {
                let _ = progress_to.try_send(Note::Progress(p.clone()));
            }))
            .with_on_log(Arc::new(move |m| {
                let _ = notes_to.try_send(Note::Log(m.clone()));
            }));
        let round = start(responses, request_state, options);
        self.drive(Call { round, notes, asks, server: UnderWay::new(asking) }, ctx).await
    }

    /// The waiting call `number`, its server's request answered with the
    /// client's answer to [`ASK`].
    fn resume(&self, number: u64, mut responses: InputResponses) -> Result<Call<R>, HandlerError> {
        let response = responses.remove(ASK);
        let mut waiting = lock(&self.waiting);
        let Some(entry) = waiting.calls.remove(&number) else {
            return Err(HandlerError::invalid_params(
                "this call no longer waits for an answer (it was answered, or waited too long)",
            ));
        };
        let Some(response) = response else {
            // Kept: the client may still send the answer.
            waiting.calls.insert(number, entry);
            return Err(HandlerError::invalid_params(format!("no answer to `{ASK}`")));
        };
        let _ = entry.answer.send(Ok(response));
        Ok(entry.call)
    }

    /// Runs the call until it ends or its server asks the client something.
    async fn drive(&self, mut call: Call<R>, ctx: &RequestContext) -> Result<Reply<R>, Failure> {
        let asked = loop {
            tokio::select! {
                biased;
                () = ctx.cancelled() => return Err(Failure::Handler(HandlerError::internal("the call was cancelled"))),
                Some(note) = call.notes.recv() => pass_on(note, ctx).await,
                outcome = &mut call.round => {
                    while let Ok(note) = call.notes.try_recv() {
                        pass_on(note, ctx).await;
                    }
                    return reply(outcome);
                }
                ask = next_ask(&mut call.asks, &call.server.0) => match ask.request.missing_capability(&ctx.client_capabilities) {
                    Some(missing) => {
                        let _ = ask.answer.send(Err(format!("the client did not declare {}", missing.path())));
                    }
                    None => break ask,
                },
            }
        };
        let requests = InputRequests::from([(ASK.to_owned(), asked.request)]);
        let number = self.wait(call, asked.answer);
        Ok(Reply::InputRequired { requests, state: Some(json!({ WAITING: number })) })
    }

    /// Keeps `call` until the client answers; its number. Calls that
    /// waited too long, or the longest waiting beyond [`MAX_WAITING`], are
    /// dropped (cancelled at their servers).
    fn wait(&self, call: Call<R>, answer: oneshot::Sender<Answer>) -> u64 {
        let mut waiting = lock(&self.waiting);
        let now = Instant::now();
        waiting.calls.retain(|_, w| now.duration_since(w.since) < WAIT_LIMIT);
        if waiting.calls.len() >= MAX_WAITING
            && let Some(oldest) = waiting.calls.keys().min().copied()
        {
            waiting.calls.remove(&oldest);
        }
        waiting.last += 1;
        let number = waiting.last;
        waiting.calls.insert(number, Waiting { call, answer, since: now });
        number
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The options of a request sent for the client of `ctx`: its name, its
/// capabilities (a 2026-07-28 server reads them in `_meta`), its log level
/// and its trace context.
pub(crate) fn options_for(ctx: &RequestContext) -> RequestOptions {
    let info = ctx.client_info.clone().unwrap_or_else(|| Implementation::new("mcp-bridge", env!("CARGO_PKG_VERSION")));
    let identity = ClientIdentity::new(info, ctx.client_capabilities.clone());
    let mut options = RequestOptions::default().with_on_behalf_of(Arc::new(identity));
    // The client's trace goes on to the server (under the bridge's span
    // when it is observed).
    if let Some(trace) = ctx.trace_context() {
        trace.write_to(&mut options.meta);
    }
    match ctx.log_level {
        Some(level) => options.with_log_level(level),
        None => options,
    }
}

async fn pass_on(note: Note, ctx: &RequestContext) {
    match note {
        Note::Progress(p) => {
            let total = p.total.as_ref().and_then(serde_json::Number::as_f64);
            ctx.progress(p.progress.as_f64().unwrap_or_default(), total, p.message.as_deref()).await;
        }
        Note::Log(m) => ctx.log(m.level, m.logger.as_deref(), m.data).await,
    }
}

/// The answer for a round's outcome at the server: a 2026-07-28 server's
/// input round becomes the relay's own, the server's state sealed inside.
fn reply<R>(outcome: mcp_bridge_sdk::Result<Outcome<R>>) -> Result<Reply<R>, Failure> {
    match outcome.map_err(Failure::Upstream)? {
        Outcome::Complete(result) => Ok(Reply::Complete(result)),
        Outcome::InputRequired(asked) => Ok(Reply::InputRequired {
            requests: asked.input_requests.unwrap_or_default(),
            state: Some(json!({ UPSTREAM_STATE: asked.request_state })),
        }),
    }
}

/// A server's refusal passed on as it is; anything else (a server lost or
/// failing) as an internal error naming why.
pub(crate) fn handler_error(error: mcp_bridge_sdk::Error) -> HandlerError {
    match error {
        mcp_bridge_sdk::Error::Rpc { error } => {
            HandlerError { code: error.code, message: error.message, data: error.data }
        }
        other => HandlerError::internal(other.to_string()),
    }
}

//! The embedded bridge over Streamable HTTP: one endpoint serves 2026-07-28
//! requests (the SDK's own handler) and 2025-11-25 clients per the
//! 2025-11-25 transport. An `initialize` POST creates a legacy session
//! (`Mcp-Session-Id`); its later POSTs carry the id (unknown or ended: 404;
//! a legacy message without one: 400); a request's response, progress, log
//! messages and the input requests of its rounds go on that POST's SSE
//! stream; list changes and `resources/updated` on the session's GET
//! stream; DELETE ends the session. A legacy session lives in this process:
//! behind a load balancer, its requests must come back to the same
//! replica.
//!
//! Every request first passes the gate both eras share (Origin/Host, the
//! token, then for a POST the content type and the body: `http/gate.rs`).
//!
//! ```text
//!  POST ─ gate ─┬─ Mcp-Session-Id, or initialize ─▶ legacy session ─▶ LegacySession ─▶ memory link ─▶ Server
//!               └─ anything else ─────────────────▶ serve_post (2026-07-28) ─────────────────────▶ Server
//!  GET / DELETE ─ gate ──────────────────────────▶ legacy session
//! ```

mod access;
mod sessions;

use std::sync::Arc;
use std::time::Duration;

use crate::Server;
use crate::limits::CLOSE_GRACE;
use crate::server::http::{
    CheckedPost, HttpOptions, Listener, answer_with, challenge_response, check_post, check_request, error_response,
    held_until_sent, json_response, serve_post, serve_router, sse_response, sse_within, with_metadata,
};
use crate::server::protect::{Caller, CallerSlot};
use crate::server::shares::Caps;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use mcp_bridge_protocol::method::{Initialize, Method, ServerDiscover};
use mcp_bridge_protocol::{ErrorObject, JsonRpcErrorResponse, Message, RequestId, decode_message, error_code};
use tokio::sync::mpsc;

pub use self::access::{AccessToken, BadSecret};
use self::sessions::{Holder, HttpSession, Sessions};
use crate::server::legacy::frontend::FrontendOptions;
use crate::server::legacy::session::LegacySession;
use crate::server::legacy::upstream::UpstreamConfig;

/// Versions of the 2025-11-25 transport a legacy session accepts in
/// `MCP-Protocol-Version`.
pub const LEGACY_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// How the legacy sessions of the endpoint behave:
/// [`LegacyHttpOptions::default`], then the `with_*` setters.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LegacyHttpOptions {
    /// The bridge's options for each session (profile, limits, time limits).
    pub frontend: FrontendOptions,
    /// A session unused this long, with no stream open, is ended. 30 min:
    /// a client's user may step away; the bound on sessions keeps memory in
    /// check meanwhile.
    pub idle_timeout: Duration,
    /// Live sessions at once. 1000: far beyond one team's clients. At the
    /// cap, the idlest session of the holder (client address, or subject on
    /// a protected endpoint) with the most is ended for a newcomer; when
    /// every holder has about as many, `initialize` gets 503 with
    /// `Retry-After`.
    pub max_sessions: usize,
    /// Live sessions of one holder at once: its address, or on a protected
    /// endpoint the subject of its token. One more ends the holder's own
    /// idlest session. 100: a tenth of the default cap, so that one client
    /// cannot take what ten others need, and far beyond what one client
    /// keeps open.
    pub max_sessions_per_holder: usize,
    /// Events of a GET stream kept for `Last-Event-ID` resumption.
    pub kept_events: usize,
    /// The secret every request must carry (`Authorization: Bearer`),
    /// checked before anything else; none by default. Loopback admits
    /// every account of the machine: a TCP endpoint that acts for its
    /// owner (with the owner's tokens upstream) needs one.
    pub access_token: Option<AccessToken>,
    /// Hears of each session as it opens and ends (a gauge of open
    /// sessions); none by default.
    pub observer: Option<Arc<dyn crate::telemetry::Observer>>,
}

crate::with_setters! {
    LegacyHttpOptions {
        value with_frontend => frontend: FrontendOptions,
        value with_idle_timeout => idle_timeout: Duration,
        value with_max_sessions => max_sessions: usize,
        value with_max_sessions_per_holder => max_sessions_per_holder: usize,
        value with_kept_events => kept_events: usize,
        some with_access_token => access_token: AccessToken,
        some with_observer => observer: Arc<dyn crate::telemetry::Observer>,
    }
}

impl Default for LegacyHttpOptions {
    fn default() -> Self {
        LegacyHttpOptions {
            frontend: FrontendOptions::default(),
            idle_timeout: Duration::from_secs(30 * 60),
            max_sessions: 1000,
            max_sessions_per_holder: 100,
            kept_events: 256,
            access_token: None,
            observer: None,
        }
    }
}

/// Messages a session sends before its router takes them.
const SESSION_QUEUE: usize = 1024;

#[derive(Clone)]
struct Endpoint {
    /// Where each legacy session's requests go.
    upstream: UpstreamConfig,
    /// The 2026-07-28 server, when the endpoint serves that era too.
    modern: Option<Server>,
    http: Arc<HttpOptions>,
    legacy: Arc<LegacyHttpOptions>,
    sessions: Arc<Sessions>,
}

/// The dual-era endpoint as an axum router, at `http.path`. Mounted this
/// way, a session past its idle time ends when a new session starts;
/// [`serve_http`] also ends them as they expire.
pub fn http_router(server: &Server, http: HttpOptions, legacy: LegacyHttpOptions) -> Router {
    router_with(UpstreamConfig::memory(server), Some(server.clone()), http, legacy, Arc::default())
}

/// An endpoint for 2025-11-25 clients only, each session in front of
/// `upstream` (`mcp-bridge --listen` shares one upstream among them); a
/// 2026-07-28 request gets 400.
pub fn legacy_router(upstream: UpstreamConfig, http: HttpOptions, legacy: LegacyHttpOptions) -> Router {
    router_with(upstream, None, http, legacy, Arc::default())
}

/// Serves [`legacy_router`] on `listener` (a TCP port, or a Unix domain
/// socket) with the connection limits of
/// `http.connections` until `shutdown` completes, ending idle sessions.
///
/// # Errors
/// None today: a failed accept is logged and the loop goes on.
pub async fn serve_legacy_http(
    upstream: UpstreamConfig,
    listener: impl Into<Listener>,
    http: HttpOptions,
    legacy: LegacyHttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_endpoint(upstream, None, listener, http, legacy, shutdown).await
}

/// Serves both eras on `listener` (a TCP port, or a Unix domain socket)
/// with the connection limits of `http.connections` until `shutdown`
/// completes: each 2025-11-25 session in front of `upstream`, 2026-07-28
/// requests answered by `modern` (`mcp-bridge --listen`: a forwarding
/// server in front of the same upstream). At the shutdown `modern`'s
/// listen streams end with their completion result.
///
/// # Errors
/// None today: a failed accept is logged and the loop goes on.
pub async fn serve_dual_http(
    upstream: UpstreamConfig,
    modern: &Server,
    listener: impl Into<Listener>,
    http: HttpOptions,
    legacy: LegacyHttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let shutdown = modern.ending_listens(shutdown);
    serve_endpoint(upstream, Some(modern.clone()), listener, http, legacy, shutdown).await
}

/// Serves an endpoint with the connection limits of `http.connections`
/// until `shutdown` completes, ending the sessions that stay idle.
async fn serve_endpoint(
    upstream: UpstreamConfig,
    modern: Option<Server>,
    listener: impl Into<Listener>,
    http: HttpOptions,
    legacy: LegacyHttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = http.connections;
    let sessions = Arc::new(Sessions::default());
    let idle = legacy.idle_timeout;
    let router = router_with(upstream, modern, http, legacy, sessions.clone());
    let served = tokio::select! {
        served = serve_router(listener, router, limits, shutdown) => served,
        () = end_expired(sessions.clone(), idle) => Ok(()),
    };
    if !sessions.tasks.stop(CLOSE_GRACE).await {
        tracing::debug!("a legacy HTTP session was still ending when the grace ran out");
    }
    served
}

fn router_with(
    upstream: UpstreamConfig,
    modern: Option<Server>,
    http: HttpOptions,
    legacy: LegacyHttpOptions,
    sessions: Arc<Sessions>,
) -> Router {
    let router = Router::new().route(&http.path, post(handle_post).get(handle_get).delete(handle_delete));
    let router = with_metadata(router, &http);
    let access_token = legacy.access_token.clone();
    let endpoint = Endpoint { upstream, modern, http: Arc::new(http), legacy: Arc::new(legacy), sessions };
    let router = router.with_state(endpoint);
    match access_token {
        Some(token) => router.layer(axum::middleware::from_fn_with_state(token, access::require)),
        None => router,
    }
}

/// Ends the sessions past their idle time, a quarter of it apart (at most
/// a minute); never completes.
async fn end_expired(sessions: Arc<Sessions>, idle: Duration) {
    let every = (idle / 4).clamp(Duration::from_millis(10), Duration::from_secs(60));
    loop {
        tokio::time::sleep(every).await;
        for session in sessions.take_expired(idle) {
            tracing::debug!("a legacy HTTP session was unused for {idle:?}; ending it");
            end(session).await;
        }
    }
}

/// Serves the dual-era endpoint on `listener` with the connection limits of
/// `http.connections` until `shutdown` completes.
///
/// # Errors
/// None today: a failed accept is logged and the loop goes on.
pub async fn serve_http(
    server: &Server,
    listener: tokio::net::TcpListener,
    http: HttpOptions,
    legacy: LegacyHttpOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_dual_http(UpstreamConfig::memory(server), server, listener, http, legacy, shutdown).await
}

fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers.get("mcp-session-id").and_then(|v| v.to_str().ok())
}

/// A 400 answer with a JSON-RPC error of `code`.
fn bad_request(id: Option<RequestId>, code: i64, text: &str) -> Response {
    error_response(StatusCode::BAD_REQUEST, id, ErrorObject::new(code, text))
}

/// The session `id` when it exists and, on a protected endpoint, was
/// started by `caller`'s principal (its token's subject, else its client):
/// another gets what an unknown id gets, so a session id alone is worth
/// nothing.
fn session_of(endpoint: &Endpoint, id: &str, caller: Option<&Caller>) -> Option<Arc<HttpSession>> {
    let session = endpoint.sessions.get(id)?;
    (session.owner.as_deref() == caller.map(Caller::principal)).then_some(session)
}

/// On a protected endpoint, the 403 of a `message` that `caller` may not
/// send (it lacks the scopes of the tool, prompt or resource it asks for).
fn refusal_by_scope(endpoint: &Endpoint, caller: Option<&Caller>, message: Option<&Message>) -> Option<Response> {
    let (Some(protection), Some(caller), UpstreamConfig::Memory { server, .. }, Some(Message::Request(request))) =
        (&endpoint.http.protection, caller, &endpoint.upstream, message)
    else {
        return None;
    };
    let needed = server.scopes_needed(&request.method, request.params.as_ref());
    protection.admit(caller, &needed).err().map(|refusal| challenge_response(protection, &refusal))
}

/// Whether a request's `MCP-Protocol-Version` is one of a legacy session:
/// none (2025-03-26, the 2025-11-25 transport) or one of [`LEGACY_VERSIONS`].
fn is_legacy_version(headers: &HeaderMap) -> bool {
    headers.get("mcp-protocol-version").is_none_or(|v| v.to_str().is_ok_and(|v| LEGACY_VERSIONS.contains(&v)))
}

/// A legacy request's refusal by its `MCP-Protocol-Version`.
fn refusal_by_version(headers: &HeaderMap) -> Option<Response> {
    let text = "Bad Request: unsupported MCP-Protocol-Version for this session";
    (!is_legacy_version(headers)).then(|| bad_request(None, error_code::INVALID_REQUEST, text))
}

/// A POST, once it passed the gate both eras share: a session's message, a
/// legacy `initialize`, or a 2026-07-28 request.
async fn handle_post(State(endpoint): State<Endpoint>, request: Request) -> Response {
    let mut post = match check_post(request, &endpoint.http).await {
        Ok(post) => post,
        Err(refused) => return refused,
    };
    let held = post.held.take();
    held_until_sent(answer_post(&endpoint, post).await, held)
}

/// The answer to a POST that passed the gate.
async fn answer_post(endpoint: &Endpoint, post: CheckedPost) -> Response {
    let max_depth = endpoint.legacy.frontend.limits.max_depth;
    if let Some(id) = session_id(&post.parts.headers) {
        if let Some(refused) = refusal_by_version(&post.parts.headers) {
            return refused;
        }
        let Some(session) = session_of(endpoint, id, post.caller.as_deref()) else {
            return (StatusCode::NOT_FOUND, "no such session: it ended or never was; initialize again").into_response();
        };
        session.caller.set(post.caller.clone());
        let decoded = decode_message(&post.body, max_depth);
        return match refusal_by_scope(endpoint, post.caller.as_deref(), decoded.as_ref().ok()) {
            None => legacy_post(&session, decoded, &post.body, endpoint.http.connections.max_unsent_bytes).await,
            Some(refused) => refused,
        };
    }
    // A legacy client sends no version header with `initialize`, or a
    // legacy one; a 2026-07-28 client always names its version, and its
    // requests (an `initialize` too: 404, -32601) are the modern server's.
    if !is_legacy_version(&post.parts.headers) {
        return to_modern(endpoint, post).await;
    }
    match decode_message(&post.body, max_depth) {
        Ok(Message::Request(r)) if r.method == Initialize::NAME => {
            let address = post.parts.extensions.get::<axum::extract::ConnectInfo<std::net::SocketAddr>>();
            let address = address.map(|info| info.0.ip());
            start_session(endpoint, Message::Request(r), post.caller, address).await
        }
        // A legacy client's message after its session: it forgot the id.
        Ok(Message::Request(r)) if !carries_modern_meta(&r) && r.method != ServerDiscover::NAME => {
            bad_request(Some(r.id), error_code::INVALID_REQUEST, "Bad Request: Mcp-Session-Id header is required")
        }
        _ => to_modern(endpoint, post).await,
    }
}

/// Hands a POST to the 2026-07-28 server, or refuses it where the
/// endpoint serves legacy clients only.
async fn to_modern(endpoint: &Endpoint, post: CheckedPost) -> Response {
    match &endpoint.modern {
        Some(server) => serve_post(server, &endpoint.http, post).await,
        None => bad_request(
            None,
            error_code::INVALID_REQUEST,
            "Bad Request: this endpoint serves 2025-11-25 clients; send initialize",
        ),
    }
}

/// Whether a request carries the 2026-07-28 `_meta` envelope.
fn carries_modern_meta(request: &mcp_bridge_protocol::JsonRpcRequest) -> bool {
    crate::server::legacy::classify::has_modern_meta(request.params.as_ref())
}

/// Creates a session for an `initialize` by `caller` from `address` and
/// answers it.
async fn start_session(
    endpoint: &Endpoint,
    initialize: Message,
    caller: Option<std::sync::Arc<Caller>>,
    address: Option<std::net::IpAddr>,
) -> Response {
    let options = endpoint.legacy.frontend.clone();
    let owner = caller.as_ref().map(|c| c.principal().to_owned());
    let holder = match (&owner, address) {
        (Some(subject), _) => Holder::Subject(subject.clone()),
        (None, Some(address)) => Holder::Address(address),
        (None, None) => Holder::Unknown,
    };
    let slot = CallerSlot::new(caller);
    // The server's handlers see the session's caller: a link of its own.
    let config = match &endpoint.upstream {
        UpstreamConfig::Memory { server, .. } => {
            UpstreamConfig::Memory { server: server.clone(), caller: slot.clone() }
        }
        other => other.clone(),
    };
    let legacy = HttpSession::start(
        |out| LegacySession::new(config, options, out, Default::default()),
        (SESSION_QUEUE, endpoint.legacy.kept_events),
        (owner, holder),
        slot,
        &endpoint.sessions.tasks,
        endpoint.legacy.observer.as_ref(),
    );
    let caps = Caps { total: endpoint.legacy.max_sessions, per_holder: endpoint.legacy.max_sessions_per_holder };
    let (id, ended) = endpoint.sessions.insert(legacy.clone(), caps, endpoint.legacy.idle_timeout);
    for session in ended {
        endpoint.sessions.tasks.spawn_to_finish(CLOSE_GRACE, end(session));
    }
    let Some(id) = id else {
        let mut response = (StatusCode::SERVICE_UNAVAILABLE, "too many sessions; try again later").into_response();
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return response;
    };
    let mut response = answer_request(&legacy, initialize, endpoint.http.connections.max_unsent_bytes).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("mcp-session-id", value);
    }
    response
}

/// Ends a session: its requests are cancelled and its upstream link closed.
async fn end(legacy: Arc<HttpSession>) {
    if let Some(upstream) = legacy.session.end_of_input().await {
        upstream.close().await;
    }
}

/// A POST of a session: a request gets its stream; a notification or an
/// answer to the bridge's request is handed over (202).
async fn legacy_post(
    legacy: &Arc<HttpSession>,
    decoded: Result<Message, mcp_bridge_protocol::DecodeError>,
    body: &[u8],
    max_unsent: usize,
) -> Response {
    match decoded {
        Ok(message @ Message::Request(_)) => answer_request(legacy, message, max_unsent).await,
        Ok(message) => {
            legacy.session.handle(message).await;
            StatusCode::ACCEPTED.into_response()
        }
        Err(e) => {
            let error = e.to_error_object();
            json_response(StatusCode::BAD_REQUEST, &Message::Error(JsonRpcErrorResponse::new(e.reply_id(body), error)))
        }
    }
}

/// Hands a request to the session and answers with its response: JSON when
/// the response is the first thing the session sends for it, else an SSE
/// stream that ends with it; each message within `max_unsent` bytes.
async fn answer_request(legacy: &Arc<HttpSession>, message: Message, max_unsent: usize) -> Response {
    let Message::Request(request) = &message else { return StatusCode::BAD_REQUEST.into_response() };
    let id = request.id.clone();
    let Some(mut stream) = legacy.open_request_stream(&id) else {
        let text = "the request id is in use by another request under way in this session";
        return bad_request(Some(id), error_code::INVALID_REQUEST, text);
    };
    let guard = CloseOnDrop { legacy: legacy.clone(), id: id.clone() };
    legacy.session.handle(message).await;
    match stream.recv().await {
        Some(first) => {
            answer_with(first, stream, guard, move |m| is_response_to(m, &id), |_| StatusCode::OK, max_unsent)
        }
        None => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// Closes a request's stream route when its SSE response ends or is dropped.
struct CloseOnDrop {
    legacy: Arc<HttpSession>,
    id: RequestId,
}

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.legacy.close_request_stream(&self.id);
    }
}

fn is_response_to(message: &Message, id: &RequestId) -> bool {
    match message {
        Message::Result(r) => &r.id == id,
        Message::Error(e) => e.id.as_ref() == Some(id),
        _ => false,
    }
}

/// The session a GET or DELETE names (`Mcp-Session-Id`), with its id, once
/// the request passed the endpoint's checks and, on a protected endpoint,
/// belongs to the session's subject; else the refusal.
async fn session_named(endpoint: &Endpoint, headers: &HeaderMap) -> Result<(String, Arc<HttpSession>), Response> {
    let caller = check_request(headers, &endpoint.http).await?;
    if let Some(refused) = refusal_by_version(headers) {
        return Err(refused);
    }
    let Some(id) = session_id(headers) else {
        return Err((StatusCode::BAD_REQUEST, "Mcp-Session-Id header is required").into_response());
    };
    match session_of(endpoint, id, caller.as_deref()) {
        Some(session) => Ok((id.to_owned(), session)),
        None => Err((StatusCode::NOT_FOUND, "no such session").into_response()),
    }
}

/// The session's GET stream: list changes and `resources/updated`, with
/// event ids; `Last-Event-ID` replays what the client missed.
async fn handle_get(State(endpoint): State<Endpoint>, headers: HeaderMap) -> Response {
    let (_, legacy) = match session_named(&endpoint, &headers).await {
        Ok(named) => named,
        Err(refused) => return refused,
    };
    let last = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok());
    let Some(rx) = legacy.open_get_stream(last) else {
        return (StatusCode::CONFLICT, "this session already has a GET stream").into_response();
    };
    let max_unsent = endpoint.http.connections.max_unsent_bytes;
    let events = futures_util::stream::unfold(rx, move |mut rx: mpsc::Receiver<sessions::Event>| async move {
        let (id, message) = rx.recv().await?;
        Some((Ok::<_, std::convert::Infallible>(sse_within(Some(id), message, max_unsent)), rx))
    });
    sse_response(Body::from_stream(events))
}

/// Ends a session.
async fn handle_delete(State(endpoint): State<Endpoint>, headers: HeaderMap) -> Response {
    let id = match session_named(&endpoint, &headers).await {
        Ok((id, _)) => id,
        Err(refused) => return refused,
    };
    match endpoint.sessions.remove(&id) {
        Some(legacy) => {
            end(legacy).await;
            StatusCode::NO_CONTENT.into_response()
        }
        None => (StatusCode::NOT_FOUND, "no such session").into_response(),
    }
}

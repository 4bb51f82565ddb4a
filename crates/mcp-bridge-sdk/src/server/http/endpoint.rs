//! The axum endpoint: the POST handler, its header checks against the
//! body, and JSON or SSE answers.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use mcp_bridge_protocol::method::{Method, ToolsCall};
use mcp_bridge_protocol::{
    ErrorObject, JsonRpcErrorResponse, JsonRpcRequest, Message, RequestId, decode_message, error_code,
};
use serde_json::Value;
use tokio::sync::mpsc;

use super::connections;
use super::listener::{Accepted, Listener};
use super::{ConnectionLimits, HttpOptions, refusal_by_origin_or_host, refuse_connection};
use crate::limits::OUTGOING_QUEUE;
use crate::server::accept::serve_capped;
#[cfg(feature = "legacy")]
use crate::server::legacy::embed::http::LegacyHttpOptions;
use crate::server::protect::{Caller, Protection, Refusal};
use crate::server::{Connection, Server};
use mcp_bridge_protocol::headers::{check_header_values, decode_header_value, name_member};
use mcp_bridge_protocol::meta::RequestMeta;

#[derive(Clone)]
struct Endpoint {
    server: Server,
    options: HttpOptions,
}

impl Server {
    /// The HTTP endpoint as an axum router, to mount in an application;
    /// with [`HttpOptions::protection`], its protected resource metadata
    /// too.
    ///
    /// With the `legacy` feature, the endpoint serves 2025-11-25 clients
    /// too (see [`ServerBuilder::legacy_clients`](crate::server::ServerBuilder::legacy_clients)), their
    /// sessions with [`LegacyHttpOptions::default`] and the server's limits.
    /// Mounted this way, a legacy session past its idle time ends when a
    /// new one starts; [`Server::serve_http`] also ends them as they expire.
    pub fn http_router(&self, options: HttpOptions) -> Router {
        #[cfg(feature = "legacy")]
        if let Some(sessions) = self.legacy_sessions() {
            return crate::server::legacy::embed::http::http_router(self, options, sessions);
        }
        self.modern_router(options)
    }

    /// The 2026-07-28 endpoint alone.
    pub(crate) fn modern_router(&self, options: HttpOptions) -> Router {
        let path = options.path.clone();
        let mut router =
            Router::new().route(&path, post(handle_post).get(method_not_allowed).delete(method_not_allowed));
        if let Some(protection) = &options.protection {
            let metadata = protection.resource.metadata().to_string();
            let document = move || async move { ([(header::CONTENT_TYPE, "application/json")], metadata) };
            router = router.route(&protection.resource.metadata_path(), get(document));
        }
        router.with_state(Endpoint { server: self.clone(), options })
    }

    /// Serves the endpoint on `listener` until `shutdown` completes; then the
    /// open listen streams end with their completion result, the responses
    /// in progress are finished and the connections closed. Connections are
    /// held to `options.connections`: a client slow to send its request, or
    /// keeping an unused connection, is cut off. At the cap a newcomer takes
    /// the place of the oldest connection still sending its request head,
    /// else of the idlest connection of the client address holding the
    /// most; when every address holds about as many, it gets 503 with
    /// `Retry-After`.
    ///
    /// # Errors
    /// None today: a failed accept is logged and the loop goes on.
    pub async fn serve_http(
        &self,
        listener: tokio::net::TcpListener,
        options: HttpOptions,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        #[cfg(feature = "legacy")]
        if let Some(sessions) = self.legacy_sessions() {
            return crate::server::legacy::embed::http::serve_http(self, listener, options, sessions, shutdown).await;
        }
        let limits = options.connections;
        serve_router(listener, self.modern_router(options), limits, self.ending_listens(shutdown)).await
    }

    /// The options of the endpoint's 2025-11-25 sessions, when it serves
    /// such clients: the defaults, with this server's profile and limits.
    #[cfg(feature = "legacy")]
    fn legacy_sessions(&self) -> Option<LegacyHttpOptions> {
        let legacy = self.legacy_options()?;
        Some(LegacyHttpOptions::default().with_frontend(legacy.frontend(self)))
    }

    /// `shutdown`, then the open listen streams end with their completion
    /// result.
    pub(crate) fn ending_listens(
        &self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        let server = self.clone();
        async move {
            shutdown.await;
            server.shutdown_subscriptions();
        }
    }
}

/// Serves `router` on `listener` (a TCP port, or on Unix a Unix domain
/// socket: see [`Listener`]) with the connection limits of
/// [`Server::serve_http`] until `shutdown` completes; then the responses in
/// progress are finished and the connections closed. For a router that
/// mounts the endpoint among routes of its own.
///
/// # Errors
/// None today: a failed accept is logged and the loop goes on.
pub async fn serve_router(
    listener: impl Into<Listener>,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = listener.into();
    let serve = |accepted: Accepted, slot, stop| {
        connections::serve_connection(accepted, router.clone(), limits, stop, slot, None)
    };
    let open = serve_capped(
        || listener.accept(),
        limits.max_connections,
        "an HTTP client",
        shutdown,
        serve,
        refuse_connection,
    );
    open.await.end(None).await;
    Ok(())
}

async fn method_not_allowed() -> Response {
    (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")], "this MCP endpoint takes POST only").into_response()
}

fn json_response(status: StatusCode, message: &Message) -> Response {
    let body = serde_json::to_vec(message).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn error_response(status: StatusCode, id: Option<RequestId>, error: ErrorObject) -> Response {
    json_response(status, &Message::Error(JsonRpcErrorResponse::new(id, error)))
}

/// A header that is missing or disagrees with the body, in words.
struct Mismatch(String);

fn header_mismatch(id: &RequestId, Mismatch(what): Mismatch) -> Response {
    let error = ErrorObject::new(error_code::HEADER_MISMATCH, format!("Header mismatch: {what}"));
    error_response(StatusCode::BAD_REQUEST, Some(id.clone()), error)
}

/// A header value, with the `=?base64?…?=` sentinel decoded.
fn decoded_header(headers: &HeaderMap, name: &str) -> Option<Result<String, ()>> {
    let raw = headers.get(name)?.to_str().map_err(|_| ());
    Some(raw.and_then(|raw| decode_header_value(raw).map_err(|_| ())))
}

/// Checks the request metadata headers against the body.
fn check_headers(headers: &HeaderMap, request: &JsonRpcRequest, server: &Server) -> Result<(), Mismatch> {
    let body_version = request
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(mcp_bridge_protocol::meta::PROTOCOL_VERSION_KEY))
        .and_then(Value::as_str);
    match (headers.get("mcp-protocol-version").and_then(|v| v.to_str().ok()), body_version) {
        (None, _) => return Err(Mismatch("the MCP-Protocol-Version header is required".into())),
        (Some(h), Some(b)) if h != b => {
            return Err(Mismatch(format!("MCP-Protocol-Version header value '{h}' does not match body value '{b}'")));
        }
        _ => {}
    }
    match decoded_header(headers, "mcp-method") {
        None => return Err(Mismatch("the Mcp-Method header is required".into())),
        Some(Ok(m)) if m == request.method => {}
        Some(Ok(m)) => {
            return Err(Mismatch(format!(
                "Mcp-Method header value '{m}' does not match body value '{}'",
                request.method
            )));
        }
        Some(Err(())) => return Err(Mismatch("the Mcp-Method header is not valid".into())),
    }
    if let Some(field) = name_member(&request.method) {
        let body_name = request.params.as_ref().and_then(|p| p.get(field)).and_then(Value::as_str);
        match (decoded_header(headers, "mcp-name"), body_name) {
            (None, _) => return Err(Mismatch("the Mcp-Name header is required".into())),
            (Some(Ok(h)), Some(b)) if h == b => {}
            (Some(Ok(h)), b) => {
                return Err(Mismatch(format!(
                    "Mcp-Name header value '{h}' does not match body value '{}'",
                    b.unwrap_or("")
                )));
            }
            (Some(Err(())), _) => return Err(Mismatch("the Mcp-Name header is not valid".into())),
        }
    }
    if request.method == ToolsCall::NAME {
        let params = request.params.as_ref();
        let tool = params.and_then(|p| p.get("name")).and_then(Value::as_str).unwrap_or_default();
        check_header_values(&server.header_params(tool), params.and_then(|p| p.get("arguments")), |name| {
            headers.get(name).and_then(|v| v.to_str().ok())
        })
        .map_err(|e| Mismatch(e.to_string()))?;
    }
    Ok(())
}

/// The HTTP status of a JSON-RPC error answer.
fn status_of(error: &ErrorObject) -> StatusCode {
    match error.code {
        error_code::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        error_code::HEADER_MISMATCH
        | error_code::MISSING_REQUIRED_CLIENT_CAPABILITY
        | error_code::UNSUPPORTED_PROTOCOL_VERSION
        | error_code::PARSE_ERROR
        | error_code::INVALID_REQUEST => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

async fn handle_post(State(endpoint): State<Endpoint>, request: axum::extract::Request) -> Response {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    // Put there by the server's own TLS (serve_https).
    let peer = parts.extensions.get::<crate::server::protect::PeerCertificates>().cloned();
    let options = &endpoint.options;
    if let Some(refusal) = refusal_by_origin_or_host(&headers, options) {
        return (StatusCode::FORBIDDEN, refusal).into_response();
    }
    let caller = match &options.protection {
        Some(protection) => match authenticate(protection, &headers).await {
            Ok(caller) => Some(caller),
            Err(refused) => return refused,
        },
        None => None,
    };
    if let Some(refused) = refusal_unless_json(&headers) {
        return refused;
    }
    // The body gets the time a request has to arrive, so a client trickling
    // it cannot hold the connection (the head's time is the watchdog's).
    let read = axum::body::to_bytes(body, options.max_body_bytes);
    let body: Bytes = match tokio::time::timeout(options.connections.request_read_timeout, read).await {
        Ok(Ok(body)) => body,
        Ok(Err(_)) => return (StatusCode::PAYLOAD_TOO_LARGE, "the body is over the limit").into_response(),
        Err(_) => return (StatusCode::REQUEST_TIMEOUT, "the body did not arrive in time").into_response(),
    };
    let limits = endpoint.server.limits().clone();
    let message = match decode_message(&body, limits.max_depth) {
        Ok(message) => message,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, e.reply_id(&body), e.to_error_object()),
    };
    let request = match message {
        Message::Request(request) => request,
        Message::Notification(_) => return StatusCode::ACCEPTED.into_response(),
        Message::Result(_) | Message::Error(_) => {
            let error = ErrorObject::new(error_code::INVALID_REQUEST, "Invalid request: a client sends no responses");
            return error_response(StatusCode::BAD_REQUEST, None, error);
        }
    };
    if let Err(mismatch) = check_headers(&headers, &request, &endpoint.server) {
        return header_mismatch(&request.id, mismatch);
    }
    let meta = match crate::server::dispatch::check_envelope(&request) {
        Ok(meta) => meta,
        Err(fault) => return error_response(StatusCode::BAD_REQUEST, Some(request.id), fault.to_error_object()),
    };
    if let (Some(protection), Some(caller)) = (&options.protection, &caller) {
        let needed = endpoint.server.scopes_needed(&request.method, request.params.as_ref());
        if let Err(refusal) = protection.admit(caller, needed) {
            return challenge_response(protection, &refusal);
        }
    }
    let max_unsent = options.connections.max_unsent_bytes;
    answer(endpoint.server, request, meta, Requester { caller, headers, peer }, max_unsent).await
}

/// Who sent a request, as its connection and headers say.
struct Requester {
    caller: Option<Caller>,
    headers: HeaderMap,
    peer: Option<crate::server::protect::PeerCertificates>,
}

/// The caller of a request to a protected endpoint, or the challenge that
/// refuses it: for a host that serves routes of its own beside the
/// endpoint under the same protection (the embedded bridge's legacy
/// sessions).
///
/// # Errors
/// The 401, 403 or 400 answer with its `WWW-Authenticate` challenge.
pub(crate) async fn authenticate(protection: &Protection, headers: &HeaderMap) -> Result<Caller, Response> {
    let values: Vec<&str> = headers.get_all(header::AUTHORIZATION).iter().filter_map(|v| v.to_str().ok()).collect();
    protection.authenticate(&values).await.map_err(|refusal| challenge_response(protection, &refusal))
}

/// The answer to a refused request: its status and `WWW-Authenticate`.
pub(crate) fn challenge_response(protection: &Protection, refusal: &Refusal) -> Response {
    let challenge = protection.challenge(refusal);
    let status = StatusCode::from_u16(challenge.status).unwrap_or(StatusCode::UNAUTHORIZED);
    let mut response = (status, "the request's credentials are refused").into_response();
    if let Ok(value) = HeaderValue::from_str(&challenge.www_authenticate) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// Cancels the request when the response (stream) is dropped: a client
/// that closes the stream cancels its request.
struct CancelOnDrop(Connection);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A 415 answer unless the request's body is declared `application/json`:
/// a web page may POST `text/plain` (or nothing) to any port without a
/// CORS preflight, never JSON. For a host serving its own POST routes
/// beside the endpoint (the embedded bridge's 2025-11-25 sessions).
pub(crate) fn refusal_unless_json(headers: &HeaderMap) -> Option<Response> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .is_some_and(|c| c.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")));
    (!is_json).then(|| (StatusCode::UNSUPPORTED_MEDIA_TYPE, "the body must be application/json").into_response())
}

/// A message as the bytes `encode` makes of it, or, over `max` bytes (what
/// one connection may have queued unsent:
/// [`ConnectionLimits::max_unsent_bytes`](super::ConnectionLimits)), a
/// result or error replaced by an error saying so (`None` for another
/// message, which is dropped): a client that never reads holds `max` bytes
/// at most, not what it asked for. Every HTTP answer of a server goes
/// through it (both eras).
pub(crate) fn encode_within(message: Message, max: usize, encode: impl Fn(&Message) -> Bytes) -> Option<Bytes> {
    let bytes = encode(&message);
    if bytes.len() <= max {
        return Some(bytes);
    }
    let id = match message {
        Message::Result(r) => r.id,
        Message::Error(e) => e.id?,
        _ => {
            tracing::warn!(bytes = bytes.len(), max, "dropping a notification over the unsent-bytes limit");
            return None;
        }
    };
    tracing::warn!(bytes = bytes.len(), max, "refusing a response over the unsent-bytes limit");
    let text = format!(
        "the response is {} bytes, over this endpoint's limit of {max} bytes queued per connection",
        bytes.len()
    );
    let error = ErrorObject::new(error_code::INTERNAL_ERROR, text);
    Some(encode(&Message::Error(JsonRpcErrorResponse::new(Some(id), error))))
}

fn json_bytes(message: &Message) -> Bytes {
    Bytes::from(serde_json::to_vec(message).unwrap_or_default())
}

async fn answer(
    server: Server,
    request: JsonRpcRequest,
    meta: Option<RequestMeta>,
    from: Requester,
    max_unsent: usize,
) -> Response {
    let (out, mut rx) = mpsc::channel::<Message>(OUTGOING_QUEUE);
    let connection = Connection::new(server, out)
        .with_caller(from.caller)
        .with_http_headers(Some(from.headers))
        .with_peer_certificates(from.peer);
    connection.admit(request, meta).await;
    let guard = CancelOnDrop(connection);
    let Some(first) = rx.recv().await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    match first {
        Message::Result(_) | Message::Error(_) => {
            let status = match &first {
                Message::Error(e) => status_of(&e.error),
                _ => StatusCode::OK,
            };
            let body = encode_within(first, max_unsent, json_bytes).unwrap_or_default();
            (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
        }
        _ => {
            // Notifications before the result: an SSE stream that ends with it.
            let stream =
                futures_util::stream::unfold((Some(first), rx, Some(guard)), move |(next, mut rx, guard)| async move {
                    let guard = guard?;
                    let message = match next {
                        Some(m) => m,
                        None => rx.recv().await?,
                    };
                    let last = matches!(message, Message::Result(_) | Message::Error(_));
                    // An SSE comment where a dropped notification was.
                    let dropped = || Bytes::from_static(b": a message over the size limit was dropped\n\n");
                    let event = encode_within(message, max_unsent, sse_event).unwrap_or_else(dropped);
                    Some((Ok::<_, std::convert::Infallible>(event), (None, rx, (!last).then_some(guard))))
                });
            let mut response = Body::from_stream(stream).into_response();
            let headers = response.headers_mut();
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            response
        }
    }
}

/// One SSE event carrying one JSON-RPC message (compact JSON has no newline,
/// so one `data:` line).
pub(crate) fn sse_event(message: &Message) -> Bytes {
    let json = serde_json::to_string(message).unwrap_or_default();
    Bytes::from(format!("event: message\ndata: {json}\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_sentinel_headers_are_decoded() {
        let mut headers = HeaderMap::new();
        headers.insert("mcp-name", HeaderValue::from_static("=?base64?SGVsbG8sIOS4lueVjA==?="));
        assert_eq!(decoded_header(&headers, "mcp-name"), Some(Ok("Hello, 世界".into())));
        headers.insert("mcp-name", HeaderValue::from_static("=?base64?!!!?="));
        assert_eq!(decoded_header(&headers, "mcp-name"), Some(Err(())));
        assert_eq!(decoded_header(&headers, "mcp-method"), None);
    }

    #[test]
    fn a_response_over_the_unsent_limit_becomes_an_error_and_a_notification_is_dropped() {
        let decode = |v: Value| decode_message(v.to_string().as_bytes(), 64).unwrap();
        let result = decode(serde_json::json!({"jsonrpc": "2.0", "id": 7, "result": {"text": "x".repeat(1000)}}));
        assert_eq!(encode_within(result.clone(), 2000, json_bytes), Some(json_bytes(&result)));
        let refused: Value = serde_json::from_slice(&encode_within(result, 500, json_bytes).unwrap()).unwrap();
        assert_eq!(
            (refused["id"].clone(), refused["error"]["code"].clone()),
            (7.into(), error_code::INTERNAL_ERROR.into())
        );
        let note = decode(serde_json::json!(
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x".repeat(1000)}}));
        assert_eq!(encode_within(note, 500, sse_event), None);
    }
}

//! The axum endpoint: the POST handler, its header checks against the
//! body, and JSON or SSE answers.

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use mcp_bridge_protocol::method::{Method, ToolsCall};
use mcp_bridge_protocol::{ErrorObject, JsonRpcRequest, Message, RequestId, decode_message, error_code};
use serde_json::Value;
use tokio::sync::mpsc;

use super::answers::{answer_with, error_response};
use super::connections;
use super::gate::{CheckedPost, challenge_response, check_post, held_until_sent};
use super::listener::{Accepted, Listener};
use super::{ConnectionLimits, HttpOptions, refuse_connection};
use crate::limits::OUTGOING_QUEUE;
use crate::server::accept::serve_capped;
#[cfg(feature = "legacy")]
use crate::server::legacy::embed::http::LegacyHttpOptions;
use crate::server::protect::Caller;
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
        let router = Router::new().route(&path, post(handle_post).get(method_not_allowed).delete(method_not_allowed));
        with_metadata(router, &options).with_state(Endpoint { server: self.clone(), options })
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

/// `router` with, on a protected endpoint, the document of its protected
/// resource metadata (RFC 9728) at its well-known path, and the probes
/// when the options have one.
pub(crate) fn with_metadata<S: Clone + Send + Sync + 'static>(router: Router<S>, options: &HttpOptions) -> Router<S> {
    let router = super::health::with_probes(router, options);
    let router = super::metrics::with_metrics(router, options);
    let Some(protection) = &options.protection else { return router };
    let metadata = protection.resource.metadata().to_string();
    let document = move || async move { ([(header::CONTENT_TYPE, "application/json")], metadata) };
    router.route(&protection.resource.metadata_path(), get(document))
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
    match check_post(request, &endpoint.options).await {
        Ok(mut post) => {
            let held = post.held.take();
            held_until_sent(serve_post(&endpoint.server, &endpoint.options, post).await, held)
        }
        Err(refused) => refused,
    }
}

/// Answers a POST of a 2026-07-28 client that passed the gate: its body
/// decoded, its headers checked against the body, its `_meta` read once,
/// its scopes checked on a protected endpoint, then the server's answer.
pub(crate) async fn serve_post(server: &Server, options: &HttpOptions, post: CheckedPost) -> Response {
    let CheckedPost { parts, caller, body, .. } = post;
    let headers = parts.headers;
    // Put there by the server's own TLS (serve_https).
    let peer = parts.extensions.get::<crate::server::protect::PeerCertificates>().cloned();
    let message = match decode_message(&body, server.limits().max_depth) {
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
    if let Err(mismatch) = check_headers(&headers, &request, server) {
        return header_mismatch(&request.id, mismatch);
    }
    let meta = match crate::server::dispatch::check_envelope(&request) {
        Ok(meta) => meta,
        Err(fault) => return error_response(StatusCode::BAD_REQUEST, Some(request.id), fault.to_error_object()),
    };
    if let (Some(protection), Some(caller)) = (&options.protection, &caller) {
        let needed = server.scopes_needed(&request.method, request.params.as_ref());
        if let Err(refusal) = protection.admit(caller, &needed) {
            return challenge_response(protection, &refusal);
        }
    }
    let max_unsent = options.connections.max_unsent_bytes;
    answer(server.clone(), request, meta, Requester { caller, headers, peer }, max_unsent).await
}

/// Who sent a request, as its connection and headers say.
struct Requester {
    caller: Option<std::sync::Arc<Caller>>,
    headers: HeaderMap,
    peer: Option<crate::server::protect::PeerCertificates>,
}

/// Cancels the request when the response (stream) is dropped: a client
/// that closes the stream cancels its request.
struct CancelOnDrop(Connection);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
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
        .for_one_request()
        .with_caller(from.caller)
        .with_http_headers(Some(from.headers))
        .with_peer_certificates(from.peer);
    connection.admit(request, meta).await;
    let guard = CancelOnDrop(connection);
    match rx.recv().await {
        Some(first) => answer_with(first, rx, guard, is_response, status_of_answer, max_unsent),
        None => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

fn is_response(message: &Message) -> bool {
    matches!(message, Message::Result(_) | Message::Error(_))
}

/// The HTTP status of a response sent alone as JSON.
fn status_of_answer(message: &Message) -> StatusCode {
    match message {
        Message::Error(e) => status_of(&e.error),
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn base64_sentinel_headers_are_decoded() {
        let mut headers = HeaderMap::new();
        headers.insert("mcp-name", HeaderValue::from_static("=?base64?SGVsbG8sIOS4lueVjA==?="));
        assert_eq!(decoded_header(&headers, "mcp-name"), Some(Ok("Hello, 世界".into())));
        headers.insert("mcp-name", HeaderValue::from_static("=?base64?!!!?="));
        assert_eq!(decoded_header(&headers, "mcp-name"), Some(Err(())));
        assert_eq!(decoded_header(&headers, "mcp-method"), None);
    }
}

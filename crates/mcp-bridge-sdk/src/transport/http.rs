//! The client side of Streamable HTTP (2026-07-28): one POST per message,
//! `Accept` for JSON and SSE, the request metadata headers, and the answer
//! read as JSON or as SSE events as they arrive.
//!
//! It wears the same shape as the other transports (message channels), so
//! the client's router works unchanged: a pump task turns each request into
//! a POST of its own and feeds what comes back into the incoming channel.
//! Cancelling a request closes its stream. An `initialize` sent by the
//! client turns the connection into a 2025-11-25 session (`legacy.rs`); one
//! refused with 404 or 405 tries the HTTP+SSE transport of 2024-11-05
//! (`http_sse.rs`).
//!
//! Errors never quote the URL (the reqwest error is stripped of it).

use std::sync::Arc;

use mcp_bridge_protocol::method::{
    Initialize, Initialized, Method, NotificationsCancelled, SubscriptionsListen, ToolsCall,
};
use mcp_bridge_protocol::{JsonRpcRequest, Message};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::Value;
use tokio::sync::mpsc;

use super::in_flight::InFlight;
use super::sse::SseParser;
use super::tool_headers::ToolHeaders;
use super::{Incoming, Transport};
use crate::error::Error;
use crate::limits::{CLOSE_GRACE, OUTGOING_QUEUE};
use crate::task_group::TaskGroup;
use mcp_bridge_protocol::headers::{HeaderError, encode_header_value, name_member};

mod answer;
mod config;
mod http_sse;
mod legacy;
#[cfg(unix)]
mod tunnel;

#[cfg(not(unix))]
use super::credentials::without_credentials;
use answer::read_answer;
use legacy::{SessionSlot, SettledSession};

pub use super::credentials::{
    AskUser, AuthProvider, AuthRefusal, BearerToken, Credentials, DEFAULT_MAX_RESPONSE_BYTES,
};
pub use super::tool_headers::RejectedToolHook;
pub(crate) use config::build_client_with;
pub use config::{HttpConfig, ProxyConfig};

/// Whether a server that answers an `initialize` POST with this status may
/// be one of the HTTP+SSE transport of 2024-11-05 (the transport then
/// tries it, as the specification's backward compatibility says).
pub fn may_be_http_sse(status: u16) -> bool {
    matches!(status, 404 | 405)
}

/// The request metadata headers of a message.
fn metadata_headers(method: &str, params: Option<&Value>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let put = |headers: &mut HeaderMap, name: &'static str, value: &str| {
        if let Ok(v) = HeaderValue::from_str(&encode_header_value(value)) {
            headers.insert(name, v);
        }
    };
    put(&mut headers, "mcp-method", method);
    let version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(mcp_bridge_protocol::meta::PROTOCOL_VERSION_KEY))
        .and_then(Value::as_str)
        .unwrap_or(mcp_bridge_protocol::PROTOCOL_VERSION);
    put(&mut headers, "mcp-protocol-version", version);
    let name = name_member(method).and_then(|member| params.and_then(|p| p.get(member)));
    if let Some(name) = name.and_then(Value::as_str) {
        put(&mut headers, "mcp-name", name);
    }
    headers
}

/// Connects a client transport to the server at `config.url`.
///
/// # Errors
/// [`Error::InvalidRequest`] when the HTTP client cannot be built: a proxy
/// that is not `http://`, a CA or identity file that cannot be read.
pub fn connect(config: HttpConfig) -> Result<Transport, Error> {
    let (http, tunnel) = client_and_tunnel(&config)?;
    let credential = super::Credential::of(config.auth.as_ref(), &config.headers);
    let endpoint = Some(config.url.clone());
    let address = endpoint.clone();
    let (outgoing, out_rx) = mpsc::channel::<Message>(OUTGOING_QUEUE);
    let (to_client, incoming) = mpsc::channel::<Incoming>(OUTGOING_QUEUE);
    let tasks = TaskGroup::default();
    let pump_tasks = tasks.clone();
    tasks.spawn_to_finish(CLOSE_GRACE, async move {
        pump(http, Arc::new(config), out_rx, to_client, pump_tasks).await;
        // The tunnel's socket lives as long as the transport.
        #[cfg_attr(not(unix), allow(dropping_copy_types))]
        drop(tunnel);
    });
    Ok(Transport { credential, endpoint, address, ..Transport::remote(outgoing, incoming, tasks) })
}

/// The transport's HTTP client; through an explicit proxy (on Unix), every
/// connection to the endpoint is a CONNECT tunnel, `http://` included.
#[cfg(unix)]
fn client_and_tunnel(config: &HttpConfig) -> Result<(reqwest::Client, Option<tunnel::Tunnel>), Error> {
    let ProxyConfig::Explicit { url: proxy, no_proxy } = &config.proxy else {
        return Ok((config::build_client(config)?, None));
    };
    let endpoint = reqwest::Url::parse(&config.url)
        .map_err(|e| Error::InvalidRequest { reason: format!("the server URL is not valid: {e}") })?;
    let (Some(host), Some(target)) = (endpoint.host_str(), proxy_target(&endpoint)) else {
        return Ok((config::build_client(config)?, None));
    };
    if config::bypasses_proxy(host, no_proxy) {
        return Ok((config::build_client(config)?, None));
    }
    // Checks the proxy URL as the plain client does.
    config::build_client(config)?;
    let tunnel = tunnel::Tunnel::start(proxy, target)
        .map_err(|e| Error::InvalidRequest { reason: format!("the proxy tunnel cannot be set up: {e}") })?;
    Ok((config::build_tunnelled_client(config, &tunnel.socket())?, Some(tunnel)))
}

/// `host:port` of `url` as a proxy's CONNECT names it (an IPv6 host in
/// brackets).
fn proxy_target(url: &reqwest::Url) -> Option<String> {
    let (host, port) = (url.host_str()?, url.port_or_known_default()?);
    Some(if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    })
}

/// The transport's HTTP client, through reqwest's own proxy support.
#[cfg(not(unix))]
fn client_and_tunnel(config: &HttpConfig) -> Result<(reqwest::Client, Option<()>), Error> {
    Ok((config::build_client(config)?, None))
}

/// What the pump shares with each exchange.
#[derive(Clone)]
struct Shared {
    http: reqwest::Client,
    config: Arc<HttpConfig>,
    to_client: mpsc::Sender<Incoming>,
    in_flight: InFlight,
    /// The tools' `x-mcp-header` annotations, learned from `tools/list`.
    tool_headers: ToolHeaders,
    /// Slots for requests sent at once.
    slots: Arc<tokio::sync::Semaphore>,
    /// The 2025-11-25 session, once an `initialize` started one.
    session: Arc<SessionSlot>,
    /// The message endpoint, once the server proved to be of the HTTP+SSE
    /// transport.
    old_sse: Arc<http_sse::EndpointSlot>,
    /// Every task of the transport: exchanges, messages, server streams.
    tasks: TaskGroup,
}

/// Turns each outgoing message into a POST of its own, until the client
/// is gone or closes the transport (stops its `tasks`).
async fn pump(
    http: reqwest::Client,
    config: Arc<HttpConfig>,
    mut out_rx: mpsc::Receiver<Message>,
    to_client: mpsc::Sender<Incoming>,
    tasks: TaskGroup,
) {
    let stop = tasks.stopping();
    let slots = Arc::new(tokio::sync::Semaphore::new(config.max_in_flight.max(1)));
    let session = Arc::default();
    let shared = Shared {
        http,
        config,
        to_client,
        in_flight: InFlight::default(),
        tool_headers: ToolHeaders::default(),
        slots,
        session,
        old_sse: Arc::default(),
        tasks,
    };
    // Whether the 2025-11-25 session has begun (its GET stream asked for).
    let mut begun = false;
    loop {
        let message = tokio::select! {
            message = out_rx.recv() => match message {
                Some(message) => message,
                None => break,
            },
            () = stop.cancelled() => break,
        };
        match message {
            Message::Request(request) => {
                // Known before it starts, so an exchange that ends at once still finds its entry.
                let cancel = shared.tasks.child_token();
                shared.in_flight.started(request.id.clone(), cancel.clone());
                shared.tasks.spawn_until(cancel, exchange(shared.clone(), request));
            }
            // On HTTP+SSE the answer comes on the one stream: the server is told.
            Message::Notification(n)
                if n.method == NotificationsCancelled::NAME && shared.old_sse.endpoint().is_some() =>
            {
                shared.tasks.spawn(post_message(shared.clone(), None, Message::Notification(n)));
            }
            // On Streamable HTTP a request is cancelled by closing its stream.
            Message::Notification(n) if n.method == NotificationsCancelled::NAME => shared.in_flight.cancel(&n),
            Message::Notification(n) => {
                let session = shared.session.get();
                match (session, n.method.as_str(), begun) {
                    // The session begins: `initialized` is sent and the GET stream
                    // open before the next message goes out (a server drops what
                    // it sends for no request while no GET stream is open).
                    (Some(session), Initialized::NAME, false) => {
                        begun = true;
                        post_message(shared.clone(), Some(session.clone()), Message::Notification(n)).await;
                        legacy::start_server_stream(&shared, &session).await;
                    }
                    (session, _, _) => {
                        shared.tasks.spawn(post_message(shared.clone(), session, Message::Notification(n)));
                    }
                }
            }
            // The client's answers to a 2025-11-25 server's requests.
            answer @ (Message::Result(_) | Message::Error(_)) => match shared.session.get() {
                Some(session) => {
                    shared.tasks.spawn(post_message(shared.clone(), Some(session), answer));
                }
                None if shared.old_sse.endpoint().is_some() => {
                    shared.tasks.spawn(post_message(shared.clone(), None, answer));
                }
                None => tracing::debug!("an answer with no session to send it in was dropped"),
            },
        }
    }
    shared.in_flight.cancel_all();
    shared.session.stop_server_stream();
    shared.old_sse.stop();
    if let Some(session) = shared.session.get() {
        legacy::end(shared.http.clone(), shared.config.clone(), session).await;
    }
}

/// Where a message goes and its headers: the request metadata headers of
/// 2026-07-28 to the server's URL, or the session's headers (none on the
/// `initialize` that starts it), or none to the message endpoint of the
/// HTTP+SSE transport.
fn addressed(
    shared: &Shared,
    session: Option<&SettledSession>,
    method: &str,
    params: Option<&Value>,
) -> (String, HeaderMap) {
    if let Some(endpoint) = shared.old_sse.endpoint() {
        return (endpoint.into(), HeaderMap::new());
    }
    let headers = match session {
        Some(session) => legacy::session_headers(session),
        None if method == Initialize::NAME => HeaderMap::new(),
        None => metadata_headers(method, params),
    };
    (shared.config.url.clone(), headers)
}

/// A POST of one message to `url` with `headers` and the configured ones.
fn post(
    http: &reqwest::Client,
    config: &HttpConfig,
    url: &str,
    headers: HeaderMap,
    body: Vec<u8>,
) -> reqwest::RequestBuilder {
    let mut request = http
        .post(url)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .headers(headers);
    for (name, value) in &config.headers {
        request = request.header(name, value);
    }
    request.body(body)
}

/// The credential headers (`Authorization`, and `DPoP` for a key-bound
/// token) of a request with the HTTP `method` to `url`; none without a
/// provider.
async fn credential_headers(config: &HttpConfig, method: &str, url: &str) -> Result<HeaderMap, String> {
    let Some(auth) = &config.auth else { return Ok(HeaderMap::new()) };
    let credentials = auth.credentials(method, url).await.map_err(|e| e.to_string())?;
    credentials.into_headers().map_err(str::to_owned)
}

/// [`credential_headers`] of a message sent besides a request (best
/// effort: a provider that fails sends none, and the server says 401).
async fn with_credentials(
    config: &HttpConfig,
    request: reqwest::RequestBuilder,
    method: &str,
    url: &str,
) -> reqwest::RequestBuilder {
    request.headers(credential_headers(config, method, url).await.unwrap_or_default())
}

/// POSTs a notification, or an answer to a server's request; nothing comes
/// back but a status.
async fn post_message(shared: Shared, session: Option<SettledSession>, message: Message) {
    let (method, params) = match &message {
        Message::Notification(n) => (n.method.as_str(), n.params.as_ref()),
        _ => ("", None),
    };
    let body = serde_json::to_vec(&message).unwrap_or_default();
    let (url, headers) = addressed(&shared, session.as_ref(), method, params);
    let request = post(&shared.http, &shared.config, &url, headers, body);
    let request = with_credentials(&shared.config, request, "POST", &url).await;
    if let Err(e) = request.send().await {
        tracing::debug!("a message could not be sent: {}", e.without_url());
    }
}

/// Sends one request and feeds its answer (JSON, or each SSE event) to the
/// client's reader.
async fn exchange(shared: Shared, request: JsonRpcRequest) {
    let id = request.id.clone();
    // A listen stream stays open by design: it takes no slot.
    let _slot = match request.method.as_str() {
        SubscriptionsListen::NAME => None,
        _ => shared.slots.clone().acquire_owned().await.ok(),
    };
    let outcome = read_answer(&shared, &request).await;
    shared.in_flight.finished(&id);
    let item = match outcome {
        Ok(true) => return,
        Ok(false) => Incoming::Lost { id },
        Err(Failure::BeforeSending(reason)) => Incoming::Failed { id, error: Error::InvalidRequest { reason } },
        Err(Failure::Answer(reason)) => Incoming::Undecodable { id: Some(id), reason },
        Err(Failure::Transport(reason)) => Incoming::Failed { id, error: Error::Transport { reason } },
    };
    let _ = shared.to_client.send(item).await;
}

/// Why an exchange failed.
enum Failure {
    /// Nothing was sent (an argument cannot be mirrored into a header).
    BeforeSending(String),
    /// The answer is not valid.
    Answer(String),
    /// The request did not reach the server.
    Transport(String),
}

/// The `Mcp-Param-*` headers of a `tools/call`.
fn param_headers(shared: &Shared, request: &JsonRpcRequest) -> Result<Vec<(String, String)>, HeaderError> {
    if request.method != ToolsCall::NAME {
        return Ok(Vec::new());
    }
    shared.tool_headers.of_call(request.params.as_ref())
}

/// Learns the tools' header annotations from a `tools/list` result,
/// removing the tools whose annotations are not valid.
fn learn_tools(shared: &Shared, message: &mut Message) {
    if let Message::Result(result) = message {
        shared.tool_headers.learn(&mut result.result, shared.config.on_rejected_tool.as_ref());
    }
}

/// One POST of a request, with its credentials when there is a provider.
async fn send(
    shared: &Shared,
    session: Option<&SettledSession>,
    request: &JsonRpcRequest,
    extra: &[(String, String)],
    body: Vec<u8>,
) -> Result<reqwest::Response, Failure> {
    let config = &shared.config;
    let (url, headers) = addressed(shared, session, &request.method, request.params.as_ref());
    let mut post = post(&shared.http, config, &url, headers, body);
    for (name, value) in extra {
        post = post.header(name, value);
    }
    post = post.headers(credential_headers(config, "POST", &url).await.map_err(Failure::BeforeSending)?);
    post.send().await.map_err(|e| {
        let reason = error_chain(&e);
        // On Unix the tunnel names the proxy's refusal itself, with its status.
        #[cfg(not(unix))]
        if let (true, ProxyConfig::Explicit { url: proxy, .. }) = (e.is_connect(), &config.proxy) {
            let server = reqwest::Url::parse(&url).ok().and_then(|u| proxy_target(&u)).unwrap_or_default();
            tracing::warn!(target: "mcp_proxy", proxy = %without_credentials(proxy), server, "cannot reach the server through the proxy: {reason}");
        }
        Failure::Transport(format!("the HTTP request failed: {reason}"))
    })
}

/// An answer cut off by the network: the stream is lost (the caller's
/// retry policy decides what follows), not an invalid answer.
fn lost(status: u16, error: &reqwest::Error) -> bool {
    tracing::debug!(target: "mcp_router", "HTTP {status}: the answer was cut off: {}", error_chain(error));
    false
}

/// A reqwest error with its causes (a refused proxy tunnel is only named
/// in a cause), never with the URL.
fn error_chain(error: &reqwest::Error) -> String {
    crate::error::report_as(if error.is_connect() { "cannot connect" } else { "no answer" }, error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_use_the_base64_sentinel_when_needed() {
        assert_eq!(encode_header_value("get_weather"), "get_weather");
        assert_eq!(encode_header_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode_header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert!(encode_header_value("=?base64?x?=").starts_with("=?base64?PT9i"));
    }
}

//! The client side of Streamable HTTP (2026-07-28): one POST per message,
//! `Accept` for JSON and SSE, the request metadata headers, and the answer
//! read as JSON or as SSE events as they arrive.
//!
//! It wears the same shape as the other transports (message channels), so
//! the client's router works unchanged: a pump task turns each request into
//! a POST of its own and feeds what comes back into the incoming channel.
//! Cancelling a request closes its stream.
//!
//! Errors never quote the URL (the reqwest error is stripped of it).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use mcp_protocol::{JsonRpcNotification, JsonRpcRequest, Message, RequestId, decode_message};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::sse::SseParser;
use super::{Incoming, Transport};
use crate::error::Error;
use crate::limits::OUTGOING_QUEUE;

/// The largest JSON body or SSE event accepted by default.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// Where and how to reach a Streamable HTTP server.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The endpoint URL.
    pub url: String,
    /// The largest JSON body, and the largest SSE event (not the whole stream).
    pub max_response_bytes: usize,
    /// Headers added to every POST.
    pub headers: Vec<(String, String)>,
}

impl HttpConfig {
    /// A configuration with the default limits.
    pub fn new(url: impl Into<String>) -> Self {
        HttpConfig { url: url.into(), max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES, headers: Vec::new() }
    }
}

/// A header value as the specification wants it: plain when it is visible
/// ASCII without surrounding spaces, else the `=?base64?…?=` sentinel.
pub fn header_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim() == value
        && !value.starts_with("=?base64?");
    if plain {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(value.as_bytes()))
    }
}

/// The request metadata headers of a message.
fn metadata_headers(method: &str, params: Option<&Value>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    let put = |headers: &mut HeaderMap, name: &'static str, value: &str| {
        if let Ok(v) = HeaderValue::from_str(&header_value(value)) {
            headers.insert(name, v);
        }
    };
    put(&mut headers, "mcp-method", method);
    let version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(mcp_protocol::meta::PROTOCOL_VERSION_KEY))
        .and_then(Value::as_str)
        .unwrap_or(mcp_protocol::PROTOCOL_VERSION);
    put(&mut headers, "mcp-protocol-version", version);
    let name = match method {
        "tools/call" | "prompts/get" => params.and_then(|p| p.get("name")),
        "resources/read" => params.and_then(|p| p.get("uri")),
        _ => None,
    };
    if let Some(name) = name.and_then(Value::as_str) {
        put(&mut headers, "mcp-name", name);
    }
    headers
}

/// Connects a client transport to the server at `config.url`.
///
/// # Errors
/// [`Error::InvalidRequest`] when the HTTP client cannot be built.
pub fn connect(config: HttpConfig) -> Result<Transport, Error> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|e| Error::InvalidRequest { reason: e.without_url().to_string() })?;
    let (outgoing, out_rx) = mpsc::channel::<Message>(OUTGOING_QUEUE);
    let (to_client, incoming) = mpsc::channel::<Incoming>(OUTGOING_QUEUE);
    tokio::spawn(pump(http, Arc::new(config), out_rx, to_client));
    Ok(Transport { outgoing, incoming, process: None, timed: true })
}

type InFlight = Arc<Mutex<HashMap<RequestId, AbortHandle>>>;

/// Turns each outgoing message into a POST of its own.
async fn pump(
    http: reqwest::Client,
    config: Arc<HttpConfig>,
    mut out_rx: mpsc::Receiver<Message>,
    to_client: mpsc::Sender<Incoming>,
) {
    let in_flight: InFlight = Arc::default();
    while let Some(message) = out_rx.recv().await {
        match message {
            Message::Request(request) => {
                let id = request.id.clone();
                let task =
                    tokio::spawn(exchange(http.clone(), config.clone(), request, to_client.clone(), in_flight.clone()));
                in_flight.lock().unwrap_or_else(|e| e.into_inner()).insert(id, task.abort_handle());
            }
            Message::Notification(n) if n.method == "notifications/cancelled" => {
                // On HTTP a request is cancelled by closing its stream.
                let id =
                    n.params.as_ref().and_then(|p| p.get("requestId")).and_then(|v| RequestId::try_from_value(v).ok());
                if let Some(task) = id.and_then(|id| in_flight.lock().unwrap_or_else(|e| e.into_inner()).remove(&id)) {
                    task.abort();
                }
            }
            Message::Notification(n) => {
                tokio::spawn(notify(http.clone(), config.clone(), n));
            }
            Message::Result(_) | Message::Error(_) => {}
        }
    }
    for (_, task) in in_flight.lock().unwrap_or_else(|e| e.into_inner()).drain() {
        task.abort();
    }
}

fn post(
    http: &reqwest::Client,
    config: &HttpConfig,
    method: &str,
    params: Option<&Value>,
    body: Vec<u8>,
) -> reqwest::RequestBuilder {
    let mut request = http
        .post(&config.url)
        .header(CONTENT_TYPE, "application/json")
        .header(ACCEPT, "application/json, text/event-stream")
        .headers(metadata_headers(method, params));
    for (name, value) in &config.headers {
        request = request.header(name, value);
    }
    request.body(body)
}

async fn notify(http: reqwest::Client, config: Arc<HttpConfig>, n: JsonRpcNotification) {
    let body = serde_json::to_vec(&n).unwrap_or_default();
    if let Err(e) = post(&http, &config, &n.method, n.params.as_ref(), body).send().await {
        tracing::debug!("a notification could not be sent: {}", e.without_url());
    }
}

/// Sends one request and feeds its answer (JSON, or each SSE event) to the
/// client's reader.
async fn exchange(
    http: reqwest::Client,
    config: Arc<HttpConfig>,
    request: JsonRpcRequest,
    to_client: mpsc::Sender<Incoming>,
    in_flight: InFlight,
) {
    let id = request.id.clone();
    let outcome = read_answer(&http, &config, &request, &to_client).await;
    in_flight.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
    let item = match outcome {
        Ok(true) => return,
        Ok(false) => Incoming::Lost { id },
        Err(reason) => Incoming::Undecodable { id: Some(id), reason },
    };
    let _ = to_client.send(item).await;
}

/// `Ok(true)` when the response reached the client, `Ok(false)` when the
/// stream ended before it, `Err` with the reason the answer is not valid.
async fn read_answer(
    http: &reqwest::Client,
    config: &HttpConfig,
    request: &JsonRpcRequest,
    to_client: &mpsc::Sender<Incoming>,
) -> Result<bool, String> {
    let body = serde_json::to_vec(request).unwrap_or_default();
    let mut response = post(http, config, &request.method, request.params.as_ref(), body)
        .send()
        .await
        .map_err(|e| format!("the HTTP request failed: {}", e.without_url()))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let max = config.max_response_bytes;
    match content_type.as_str() {
        "application/json" => {
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(|e| format!("HTTP {status}: {}", e.without_url()))? {
                if body.len() + chunk.len() > max {
                    return Err(format!("HTTP {status}: the JSON body is larger than {max} bytes"));
                }
                body.extend_from_slice(&chunk);
            }
            let message =
                decode_message(&body, mcp_protocol::UPSTREAM_MAX_DEPTH).map_err(|e| format!("HTTP {status}: {e}"))?;
            let is_response = matches!(message, Message::Result(_) | Message::Error(_));
            if !is_response {
                return Err(format!("HTTP {status}: the body is not a JSON-RPC response"));
            }
            let _ = to_client.send(Incoming::Message(message)).await;
            Ok(true)
        }
        "text/event-stream" => {
            let mut parser = SseParser::new(max);
            while let Some(chunk) = response.chunk().await.map_err(|e| format!("HTTP {status}: {}", e.without_url()))? {
                let events = parser.push(&chunk).map_err(|e| format!("HTTP {status}: {e}"))?;
                for event in events {
                    let message = match decode_message(event.data.as_bytes(), mcp_protocol::UPSTREAM_MAX_DEPTH) {
                        Ok(message) => message,
                        Err(e) => {
                            tracing::warn!(target: "mcp_router", "an SSE event that is not JSON-RPC was dropped: {e}");
                            continue;
                        }
                    };
                    let done = matches!(&message, Message::Result(r) if r.id == request.id)
                        || matches!(&message, Message::Error(e) if e.id.as_ref() == Some(&request.id));
                    let _ = to_client.send(Incoming::Message(message)).await;
                    if done {
                        return Ok(true);
                    }
                }
            }
            Ok(false)
        }
        other => Err(format!("HTTP {status} with content type {other:?}, not a JSON-RPC answer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_values_use_the_base64_sentinel_when_needed() {
        assert_eq!(header_value("get_weather"), "get_weather");
        assert_eq!(header_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert!(header_value("=?base64?x?=").starts_with("=?base64?PT9i"));
    }
}

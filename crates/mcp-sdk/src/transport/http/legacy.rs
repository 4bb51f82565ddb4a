//! A 2025-11-25 session on the Streamable HTTP transport, for a server that
//! speaks only that revision: the client's `initialize` starts it (its
//! response gives the `Mcp-Session-Id` and the version), every later POST
//! carries both, the client's answers to the server's requests are POSTed
//! too, a GET stream brings what the server sends for no request, and the
//! session is DELETEd when the transport ends.

use std::sync::Mutex;

use mcp_protocol::{Message, decode_message};
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
use tokio::sync::mpsc;

use super::{HttpConfig, SseParser};
use crate::transport::Incoming;

/// The session header of 2025-11-25.
const SESSION_HEADER: &str = "mcp-session-id";

/// How long the session's start waits for its GET stream: the requests
/// wait behind it, and a server that never answers the GET must not hold
/// them.
const OPEN_STREAM_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// What an `initialize` settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LegacySession {
    /// The server's session id; `None` for a stateless server.
    pub(super) id: Option<String>,
    /// The version the server chose.
    pub(super) version: String,
}

/// The session of a connection: none (2026-07-28), or the one an
/// `initialize` started.
#[derive(Debug, Default)]
pub(super) struct SessionSlot(Mutex<Option<LegacySession>>);

impl SessionSlot {
    pub(super) fn get(&self) -> Option<LegacySession> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(super) fn set(&self, session: LegacySession) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(session);
    }
}

/// The headers of every message of the session after `initialize`.
pub(super) fn session_headers(session: &LegacySession) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Ok(version) = HeaderValue::from_str(&session.version) {
        headers.insert("mcp-protocol-version", version);
    }
    if let Some(id) = session.id.as_deref().and_then(|id| HeaderValue::from_str(id).ok()) {
        headers.insert(SESSION_HEADER, id);
    }
    headers
}

/// The session an `initialize` response starts: the id from its headers,
/// the version from its result. `None` when it is no successful result.
pub(super) fn learn(headers: &HeaderMap, message: &Message) -> Option<LegacySession> {
    let Message::Result(result) = message else { return None };
    let version = result.result.get("protocolVersion")?.as_str()?.to_owned();
    let id = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    Some(LegacySession { id, version })
}

/// A request of the session other than a POST (the GET stream, the DELETE).
fn session_request(
    http: &reqwest::Client,
    config: &HttpConfig,
    method: reqwest::Method,
    session: &LegacySession,
) -> reqwest::RequestBuilder {
    let mut request = http.request(method, &config.url).headers(session_headers(session));
    for (name, value) in &config.headers {
        request = request.header(name, value);
    }
    request
}

/// Opens the GET stream of the session: `None` when the server offers none
/// (405) or it cannot be opened. Awaited before the next request goes out,
/// so nothing the server sends after it is lost.
pub(super) async fn open_server_stream(
    http: &reqwest::Client,
    config: &HttpConfig,
    session: &LegacySession,
) -> Option<reqwest::Response> {
    let request = session_request(http, config, reqwest::Method::GET, session).header(ACCEPT, "text/event-stream");
    let Ok(sent) = tokio::time::timeout(OPEN_STREAM_LIMIT, request.send()).await else {
        tracing::debug!("the session's GET stream did not open within {OPEN_STREAM_LIMIT:?}");
        return None;
    };
    match sent {
        Ok(response) if response.status().as_u16() == 200 => Some(response),
        Ok(response) => {
            tracing::debug!("the server offers no GET stream (HTTP {})", response.status().as_u16());
            None
        }
        Err(e) => {
            tracing::debug!("the session's GET stream cannot be opened: {}", e.without_url());
            None
        }
    }
}

/// Reads the GET stream: what the server sends for no request
/// (notifications, its own requests), fed to the client's reader until it
/// ends.
pub(super) async fn read_server_stream(
    mut response: reqwest::Response,
    max_event_bytes: usize,
    to_client: mpsc::Sender<Incoming>,
) {
    let mut parser = SseParser::new(max_event_bytes);
    while let Ok(Some(chunk)) = response.chunk().await {
        let events = match parser.push(&chunk) {
            Ok(events) => events,
            Err(e) => return tracing::warn!("the session's GET stream sent an event too large: {e}"),
        };
        for event in events.into_iter().filter(|e| !e.data.is_empty()) {
            match decode_message(event.data.as_bytes(), mcp_protocol::UPSTREAM_MAX_DEPTH) {
                Ok(message) => {
                    if to_client.send(Incoming::Message(message)).await.is_err() {
                        return;
                    }
                }
                Err(e) => tracing::warn!("an event of the GET stream that is not JSON-RPC was dropped: {e}"),
            }
        }
    }
    tracing::debug!("the session's GET stream ended");
}

/// Ends the session on the server (best effort: a server may answer 405).
pub(super) async fn end(http: reqwest::Client, config: std::sync::Arc<HttpConfig>, session: LegacySession) {
    if session.id.is_none() {
        return;
    }
    match session_request(&http, &config, reqwest::Method::DELETE, &session).send().await {
        Ok(response) => tracing::debug!("the session was ended (HTTP {})", response.status().as_u16()),
        Err(e) => tracing::debug!("the session could not be ended: {}", e.without_url()),
    }
}

#[cfg(test)]
mod tests {
    use mcp_protocol::{JsonRpcResultResponse, RequestId};
    use serde_json::json;

    use super::*;

    #[test]
    fn an_initialize_result_starts_a_session_with_its_id_and_version() {
        let mut headers = HeaderMap::new();
        headers.insert(SESSION_HEADER, HeaderValue::from_static("abc"));
        let ok = Message::Result(JsonRpcResultResponse::new(
            RequestId::Number(1),
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}),
        ));
        let session = learn(&headers, &ok).unwrap();
        assert_eq!(session, LegacySession { id: Some("abc".into()), version: "2025-06-18".into() });
        let sent = session_headers(&session);
        assert_eq!(sent.get("mcp-protocol-version").unwrap(), "2025-06-18");
        assert_eq!(sent.get(SESSION_HEADER).unwrap(), "abc");
        let stateless = learn(&HeaderMap::new(), &ok).unwrap();
        assert!(stateless.id.is_none() && !session_headers(&stateless).contains_key(SESSION_HEADER));
        let refused = Message::Result(JsonRpcResultResponse::new(RequestId::Number(1), json!({})));
        assert!(learn(&headers, &refused).is_none());
    }
}

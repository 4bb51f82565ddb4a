//! A 2025-11-25 session on the Streamable HTTP transport, for a server that
//! speaks only that revision: the client's `initialize` starts it (its
//! response gives the `Mcp-Session-Id` and the version), every later POST
//! carries both, the client's answers to the server's requests are POSTed
//! too, a GET stream brings what the server sends for no request, and the
//! session is DELETEd when the transport ends.
//!
//! Streams are resumable, as that revision allows: a request's stream that
//! ends before its answer, and the GET stream, are opened again with a GET
//! carrying `Last-Event-ID`, after the `retry:` time the server asked for.
//! A session the server no longer knows (404) is started again with the
//! client's own `initialize`, once per lost session.

use std::sync::Mutex;
use std::time::Duration;

use mcp_bridge_protocol::method::{Initialized, Method};
use mcp_bridge_protocol::{JsonRpcNotification, JsonRpcRequest, Message, RequestId, decode_message};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use tokio::task::AbortHandle;

use super::{HttpConfig, Shared, SseParser};
use crate::limits::MAX_LOST_STREAM_RETRIES;
use crate::transport::Incoming;

/// The session header of 2025-11-25.
const SESSION_HEADER: &str = "mcp-session-id";

/// How long the session's start waits for its GET stream: the requests
/// wait behind it, and a server that never answers the GET must not hold
/// them.
const OPEN_STREAM_LIMIT: Duration = Duration::from_secs(10);

/// The wait before a stream is resumed when the server named none with
/// `retry:` (what the TypeScript SDK waits first).
const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// The longest `retry:` honoured: a server's typo must not park a request
/// for hours.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// The shortest wait before a resume, whatever `retry:` says: a server
/// that closes every stream at once with `retry: 0` must not get a busy
/// loop of GETs.
const MIN_RETRY: Duration = Duration::from_millis(100);

/// What an `initialize` settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SettledSession {
    /// The server's session id; `None` for a stateless server.
    pub(super) id: Option<String>,
    /// The version the server chose.
    pub(super) version: String,
    /// Counts the sessions of this connection: tells a renewal already
    /// done by another request from one still to do.
    pub(super) generation: u64,
}

/// The session of a connection: none (2026-07-28), or the one an
/// `initialize` started, with what it takes to start it again.
#[derive(Debug, Default)]
pub(super) struct SessionSlot {
    current: Mutex<Option<SettledSession>>,
    /// The client's `initialize`, sent again when the session is lost.
    initialize: Mutex<Option<JsonRpcRequest>>,
    /// The GET stream's reader.
    server_stream: Mutex<Option<AbortHandle>>,
    /// One renewal at a time.
    renewing: tokio::sync::Mutex<()>,
}

impl SessionSlot {
    pub(super) fn get(&self) -> Option<SettledSession> {
        lock(&self.current).clone()
    }

    /// Starts the session an `initialize` answer settled.
    pub(super) fn set(&self, id: Option<String>, version: String) {
        let mut current = lock(&self.current);
        let generation = current.as_ref().map_or(0, |s| s.generation + 1);
        *current = Some(SettledSession { id, version, generation });
    }

    /// Keeps the client's `initialize` for a renewal.
    pub(super) fn remember_initialize(&self, request: &JsonRpcRequest) {
        *lock(&self.initialize) = Some(request.clone());
    }

    /// Whether the session's GET stream is being read.
    pub(super) fn has_server_stream(&self) -> bool {
        lock(&self.server_stream).is_some()
    }

    fn replace_server_stream(&self, reader: Option<AbortHandle>) {
        if let Some(old) = std::mem::replace(&mut *lock(&self.server_stream), reader) {
            old.abort();
        }
    }

    /// Stops reading the GET stream (the transport ends).
    pub(super) fn stop_server_stream(&self) {
        self.replace_server_stream(None);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The headers of every message of the session after `initialize`.
pub(super) fn session_headers(session: &SettledSession) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Ok(version) = HeaderValue::from_str(&session.version) {
        headers.insert("mcp-protocol-version", version);
    }
    if let Some(id) = session.id.as_deref().and_then(|id| HeaderValue::from_str(id).ok()) {
        headers.insert(SESSION_HEADER, id);
    }
    headers
}

/// The session id and version an `initialize` response starts: the id
/// from its headers, the version from its result. `None` when it is no
/// successful result.
pub(super) fn learn(headers: &HeaderMap, message: &Message) -> Option<(Option<String>, String)> {
    let Message::Result(result) = message else { return None };
    let version = result.result.get("protocolVersion")?.as_str()?.to_owned();
    let id = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    Some((id, version))
}

/// The wait before a stream is resumed: the server's `retry:`, bounded.
pub(super) fn retry_delay(retry_ms: Option<u64>) -> Duration {
    retry_ms.map_or(DEFAULT_RETRY, |ms| Duration::from_millis(ms).clamp(MIN_RETRY, MAX_RETRY))
}

/// A request of the session other than a POST (the GET stream, the DELETE).
fn session_request(
    http: &reqwest::Client,
    config: &HttpConfig,
    method: reqwest::Method,
    session: &SettledSession,
) -> reqwest::RequestBuilder {
    let mut request = http.request(method, &config.url).headers(session_headers(session));
    for (name, value) in &config.headers {
        request = request.header(name, value);
    }
    request
}

/// A GET of the session's stream, resumed after `last_event_id` when
/// given: `None` when the server offers none (405), no longer knows the
/// session, or it cannot be opened within [`OPEN_STREAM_LIMIT`].
pub(super) async fn get_stream(
    shared: &Shared,
    session: &SettledSession,
    last_event_id: Option<&str>,
) -> Option<reqwest::Response> {
    let mut request = session_request(&shared.http, &shared.config, reqwest::Method::GET, session)
        .header(ACCEPT, "text/event-stream");
    if let Some(id) = last_event_id.and_then(|id| HeaderValue::from_str(id).ok()) {
        request = request.header("last-event-id", id);
    }
    request = super::with_credentials(&shared.config, request, "GET", &shared.config.url).await;
    let Ok(sent) = tokio::time::timeout(OPEN_STREAM_LIMIT, request.send()).await else {
        tracing::debug!("the session's GET stream did not open within {OPEN_STREAM_LIMIT:?}");
        return None;
    };
    match sent {
        Ok(response) if response.status().as_u16() == 200 => Some(response),
        Ok(response) => {
            tracing::debug!("the server opens no GET stream (HTTP {})", response.status().as_u16());
            None
        }
        Err(e) => {
            tracing::debug!("the session's GET stream cannot be opened: {}", e.without_url());
            None
        }
    }
}

/// Opens the GET stream of the session and reads it on a task of its own
/// (replacing the one of a session before). Awaited before the next
/// request goes out, so nothing the server sends after it is lost.
pub(super) async fn start_server_stream(shared: &Shared, session: &SettledSession) {
    let Some(response) = get_stream(shared, session, None).await else { return };
    let reader = shared.tasks.spawn(read_server_stream(shared.clone(), session.clone(), response));
    shared.session.replace_server_stream(Some(reader.abort_handle()));
}

/// Reads the GET stream: what the server sends for no request
/// (notifications, its own requests), fed to the client's reader. A
/// stream that ends is resumed with `Last-Event-ID` after the server's
/// `retry:` time, until [`MAX_LOST_STREAM_RETRIES`] resumes in a row bring
/// nothing, the server refuses the GET, or the session changes.
async fn read_server_stream(shared: Shared, session: SettledSession, mut response: reqwest::Response) {
    let mut parser = SseParser::new(shared.config.max_response_bytes);
    let mut idle_resumes = 0;
    loop {
        let seen = parser.last_event_id().map(str::to_owned);
        let mut brought = false;
        while let Ok(Some(chunk)) = response.chunk().await {
            let events = match parser.push(&chunk) {
                Ok(events) => events,
                Err(e) => return tracing::warn!("the session's GET stream sent an event too large: {e}"),
            };
            for event in events.into_iter().filter(|e| !e.data.is_empty()) {
                brought = true;
                match decode_message(event.data.as_bytes(), mcp_bridge_protocol::UPSTREAM_MAX_DEPTH) {
                    Ok(message) => {
                        if shared.to_client.send(Incoming::Message(message)).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => tracing::warn!("an event of the GET stream that is not JSON-RPC was dropped: {e}"),
                }
            }
        }
        let progressed = brought || parser.last_event_id() != seen.as_deref();
        idle_resumes = if progressed { 0 } else { idle_resumes + 1 };
        if idle_resumes > MAX_LOST_STREAM_RETRIES || shared.session.get().as_ref() != Some(&session) {
            return tracing::debug!("the session's GET stream ended");
        }
        tokio::time::sleep(retry_delay(parser.retry_ms())).await;
        tracing::debug!(last_event_id = parser.last_event_id(), "resuming the session's GET stream");
        match get_stream(&shared, &session, parser.last_event_id()).await {
            Some(next) => response = next,
            None => return,
        }
    }
}

/// Starts a new session after the server forgot `lost` (HTTP 404): the
/// client's `initialize` again, `notifications/initialized`, the GET
/// stream. Does nothing when another request already renewed it.
///
/// # Errors
/// Why the new session could not be started.
pub(super) async fn renew(shared: &Shared, lost: &SettledSession) -> Result<(), String> {
    let _one_at_a_time = shared.session.renewing.lock().await;
    if shared.session.get().is_some_and(|s| s.generation != lost.generation) {
        return Ok(());
    }
    let Some(mut initialize) = lock(&shared.session.initialize).clone() else {
        return Err("no initialize to start a new session with".into());
    };
    initialize.id = RequestId::String(format!("renew-{}", lost.generation + 1));
    tracing::info!("the server no longer knows the session (HTTP 404); starting a new one");
    let body = serde_json::to_vec(&initialize).map_err(|e| e.to_string())?;
    let post = super::post(&shared.http, &shared.config, &shared.config.url, HeaderMap::new(), body);
    let post = super::with_credentials(&shared.config, post, "POST", &shared.config.url).await;
    let initialized = async {
        let response = post.send().await.map_err(|e| format!("the new initialize failed: {}", e.without_url()))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let answer = first_response(response, shared.config.max_response_bytes).await?;
        Ok::<_, String>((status, headers, answer))
    };
    // The requests waiting behind a renewal must not wait on a server that never answers it.
    let (status, headers, answer) = tokio::time::timeout(OPEN_STREAM_LIMIT, initialized)
        .await
        .map_err(|_| format!("the new initialize got no answer within {OPEN_STREAM_LIMIT:?}"))??;
    let Some((id, version)) = learn(&headers, &answer) else {
        return Err(format!("the new initialize was refused (HTTP {status})"));
    };
    shared.session.set(id, version);
    let Some(session) = shared.session.get() else { return Err("the new session was lost".into()) };
    let initialized = Message::Notification(JsonRpcNotification::new(Initialized::NAME, None));
    super::post_message(shared.clone(), Some(session.clone()), initialized).await;
    if shared.session.has_server_stream() {
        start_server_stream(shared, &session).await;
    }
    Ok(())
}

/// The first JSON-RPC response of a POST's answer, JSON or SSE.
async fn first_response(mut response: reqwest::Response, max: usize) -> Result<Message, String> {
    let content_type = response.headers().get(CONTENT_TYPE).and_then(|c| c.to_str().ok()).unwrap_or_default();
    let sse = content_type.trim_start().to_ascii_lowercase().starts_with("text/event-stream");
    let mut parser = SseParser::new(max);
    let mut body = Vec::new();
    while let Some(chunk) =
        response.chunk().await.map_err(|e| format!("the answer was cut off: {}", e.without_url()))?
    {
        if !sse {
            if body.len() + chunk.len() > max {
                return Err(format!("the answer is larger than {max} bytes"));
            }
            body.extend_from_slice(&chunk);
            continue;
        }
        for event in parser.push(&chunk).map_err(|e| e.to_string())? {
            if let Ok(message @ (Message::Result(_) | Message::Error(_))) =
                decode_message(event.data.as_bytes(), mcp_bridge_protocol::UPSTREAM_MAX_DEPTH)
            {
                return Ok(message);
            }
        }
    }
    decode_message(&body, mcp_bridge_protocol::UPSTREAM_MAX_DEPTH)
        .map_err(|e| format!("the answer is not JSON-RPC: {e}"))
}

/// Ends the session on the server (best effort: a server may answer 405).
pub(super) async fn end(http: reqwest::Client, config: std::sync::Arc<HttpConfig>, session: SettledSession) {
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
    use mcp_bridge_protocol::JsonRpcResultResponse;
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
        let (id, version) = learn(&headers, &ok).unwrap();
        assert_eq!((id.as_deref(), version.as_str()), (Some("abc"), "2025-06-18"));
        let slot = SessionSlot::default();
        slot.set(id, version);
        let session = slot.get().unwrap();
        let sent = session_headers(&session);
        assert_eq!(sent.get("mcp-protocol-version").unwrap(), "2025-06-18");
        assert_eq!(sent.get(SESSION_HEADER).unwrap(), "abc");
        let (none, version) = learn(&HeaderMap::new(), &ok).unwrap();
        slot.set(none, version);
        let stateless = slot.get().unwrap();
        assert!(!session_headers(&stateless).contains_key(SESSION_HEADER));
        assert_eq!(stateless.generation, session.generation + 1, "a new session is a new generation");
        let refused = Message::Result(JsonRpcResultResponse::new(RequestId::Number(1), json!({})));
        assert!(learn(&headers, &refused).is_none());
    }

    #[test]
    fn a_resume_waits_what_the_server_asked_within_bounds() {
        assert_eq!(retry_delay(None), DEFAULT_RETRY);
        assert_eq!(retry_delay(Some(500)), Duration::from_millis(500));
        assert_eq!(retry_delay(Some(86_400_000)), MAX_RETRY);
        assert_eq!(retry_delay(Some(0)), MIN_RETRY, "no busy loop");
    }
}

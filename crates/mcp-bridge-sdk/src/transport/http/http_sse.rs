//! The HTTP+SSE transport of revision 2024-11-05, the last fallback for a
//! URL: a server that refuses the `initialize` POST (404 or 405) may be
//! one of that transport. The client GETs the URL as an event stream; the
//! first `endpoint` event names where to POST messages (same origin only:
//! another is refused, as a server must not send a client's messages
//! elsewhere); every answer, request and notification of the server comes
//! on that stream. The stream's end ends the connection.

use std::sync::Mutex;
use std::time::Duration;

use mcp_bridge_protocol::decode_message;
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use tokio::task::AbortHandle;

use super::{Shared, SseParser};
use crate::transport::Incoming;

/// How long the server gets to name its message endpoint.
const ENDPOINT_LIMIT: Duration = Duration::from_secs(10);

/// The message endpoint of a connection on this transport, once found.
#[derive(Debug, Default)]
pub(super) struct EndpointSlot {
    endpoint: Mutex<Option<Url>>,
    reader: Mutex<Option<AbortHandle>>,
}

impl EndpointSlot {
    /// Where messages go, when the connection is on this transport.
    pub(super) fn endpoint(&self) -> Option<Url> {
        lock(&self.endpoint).clone()
    }

    /// Stops reading the stream (the transport ends).
    pub(super) fn stop(&self) {
        if let Some(reader) = lock(&self.reader).take() {
            reader.abort();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why the server is not one of this transport, for the log.
#[derive(Debug, thiserror::Error)]
pub(super) enum NotThisTransport {
    /// The GET was refused or failed.
    #[error("the GET for an event stream was answered {0}")]
    Refused(String),
    /// The stream named no endpoint in time, or ended first.
    #[error("the event stream named no message endpoint")]
    NoEndpoint,
    /// The endpoint is not a URL, or not of the server's origin (not
    /// quoted: it carries the session id).
    #[error("the HTTP+SSE server's message endpoint is refused: it is {0}")]
    BadEndpoint(&'static str),
}

/// Opens the event stream at the server's URL and waits for its `endpoint`
/// event; then reads the rest of the stream on a task of its own, feeding
/// the client's reader, and sends [`Incoming::Disconnected`] at its end.
///
/// # Errors
/// [`NotThisTransport`] when the server does not speak this transport.
pub(super) async fn open(shared: &Shared) -> Result<Url, NotThisTransport> {
    let config = &shared.config;
    let base =
        Url::parse(&config.url).map_err(|_| NotThisTransport::Refused("nothing: the URL is not valid".into()))?;
    let mut request = shared.http.get(base.clone()).header(ACCEPT, "text/event-stream");
    for (name, value) in &config.headers {
        request = request.header(name, value);
    }
    request = super::with_credentials(config, request, "GET", base.as_str()).await;
    let mut response = request.send().await.map_err(|e| NotThisTransport::Refused(e.without_url().to_string()))?;
    let status = response.status().as_u16();
    let is_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .is_some_and(|c| c.trim_start().to_ascii_lowercase().starts_with("text/event-stream"));
    if status != 200 || !is_stream {
        return Err(NotThisTransport::Refused(format!("HTTP {status}")));
    }
    let mut parser = SseParser::new(config.max_response_bytes);
    let named = tokio::time::timeout(ENDPOINT_LIMIT, async {
        while let Ok(Some(chunk)) = response.chunk().await {
            let Ok(events) = parser.push(&chunk) else { return None };
            let mut events = events.into_iter();
            if let Some(endpoint) = events.by_ref().find(|e| e.event == "endpoint") {
                // Messages in the same chunk after the endpoint are not lost.
                let rest: Vec<_> = events.collect();
                return Some((endpoint.data, rest));
            }
        }
        None
    });
    let (data, rest) = named.await.ok().flatten().ok_or(NotThisTransport::NoEndpoint)?;
    let endpoint = message_endpoint(&base, &data)?;
    *lock(&shared.old_sse.endpoint) = Some(endpoint.clone());
    for event in rest {
        deliver(shared, &event.data).await;
    }
    let reader = shared.tasks.spawn(read_stream(shared.clone(), response, parser));
    *lock(&shared.old_sse.reader) = Some(reader.abort_handle());
    Ok(endpoint)
}

/// The endpoint an `endpoint` event names, resolved against the server's
/// URL and of its origin.
fn message_endpoint(base: &Url, data: &str) -> Result<Url, NotThisTransport> {
    let endpoint = base.join(data.trim()).map_err(|_| NotThisTransport::BadEndpoint("not a URL"))?;
    if endpoint.origin() != base.origin() {
        return Err(NotThisTransport::BadEndpoint("of another origin than the server's"));
    }
    Ok(endpoint)
}

async fn deliver(shared: &Shared, data: &str) -> bool {
    if data.is_empty() {
        return true;
    }
    match decode_message(data.as_bytes(), mcp_bridge_protocol::UPSTREAM_MAX_DEPTH) {
        Ok(message) => shared.to_client.send(Incoming::Message(message)).await.is_ok(),
        Err(e) => {
            tracing::warn!(target: "mcp_router", "an event of the server's stream that is not JSON-RPC was dropped: {e}");
            true
        }
    }
}

async fn read_stream(shared: Shared, mut response: reqwest::Response, mut parser: SseParser) {
    while let Ok(Some(chunk)) = response.chunk().await {
        let events = match parser.push(&chunk) {
            Ok(events) => events,
            Err(e) => {
                tracing::warn!("the server's event stream sent an event too large: {e}");
                break;
            }
        };
        for event in events.into_iter().filter(|e| e.event == "message") {
            if !deliver(&shared, &event.data).await {
                return;
            }
        }
    }
    tracing::debug!("the server's event stream (HTTP+SSE) ended");
    let _ = shared.to_client.send(Incoming::Disconnected).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_resolved_against_the_server_and_kept_to_its_origin() {
        let base = Url::parse("http://127.0.0.1:3001/sse").unwrap();
        let relative = message_endpoint(&base, "/message?sessionId=abc").unwrap();
        assert_eq!(relative.as_str(), "http://127.0.0.1:3001/message?sessionId=abc");
        let absolute = message_endpoint(&base, "http://127.0.0.1:3001/other").unwrap();
        assert_eq!(absolute.path(), "/other");
        for elsewhere in ["http://evil.example/message", "https://127.0.0.1:3001/message", "http://127.0.0.1:3002/m"] {
            assert!(
                matches!(message_endpoint(&base, elsewhere), Err(NotThisTransport::BadEndpoint(..))),
                "{elsewhere}"
            );
        }
    }
}

//! The HTTP endpoint's answers, for both eras: a JSON body, or an SSE
//! stream when more than the response goes out, each message within what
//! one connection may have queued unsent.

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mcp_bridge_protocol::{ErrorObject, JsonRpcErrorResponse, Message, RequestId, error_code};
use tokio::sync::mpsc;

/// `message` as a JSON body with `status`.
pub(crate) fn json_response(status: StatusCode, message: &Message) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], json_bytes(message)).into_response()
}

/// A JSON-RPC error as a JSON body with `status`.
pub(crate) fn error_response(status: StatusCode, id: Option<RequestId>, error: ErrorObject) -> Response {
    json_response(status, &Message::Error(JsonRpcErrorResponse::new(id, error)))
}

/// The answer to one request from the messages sent for it: a JSON body
/// (with the status `status_of` gives) when the first is its last, else an
/// SSE stream that ends with the last. `guard` lives as long as the
/// answer: dropped when the JSON body is made or the stream ends or is
/// dropped by the client.
pub(crate) fn answer_with<G: Send + 'static>(
    first: Message,
    rx: mpsc::Receiver<Message>,
    guard: G,
    is_last: impl Fn(&Message) -> bool + Send + Sync + 'static,
    status_of: impl FnOnce(&Message) -> StatusCode,
    max_unsent: usize,
) -> Response {
    if is_last(&first) {
        let status = status_of(&first);
        let body = encode_within(first, max_unsent, json_bytes).unwrap_or_default();
        return (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    }
    let is_last = std::sync::Arc::new(is_last);
    let events = futures_util::stream::unfold((Some(first), rx, Some(guard)), move |(next, mut rx, guard)| {
        let is_last = is_last.clone();
        async move {
            let guard = guard?;
            let message = match next {
                Some(message) => message,
                None => rx.recv().await?,
            };
            let done = is_last(&message);
            let event = sse_within(None, message, max_unsent);
            Some((Ok::<_, std::convert::Infallible>(event), (None, rx, (!done).then_some(guard))))
        }
    });
    sse_response(Body::from_stream(events))
}

/// `body` as an SSE stream.
pub(crate) fn sse_response(body: Body) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The SSE event of `message` (with its event `id`, for a stream that can
/// be resumed) within `max_unsent` bytes ([`encode_within`]); a comment
/// where a dropped notification was.
pub(crate) fn sse_within(id: Option<u64>, message: Message, max_unsent: usize) -> Bytes {
    encode_within(message, max_unsent, |m| sse_event(id, m))
        .unwrap_or_else(|| Bytes::from_static(b": a message over the size limit was dropped\n\n"))
}

/// A message as the bytes `encode` makes of it, or, over `max` bytes (what
/// one connection may have queued unsent:
/// [`ConnectionLimits::max_unsent_bytes`](super::ConnectionLimits)), a
/// result or error replaced by an error saying so (`None` for another
/// message, which is dropped): a client that never reads holds `max` bytes
/// at most, not what it asked for.
fn encode_within(message: Message, max: usize, encode: impl Fn(&Message) -> Bytes) -> Option<Bytes> {
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

/// One SSE event carrying one JSON-RPC message (compact JSON has no
/// newline, so one `data:` line).
fn sse_event(id: Option<u64>, message: &Message) -> Bytes {
    let json = serde_json::to_string(message).unwrap_or_default();
    match id {
        Some(id) => Bytes::from(format!("id: {id}\nevent: message\ndata: {json}\n\n")),
        None => Bytes::from(format!("event: message\ndata: {json}\n\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn a_response_over_the_unsent_limit_becomes_an_error_and_a_notification_is_dropped() {
        let decode = |v: Value| mcp_bridge_protocol::decode_message(v.to_string().as_bytes(), 64).unwrap();
        let result = decode(json!({"jsonrpc": "2.0", "id": 7, "result": {"blob": "x".repeat(1000)}}));
        assert_eq!(encode_within(result.clone(), 2000, json_bytes), Some(json_bytes(&result)));
        let refused: Value = serde_json::from_slice(&encode_within(result, 500, json_bytes).unwrap()).unwrap();
        assert_eq!(refused["id"], 7);
        assert_eq!(refused["error"]["code"], error_code::INTERNAL_ERROR);
        let note =
            decode(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"x": "y".repeat(1000)}}));
        assert_eq!(encode_within(note, 500, |m| sse_event(None, m)), None);
    }
}

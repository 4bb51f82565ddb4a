//! Reading the answer to a POST: a JSON body or an SSE stream (events
//! as they arrive, resumed with `Last-Event-ID` when it breaks), with what
//! the answer teaches (a session id, the tools' header annotations).

use mcp_bridge_protocol::method::{Initialize, Method, ToolsList};
use mcp_bridge_protocol::{JsonRpcRequest, Message, decode_message};
use reqwest::header::{CONTENT_TYPE, HeaderMap};

use super::{AuthRefusal, Failure, Shared, http_sse, learn_tools, legacy, lost, may_be_http_sse, param_headers, send};
use crate::transport::Incoming;
use crate::transport::sse::SseParser;

/// Asks the user through whoever answers request `id`'s server requests.
fn ask_for(shared: &Shared, id: &mcp_bridge_protocol::RequestId) -> crate::transport::credentials::AskUser {
    let (to_client, id) = (shared.to_client.clone(), id.clone());
    crate::transport::credentials::AskUser::new(move |request| {
        let (to_client, id) = (to_client.clone(), id.clone());
        Box::pin(async move {
            let (answer, answered) = tokio::sync::oneshot::channel();
            to_client
                .send(Incoming::AskUser { id, request: Box::new(request), answer })
                .await
                .map_err(|_| crate::Error::Closed)?;
            answered.await.map_err(|_| crate::Error::Closed)?
        })
    })
}

/// `Ok(true)` when the response reached the client, `Ok(false)` when the
/// stream ended before it, `Err` with the reason the answer is not valid.
pub(super) async fn read_answer(shared: &Shared, request: &JsonRpcRequest) -> Result<bool, Failure> {
    use Failure::Answer;
    let (config, to_client) = (&shared.config, &shared.to_client);
    let extra = param_headers(shared, request).map_err(|e| Failure::BeforeSending(e.to_string()))?;
    let body = serde_json::to_vec(request).unwrap_or_default();
    if request.method == Initialize::NAME {
        shared.session.remember_initialize(request);
    }
    let mut session = shared.session.get();
    let sent_at = tokio::time::Instant::now();
    let mut response = send(shared, session.as_ref(), request, &extra, body.clone()).await?;
    if let (Some(auth), 401 | 403) = (&config.auth, response.status().as_u16()) {
        let header = |name| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let refusal = AuthRefusal {
            sent_at,
            method: request.method.clone(),
            status: response.status().as_u16(),
            www_authenticate: header(reqwest::header::WWW_AUTHENTICATE.as_str()),
            dpop_nonce: header("dpop-nonce"),
            ask_user: Some(ask_for(shared, &request.id)),
        };
        if auth.refused(refusal).await {
            response = send(shared, session.as_ref(), request, &extra, body.clone()).await?;
        }
    }
    if shared.old_sse.endpoint().is_some() {
        return accepted_on_the_stream(&response);
    }
    // A server that refuses `initialize` may be of the HTTP+SSE transport.
    if request.method == Initialize::NAME && session.is_none() && may_be_http_sse(response.status().as_u16()) {
        match http_sse::open(shared).await {
            Ok(endpoint) => {
                tracing::info!(target: "mcp_router", "the server speaks the HTTP+SSE transport (2024-11-05)");
                tracing::debug!(target: "mcp_router", path = endpoint.path(), "its message endpoint");
                let response = send(shared, None, request, &extra, body).await?;
                return accepted_on_the_stream(&response);
            }
            Err(why @ http_sse::NotThisTransport::BadEndpoint(_)) => return Err(Failure::Answer(why.to_string())),
            Err(why) => tracing::debug!(target: "mcp_router", "not an HTTP+SSE server either: {why}"),
        }
    }
    // A 2025-11-25 server that forgot the session: a new one, and this request once more.
    if let (404, Some(lost)) = (response.status().as_u16(), session.as_ref()) {
        match legacy::renew(shared, lost).await {
            Ok(()) => {
                session = shared.session.get();
                response = send(shared, session.as_ref(), request, &extra, body).await?;
            }
            Err(reason) => tracing::warn!("the lost session cannot be started again: {reason}"),
        }
    }
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let _ = to_client.send(Incoming::HttpStatus { id: request.id.clone(), status }).await;
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
            while let Some(chunk) = match response.chunk().await {
                Ok(chunk) => chunk,
                Err(e) => return Ok(lost(status, &e)),
            } {
                if body.len() + chunk.len() > max {
                    return Err(Answer(format!("HTTP {status}: the JSON body is larger than {max} bytes")));
                }
                body.extend_from_slice(&chunk);
            }
            let mut message = decode_message(&body, mcp_bridge_protocol::UPSTREAM_MAX_DEPTH).map_err(|e| {
                // An error status with some other JSON (an OAuth error, a
                // gateway's) is named by its status.
                if status >= 400 {
                    Answer(format!("HTTP {status} without a JSON-RPC answer"))
                } else {
                    Answer(format!("HTTP {status}: {e}"))
                }
            })?;
            let is_response = matches!(message, Message::Result(_) | Message::Error(_));
            if !is_response {
                return Err(Answer(format!("HTTP {status}: the body is not a JSON-RPC response")));
            }
            // The body of a POST's response answers that POST: an error without
            // an id (a 2025-11-25 server's "not initialized") is its answer.
            if let Message::Error(error) = &mut message
                && error.id.is_none()
            {
                error.id = Some(request.id.clone());
            }
            learn_from_answer(shared, request, &headers, &mut message);
            let _ = to_client.send(Incoming::Message(message)).await;
            Ok(true)
        }
        "text/event-stream" => read_resumable_stream(shared, request, &headers, response).await,
        other => Err(Answer(format!("HTTP {status} with content type {other:?}, not a JSON-RPC answer"))),
    }
}

/// A message POSTed on the HTTP+SSE transport: its answer comes on the
/// server's stream, the POST only says it was taken.
fn accepted_on_the_stream(response: &reqwest::Response) -> Result<bool, Failure> {
    let status = response.status().as_u16();
    if response.status().is_success() {
        Ok(true)
    } else {
        Err(Failure::Answer(format!("HTTP {status}: the message endpoint refused the message")))
    }
}

/// What a transport learns from the answer of some requests: the tools'
/// header annotations, the session an `initialize` starts.
fn learn_from_answer(shared: &Shared, request: &JsonRpcRequest, headers: &HeaderMap, message: &mut Message) {
    match request.method.as_str() {
        ToolsList::NAME => learn_tools(shared, message),
        Initialize::NAME => {
            if let Some((id, version)) = legacy::learn(headers, message) {
                shared.session.set(id, version);
            }
        }
        _ => {}
    }
}

/// Reads a request's SSE stream until its answer. In a 2025-11-25 session
/// a stream that ends before it (the server polls, or the network cut it)
/// is resumed with `Last-Event-ID` after the server's `retry:` time, while
/// each resume brings a new event; `Ok(false)` when it ends for good.
async fn read_resumable_stream(
    shared: &Shared,
    request: &JsonRpcRequest,
    headers: &HeaderMap,
    mut response: reqwest::Response,
) -> Result<bool, Failure> {
    let mut parser = SseParser::new(shared.config.max_response_bytes);
    let mut fruitless = 0;
    loop {
        let seen = parser.last_event_id().map(str::to_owned);
        if read_events(shared, request, headers, response, &mut parser).await? {
            return Ok(true);
        }
        let (Some(session), Some(last)) = (shared.session.get(), parser.last_event_id()) else { return Ok(false) };
        fruitless = if seen.as_deref() == Some(last) { fruitless + 1 } else { 0 };
        if fruitless >= crate::limits::MAX_LOST_STREAM_RETRIES {
            return Ok(false);
        }
        let last = last.to_owned();
        tokio::time::sleep(legacy::retry_delay(parser.retry_ms())).await;
        tracing::debug!(target: "mcp_router", method = %request.method, last_event_id = %last, "resuming the stream");
        match legacy::get_stream(shared, &session, Some(&last)).await {
            Some(next) => response = next,
            None => return Ok(false),
        }
    }
}

/// Feeds the events of one SSE response to the client's reader: `true`
/// once the request's answer came, `false` when the stream ended first.
async fn read_events(
    shared: &Shared,
    request: &JsonRpcRequest,
    headers: &HeaderMap,
    mut response: reqwest::Response,
    parser: &mut SseParser,
) -> Result<bool, Failure> {
    let status = response.status().as_u16();
    while let Some(chunk) = match response.chunk().await {
        Ok(chunk) => chunk,
        Err(e) => return Ok(lost(status, &e)),
    } {
        let events = parser.push(&chunk).map_err(|e| Failure::Answer(format!("HTTP {status}: {e}")))?;
        for event in events.into_iter().filter(|e| !e.data.is_empty()) {
            let mut message = match decode_message(event.data.as_bytes(), mcp_bridge_protocol::UPSTREAM_MAX_DEPTH) {
                Ok(message) => message,
                Err(e) => {
                    tracing::warn!(target: "mcp_router", "an SSE event that is not JSON-RPC was dropped: {e}");
                    continue;
                }
            };
            learn_from_answer(shared, request, headers, &mut message);
            let done = matches!(&message, Message::Result(r) if r.id == request.id)
                || matches!(&message, Message::Error(e) if e.id.as_ref() == Some(&request.id));
            let item = match message {
                Message::Notification(notification) => Incoming::OnStream { id: request.id.clone(), notification },
                Message::Request(asked) => Incoming::RequestOnStream { id: request.id.clone(), request: asked },
                other => Incoming::Message(other),
            };
            let _ = shared.to_client.send(item).await;
            if done {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

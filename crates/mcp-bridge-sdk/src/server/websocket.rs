//! Serving over WebSocket: each text message is one JSON-RPC message, and
//! each connection is served as a stdio client is (the same dispatch,
//! limits and end of input). The upgrade is checked as an HTTP POST is:
//! the path, `Origin` and `Host` (DNS rebinding), and on a protected
//! endpoint its token, on its head read once (`http_head.rs`); then the
//! handshake (`handshake.rs`: version 13, the `mcp` subprotocol when the
//! client offers subprotocols) is answered from that head.

mod era;
mod handshake;
#[cfg(feature = "legacy")]
mod legacy;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_util::sync::CancellationToken;

use super::accept::{accept_tcp, serve_capped};
use super::frames::deliver_line;
use super::http::{HttpOptions, Slot, admit_request, refuse_connection};
use super::protect::Caller;
use super::{Connection, Server};
use crate::http_head::{HeadError, parse_request, read_head};
use crate::limits::OUTGOING_QUEUE;
use crate::transport::websocket::frames::{self, Received};
use era::{Era, Taken};

/// The longest upgrade request head taken: far beyond a browser's.
const MAX_HEAD_BYTES: usize = 16 * 1024;

/// The longest a client may take to send its upgrade request.
const UPGRADE_TIMEOUT: Duration = Duration::from_secs(10);

impl Server {
    /// Serves every WebSocket client that connects to `listener` at
    /// `options.path`, each as [`Server::serve_stream`] serves one, until
    /// `shutdown` completes; then no new client is taken, the open listen
    /// streams end with their completion result, and every connection is
    /// closed once its requests had the grace time; it returns when they
    /// are. `options.max_body_bytes`
    /// limits each message; a longer one closes the connection (1009). At
    /// most `options.connections.max_connections` are open: at the cap a
    /// newcomer takes the place of the idlest connection of the client
    /// address holding the most (closed with 1001), or gets 503 when every
    /// address holds about as many. One with nothing running and no message
    /// for `options.connections.idle_timeout` is closed (1001).
    ///
    /// With [`HttpOptions::protection`] each upgrade needs a token, as a
    /// POST does (a refusal is answered 401, 403 or 400 with its
    /// challenge, before any WebSocket frame).
    ///
    /// # Errors
    /// None today: a failed accept is logged and the loop goes on.
    pub async fn serve_websocket(
        &self,
        listener: TcpListener,
        options: HttpOptions,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        let options = Arc::new(options);
        let serve = |stream, slot, stop| {
            let (server, options) = (self.clone(), options.clone());
            async move { serve_connection(server, stream, &options, stop, Some(slot)).await }
        };
        let cap = options.connections.max_connections;
        let accept = || accept_tcp(&listener);
        let open = serve_capped(accept, cap, "a WebSocket client", shutdown, serve, refuse_connection).await;
        self.shutdown_subscriptions();
        open.end(Some(self.ending_grace())).await;
        Ok(())
    }
}

/// Reads the upgrade's head and checks it as the HTTP endpoint checks a
/// request (the path, then `Origin` and `Host`, then on a protected
/// endpoint the token), then as a WebSocket handshake, and answers it: the
/// connection as a WebSocket (the bytes read past the head kept, with
/// messages of at most `max_message_bytes`), the head's headers and the
/// caller; `None` once a refusal was answered or no head came in time.
async fn accept_upgrade<S>(
    mut stream: S,
    options: &HttpOptions,
    max_message_bytes: usize,
) -> Option<(WebSocketStream<S>, http::HeaderMap, Option<std::sync::Arc<Caller>>)>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let read = read_head(&mut stream, 1024, MAX_HEAD_BYTES, parse_request);
    let (head, mut read) = match tokio::time::timeout(UPGRADE_TIMEOUT, read).await {
        Ok(Ok(Ok(read))) => read,
        Ok(Ok(Err(HeadError::Malformed))) => {
            return refuse(stream, StatusCode::BAD_REQUEST, "the upgrade request is not HTTP/1", None).await;
        }
        Ok(Ok(Err(HeadError::TooLong))) => {
            let status = StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE;
            return refuse(stream, status, "the upgrade request's head is over the limit", None).await;
        }
        Ok(Ok(Err(HeadError::Ended)) | Err(_)) | Err(_) => {
            tracing::debug!("a WebSocket client sent no upgrade in time");
            return None;
        }
    };
    if head.path != options.path {
        return refuse(stream, StatusCode::NOT_FOUND, "no MCP endpoint at this path", None).await;
    }
    let caller = match admit_request(&head.headers, options).await {
        Ok(caller) => caller,
        Err(refused) => {
            let (status, reason, challenge) = refused.answer();
            return refuse(stream, status, reason, challenge.map(|c| ("WWW-Authenticate", c))).await;
        }
    };
    let answer = match handshake::answer(&head.method, head.version, &head.headers) {
        Ok(answer) => answer,
        Err(refusal) => {
            let version = (refusal.status == StatusCode::UPGRADE_REQUIRED)
                .then_some(("Sec-WebSocket-Version", handshake::VERSION));
            return refuse(stream, refusal.status, refusal.reason, version).await;
        }
    };
    if stream.write_all(answer.as_bytes()).await.is_err() {
        return None;
    }
    let after_head = read.split_off(head.length.min(read.len()));
    let config = frames::protocol_limits(max_message_bytes);
    let socket = WebSocketStream::from_partially_read(stream, after_head, Role::Server, Some(config)).await;
    Some((socket, head.headers, caller))
}

/// Answers an upgrade request with a refusal (with one more header: a
/// challenge's `WWW-Authenticate`, the version a 426 asks for) and closes
/// the connection; `None` for the caller.
async fn refuse<S, T>(mut stream: S, status: StatusCode, reason: &str, header: Option<(&str, &str)>) -> Option<T>
where
    S: AsyncWrite + Unpin,
{
    let mut answer = format!("HTTP/1.1 {} {}\r\n", status.as_u16(), status.canonical_reason().unwrap_or(""));
    if let Some((name, value)) = header.filter(|(_, v)| HeaderValue::from_str(v).is_ok()) {
        answer.push_str(&format!("{name}: {value}\r\n"));
    }
    answer.push_str(&format!(
        "Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reason}",
        reason.len()
    ));
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
    None
}

impl Server {
    /// Serves one WebSocket client from its upgrade request to its close,
    /// over any byte stream: a TCP connection, or TLS over one for `wss`
    /// (the caller's acceptor runs first).
    pub async fn serve_websocket_connection<S>(&self, stream: S, options: &HttpOptions)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        serve_connection(self.clone(), stream, options, CancellationToken::new(), None).await;
    }
}

/// One WebSocket client until it closes, or `stop` is cancelled (then its
/// requests get the grace time, their answers go out, and it is closed),
/// or its `slot` (its place under the connection cap) is given up to
/// another client's connection.
async fn serve_connection<S>(
    server: Server,
    stream: S,
    options: &HttpOptions,
    stop: CancellationToken,
    slot: Option<Slot>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = server.limits().clone();
    let max_message_bytes = options.max_body_bytes;
    let Some((stream, headers, caller)) = accept_upgrade(stream, options, max_message_bytes).await else { return };
    if let Some(slot) = &slot {
        slot.activity.upgraded();
    }
    let (sink, mut messages_in) = stream.split();
    let (out, out_rx) = mpsc::channel(OUTGOING_QUEUE);
    let (close, close_rx) = oneshot::channel();
    let mut writer = tokio::spawn(frames::write_messages(sink, out_rx, close_rx));
    let mut era = Era::new(&server, caller.clone(), out.clone());
    let connection = Connection::new(server, out).with_caller(caller).with_http_headers(Some(headers));
    let mut close = Some(close);
    let idle_timeout = options.connections.idle_timeout;
    let mut idle_deadline = Instant::now() + idle_timeout;
    loop {
        let received = tokio::select! {
            received = frames::receive(&mut messages_in, max_message_bytes) => received,
            // As at the client's end: what is queued (a listen stream's
            // completion result) still goes out before the close.
            () = stop.cancelled() => Received::End,
            () = given_up(slot.as_ref()) => {
                tracing::debug!("closing a WebSocket connection to make room for another client's");
                Received::Fatal(frames::going_away("the connection made room for another client's"))
            }
            () = era.session_ended() => Received::End,
            () = tokio::time::sleep_until(idle_deadline) => {
                // A 2025-11-25 session waits on its client between requests:
                // only the cap's fair shares close it.
                if connection.is_idle() && !era.is_legacy() {
                    tracing::debug!("closing a WebSocket connection unused for {idle_timeout:?}");
                    Received::Fatal(frames::going_away("the connection was unused for too long"))
                } else {
                    idle_deadline = Instant::now() + idle_timeout;
                    continue;
                }
            }
        };
        idle_deadline = Instant::now() + idle_timeout;
        if let Some(slot) = &slot {
            slot.activity.progressed();
        }
        match received {
            Received::Text(text) => match era.take(text, &stop, slot.as_ref()).await {
                Taken::Not(text) => deliver_line(&connection, text.as_bytes(), limits.max_depth).await,
                Taken::Yes => {}
                Taken::Ended => break,
            },
            Received::End => break,
            Received::Fatal(frame) => {
                if let Some(close) = close.take() {
                    let _ = close.send(Some(frame));
                }
                break;
            }
        }
    }
    era.finish(limits.shutdown_grace).await;
    connection.finish().await;
    drop(close);
    // The last answers get the grace time to go out; a detached task
    // holding the channel cannot keep the connection open.
    if tokio::time::timeout(limits.shutdown_grace, &mut writer).await.is_err() {
        writer.abort();
    }
}

/// Completes when `slot` is given up to another client's connection; never
/// for a connection outside the cap.
pub(super) async fn given_up(slot: Option<&Slot>) {
    match slot {
        Some(slot) => slot.shed.cancelled().await,
        None => std::future::pending().await,
    }
}

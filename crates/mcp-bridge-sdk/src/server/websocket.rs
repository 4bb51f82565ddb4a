//! Serving over WebSocket: each text message is one JSON-RPC message, and
//! each connection is served as a stdio client is (the same dispatch,
//! limits and end of input). The upgrade is checked as an HTTP POST is:
//! the path, `Origin` and `Host` (DNS rebinding), the `mcp` subprotocol
//! when the client offers subprotocols, and on a protected endpoint its
//! token (`head.rs`).

mod era;
mod head;
#[cfg(feature = "legacy")]
mod legacy;

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::handshake::server::{Callback, ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode, header};
use tokio_util::sync::CancellationToken;

use super::accept::{accept_tcp, serve_capped};
use super::frames::deliver_line;
use super::http::{HttpOptions, Slot, refusal_by_origin_or_host, refuse_connection};
use super::protect::{Caller, Protection};
use super::{Connection, Server};
use crate::limits::OUTGOING_QUEUE;
use crate::transport::websocket::SUBPROTOCOL;
use crate::transport::websocket::frames::{self, Received};
use era::{Era, Taken};

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

fn refuse(status: StatusCode, reason: &str) -> ErrorResponse {
    let mut response = ErrorResponse::new(Some(reason.to_owned()));
    *response.status_mut() = status;
    response
}

/// Accepts an upgrade only at the endpoint's path, from an allowed origin
/// and host, and for the `mcp` subprotocol when subprotocols are offered;
/// keeps the request's headers for the connection's handlers.
struct UpgradeCheck<'a>(&'a HttpOptions, &'a mut Option<http::HeaderMap>);

impl Callback for UpgradeCheck<'_> {
    fn on_request(self, request: &Request, mut response: Response) -> Result<Response, ErrorResponse> {
        let options = self.0;
        *self.1 = Some(request.headers().clone());
        if request.uri().path() != options.path {
            return Err(refuse(StatusCode::NOT_FOUND, "no MCP endpoint at this path"));
        }
        if let Some(refusal) = refusal_by_origin_or_host(request.headers(), options) {
            return Err(refuse(StatusCode::FORBIDDEN, refusal));
        }
        let mut offered = request
            .headers()
            .get_all(header::SEC_WEBSOCKET_PROTOCOL)
            .iter()
            .flat_map(|v| v.to_str().unwrap_or_default().split(','))
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .peekable();
        if offered.peek().is_some() {
            if !offered.any(|p| p == SUBPROTOCOL) {
                return Err(refuse(StatusCode::BAD_REQUEST, "the WebSocket subprotocol mcp is required"));
            }
            response.headers_mut().insert(header::SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_static(SUBPROTOCOL));
        }
        Ok(response)
    }
}

/// Reads the upgrade's head and checks its token: the stream to hand the
/// handshake (the head replayed) and the caller, or `None` once a refusal
/// was answered (401, 403 or 400 with its challenge) or no head came.
async fn authenticate_upgrade<S>(mut stream: S, protection: &Protection) -> Option<(head::Replay<S>, Caller)>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let read = match tokio::time::timeout(UPGRADE_TIMEOUT, head::read_head(&mut stream)).await {
        Ok(Ok(Some(read))) => read,
        _ => return None,
    };
    let values = head::authorization_values(&read);
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    match protection.authenticate(&values).await {
        Ok(caller) => Some((head::Replay::new(read, stream), caller)),
        Err(refusal) => {
            let challenge = protection.challenge(&refusal);
            let reason = StatusCode::from_u16(challenge.status).ok().and_then(|s| s.canonical_reason()).unwrap_or("");
            let answer = format!(
                "HTTP/1.1 {} {reason}\r\nWWW-Authenticate: {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                challenge.status, challenge.www_authenticate
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
            None
        }
    }
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
    let (stream, caller) = match &options.protection {
        None => (head::Replay::new(Vec::new(), stream), None),
        Some(protection) => match authenticate_upgrade(stream, protection).await {
            Some((stream, caller)) => (stream, Some(caller)),
            None => return,
        },
    };
    let mut headers = None;
    let upgrade = tokio_tungstenite::accept_hdr_async_with_config(
        stream,
        UpgradeCheck(options, &mut headers),
        Some(frames::protocol_limits(max_message_bytes)),
    );
    let stream = match tokio::time::timeout(UPGRADE_TIMEOUT, upgrade).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => return tracing::debug!("a WebSocket upgrade failed: {e}"),
        Err(_) => return tracing::debug!("a WebSocket client sent no upgrade in time"),
    };
    if let Some(slot) = &slot {
        slot.activity.upgraded();
    }
    let (sink, mut messages_in) = stream.split();
    let (out, out_rx) = mpsc::channel(OUTGOING_QUEUE);
    let (close, close_rx) = oneshot::channel();
    let mut writer = tokio::spawn(frames::write_messages(sink, out_rx, close_rx));
    let mut era = Era::new(&server, caller.clone(), out.clone());
    let connection = Connection::new(server, out).with_caller(caller).with_http_headers(headers);
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

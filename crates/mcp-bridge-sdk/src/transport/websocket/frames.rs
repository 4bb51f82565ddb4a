//! What the WebSocket client and server share: one JSON-RPC message per
//! text message, the size limit of a message, and closing the connection
//! with a code that says why.

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use mcp_bridge_protocol::Message;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Error as WsError, Message as WsMessage, Utf8Bytes};

/// The protocol limits of a connection whose messages may be at most
/// `max_message_bytes` long.
pub(crate) fn protocol_limits(max_message_bytes: usize) -> WebSocketConfig {
    WebSocketConfig::default().max_message_size(Some(max_message_bytes)).max_frame_size(Some(max_message_bytes))
}

/// What came in on a connection.
#[derive(Debug)]
pub(crate) enum Received {
    /// A text message: one JSON-RPC message, not yet decoded.
    Text(Utf8Bytes),
    /// The peer closed the connection, or it broke.
    End,
    /// The peer broke a rule that ends the connection; close it with this.
    Fatal(CloseFrame),
}

/// The close frame of a server ending an unused connection.
pub(crate) fn going_away(reason: &str) -> CloseFrame {
    CloseFrame { code: CloseCode::Away, reason: reason.to_owned().into() }
}

fn fatal(code: CloseCode, reason: String) -> Received {
    Received::Fatal(CloseFrame { code, reason: reason.into() })
}

/// The next message of interest, skipping pings and pongs (tungstenite
/// answers pings itself).
pub(crate) async fn receive<S>(stream: &mut SplitStream<WebSocketStream<S>>, max_message_bytes: usize) -> Received
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    loop {
        return match stream.next().await {
            Some(Ok(WsMessage::Text(text))) => Received::Text(text),
            Some(Ok(WsMessage::Binary(_))) => {
                fatal(CloseCode::Unsupported, "a binary message: JSON-RPC messages are sent as text".into())
            }
            Some(Ok(WsMessage::Ping(_) | WsMessage::Pong(_) | WsMessage::Frame(_))) => continue,
            Some(Ok(WsMessage::Close(_))) | None => Received::End,
            Some(Err(WsError::Capacity(_))) => {
                fatal(CloseCode::Size, format!("a message over the limit of {max_message_bytes} bytes"))
            }
            Some(Err(WsError::Utf8(_))) => fatal(CloseCode::Invalid, "a text message that is not valid UTF-8".into()),
            Some(Err(e)) => {
                tracing::debug!("the WebSocket connection failed: {e}");
                Received::End
            }
        };
    }
}

/// Owns a connection's sending half: sends each message as one text
/// message until the channel closes or `close` gives a reason to stop
/// early; then closes the connection (with that reason, if any).
pub(crate) async fn write_messages<S>(
    mut sink: SplitSink<WebSocketStream<S>, WsMessage>,
    mut messages: mpsc::Receiver<Message>,
    mut close: oneshot::Receiver<Option<CloseFrame>>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut close_pending = true;
    let frame = loop {
        tokio::select! {
            biased;
            frame = &mut close, if close_pending => match frame {
                Ok(frame) => break frame,
                // Nobody will ask to close early: drain the channel.
                Err(_) => close_pending = false,
            },
            message = messages.recv() => match message {
                Some(message) => {
                    let text = mcp_bridge_protocol::encode_text(&message);
                    if let Err(e) = sink.send(WsMessage::text(text)).await {
                        tracing::debug!("the WebSocket connection closed for writing: {e}");
                        return;
                    }
                }
                None => break None,
            },
        }
    };
    if let Some(frame) = &frame {
        tracing::warn!(code = u16::from(frame.code), "closing the WebSocket connection: {}", frame.reason);
    }
    let _ = sink.send(WsMessage::Close(frame)).await;
    let _ = sink.close().await;
}

//! Transports of the client: how messages reach a server and come back.
//!
//! Every transport here is a pair of message channels plus whatever owns
//! the other end (a server task, a child process):
//!
//! ```text
//!  Client ──Message──▶ outgoing ──▶ [memory: server connection | stdio: child stdin]
//!  Client ◀─Incoming── incoming ◀── [memory: server connection | stdio: child stdout]
//!
//! and likewise a Unix socket, a WebSocket, or HTTP (one POST per message).
//! ```

pub mod headers;
pub mod http;
pub mod lines;
pub mod memory;
pub mod sse;
pub mod stdio;
mod tls;
pub mod unix;
pub mod websocket;

use mcp_protocol::{Message, RequestId};
use tokio::sync::mpsc;

/// What the client's reader receives.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A decoded message.
    Message(Message),
    /// A frame that could not be decoded; `id` when one could be recovered,
    /// so the request it answers can fail at once.
    Undecodable { id: Option<RequestId>, reason: String },
    /// The server went away (a child process ended); the requests waiting
    /// on it fail, and the transport may come back (a restarted child).
    Disconnected,
    /// The stream of one request ended before its response.
    Lost { id: RequestId },
    /// A request failed in the transport before it was sent.
    Failed { id: RequestId, error: crate::Error },
    /// A notification on the response stream of request `id` (HTTP): it
    /// belongs to that request even without a progress token (a log
    /// message, for one).
    OnStream { id: RequestId, notification: mcp_protocol::JsonRpcNotification },
    /// The HTTP status of the response to a request, before its message.
    HttpStatus { id: RequestId, status: u16 },
}

/// A connection to a server, ready for [`crate::Client::new`].
#[derive(Debug)]
pub struct Transport {
    pub(crate) outgoing: mpsc::Sender<Message>,
    pub(crate) incoming: mpsc::Receiver<Incoming>,
    pub(crate) process: Option<stdio::ChildProcess>,
    /// Whether request time limits apply (not on the in-memory link).
    pub(crate) timed: bool,
}

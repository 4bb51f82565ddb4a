//! JSON-RPC over a WebSocket (`ws://` and `wss://`), one message per text
//! message: the client's transport here, the server's accept loop in
//! [`crate::Server::serve_websocket`]. The client offers the `mcp`
//! subprotocol, as the TypeScript SDK does.
//!
//! A message over the size limit, a binary message, or a text message that
//! is not valid UTF-8 closes the connection (codes 1009, 1003, 1007) and
//! every waiting request fails with [`Error::Closed`](crate::Error::Closed). Errors never quote
//! the URL, which may carry a secret in its query.

#[cfg(feature = "client")]
mod connect;
pub(crate) mod frames;

#[cfg(feature = "client")]
pub use connect::{DEFAULT_CONNECT_TIMEOUT, WebSocketConfig, connect};

/// The subprotocol of MCP over WebSocket.
pub const SUBPROTOCOL: &str = "mcp";

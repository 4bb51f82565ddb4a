//! The Rust MCP SDK for revision 2026-07-28: a [`Client`], a [`Server`], and
//! the transports between them.
//!
//! # Layout
//!
//! - [`server`]: registrations, dispatch, `_meta` checks, sealed
//!   `requestState`, `subscriptions/listen`, tasks; serving a byte stream
//!   (stdio, Unix sockets), Streamable HTTP and WebSocket, with connection
//!   limits.
//! - [`client`]: `_meta` stamping, routing, time limits, cancellation, input
//!   hooks of multi round-trip requests, typed methods, the result cache,
//!   following tasks.
//! - [`transport`]: the in-memory link, child processes over stdio, Unix
//!   domain sockets, WebSocket (ws/wss) and Streamable HTTP (proxies, HTTPS
//!   options, an authorization hook); line framing and the SSE parser.
//! - [`auth`]: OAuth sign-in at a protected server (discovery, client
//!   registration, PKCE, refresh, step-up), as the HTTP transport's
//!   authorization provider, with its token stores.
//! - [`icons`]: icon source rules, selection and a checked fetch.
//! - [`skills`] and [`apps`]: the Skills and Apps extensions.
//! - [`limits`]: every limit and time limit, with its reason.
//! - [`error`]: the SDK's error type and the server's error mapping.
//!
//! # Example
//!
//! ```
//! use mcp_bridge_sdk::server::{Reply, Server};
//! use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions, transport};
//! use mcp_bridge_protocol::types::{CallToolResult, ContentBlock, Implementation, Tool};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), mcp_bridge_sdk::Error> {
//! let echo: Tool = serde_json::from_value(serde_json::json!({
//!     "name": "echo", "inputSchema": {"type": "object"}
//! })).unwrap();
//! let server = Server::builder(Implementation::new("demo", "1.0"))
//!     .tool(echo, |call, _ctx| async move {
//!         let text = call.arguments.get("text").and_then(|t| t.as_str()).unwrap_or("").to_owned();
//!         Ok(Reply::Complete(CallToolResult {
//!             content: vec![ContentBlock::text(text)],
//!             ..serde_json::from_value(serde_json::json!({"content": []})).unwrap()
//!         }))
//!     })
//!     .build();
//! let client = Client::new(ClientOptions::new("demo-client", "1.0"), transport::memory::connect(&server));
//! let result = client.call_tool("echo", serde_json::json!({"text": "hi"}), &RequestOptions::default()).await?;
//! assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "hi"));
//! # Ok(())
//! # }
//! ```

#![cfg_attr(not(test), warn(clippy::print_stdout, clippy::unwrap_used))]

pub mod apps;
pub mod auth;
pub mod client;
pub mod error;
pub mod icons;
pub mod limits;
pub mod server;
pub mod skills;
pub mod transport;

/// The protocol crate, `mcp-bridge-protocol`: every wire type, for what
/// the prelude leaves out.
pub use mcp_bridge_protocol as protocol;

/// The names most programs use, in one import:
///
/// ```
/// use mcp_bridge_sdk::prelude::*;
///
/// let server = Server::builder(Implementation::new("hello", "1.0"))
///     .tool(Tool::new("hello").with_description("Says hello"), |_call: ToolCall, _ctx| async move {
///         Ok(Reply::Complete(CallToolResult::text("Hello!")))
///     })
///     .build();
/// # let _ = server;
/// ```
pub mod prelude {
    pub use crate::client::{Era, InputHooks};
    pub use crate::server::{ServerBuilder, ToolCall};
    pub use crate::{Client, ClientOptions, Error, HandlerError, Reply, RequestContext, RequestOptions, Server};
    pub use mcp_bridge_protocol::types::{
        CallToolResult, ClientCapabilities, ContentBlock, Implementation, Tool, ToolAnnotations,
    };
}

pub use client::{Client, ClientOptions, RequestOptions};
pub use error::{Error, HandlerError, Result};
pub use server::{Reply, RequestContext, Server};

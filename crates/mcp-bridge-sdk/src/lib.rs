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
//! A server with a typed tool and a client that calls it, joined in one
//! process by the in-memory link (`transport::stdio::spawn` starts a
//! server as a child instead, `transport::http::connect` reaches a URL):
//!
//! ```
//! use mcp_bridge_sdk::prelude::*;
//! use mcp_bridge_sdk::transport;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Echo {
//!     /// What to say back.
//!     text: String,
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), mcp_bridge_sdk::Error> {
//! let server = Server::builder(Implementation::new("demo", "1.0"))
//!     .typed_tool(Tool::new("echo").with_description("Says it back"), |args: Echo, _ctx| async move { args.text })
//!     .build();
//! let client = Client::new(ClientOptions::new("demo-client", "1.0"), transport::memory::connect(&server));
//! let result = client.call_tool("echo", serde_json::json!({"text": "hi"}), &RequestOptions::default()).await?;
//! assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "hi"));
//!
//! // Arguments that do not fit the type are refused before the handler runs.
//! let refused = client.call_tool("echo", serde_json::json!({"text": 7}), &RequestOptions::default()).await;
//! assert_eq!(refused.unwrap_err().rpc_error().map(|e| e.code), Some(-32602));
//! # Ok(())
//! # }
//! ```
//!
//! `crates/mcp-bridge-sdk/examples/` has a stdio server, a client of a
//! child process, an HTTP server, a tool that asks the user, an OAuth
//! client and a listen subscriber.

#![cfg_attr(not(test), warn(clippy::print_stdout, clippy::unwrap_used))]

pub mod apps;
pub mod auth;
pub mod client;
pub mod error;
pub mod icons;
pub mod limits;
mod os;
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
    #[cfg(feature = "schemars")]
    pub use crate::server::{Json, NoArguments};
    pub use crate::server::{ServerBuilder, ToolCall};
    pub use crate::{Client, ClientOptions, Error, HandlerError, Reply, RequestContext, RequestOptions, Server};
    pub use mcp_bridge_protocol::types::{
        CallToolResult, ClientCapabilities, ContentBlock, GetPromptResult, Implementation, Prompt, PromptMessage, Tool,
        ToolAnnotations,
    };
}

pub use client::{Client, ClientOptions, RequestOptions};
pub use error::{Error, HandlerError, Result};
pub use server::{Reply, RequestContext, Server};

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
//! - [`store`]: records kept by key (memory, encrypted files, keychain),
//!   for the sign-ins and the tasks a client follows.
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
//! # Features
//!
//! Everything is on by default. `client` and `server` are the two sides;
//! `stdio`, `unix`, `http-client`, `http-server` and `websocket` the
//! transports; `oauth`, `tasks`, `skills`, `icons`, `schemars`,
//! `validation` and `store` the rest. A stdio server needs `server` and
//! `stdio` only (48 crates, against 182 for the default set):
//!
//! ```toml
//! mcp-bridge-sdk = { version = "0.1", default-features = false, features = ["server", "stdio", "schemars"] }
//! ```
//!
//! `crates/mcp-bridge-sdk/examples/` has a stdio server, a client of a
//! child process, an HTTP server, a tool that asks the user, an OAuth
//! client and a listen subscriber.

#![cfg_attr(not(test), warn(clippy::print_stdout, clippy::unwrap_used))]
// With features left out, parts of the shared plumbing go unused (an
// Incoming variant no transport sends); the full build keeps these lints.
#![cfg_attr(
    not(all(
        feature = "client",
        feature = "toolset",
        feature = "server",
        feature = "legacy",
        feature = "stdio",
        feature = "unix",
        feature = "http-client",
        feature = "http-server",
        feature = "websocket",
        feature = "oauth",
        feature = "protect",
        feature = "tasks",
        feature = "skills",
        feature = "icons",
        feature = "validation"
    )),
    allow(dead_code, unused_imports)
)]

pub mod apps;
#[cfg(feature = "oauth")]
pub mod auth;
#[cfg(feature = "client")]
pub mod client;
mod clock;
pub mod error;
#[cfg(feature = "grpc")]
pub mod grpc;
#[cfg(any(feature = "http-client", all(feature = "server", feature = "websocket")))]
mod http_head;
#[cfg(feature = "icons")]
pub mod icons;
pub mod limits;
// Each feature uses its own part (process trees, private files; the
// open-files limit is every server's); the whole is checked when all three
// are on.
#[cfg_attr(not(all(feature = "stdio", feature = "store", feature = "http-server")), allow(dead_code))]
mod os;
#[cfg(feature = "server")]
pub mod server;
mod setters;
#[cfg(feature = "skills")]
pub mod skills;
#[cfg(feature = "store")]
pub mod store;
#[cfg(any(feature = "client", feature = "server"))]
pub mod task_group;
#[cfg(any(feature = "client", feature = "server"))]
pub mod telemetry;
#[cfg(feature = "toolset")]
pub mod toolset;
#[cfg(any(feature = "client", feature = "server"))]
pub mod transport;

/// Internals the fuzz targets (`fuzz/`) drive; not part of the API.
#[doc(hidden)]
pub mod fuzzing {
    #[cfg(any(feature = "http-client", all(feature = "server", feature = "websocket")))]
    pub use crate::http_head::{HeadError, RequestHead, parse_request, parse_status};
    #[cfg(feature = "legacy")]
    pub use crate::server::legacy::input::{check_answer, client_request};
    #[cfg(feature = "http-client")]
    pub use crate::transport::sse::{EventTooLarge, SseEvent, SseParser};
}

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
    #[cfg(feature = "client")]
    pub use crate::client::{Client, ClientOptions, Era, InputHooks, RequestOptions};
    pub use crate::error::{Error, HandlerError};
    #[cfg(feature = "schemars")]
    pub use crate::server::{Json, NoArguments};
    #[cfg(feature = "server")]
    pub use crate::server::{Reply, RequestContext, Server, ServerBuilder, ToolCall};
    pub use mcp_bridge_protocol::types::{
        CallToolResult, ClientCapabilities, ContentBlock, GetPromptResult, Implementation, Prompt, PromptMessage, Tool,
        ToolAnnotations,
    };
}

/// A boxed future that may move between threads: what handlers, input
/// hooks and credential providers return.
pub type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'static>>;

/// Any error, boxed: what input hooks, sign-in hooks and credential
/// providers fail with (`"text".into()` makes one from words, `?` from
/// any error).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[cfg(feature = "client")]
pub use client::{Client, ClientOptions, RequestOptions};
pub use error::{Error, HandlerError, Result};
#[cfg(feature = "server")]
pub use server::{Reply, RequestContext, Server};

/// The book's Rust samples (`docs/src/`), compiled as doctests of this crate.
#[cfg(doctest)]
mod book {
    #[cfg(all(feature = "schemars", feature = "stdio"))]
    #[doc = include_str!("../../../docs/src/sdk.md")]
    struct BuildWithTheSdk;

    #[cfg(all(feature = "grpc", feature = "client", feature = "server"))]
    #[doc = include_str!("../../../docs/src/grpc.md")]
    struct Grpc;
}

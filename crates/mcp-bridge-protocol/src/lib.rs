//! The wire protocol of the Model Context Protocol, without I/O or async: what
//! every transport, client, server and bridge of this workspace agrees on.
//!
//! # Layout
//!
//! - [`framing`]: newline-delimited frames with a byte limit; an overlong
//!   line keeps its edges so its id can still be answered ([`recover`]).
//! - [`depth`]: the nesting check on raw bytes that runs before any parse.
//! - [`jsonrpc`]: decoding a line into a classified [`Message`], with an
//!   error that names the broken rule, and the envelopes that are written.
//! - [`id`]: request ids and progress tokens.
//! - [`meta`]: the `_meta` keys, their naming rules, and typed `_meta` objects.
//! - [`error_code`]: the JSON-RPC error codes of both revisions.
//! - [`types`]: params, results and building blocks of revision 2026-07-28.
//! - [`method`]: methods as types and the typed envelopes built on them.
//! - [`methods`]: the method table (sender, revision, offer, retry, cache,
//!   time limit) the libraries decide by.
//! - [`headers`]: the `x-mcp-header` rules of the HTTP transport: which
//!   parameters a tool mirrors into headers, their encoding and checks.
//! - [`reopen`]: when a lost listen stream is opened again, and after what wait.
//! - [`slots`]: the requests in flight on a connection: admit, cancel, finish.
//! - [`rounds`]: multi round-trip requests: the loop's state, the checks of
//!   a round before anyone is asked and of each answer.
//! - [`legacy`]: the 2025-11-25 messages a bridge exchanges with old clients.
//!
//! # Example
//!
//! ```
//! use mcp_bridge_protocol::{LineFramer, Frame, Message, decode_message, CLIENT_MAX_DEPTH};
//!
//! let mut framer = LineFramer::default();
//! framer.push(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":");
//! let Some(Frame::Line(line)) = framer.next_frame() else { unreachable!() };
//! match decode_message(&line, CLIENT_MAX_DEPTH) {
//!     Ok(Message::Request(request)) => assert_eq!(request.method, "ping"),
//!     other => panic!("unexpected {other:?}"),
//! }
//! assert!(framer.next_frame().is_none(), "the second line is not complete yet");
//! ```

#![cfg_attr(not(test), warn(clippy::print_stdout, clippy::unwrap_used))]

pub mod depth;
pub mod error_code;
pub mod framing;
pub mod headers;
pub mod id;
pub mod json_writer;
pub mod jsonrpc;
pub mod legacy;
pub mod meta;
pub mod method;
pub mod methods;
pub mod raw;
pub mod recover;
pub mod reopen;
pub mod rounds;
mod serde_util;
pub mod slots;
mod tag;
pub mod trace;
pub mod types;

pub use depth::{CLIENT_MAX_DEPTH, UPSTREAM_MAX_DEPTH, check_depth};
pub use framing::{DEFAULT_MAX_LINE_BYTES, Frame, LineFramer, OverlongLine};
pub use id::{ProgressToken, RequestId};
pub use jsonrpc::{
    DecodeError, ErrorObject, JsonRpcErrorResponse, JsonRpcNotification, JsonRpcRequest, JsonRpcResultResponse,
    Message, ShapeRule, append_line, append_message_line, decode_message, encode_line, encode_text,
};
pub use raw::{LineParts, RawResult, SplicedLine};
pub use recover::recover_id;

/// The protocol revision this crate's [`types`] describe.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

//! A response's result as it reached the client: a tree, or (from a
//! line-framed transport) the bytes it came in, built into a tree only by
//! a caller that needs one. A relay that changes nothing inside a result
//! passes the bytes on.

use mcp_bridge_protocol::RawResult;
use serde_json::Value;

/// The result of a request.
#[derive(Debug)]
pub(crate) enum Reply {
    /// Decoded.
    Tree(Value),
    /// As it came on the wire.
    Raw(RawResult),
}

impl Reply {
    /// The result as a tree.
    pub(crate) fn into_value(self) -> Value {
        match self {
            Reply::Tree(value) => value,
            Reply::Raw(raw) => raw.to_value(),
        }
    }
}

//! A response's result as it reached the client: a tree, or (from a
//! line-framed transport) the bytes it came in, built into a tree only by
//! a caller that needs one. A relay that changes nothing inside a result
//! passes the bytes on.

use mcp_bridge_protocol::RawResult;
use serde_json::Value;

use crate::error::Error;

/// The result of a request.
#[derive(Debug)]
pub(crate) enum Reply {
    /// Decoded.
    Tree(Value),
    /// As it came on the wire.
    Raw(RawResult),
}

impl Reply {
    /// The result of `method` as a tree.
    ///
    /// # Errors
    /// [`Error::InvalidResponse`] for a result a tree cannot hold (see
    /// [`RawResult::to_value`]), as when a whole response cannot be read.
    pub(crate) fn into_value(self, method: &str) -> Result<Value, Error> {
        match self {
            Reply::Tree(value) => Ok(value),
            Reply::Raw(raw) => {
                raw.to_value().map_err(|e| Error::InvalidResponse { method: method.to_owned(), reason: e.to_string() })
            }
        }
    }
}

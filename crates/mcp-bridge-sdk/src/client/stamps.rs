//! The client info and capabilities each 2026-07-28 request carries in its
//! `_meta`, made into JSON once per identity instead of once per request.

use std::sync::OnceLock;

use mcp_bridge_protocol::types::{ClientCapabilities, Implementation};
use serde_json::Value;

use super::to_json;
use crate::error::Result;

/// `clientInfo` and `clientCapabilities` of one identity, as JSON.
#[derive(Debug, Clone)]
pub(crate) struct Stamp {
    pub(crate) info: Value,
    pub(crate) capabilities: Value,
}

/// The stamp of an identity that never changes, made at its first request.
#[derive(Debug, Clone, Default)]
pub(crate) struct StampCell(OnceLock<Stamp>);

impl StampCell {
    /// The stamp of `info` and `capabilities`, which must be the same at
    /// every call (the identity's own, immutable).
    pub(crate) fn get(&self, info: &Implementation, capabilities: &ClientCapabilities) -> Result<&Stamp> {
        if let Some(stamp) = self.0.get() {
            return Ok(stamp);
        }
        let stamp = Stamp { info: to_json(info)?, capabilities: to_json(capabilities)? };
        Ok(self.0.get_or_init(|| stamp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_is_made_once() {
        let cell = StampCell::default();
        let first = cell.get(&Implementation::new("a", "1"), &ClientCapabilities::default()).unwrap() as *const Stamp;
        let again = cell.get(&Implementation::new("a", "1"), &ClientCapabilities::default()).unwrap();
        assert_eq!(again.info["name"], "a");
        assert!(std::ptr::eq(first, again), "made once");
    }
}

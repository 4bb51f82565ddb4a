//! The labels of the metrics, bounded: a client names any method or tool it
//! likes, and an upstream answers with any error code; each distinct value
//! would be a new time series kept for the life of the process.

use std::collections::HashSet;
use std::sync::RwLock;

use mcp_bridge_protocol::error_code;
use mcp_bridge_protocol::method::{Method, ToolsCall};
use mcp_bridge_sdk::telemetry::{Operation, error_type};

/// Distinct tool names kept as labels; past it, new names count as
/// [`OTHER`]. Far above any real server's tool count (the largest real
/// servers list about a hundred), far below what would make a scrape slow.
const MAX_DISTINCT: usize = 1000;

/// The label of every value past a bound.
pub(super) const OTHER: &str = "_other";

/// The labels of one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Labels {
    /// `mcp.method.name`: a method of the protocol's table, else [`OTHER`].
    pub(super) method: String,
    /// `gen_ai.tool.name` of a tool call that reached a tool; empty for
    /// other requests and for calls refused before any tool ran (an
    /// unknown name: a client could invent any number).
    pub(super) tool: String,
    /// `error.type`: empty on success, a word of the SDK, a JSON-RPC code
    /// of the reserved range (-32768 to -32000), else [`OTHER`].
    pub(super) error_type: String,
}

/// The tool names seen so far.
#[derive(Default)]
pub(super) struct BoundedNames(RwLock<HashSet<String>>);

impl BoundedNames {
    /// The labels of `op`.
    pub(super) fn labels(&self, op: &Operation) -> Labels {
        let known = mcp_bridge_protocol::methods::spec(&op.method).is_some();
        let method = if known { op.method.clone() } else { OTHER.to_owned() };
        let error_type = op.error_type.as_deref().map_or_else(String::new, error_label);
        let refused = error_type
            .parse::<i64>()
            .is_ok_and(|code| [error_code::INVALID_PARAMS, error_code::METHOD_NOT_FOUND].contains(&code));
        let tool = match &op.target {
            Some(name) if op.method == ToolsCall::NAME && !refused => self.label(name),
            _ => String::new(),
        };
        Labels { method, tool, error_type }
    }

    /// `name` as a label: itself when seen before or while there is room,
    /// else [`OTHER`].
    fn label(&self, name: &str) -> String {
        // Read first: every call but a tool's first finds its name.
        if self.0.read().unwrap_or_else(|e| e.into_inner()).contains(name) {
            return name.to_owned();
        }
        let mut seen = self.0.write().unwrap_or_else(|e| e.into_inner());
        if seen.contains(name) {
            return name.to_owned();
        }
        if seen.len() < MAX_DISTINCT {
            seen.insert(name.to_owned());
            return name.to_owned();
        }
        OTHER.to_owned()
    }
}

fn error_label(error: &str) -> String {
    let reserved = error.parse::<i64>().is_ok_and(|code| (-32768..=-32000).contains(&code));
    if reserved || error_type::WORDS.contains(&error) { error.to_owned() } else { OTHER.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_past_the_cap_share_one_label() {
        let names = BoundedNames::default();
        for n in 0..MAX_DISTINCT {
            assert_eq!(names.label(&n.to_string()), n.to_string());
        }
        assert_eq!(names.label("one more"), OTHER);
        assert_eq!(names.label("7"), "7");
    }

    #[test]
    fn error_types_outside_the_known_set_share_one_label() {
        assert_eq!(error_label("-32602"), "-32602");
        assert_eq!(error_label("tool_error"), "tool_error");
        assert_eq!(error_label("-1"), OTHER);
        assert_eq!(error_label("42"), OTHER);
        assert_eq!(error_label("anything"), OTHER);
    }
}

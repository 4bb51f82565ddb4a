//! The list methods: one page of a list, by the request's cursor.

use mcp_bridge_protocol::types::PaginatedRequestParams;
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{Outcome, parse, to_value};
use crate::error::ServerFault;
use crate::server::Server;

impl Server {
    /// The page at the request's cursor of `items`, under `key`, with the
    /// cursor of the next page when there is one.
    pub(super) fn list_page<T: Serialize>(
        &self,
        params: Map<String, Value>,
        key: &str,
        items: impl FnOnce(&Server) -> Vec<T>,
    ) -> Outcome {
        let request: PaginatedRequestParams = parse(params)?;
        let invalid = || ServerFault::InvalidParams { reason: "invalid cursor".into() };
        let start = match request.cursor {
            None => 0,
            Some(cursor) => cursor.parse::<usize>().map_err(|_| invalid())?,
        };
        let all = items(self);
        if start > all.len() {
            return Err(invalid());
        }
        let end = (start + self.inner.page_size).min(all.len());
        let mut result = json!({
            "resultType": "complete",
            key: to_value(&all[start..end])?,
            "ttlMs": self.inner.cache.ttl_ms,
            "cacheScope": self.inner.cache.scope,
        });
        if end < all.len() {
            result["nextCursor"] = json!(end.to_string());
        }
        Ok(result)
    }
}

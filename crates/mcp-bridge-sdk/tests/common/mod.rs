//! What several SDK tests serve.

use mcp_bridge_protocol::types::{CallToolResult, ContentBlock, Implementation, Tool};
use mcp_bridge_sdk::{Reply, Server};
use serde_json::json;

/// A server with one tool, `ping`, that answers `pong`.
pub(crate) fn ping_server() -> Server {
    let tool: Tool = serde_json::from_value(json!({"name": "ping", "inputSchema": {"type": "object"}})).unwrap();
    Server::builder(Implementation::new("ping", "1"))
        .tool(tool, |_call, _ctx| async move {
            Ok(Reply::Complete(CallToolResult {
                result_type: Default::default(),
                content: vec![ContentBlock::text("pong")],
                structured_content: None,
                is_error: None,
                meta: None,
                extra: Default::default(),
            }))
        })
        .build()
}

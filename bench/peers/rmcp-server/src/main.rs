//! The benchmarks' rmcp 3.x server: tools `add` (a + b) and `echo` (the text
//! back), as `mcp-example-server` has them, on the 2026-07-28 revision, or
//! on every revision rmcp knows with its default sessionful legacy serving.
//!
//! ```sh
//! rmcp-bench-server                     # stdio
//! rmcp-bench-server --http ADDR         # Streamable HTTP at http://ADDR/mcp
//! rmcp-bench-server --http-legacy ADDR  # the same, 2025-11-25 sessions too
//! ```

use std::borrow::Cow;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use axum::serve::ListenerExt;
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

#[derive(Clone)]
struct BenchServer {
    /// Whether 2025-era versions are offered (rmcp's defaults) besides 2026-07-28.
    legacy: bool,
}

fn schema(value: Value) -> Arc<serde_json::Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::default(),
    }
}

impl ServerHandler for BenchServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        if self.legacy {
            Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS)
        } else {
            Cow::Borrowed(&[ProtocolVersion::V_2026_07_28])
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![
            Tool::new(
                "add",
                "Adds two numbers.",
                schema(json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]})),
            ),
            Tool::new(
                "echo",
                "Returns the text it is given.",
                schema(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default();
        let text = match request.name.as_ref() {
            "add" => {
                let number = |key: &str| arguments.get(key).and_then(Value::as_f64);
                match (number("a"), number("b")) {
                    (Some(a), Some(b)) => (a + b).to_string(),
                    _ => return Err(ErrorData::invalid_params("a and b must be numbers", None)),
                }
            }
            "echo" => match arguments.get("text").and_then(Value::as_str) {
                Some(text) => text.to_owned(),
                None => return Err(ErrorData::invalid_params("text must be a string", None)),
            },
            other => return Err(ErrorData::invalid_params(format!("unknown tool {other}"), None)),
        };
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

#[tokio::main(worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {
            BenchServer { legacy: false }.serve(rmcp::transport::stdio()).await?.waiting().await?;
        }
        [flag, addr] if flag == "--http" || flag == "--http-legacy" => {
            let legacy = flag == "--http-legacy";
            let service = StreamableHttpService::new(
                move || Ok(BenchServer { legacy }),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig::default()
                    .with_sse_keep_alive(None)
                    .with_legacy_session_mode(legacy)
                    .with_json_response(true),
            );
            let router = axum::Router::new().nest_service("/mcp", service);
            // No Nagle: rmcp writes an SSE response in several small writes,
            // and with Nagle each legacy call waited ~40 ms for a delayed ACK.
            let listener = tokio::net::TcpListener::bind(addr.as_str()).await?.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            axum::serve(listener, router).await?;
        }
        _ => return Err("usage: rmcp-bench-server [--http ADDR | --http-legacy ADDR]".into()),
    }
    Ok(())
}

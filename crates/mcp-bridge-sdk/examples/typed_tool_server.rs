//! A stdio server with one typed tool: the quick-start of the book (docs/src/sdk.md).
//! Run it under any MCP client, or: `cargo run --example client`.
use mcp_bridge_sdk::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: f64,
    b: f64,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    Server::builder(Implementation::new("calculator", "1.0"))
        .typed_tool(Tool::new("add").with_description("Adds two numbers"), |x: Add, _| async move {
            (x.a + x.b).to_string()
        })
        .build()
        .serve_stdio()
        .await
}

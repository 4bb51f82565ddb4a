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
    let server = Server::builder(Implementation::new("calculator", "1.0"))
        .typed_tool(Tool::new("add").with_description("Adds two numbers"), |x: Add, _| async move {
            (x.a + x.b).to_string()
        })
        .build();
    // `--http ADDRESS` (say 127.0.0.1:0): Streamable HTTP instead, its URL printed.
    match std::env::args().skip_while(|arg| arg != "--http").nth(1) {
        Some(address) => {
            let listener = tokio::net::TcpListener::bind(address).await?;
            println!("http://{}/mcp", listener.local_addr()?);
            server.serve_http(listener, Default::default(), std::future::pending()).await
        }
        None => server.serve_stdio().await,
    }
}

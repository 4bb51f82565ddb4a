//! A Streamable HTTP server on loopback: `cargo run --example http_server
//! -- [PORT]` (0, the default, takes a free port), then point a client at
//! the address it prints. Ctrl-C ends it; open listen streams are ended
//! cleanly first.

use mcp_bridge_sdk::prelude::*;
use mcp_bridge_sdk::server::http::HttpOptions;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Shout {
    /// What to say louder.
    text: String,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    let server = Server::builder(Implementation::new("shouter", "1.0"))
        .typed_tool(Tool::new("shout").with_description("Says it louder"), |args: Shout, _| async move {
            args.text.to_uppercase()
        })
        .build();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    // The address on stdout, for whoever started this.
    println!("http://{}/mcp", listener.local_addr()?);
    let shutdown = async {
        // Without a signal handler the server runs until killed.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    server.serve_http(listener, HttpOptions::default(), shutdown).await
}

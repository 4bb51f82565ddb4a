//! A client that starts a server as a child process, lists its tools and
//! calls `add`. `cargo run --example client -- SERVER [ARGS...]`; without
//! arguments it starts the `typed_tool_server` example beside it.

use mcp_bridge_sdk::prelude::*;
use mcp_bridge_sdk::protocol::types::ContentBlock;
use mcp_bridge_sdk::transport::stdio::{StdioCommand, spawn};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1);
    let program = match args.next() {
        Some(program) => program,
        None => std::env::current_exe()?.with_file_name("typed_tool_server").into_os_string(),
    };
    let transport = spawn(StdioCommand::new(program).args(args))?;
    let client = Client::new(ClientOptions::new("example-client", "1.0"), transport);
    let options = RequestOptions::default();

    for tool in client.list_tools(None, &options).await?.tools {
        println!("tool {}: {}", tool.name, tool.description.unwrap_or_default());
    }
    let result = client.call_tool("add", serde_json::json!({"a": 2, "b": 3}), &options).await?;
    if let Some(ContentBlock::Text(text)) = result.content.first() {
        println!("add(2, 3) = {}", text.text);
    }
    Ok(())
}

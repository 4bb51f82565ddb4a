//! A tool that asks the user before it answers (an input round of
//! 2026-07-28, an `elicitation/create` request for a 2025-11-25 client),
//! and a client whose form hook plays the user. Both run in this process,
//! joined by the in-memory link.

use mcp_bridge_sdk::BoxError;
use mcp_bridge_sdk::prelude::*;
use mcp_bridge_sdk::protocol::types::{ContentBlock, ElicitResult, InputRequests, InputResponse};
use mcp_bridge_sdk::server::NoArguments;
use mcp_bridge_sdk::transport::memory;
use serde_json::json;

/// The tool: asks for a name on the first round, greets on the second.
async fn greet(_: NoArguments, ctx: RequestContext) -> Result<Reply<CallToolResult>, serde_json::Error> {
    if let Some(InputResponse::Elicit(answer)) = ctx.input_responses().get("name") {
        let name = answer.content.as_ref().and_then(|c| c.get("name")).and_then(|n| n.as_str());
        return Ok(Reply::Complete(CallToolResult::text(format!("Hello, {}!", name.unwrap_or("stranger")))));
    }
    let requests: InputRequests = serde_json::from_value(json!({"name": {
        "method": "elicitation/create",
        "params": {
            "message": "What is your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        }
    }}))?;
    Ok(Reply::InputRequired { requests, state: None })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder(Implementation::new("greeter", "1.0"))
        .typed_tool(Tool::new("greet").with_description("Asks your name, then greets you"), greet)
        .build();

    // The user, as the form hook: a real client would show the form.
    let hooks = InputHooks::new().on_form(|form| async move {
        eprintln!("the server asks: {}", form.message);
        let name = serde_json::Map::from_iter([("name".to_owned(), json!("Ada"))]);
        Ok::<_, BoxError>(ElicitResult::accept(name))
    });
    let mut options = ClientOptions::new("example-client", "1.0");
    options.hooks = hooks;
    options.capabilities = ClientCapabilities::builder().form_elicitation().build();
    let client = Client::new(options, memory::connect(&server));

    let result = client.call_tool("greet", json!({}), &RequestOptions::default()).await?;
    if let Some(ContentBlock::Text(text)) = result.content.first() {
        println!("{}", text.text);
    }
    Ok(())
}

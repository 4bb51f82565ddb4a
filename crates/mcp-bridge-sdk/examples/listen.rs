//! A listen subscriber: a client opens a `subscriptions/listen` stream for
//! tool list changes, a tool of the server adds another tool, and the
//! client hears of it and lists the tools again. In one process, over the
//! in-memory link.

use std::sync::Arc;

use mcp_bridge_sdk::prelude::*;
use mcp_bridge_sdk::protocol::JsonRpcNotification;
use mcp_bridge_sdk::protocol::types::SubscriptionFilter;
use mcp_bridge_sdk::server::{ChangeEvent, NoArguments};
use mcp_bridge_sdk::transport::memory;
use tokio::sync::mpsc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Server::builder(Implementation::new("growing", "1.0"))
        .typed_tool(Tool::new("grow").with_description("Adds the tool `extra`"), |_: NoArguments, ctx| async move {
            ctx.server()
                .add_tool(
                    Tool::new("extra"),
                    |_call, _ctx| async move { Ok(Reply::Complete(CallToolResult::text("!"))) },
                )
                .await;
            ctx.server().publish(ChangeEvent::ToolsListChanged).await;
            "grown"
        })
        .build();
    let client = Client::new(ClientOptions::new("example-listener", "1.0"), memory::connect(&server));

    // Every notification of the stream, in order, to this loop.
    let (events, mut heard) = mpsc::unbounded_channel::<String>();
    let on_notification = Arc::new(move |n: &JsonRpcNotification| {
        let _ = events.send(n.method.clone());
    });
    let options = RequestOptions::default().with_on_notification(on_notification);
    let filter = SubscriptionFilter { tools_list_changed: Some(true), ..SubscriptionFilter::default() };
    let stream = tokio::spawn({
        let client = client.clone();
        async move { client.listen(filter, &options).await }
    });

    while let Some(method) = heard.recv().await {
        println!("heard {method}");
        match method.as_str() {
            // The stream is open: now a change is not missed.
            "notifications/subscriptions/acknowledged" => {
                client.call_tool("grow", serde_json::json!({}), &RequestOptions::default()).await?;
            }
            "notifications/tools/list_changed" => {
                let tools = client.list_tools(None, &RequestOptions::default()).await?.tools;
                let names: Vec<String> = tools.into_iter().map(|t| t.name).collect();
                println!("tools now: {}", names.join(", "));
                break;
            }
            _ => {}
        }
    }
    server.shutdown_subscriptions();
    stream.await??;
    Ok(())
}

//! What several SDK tests serve.

use mcp_bridge_protocol::types::{CallToolResult, ContentBlock, Implementation, Tool};
use mcp_bridge_sdk::{Reply, RequestContext, Server};
use serde_json::json;

/// A server with one tool, `ping`, that answers `pong`.
#[allow(dead_code)]
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

/// A listen stream of `client` on a task of its own, once the server has
/// acknowledged it (so a change or a shutdown after this reaches it).
#[allow(dead_code)]
pub(crate) async fn listening(
    client: mcp_bridge_sdk::Client,
    filter: mcp_bridge_protocol::types::SubscriptionFilter,
) -> tokio::task::JoinHandle<mcp_bridge_sdk::Result<mcp_bridge_protocol::types::SubscriptionsListenResult>> {
    let (acknowledged, heard) = tokio::sync::oneshot::channel();
    let acknowledged = std::sync::Mutex::new(Some(acknowledged));
    let on_notification: mcp_bridge_sdk::client::NotificationCallback = std::sync::Arc::new(move |n| {
        if n.method == "notifications/subscriptions/acknowledged"
            && let Some(tx) = acknowledged.lock().unwrap().take()
        {
            let _ = tx.send(());
        }
    });
    let options = mcp_bridge_sdk::RequestOptions::default().with_on_notification(on_notification);
    let stream = tokio::spawn(async move { client.listen(filter, &options).await });
    tokio::time::timeout(std::time::Duration::from_secs(10), heard)
        .await
        .expect("the server acknowledges the listen stream within 10 s")
        .expect("the listen stream ended before its acknowledgment");
    stream
}

/// See [`test_support::until`].
#[allow(dead_code)]
pub(crate) async fn until(what: &str, condition: impl FnMut() -> bool) {
    test_support::until(what, condition).await;
}

/// The `x-trace` header the handler of `ctx` sees, then the name of each
/// credential header it sees (none, since they are left out).
#[allow(dead_code)]
pub(crate) fn trace_and_credentials(ctx: &RequestContext) -> String {
    let headers = ctx.http_headers.as_ref();
    let trace = headers.and_then(|h| h.get("x-trace")).and_then(|v| v.to_str().ok()).unwrap_or("none");
    let credentials = ["authorization", "proxy-authorization", "cookie", "dpop"];
    let seen = credentials.iter().filter(|name| headers.is_some_and(|h| h.contains_key(**name)));
    seen.fold(trace.to_owned(), |text, name| format!("{text} {name}"))
}

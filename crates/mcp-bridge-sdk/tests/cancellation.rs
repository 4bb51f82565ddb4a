//! A request the client stops waiting for is cancelled at the server:
//! cancelled by its token, or its future dropped (a gateway's client gone).

mod common;

use std::sync::{Arc, Mutex};

use mcp_bridge_protocol::types::{CallToolResult, Implementation, Tool};
use mcp_bridge_sdk::{Client, ClientOptions, Error, Reply, RequestContext, RequestOptions, Server, transport};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// A server whose tool `wait` tells `started` when it runs and sets
/// `saw_cancel` once it is cancelled; and a client of it.
fn waiting(started: Arc<Notify>, saw_cancel: Arc<Mutex<bool>>) -> Client {
    let tool: Tool = serde_json::from_value(json!({"name": "wait", "inputSchema": {"type": "object"}})).unwrap();
    let server = Server::builder(Implementation::new("test-server", "1"))
        .tool(tool, move |_call, ctx: RequestContext| {
            let (flag, starting) = (saw_cancel.clone(), started.clone());
            async move {
                starting.notify_one();
                ctx.cancelled().await;
                *flag.lock().unwrap() = true;
                Ok(Reply::Complete(CallToolResult::text("never sent")))
            }
        })
        .build();
    Client::new(ClientOptions::new("test-client", "0.1"), transport::memory::connect(&server))
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_request_tells_the_server() {
    let (started, saw_cancel) = (Arc::new(Notify::new()), Arc::new(Mutex::new(false)));
    let client = waiting(started.clone(), saw_cancel.clone());
    let cancel = CancellationToken::new();
    let options = RequestOptions::default().with_cancel(cancel.clone());
    let call = tokio::spawn(async move { client.call_tool("wait", json!({}), &options).await });
    started.notified().await;
    cancel.cancel();
    assert!(matches!(call.await.unwrap(), Err(Error::Cancelled { .. })));
    common::until("the handler to see the cancellation", || *saw_cancel.lock().unwrap()).await;
}

#[tokio::test(start_paused = true)]
async fn a_request_nobody_waits_for_any_more_is_cancelled_at_the_server() {
    let (started, saw_cancel) = (Arc::new(Notify::new()), Arc::new(Mutex::new(false)));
    let client = waiting(started.clone(), saw_cancel.clone());
    // A clone calls: the client itself stays connected.
    let caller = client.clone();
    let call = tokio::spawn(async move { caller.call_tool("wait", json!({}), &RequestOptions::default()).await });
    started.notified().await;
    // The future dropped, as a gateway drops the call of a client that went away.
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    common::until("the handler to see the cancellation", || *saw_cancel.lock().unwrap()).await;
    drop(client);
}

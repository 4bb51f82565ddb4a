//! The observers of a server and a client: each request reported once,
//! with its target and outcome; the client's span is the parent the server
//! receives in `_meta`, under the caller's trace; a cancelled request is
//! reported as cancelled on both ends (its handler dropped unfinished),
//! so that nothing stays in flight.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::types::{CallToolResult, Implementation, Tool};
use mcp_bridge_sdk::telemetry::{Observer, Operation, Side, Started};
use mcp_bridge_sdk::{Client, ClientOptions, HandlerError, Reply, RequestOptions, Server, transport};
use serde_json::{Map, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Every start and end it hears of.
#[derive(Default)]
struct Recorder {
    started: Mutex<Vec<String>>,
    finished: Mutex<Vec<Operation>>,
    changed: Notify,
}

impl Observer for Recorder {
    fn started(&self, request: Started<'_>) {
        self.started.lock().unwrap().push(request.method.to_owned());
    }

    fn finished(&self, operation: &Operation) {
        self.finished.lock().unwrap().push(operation.clone());
        self.changed.notify_waiters();
    }
}

impl Recorder {
    /// The operations of `method`, once there are `count`.
    async fn wait_for(&self, method: &str, count: usize) -> Vec<Operation> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let changed = self.changed.notified();
            let found: Vec<Operation> =
                self.finished.lock().unwrap().iter().filter(|op| op.method == method).cloned().collect();
            if found.len() >= count {
                return found;
            }
            assert!(tokio::time::timeout_at(deadline, changed).await.is_ok(), "{method} reported in time");
        }
    }
}

fn tool(name: &str) -> Tool {
    serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
}

fn observed_pair() -> (Client, Arc<Recorder>, Arc<Recorder>, Arc<Notify>) {
    let (at_server, at_client) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
    let waiting = Arc::new(Notify::new());
    let entered = waiting.clone();
    let server = Server::builder(Implementation::new("observed", "1"))
        .tool(tool("echo"), |_, _| async {
            let result: CallToolResult = serde_json::from_value(json!({"content": [], "isError": true})).unwrap();
            Ok::<_, HandlerError>(Reply::Complete(result))
        })
        .tool(tool("wait"), move |_, ctx| {
            let entered = entered.clone();
            async move {
                entered.notify_one();
                // Deaf to its cancellation: the server drops it.
                let _ctx = ctx;
                std::future::pending::<Result<Reply<CallToolResult>, HandlerError>>().await
            }
        })
        .observer(at_server.clone())
        .build();
    let options = ClientOptions::new("observing-client", "1").with_observer(at_client.clone());
    (Client::new(options, transport::memory::connect(&server)), at_server, at_client, waiting)
}

#[tokio::test]
async fn the_clients_span_is_the_servers_parent_under_the_callers_trace() {
    let (client, at_server, at_client, _) = observed_pair();
    let mut meta = Map::new();
    meta.insert("traceparent".into(), json!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
    let options = RequestOptions::default().with_meta(meta);
    let result = client.call_tool("echo", json!({}), &options).await.unwrap();
    assert_eq!(result.is_error, Some(true));

    let sent = at_client.wait_for("tools/call", 1).await.remove(0);
    let answered = at_server.wait_for("tools/call", 1).await.remove(0);
    let trace = [0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36];
    assert_eq!((sent.side, answered.side), (Side::Client, Side::Server));
    assert_eq!(sent.span.trace_id, trace);
    assert_eq!(sent.span.parent_span_id, Some([0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]));
    assert_eq!(answered.span.trace_id, trace);
    assert_eq!(answered.span.parent_span_id, Some(sent.span.span_id), "the server's parent is the client's span");
    assert_eq!(answered.span_name(), "tools/call echo");
    assert_eq!(answered.error_type.as_deref(), Some("tool_error"));
    assert_eq!(answered.client_name.as_deref(), Some("observing-client"));
    assert_eq!(answered.protocol_version.as_deref(), Some("2026-07-28"));
    assert!(answered.request_id.is_some());
}

#[tokio::test]
async fn a_cancelled_request_is_reported_cancelled_at_both_ends() {
    let (client, at_server, at_client, waiting) = observed_pair();
    let cancel = CancellationToken::new();
    let options = RequestOptions::default().with_cancel(cancel.clone());
    let entered = waiting.notified();
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("wait", json!({}), &options).await }
    });
    tokio::time::timeout(Duration::from_secs(10), entered).await.expect("the handler runs");
    cancel.cancel();
    assert!(call.await.unwrap().is_err());

    let answered = at_server.wait_for("tools/call", 1).await.remove(0);
    assert_eq!(answered.error_type.as_deref(), Some("cancelled"));
    let sent = at_client.wait_for("tools/call", 1).await.remove(0);
    assert_eq!(sent.error_type.as_deref(), Some("cancelled"));
    // Every start has its end: nothing stays in flight.
    let started = at_server.started.lock().unwrap().iter().filter(|m| *m == "tools/call").count();
    assert_eq!(started, 1);
}

//! A 2025-11-25 client of a server that is one replica of several (an
//! in-process change bus): changes made on another replica reach it as
//! notifications, and when the bus loses events the embedded bridge opens
//! a new listen stream instead of going deaf.

use mcp_bridge_protocol::types::{Implementation, Resource, ResourceContents};
use mcp_bridge_sdk::server::legacy::embed::{EmbedOptions, serve_stdio_auto};
use mcp_bridge_sdk::server::{ChangeEvent, InProcessBus};
use mcp_bridge_sdk::{Reply, Server};
use serde_json::{Value, json};
use test_support::until;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn replica(bus: &InProcessBus) -> Server {
    let resource: Resource = serde_json::from_value(json!({"uri": "note://a", "name": "a"})).unwrap();
    Server::builder(Implementation::new("replicated", "1"))
        .change_bus(bus.member())
        .resource(resource, |_request, _ctx| async move {
            let contents: ResourceContents = serde_json::from_value(json!({"uri": "note://a", "text": "x"})).unwrap();
            Ok(Reply::Complete(vec![contents]))
        })
        .build()
}

#[tokio::test]
async fn a_legacy_session_keeps_hearing_other_replicas_after_the_bus_lost_events() {
    let bus = InProcessBus::new();
    let (a, b) = (replica(&bus), replica(&bus));
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (server_in, server_out) = tokio::io::split(server_end);
    let served = a.clone();
    tokio::spawn(async move { serve_stdio_auto(&served, server_in, server_out, EmbedOptions::default()).await });
    let (client_in, mut client_out) = tokio::io::split(client_end);
    let mut lines = BufReader::new(client_in).lines();
    let mut next = async |pick: &dyn Fn(&Value) -> bool| loop {
        let line = tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line()).await;
        let message: Value = serde_json::from_str(&line.expect("a message in time").unwrap().unwrap()).unwrap();
        if pick(&message) {
            return message;
        }
    };
    let mut send = async |message: Value| client_out.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    let update = |m: &Value| m["method"] == "notifications/resources/updated";
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "legacy", "version": "1"}}}))
    .await;
    next(&|m| m["id"] == 1).await;
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe", "params": {"uri": "note://a"}})).await;
    let subscribed = next(&|m| m["id"] == 2).await;
    assert!(subscribed.get("result").is_some(), "{subscribed}");
    until("the bridge's listen stream", || a.open_subscriptions() == 1).await;
    b.publish(ChangeEvent::ResourceUpdated { uri: "note://a".into() }).await;
    assert_eq!(next(&update).await["params"]["uri"], "note://a");

    bus.interrupt();
    until("the stream to end", || a.open_subscriptions() == 0).await;
    // Without a new stream the session would never hear of a change again.
    until("a new listen stream", || a.open_subscriptions() == 1).await;
    // The client is told to read the resource again: it may have missed a change.
    assert_eq!(next(&update).await["params"]["uri"], "note://a");
}

//! `mcp-bridge --listen` serves 2026-07-28 clients too, on the same
//! endpoint as the 2025-11-25 sessions, in front of a server of either
//! revision: the SDK's client pinned to 2026-07-28 calls through it.

use std::sync::Arc;
use std::time::Duration;

use mcp_bridge_protocol::types::{
    ClientCapabilities, ContentBlock, ElicitResult, SubscriptionFilter, SubscriptionsListenResult,
};
use mcp_bridge_sdk::client::{Era, InputHooks};
use mcp_bridge_sdk::transport::http::HttpConfig;
use mcp_bridge_sdk::{Client, ClientOptions, Error, RequestOptions};
use serde_json::{Map, json};
use test_support::workspace_binary;

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

/// A client pinned to 2026-07-28 at `url` that answers form elicitations
/// with the name "Ada" when `answers` is set, else declares none.
fn modern_client(url: &str, answers: bool) -> Client {
    let mut options = ClientOptions::new("pinned", "1").with_era(Era::Modern);
    if answers {
        options.hooks = InputHooks::new().on_form(|_| async {
            Ok::<_, std::convert::Infallible>(ElicitResult::accept(Map::from_iter([("name".to_owned(), json!("Ada"))])))
        });
        options.capabilities = ClientCapabilities::builder().form_elicitation().build();
    }
    Client::new(options, mcp_bridge_sdk::transport::http::connect(HttpConfig::new(url)).unwrap())
}

fn text(result: &mcp_bridge_protocol::types::CallToolResult) -> String {
    match result.content.first() {
        Some(ContentBlock::Text(t)) => t.text.clone(),
        other => panic!("no text: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_calls_a_2025_server_and_answers_its_elicitation_as_an_input_round() {
    let (_server, upstream) = test_support::ts_legacy_http_server().await;
    let (mut bridge, url) = test_support::listening_bridge(BRIDGE, &[&upstream]).await;
    let client = modern_client(&url, true);
    let o = RequestOptions::default();
    let discovered = client.discover(&o).await.unwrap();
    assert!(discovered.capabilities.tools.is_some(), "{discovered:?}");
    let tools = client.list_tools(None, &o).await.unwrap();
    assert!(tools.tools.iter().any(|t| t.name == "ask"), "{tools:?}");
    // The server's elicitation/create, asked in the middle of the call,
    // reaches this client as an InputRequiredResult; the retry answers it.
    let asked = client.call_tool("ask", json!({}), &o).await.unwrap();
    assert_eq!(text(&asked), "accept: Ada");

    // A client that declared no elicitation is not asked: the server hears a refusal.
    let silent = modern_client(&url, false);
    let refused = match silent.call_tool("ask", json!({}), &o).await {
        Ok(result) => text(&result),
        Err(e) => e.to_string(),
    };
    assert!(!refused.contains("Ada"), "{refused}");
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_uses_a_2026_server_through_the_bridge_rounds_and_listen_stream_included() {
    let server = workspace_binary("mcp-example-server", "mcp-example-server");
    let (mut bridge, url) = test_support::listening_bridge(BRIDGE, &["--", server.to_str().unwrap()]).await;
    let client = modern_client(&url, true);
    let o = RequestOptions::default();
    let sum = client.call_tool("add", json!({"a": 2, "b": 3}), &o).await.unwrap();
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    // Two rounds of the server's own, each state passed through sealed in the bridge's.
    let hello = client.call_tool("ask_name", json!({}), &o).await.unwrap();
    assert_eq!(text(&hello), "Hello, Ada!");

    // A listen stream: the change the call causes reaches the client,
    // named as its own stream.
    let (events, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let stop = tokio_util::sync::CancellationToken::new();
    let listen_options = RequestOptions::default()
        .with_cancel(stop.clone())
        .with_on_notification(Arc::new(move |n| drop(events.send(n.method.clone()))));
    let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    let listener = client.clone();
    let listening = tokio::spawn(async move { listener.listen(filter, &listen_options).await });
    let Some(first) = tokio::time::timeout(Duration::from_secs(30), heard.recv()).await.unwrap() else {
        panic!("the listen stream ended at once: {:?}", listening.await);
    };
    assert_eq!(first, "notifications/subscriptions/acknowledged");
    client.call_tool("toggle_bonus", json!({}), &o).await.unwrap();
    let changed = tokio::time::timeout(Duration::from_secs(30), heard.recv()).await.unwrap().unwrap();
    assert_eq!(changed, "notifications/tools/list_changed");
    stop.cancel();
    let ended: Result<SubscriptionsListenResult, Error> = listening.await.unwrap();
    assert!(matches!(ended, Err(Error::Cancelled { .. })), "{ended:?}");
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

/// `--listen --config`: a 2026-07-28 client is served by the gateway's own
/// server, each server's tools under its prefix, a 2025-11-25 server's
/// elicitation relayed as an input round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_client_uses_the_gateway_of_many_servers() {
    let (_legacy, legacy_url) = test_support::ts_legacy_http_server().await;
    let dir = test_support::ScratchDir::new("listen-modern-gateway");
    let file = dir.join("mcp.json");
    let config = json!({"servers": {
        "notes": {"command": workspace_binary("mcp-example-server", "mcp-example-server")},
        "legacy": {"url": legacy_url}
    }});
    std::fs::write(&file, config.to_string()).unwrap();
    let (mut bridge, url) = test_support::listening_bridge(BRIDGE, &["--config", file.to_str().unwrap()]).await;
    let client = modern_client(&url, true);
    let o = RequestOptions::default();
    let sum = client.call_tool("notes__add", json!({"a": 2, "b": 3}), &o).await.unwrap();
    assert_eq!(sum.structured_content, Some(json!({"sum": 5})));
    let asked = client.call_tool("legacy__ask", json!({}), &o).await.unwrap();
    assert_eq!(text(&asked), "accept: Ada");
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

/// Ctrl-C ends a 2026-07-28 client's listen stream with its result, and
/// the bridge exits: the stream does not hold the shutdown open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_ends_a_2026_clients_listen_stream_and_the_bridge() {
    let server = workspace_binary("mcp-example-server", "mcp-example-server");
    let (mut bridge, url) = test_support::listening_bridge(BRIDGE, &["--", server.to_str().unwrap()]).await;
    let client = modern_client(&url, false);
    let (events, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let options =
        RequestOptions::default().with_on_notification(Arc::new(move |n| drop(events.send(n.method.clone()))));
    let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    let listening = tokio::spawn(async move { client.listen(filter, &options).await });
    tokio::time::timeout(Duration::from_secs(30), heard.recv()).await.unwrap().unwrap();
    let pid = bridge.id().unwrap().to_string();
    assert!(std::process::Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    let exited = tokio::time::timeout(Duration::from_secs(20), bridge.wait()).await.expect("the bridge exits");
    assert_eq!(exited.unwrap().code(), Some(0));
    let ended = tokio::time::timeout(Duration::from_secs(10), listening).await.unwrap().unwrap();
    assert!(ended.is_ok(), "{ended:?}");
}

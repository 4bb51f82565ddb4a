//! The upstream's input requests through the bridge: a scripted legacy
//! client answers the bridge's `b-` requests (seed milestone M2).

use std::path::PathBuf;

use serde_json::{Value, json};
use test_support::{RawPeer, initialized_and_listening, legacy_initialize, workspace_binary};

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

fn example_server() -> PathBuf {
    workspace_binary("mcp-example-server", "mcp-example-server")
}

fn request(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn answer(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

fn cause(reply: &Value) -> &str {
    reply["error"]["data"]["cause"].as_str().unwrap_or("")
}

/// A bridge in front of the example server, initialized by a client with
/// these capabilities.
async fn ready(capabilities: Value, extra: &[&str]) -> RawPeer {
    let server = example_server();
    let mut args: Vec<&str> = extra.to_vec();
    args.extend(["--", server.to_str().unwrap()]);
    let mut peer = RawPeer::spawn(BRIDGE, &args);
    let init = legacy_initialize(&mut peer, capabilities).await;
    assert!(init.get("result").is_some());
    initialized_and_listening(&mut peer).await;
    peer
}

fn call(id: i64, tool: &str) -> String {
    request(json!(id), "tools/call", json!({"name": tool, "arguments": {}}))
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap_or("")
}

#[tokio::test]
async fn an_elicitation_round_goes_to_the_client_and_back() {
    let mut peer = ready(json!({"elicitation": {}}), &[]).await;
    peer.send(&call(1, "ask_name")).await;
    let ask = peer.recv().await;
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["id"], "b-1", "the bridge's own ids are prefixed strings");
    assert_eq!(ask["params"]["message"], "What is your name?");
    peer.send(&answer(&ask["id"], json!({"action": "accept", "content": {"name": "Ada"}}))).await;
    let reply = peer.recv().await;
    assert_eq!((reply["id"].clone(), text(&reply)), (json!(1), "Hello, Ada!"));
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn two_requests_of_one_round_go_out_together_and_may_be_answered_in_any_order() {
    let mut peer = ready(json!({"elicitation": {}, "roots": {}}), &[]).await;
    peer.send(&call(1, "ask_two")).await;
    let (first, second) = (peer.recv().await, peer.recv().await);
    let mut by_method = [first, second];
    by_method.sort_by_key(|m| m["method"].as_str().unwrap_or("").to_owned());
    let [elicit, roots] = by_method;
    assert_eq!((elicit["method"].as_str(), roots["method"].as_str()), (Some("elicitation/create"), Some("roots/list")));
    peer.send(&answer(&roots["id"], json!({"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}))).await;
    peer.send(&answer(&elicit["id"], json!({"action": "accept", "content": {"name": "Grace"}}))).await;
    assert_eq!(text(&peer.recv().await), "Grace works in 2 root(s)");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_request_of_two_rounds_asks_twice() {
    let mut peer = ready(json!({"elicitation": {}}), &[]).await;
    peer.send(&call(1, "ask_twice")).await;
    let first = peer.recv().await;
    peer.send(&answer(&first["id"], json!({"action": "accept", "content": {"name": "Lin"}}))).await;
    let second = peer.recv().await;
    assert_eq!(second["params"]["message"], "Favourite colour?");
    assert_ne!(first["id"], second["id"]);
    peer.send(&answer(&second["id"], json!({"action": "accept", "content": {"colour": "green"}}))).await;
    assert_eq!(text(&peer.recv().await), "Lin likes green");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_client_without_elicitation_gets_the_upstreams_refusal() {
    let mut peer = ready(json!({}), &[]).await;
    peer.send(&call(1, "ask_name")).await;
    let reply = peer.recv().await;
    assert_eq!(reply["error"]["code"], -32021, "the upstream was told the client cannot elicit: {reply}");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_bad_answer_is_an_invalid_client_answer_naming_the_key() {
    let mut peer = ready(json!({"elicitation": {}}), &[]).await;
    peer.send(&call(1, "ask_name")).await;
    let ask = peer.recv().await;
    peer.send(&answer(&ask["id"], json!({"action": "accept", "content": {"name": 42}}))).await;
    let reply = peer.recv().await;
    assert_eq!(
        (cause(&reply), reply["error"]["data"]["detail"]["key"].clone()),
        ("invalid_client_answer", json!("name"))
    );
    peer.send(&call(2, "ask_name")).await;
    let ask = peer.recv().await;
    peer.send(
        &json!({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -1, "message": "user closed the dialog"}})
            .to_string(),
    )
    .await;
    assert_eq!(cause(&peer.recv().await), "invalid_client_answer");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_cancel_in_the_middle_of_a_round_cancels_the_bridges_request_and_drops_late_answers() {
    let mut peer = ready(json!({"elicitation": {}}), &[]).await;
    peer.send(&call(7, "ask_name")).await;
    let ask = peer.recv().await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#).await;
    let cancelled = peer.recv().await;
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], ask["id"]);
    // The late answer and a numeric-id answer are dropped without a word.
    peer.send(&answer(&ask["id"], json!({"action": "accept", "content": {"name": "late"}}))).await;
    peer.send(&answer(&json!(7), json!({}))).await;
    peer.send(&request(json!(8), "ping", json!({}))).await;
    assert_eq!(peer.recv().await, json!({"jsonrpc": "2.0", "id": 8, "result": {}}));
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn an_answer_after_the_timeout_is_dropped_and_a_duplicate_answer_too() {
    let mut peer = ready(json!({"elicitation": {}}), &["--input-timeout", "1"]).await;
    peer.send(&call(1, "ask_name")).await;
    let ask = peer.recv().await;
    let cancelled = peer.recv().await;
    assert_eq!(
        (cancelled["method"].clone(), cancelled["params"]["requestId"].clone()),
        (json!("notifications/cancelled"), ask["id"].clone())
    );
    let reply = peer.recv().await;
    assert_eq!((reply["id"].clone(), cause(&reply)), (json!(1), "input_timeout"));
    peer.send(&answer(&ask["id"], json!({"action": "accept", "content": {"name": "late"}}))).await;

    peer.send(&call(2, "ask_name")).await;
    let ask = peer.recv().await;
    peer.send(&answer(&ask["id"], json!({"action": "accept", "content": {"name": "Once"}}))).await;
    peer.send(&answer(&ask["id"], json!({"action": "accept", "content": {"name": "Twice"}}))).await;
    assert_eq!(text(&peer.recv().await), "Hello, Once!");
    peer.send(&request(json!(3), "ping", json!({}))).await;
    assert_eq!(peer.recv().await["id"], 3, "the duplicate answer was dropped");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_refused_request_state_becomes_a_tool_error_the_user_can_read() {
    let mut peer = ready(json!({"elicitation": {}}), &[]).await;
    peer.send(&call(1, "forgetful")).await;
    let ask = peer.recv().await;
    peer.send(&answer(&ask["id"], json!({"action": "accept", "content": {"name": "Ada"}}))).await;
    let reply = peer.recv().await;
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(text(&reply).contains("try again"));
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn sampling_and_roots_rounds_are_answered_by_the_client() {
    let mut peer = ready(json!({"sampling": {}, "roots": {}}), &[]).await;
    peer.send(&request(json!(1), "tools/call", json!({"name": "summarize", "arguments": {"text": "long text"}}))).await;
    let ask = peer.recv().await;
    assert_eq!(ask["method"], "sampling/createMessage");
    peer.send(&answer(
        &ask["id"],
        json!({"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m-1"}),
    ))
    .await;
    assert_eq!(text(&peer.recv().await), "Summary by m-1: short");
    peer.send(&call(2, "list_roots")).await;
    let ask = peer.recv().await;
    assert_eq!(ask["method"], "roots/list");
    peer.send(&answer(&ask["id"], json!({"roots": [{"uri": "https://not-a-file"}]}))).await;
    assert_eq!(cause(&peer.recv().await), "invalid_client_answer", "roots must be file:// URIs");
    assert_eq!(peer.finish().await, Some(0));
}

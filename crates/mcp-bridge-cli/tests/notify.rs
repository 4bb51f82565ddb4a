//! The upstream's listen stream as the client's change notifications
//! (seed milestone M3), through the bridge in front of the example server.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::{RawPeer, initialized_and_listening, legacy_initialize, workspace_binary};

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

fn request(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn call(id: i64, tool: &str, arguments: Value) -> String {
    request(json!(id), "tools/call", json!({"name": tool, "arguments": arguments}))
}

const LISTS: [&str; 3] =
    ["notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed"];

/// Reads `n` messages.
async fn read(peer: &mut RawPeer, n: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(peer.recv().await);
    }
    out
}

fn methods(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .map(|m| m["method"].as_str().map(str::to_owned).unwrap_or_else(|| format!("id {}", m["id"])))
        .collect()
}

async fn ready() -> RawPeer {
    let server: PathBuf = workspace_binary("mcp-example-server", "mcp-example-server");
    let mut peer = RawPeer::spawn(BRIDGE, &["--", server.to_str().unwrap()]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["tools"]["listChanged"], true);
    assert_eq!(caps["resources"]["subscribe"], true);
    let before = initialized_and_listening(&mut peer).await;
    assert!(before.is_empty(), "a fresh session gets no unprompted change notification: {before:?}");
    peer
}

#[tokio::test]
async fn a_list_change_reaches_the_client_before_the_result_that_caused_it() {
    let mut peer = ready().await;
    peer.send(&call(1, "toggle_bonus", json!({}))).await;
    let got = read(&mut peer, 2).await;
    assert_eq!(methods(&got), ["notifications/tools/list_changed", "id 1"]);
    assert_eq!(got[1]["result"]["content"][0]["text"], "bonus added");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn subscribed_resources_report_updates_and_unsubscribed_ones_do_not() {
    let mut peer = ready().await;
    peer.send(&request(json!(1), "resources/subscribe", json!({"uri": "note://shopping"}))).await;
    assert_eq!(
        peer.recv().await,
        json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        "no gap events for a change of URIs"
    );
    peer.send(&call(2, "set_note", json!({"name": "shopping", "text": "eggs"}))).await;
    let got = read(&mut peer, 2).await;
    assert_eq!(methods(&got), ["notifications/resources/updated", "id 2"]);
    assert_eq!(got[0]["params"], json!({"uri": "note://shopping"}));
    peer.send(&request(json!(3), "resources/unsubscribe", json!({"uri": "note://shopping"}))).await;
    assert_eq!(peer.recv().await["result"], json!({}));
    peer.send(&call(4, "set_note", json!({"name": "shopping", "text": "milk"}))).await;
    assert_eq!(peer.recv().await["id"], 4, "no update after unsubscribe");
    peer.send(&request(json!(5), "resources/subscribe", json!({}))).await;
    assert_eq!(peer.recv().await["error"]["data"]["cause"], "invalid_params");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_lost_stream_is_opened_again_and_its_acknowledgment_ends_the_gap() {
    let mut peer = ready().await;
    peer.send(&request(json!(1), "resources/subscribe", json!({"uri": "note://welcome"}))).await;
    assert_eq!(peer.recv().await["id"], 1);
    peer.send(&call(2, "end_streams", json!({}))).await;
    assert_eq!(peer.recv().await["id"], 2);
    // After the back-off (0.5 s), a new stream; its acknowledgment ends the
    // gap: one change per list and one update per subscribed URI.
    let gap = tokio::time::timeout(Duration::from_secs(5), read(&mut peer, 4)).await.unwrap();
    let mut expected: Vec<String> = LISTS.iter().map(|m| (*m).to_owned()).collect();
    expected.push("notifications/resources/updated".into());
    assert_eq!(methods(&gap), expected);
    assert_eq!(gap[3]["params"]["uri"], "note://welcome");
    // The new stream carries events.
    peer.send(&call(3, "set_note", json!({"name": "welcome", "text": "hi"}))).await;
    assert_eq!(methods(&read(&mut peer, 2).await), ["notifications/resources/updated", "id 3"]);
    assert_eq!(peer.finish().await, Some(0));
}

/// An upstream whose first listen stream works and whose later ones fail;
/// `poke` makes it send an event on the first stream.
const PICKY_UPSTREAM: &str = r#"
import json, sys
first_listen = None
def send(msg):
    print(json.dumps(msg), flush=True)
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg["method"]
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete", "supportedVersions": ["2026-07-28"],
              "capabilities": {"tools": {}, "resources": {"listChanged": True, "subscribe": True}}}})
    elif method == "subscriptions/listen" and first_listen is None:
        first_listen = msg["id"]
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": first_listen}, "notifications": msg["params"]["notifications"]}})
    elif method == "subscriptions/listen":
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "no such resource"}})
    else:
        send({"jsonrpc": "2.0", "method": "notifications/resources/list_changed",
              "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": first_listen}}})
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete", "content": []}})
"#;

#[tokio::test]
async fn a_failed_subscription_change_keeps_the_old_stream_and_reports_the_error() {
    let mut peer = RawPeer::spawn(BRIDGE, &["--", "python3", "-u", "-c", PICKY_UPSTREAM]);
    legacy_initialize(&mut peer, json!({})).await;
    // This upstream announces a change with every answer: the list's
    // change comes on the first stream, which was live before the list.
    let before = initialized_and_listening(&mut peer).await;
    assert_eq!(methods(&before), ["notifications/resources/list_changed"]);
    assert!(before[0].get("params").is_none(), "no subscription id reaches the client");
    peer.send(&request(json!(1), "resources/subscribe", json!({"uri": "a://gone"}))).await;
    let reply = peer.recv().await;
    assert_eq!((reply["id"].clone(), reply["error"]["code"].clone()), (json!(1), json!(-32602)), "{reply}");
    peer.send(&call(2, "poke", json!({}))).await;
    assert_eq!(
        methods(&read(&mut peer, 2).await),
        ["notifications/resources/list_changed", "id 2"],
        "the old stream still delivers"
    );
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn subscribe_without_upstream_subscriptions_is_method_not_found() {
    let upstream =
        PICKY_UPSTREAM.replace(r#""resources": {"listChanged": True, "subscribe": True}"#, r#""resources": {}"#);
    let mut peer = RawPeer::spawn(BRIDGE, &["--", "python3", "-u", "-c", upstream.as_str()]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["capabilities"]["resources"], json!({}));
    initialized_and_listening(&mut peer).await;
    peer.send(&request(json!(1), "resources/subscribe", json!({"uri": "a://x"}))).await;
    assert_eq!(peer.recv().await["error"]["code"], -32601);
    assert_eq!(peer.finish().await, Some(0));
}

/// A 2026-07-28 upstream that announces a tool list change, outside any
/// listen stream, before every answer.
const STRAY_CHANGES_UPSTREAM: &str = r#"
import json, sys
def send(msg):
    print(json.dumps(msg), flush=True)
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    if msg["method"] == "server/discover":
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete", "supportedVersions": ["2026-07-28"],
              "capabilities": {"tools": {}}}})
    else:
        send({"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete", "tools": [], "content": []}})
"#;

#[tokio::test]
async fn a_change_a_2026_07_28_upstream_sends_outside_a_listen_stream_is_dropped() {
    let mut peer = RawPeer::spawn(BRIDGE, &["--", "python3", "-u", "-c", STRAY_CHANGES_UPSTREAM]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["capabilities"]["tools"], json!({}), "{init}");
    assert_eq!(methods(&initialized_and_listening(&mut peer).await), Vec::<String>::new());
    peer.send(&call(2, "any", json!({}))).await;
    assert_eq!(methods(&read(&mut peer, 1).await), ["id 2"], "only the answer");
    assert_eq!(peer.finish().await, Some(0));
}

/// The longest an idle session may take to end after its input closes: the
/// Python SDKs send SIGTERM at 2.0 s, so an exit must come well before.
const PROMPT_EXIT: Duration = Duration::from_millis(1500);

#[tokio::test]
async fn a_legacy_session_ends_promptly_and_quietly_when_its_input_closes() {
    let server: PathBuf = workspace_binary("mcp-example-server", "mcp-example-server");
    let mut command = tokio::process::Command::new(BRIDGE);
    command.args(["--", server.to_str().unwrap()]).stderr(std::process::Stdio::piped());
    let mut peer = RawPeer::start(command);
    legacy_initialize(&mut peer, json!({})).await;
    assert!(initialized_and_listening(&mut peer).await.is_empty());
    let mut stderr = peer.child.stderr.take().unwrap();
    peer.close_stdin();
    let status = tokio::time::timeout(PROMPT_EXIT, peer.child.wait())
        .await
        .expect("the bridge took the whole shutdown grace to exit after an idle legacy session")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let mut log = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut log).await.unwrap();
    assert!(!log.contains("listen stream"), "a normal end is no news at the default level: {log}");
}

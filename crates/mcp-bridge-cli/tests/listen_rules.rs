//! The seed's rules of the bridge's listen streams that need a scripted
//! upstream to observe: a stream carries the client's log level, and a
//! stream a local upstream never acknowledges is given up after
//! `listen_ack_timeout` (10 s) and opened again.

use serde_json::{Value, json};
use test_support::{RawPeer, legacy_initialize};

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

/// A scripted 2026-07-28 upstream with tool list changes and resource
/// subscriptions. It acknowledges every listen stream but the first when
/// `ack_first` is false; a `tools/call` answers with the number of listen
/// requests seen and the log level of the last one.
fn upstream(ack_first: bool) -> String {
    let ack_first = if ack_first { "True" } else { "False" };
    format!(
        r#"
import json, sys
def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
listens, level = 0, None
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg["method"]
    if method == "server/discover":
        out({{"jsonrpc": "2.0", "id": msg["id"], "result": {{"resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {{"tools": {{"listChanged": True}}, "resources": {{"subscribe": True}}}}}}}})
    elif method == "subscriptions/listen":
        listens += 1
        level = msg["params"]["_meta"].get("io.modelcontextprotocol/logLevel")
        if listens == 1 and not {ack_first}:
            continue
        out({{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {{
            "_meta": {{"io.modelcontextprotocol/subscriptionId": msg["id"]}},
            "notifications": msg["params"]["notifications"]}}}})
    else:
        text = json.dumps({{"listens": listens, "level": level}})
        out({{"jsonrpc": "2.0", "id": msg["id"], "result": {{"resultType": "complete",
            "content": [{{"type": "text", "text": text}}]}}}})
"#
    )
}

fn request(id: i64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// What the upstream saw: listen requests and the last one's log level.
async fn seen(peer: &mut RawPeer, id: i64) -> Value {
    peer.send(&request(id, "tools/call", json!({"name": "seen", "arguments": {}}))).await;
    let answer = peer.recv_response(id).await;
    serde_json::from_str(answer["result"]["content"][0]["text"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn a_new_listen_stream_carries_the_level_of_the_last_set_level() {
    let mut peer = RawPeer::spawn(BRIDGE, &["--", "python3", "-u", "-c", &upstream(true)]);
    legacy_initialize(&mut peer, json!({})).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    // The first stream follows no gap: no change notification; the call
    // goes upstream once that stream is acknowledged.
    peer.send(&request(1, "tools/call", json!({"name": "seen", "arguments": {}}))).await;
    let first = peer.recv().await;
    assert_eq!(first["id"], 1, "nothing unprompted before the first answer: {first}");
    assert_eq!(seen(&mut peer, 5).await, json!({"listens": 1, "level": null}));
    peer.send(&request(2, "logging/setLevel", json!({"level": "warning"}))).await;
    assert_eq!(peer.recv_response(2).await["result"], json!({}));
    // A subscription opens a new stream, at the client's level.
    peer.send(&request(3, "resources/subscribe", json!({"uri": "file:///a"}))).await;
    assert_eq!(peer.recv_response(3).await["result"], json!({}));
    assert_eq!(seen(&mut peer, 4).await, json!({"listens": 2, "level": "warning"}));
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_stream_never_acknowledged_by_a_local_upstream_is_opened_again() {
    let mut peer = RawPeer::spawn(BRIDGE, &["--", "python3", "-u", "-c", &upstream(false)]);
    legacy_initialize(&mut peer, json!({})).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    // Nothing arrives until the bridge gives up the first stream (10 s)
    // and its second one is acknowledged: that ends the gap.
    let event = peer.recv().await;
    assert_eq!(event["method"], "notifications/tools/list_changed", "{event}");
    assert_eq!(seen(&mut peer, 1).await["listens"], 2);
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn each_exchange_with_the_upstream_gets_a_debug_line() {
    use std::process::Stdio;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut bridge = tokio::process::Command::new(BRIDGE)
        .args(["--log-level", "debug", "--", "python3", "-u", "-c", &upstream(true)])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = bridge.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let mut stdout = BufReader::new(bridge.stdout.take().unwrap()).lines();
    let mut answer_to = async |line: String, id: &str| {
        stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        tokio::time::timeout(test_support::LINE_DEADLINE, async {
            while let Some(line) = stdout.next_line().await.unwrap() {
                if line.contains(id) {
                    return;
                }
            }
        })
        .await
        .unwrap();
    };
    answer_to(init.to_string(), "\"id\":0").await;
    answer_to(request(7, "tools/call", json!({"name": "seen", "arguments": {}})), "\"id\":7").await;
    drop(stdin);
    let mut stderr = BufReader::new(bridge.stderr.take().unwrap()).lines();
    let mut log = Vec::new();
    while let Ok(Ok(Some(line))) = tokio::time::timeout(test_support::LINE_DEADLINE, stderr.next_line()).await {
        log.push(line);
    }
    // The upstream's id of the call: after discover (1) and the listen stream's.
    let traced = log
        .iter()
        .find(|l| l.contains("exchange: request 7 round 0 upstream ") && l.contains(" tools/call: complete in"));
    assert!(traced.is_some_and(|l| l.contains(": debug: exchange:")), "{log:#?}");
    let upstream_id = traced.and_then(|l| l.split(" upstream ").nth(1)?.split(' ').next()?.parse::<u64>().ok());
    assert!(upstream_id.is_some_and(|id| id >= 2), "the line names the upstream's request id: {traced:?}");
}

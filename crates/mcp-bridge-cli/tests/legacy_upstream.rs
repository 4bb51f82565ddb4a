//! `mcp-bridge -- CMD` in front of a server that speaks only 2025-11-25:
//! the reference `server-everything` (TypeScript SDK 1.x) on stdio. The
//! bridge finds out with the SDK client's probe, answers `initialize` with
//! the server's own result (at the version the client asked for), and
//! relays: calls, the server's elicitation and sampling requests to the
//! client and the answers back, progress, subscriptions and their updates,
//! change notifications, cancellation; the end of input ends both. And
//! `mcp-bridge URL` in front of a 2025-11-25 Streamable HTTP server with
//! sessions (TypeScript SDK 1.x). A bridge started again takes the era
//! from its cache file and skips the probe.

use serde_json::{Value, json};
use test_support::{RawPeer, server_everything, ts_legacy_http_server, workspace_binary};

/// The bridge in front of server-everything with `flags`, after the client's `initialize`.
async fn bridge_with(flags: &[&str]) -> (RawPeer, Value) {
    let bridge = workspace_binary("mcp-bridge-cli", "mcp-bridge");
    let script = server_everything();
    let mut args = flags.to_vec();
    args.extend(["--", "node", script.to_str().unwrap(), "stdio"]);
    let mut peer = RawPeer::spawn(&bridge, &args);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"elicitation": {}, "sampling": {}},
        "clientInfo": {"name": "legacy-upstream-test", "version": "1"}
    }});
    peer.send(&init.to_string()).await;
    let result = peer.recv_response(1).await;
    (peer, result)
}

async fn bridge() -> RawPeer {
    let (mut peer, result) = bridge_with(&[]).await;
    assert_eq!(result["result"]["protocolVersion"], "2025-06-18", "the server's own answer: {result}");
    assert_eq!(result["result"]["serverInfo"]["name"], "mcp-servers/everything", "{result}");
    assert!(result["result"]["capabilities"]["resources"]["subscribe"] == true, "{result}");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    peer
}

/// Reads until the message `pick` accepts, answering nothing; the skipped
/// ones are returned too.
async fn recv_until(peer: &mut RawPeer, pick: impl Fn(&Value) -> bool) -> (Value, Vec<Value>) {
    let mut skipped = Vec::new();
    loop {
        let message = peer.recv().await;
        if pick(&message) {
            return (message, skipped);
        }
        skipped.push(message);
    }
}

fn text(response: &Value) -> String {
    response["result"]["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect()
}

#[tokio::test]
async fn calls_and_the_servers_own_requests_are_relayed() {
    let mut peer = bridge().await;
    peer.send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#,
    )
    .await;
    assert_eq!(text(&peer.recv_response(2).await), "Echo: hi");

    // The server asks the client through the bridge; the answer goes back.
    peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"trigger-elicitation-request","arguments":{}}}"#).await;
    let (asked, _) = recv_until(&mut peer, |m| m["method"] == "elicitation/create").await;
    assert!(asked["params"]["requestedSchema"]["properties"]["name"].is_object(), "{asked}");
    let answer =
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    peer.send(&answer.to_string()).await;
    let done = peer.recv_response(3).await;
    assert!(text(&done).contains("Name: Ada"), "{done}");

    peer.send(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"trigger-sampling-request","arguments":{"prompt":"6 x 7?"}}}"#).await;
    let (sampling, _) = recv_until(&mut peer, |m| m["method"] == "sampling/createMessage").await;
    let answer = json!({"jsonrpc": "2.0", "id": sampling["id"], "result":
        {"role": "assistant", "content": {"type": "text", "text": "forty-two"}, "model": "m"}});
    peer.send(&answer.to_string()).await;
    assert!(text(&peer.recv_response(4).await).contains("forty-two"));
    assert_eq!(peer.finish().await, Some(0), "the end of input ends the bridge");
}

#[tokio::test]
async fn progress_subscriptions_and_cancellation_are_relayed() {
    let mut peer = bridge().await;
    let long = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "trigger-long-running-operation", "arguments": {"duration": 0.3, "steps": 3},
        "_meta": {"progressToken": "p-5"}
    }});
    peer.send(&long.to_string()).await;
    let (done, before) = recv_until(&mut peer, |m| m["id"] == 5).await;
    assert!(text(&done).contains("completed"), "{done}");
    let progress: Vec<&Value> = before.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert_eq!(progress.len(), 3, "{before:?}");
    assert!(progress.iter().all(|p| p["params"]["progressToken"] == "p-5"), "the client's own token: {progress:?}");

    // A subscription goes to the server, and so do its updates come back.
    let uri = "demo://resource/dynamic/text/1";
    let subscribe = json!({"jsonrpc": "2.0", "id": 6, "method": "resources/subscribe", "params": {"uri": uri}});
    peer.send(&subscribe.to_string()).await;
    assert_eq!(peer.recv_response(6).await["result"], json!({}));
    peer.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"toggle-subscriber-updates","arguments":{}}}"#).await;
    peer.recv_response(7).await;
    let (updated, _) = recv_until(&mut peer, |m| m["method"] == "notifications/resources/updated").await;
    assert_eq!(updated["params"]["uri"], uri, "{updated}");

    // A cancelled call gets no answer; the next one does.
    let slow = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "trigger-long-running-operation", "arguments": {"duration": 30, "steps": 2}}});
    peer.send(&slow.to_string()).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":8,"reason":"user"}}"#).await;
    peer.send(
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"message":"after"}}}"#,
    )
    .await;
    let (after, skipped) = recv_until(&mut peer, |m| m["id"] == 9).await;
    assert_eq!(text(&after), "Echo: after");
    assert!(skipped.iter().all(|m| m["id"] != 8), "the cancelled call was answered: {skipped:?}");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_legacy_http_server_is_relayed_in_its_session() {
    let (_server, url) = ts_legacy_http_server().await;
    let bridge = workspace_binary("mcp-bridge-cli", "mcp-bridge");
    let mut peer = RawPeer::spawn(&bridge, &[url.as_str()]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "legacy-http-upstream-test", "version": "1"}
    }});
    peer.send(&init.to_string()).await;
    let result = peer.recv_response(1).await;
    assert_eq!(result["result"]["serverInfo"]["name"], "ts-legacy-http", "{result}");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;

    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{}}}"#).await;
    let (asked, _) = recv_until(&mut peer, |m| m["method"] == "elicitation/create").await;
    let answer =
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    peer.send(&answer.to_string()).await;
    assert_eq!(text(&peer.recv_response(2).await), "accept: Ada");

    // A list change comes on the session's GET stream, for no request:
    // before or after the call's answer, which comes on the call's stream.
    peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"grow","arguments":{}}}"#).await;
    let (mut answered, mut changed) = (None, false);
    while answered.is_none() || !changed {
        let message = peer.recv().await;
        changed |= message["method"] == "notifications/tools/list_changed";
        if message["id"] == 3 {
            answered = Some(message);
        }
    }
    assert_eq!(answered.map(|a| text(&a)).as_deref(), Some("grown 1"));
    peer.send(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"sessions","arguments":{}}}"#).await;
    assert_eq!(text(&peer.recv_response(4).await), "1");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn the_protocol_option_forces_an_era() {
    // 2025-11-25: no probe, the same relay.
    let (mut peer, result) = bridge_with(&["--protocol", "2025-11-25"]).await;
    assert_eq!(result["result"]["serverInfo"]["name"], "mcp-servers/everything", "{result}");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    peer.send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"forced"}}}"#,
    )
    .await;
    assert_eq!(text(&peer.recv_response(2).await), "Echo: forced");
    assert_eq!(peer.finish().await, Some(0));

    // 2026-07-28: no fallback; the initialize fails with the server's refusal of discover.
    let (peer, result) = bridge_with(&["--protocol", "2026-07-28"]).await;
    assert_eq!(result["error"]["data"]["cause"], "discover_failed", "{result}");
    assert_eq!(result["error"]["code"], -32601, "{result}");
    assert_eq!(peer.finish().await, Some(0));
}

/// A 2025-11-25 server in Python that writes each method it receives to
/// the file named by its first argument.
const RECORDING_LEGACY_SERVER: &str = r#"
import json, sys
seen = open(sys.argv[1], "a")
for line in sys.stdin:
    message = json.loads(line)
    seen.write(message.get("method", "(answer)") + "\n")
    seen.flush()
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "recorder", "version": "1"}}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    else:
        error = {"code": -32601, "message": "Method not found"}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}), flush=True)
"#;

#[tokio::test]
async fn a_bridge_started_again_takes_the_era_from_its_cache() {
    let dir = std::env::temp_dir().join(format!("mcp-bridge-era-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cache, seen) = (dir.join("eras.json"), dir.join("seen.txt"));
    let bridge = workspace_binary("mcp-bridge-cli", "mcp-bridge");
    let mut runs = Vec::new();
    for _ in 0..2 {
        let mut command = tokio::process::Command::new(&bridge);
        command.args(["--", "python3", "-u", "-c", RECORDING_LEGACY_SERVER, seen.to_str().unwrap()]);
        command.env("MCP_BRIDGE_ERA_CACHE", &cache).stderr(std::process::Stdio::inherit());
        let mut peer = RawPeer::start(command);
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cache-test", "version": "1"}
        }});
        peer.send(&init.to_string()).await;
        let result = peer.recv_response(1).await;
        assert_eq!(result["result"]["serverInfo"]["name"], "recorder", "{result}");
        assert_eq!(peer.finish().await, Some(0));
        runs.push(std::fs::read_to_string(&seen).unwrap());
        std::fs::remove_file(&seen).unwrap();
    }
    assert!(runs[0].starts_with("server/discover\ninitialize\n"), "the first run probes: {:?}", runs[0]);
    assert!(runs[1].starts_with("initialize\n"), "the second does not: {:?}", runs[1]);
    assert!(std::fs::read_to_string(&cache).unwrap().contains("2025-11-25"));
    std::fs::remove_dir_all(dir).unwrap();
}

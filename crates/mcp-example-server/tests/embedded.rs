//! The embedded bridge in `mcp-example-server`: the same binary on stdio
//! serves a 2025-11-25 client (the TypeScript SDK 1.x, as VS Code uses) and
//! a 2026-07-28 client; the first request chooses the path.

use std::path::Path;
use std::time::Duration;

use mcp_bridge_sdk::server::legacy::embed::{DiscoverPolicy, EmbedOptions, Path as Chosen, serve_stdio_auto};
use serde_json::{Value, json};
use test_support::{RawPeer, legacy_initialize, request_meta, ts_sdk_dir};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const SERVER: &str = env!("CARGO_BIN_EXE_mcp-example-server");

/// Runs the TypeScript 1.x client script in `mode` against the example
/// server directly (no bridge process).
fn run_ts_client(mode: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp-bridge-cli/tests/ts/legacy_client.mjs");
    let output = std::process::Command::new("node")
        .env("TS_SDK_DIR", ts_sdk_dir())
        .arg(script)
        .arg(mode)
        .arg(SERVER)
        .output()
        .expect("node is on the PATH");
    assert!(output.status.success(), "the TypeScript client failed:\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_typescript_client_uses_the_example_server_directly() {
    let seen = run_ts_client("example");
    assert_eq!(seen["server"]["name"], "mcp-example-server");
    assert!(seen["tools"].as_array().unwrap().contains(&json!("slow")));
    assert_eq!(seen["sum"], "42");
    assert_eq!(seen["slow"], "counted to 3");
    assert_eq!(seen["cancelled"], true);
    assert_eq!(seen["prompt"], "Please write a formal greeting for Ada.");
    assert_eq!(seen["resources"], json!(test_support::EXAMPLE_SERVER_RESOURCES));
    assert_eq!(seen["completion"], json!(["shopping"]));
}

#[test]
fn the_typescript_client_answers_an_elicitation_round_of_the_example_server() {
    let seen = run_ts_client("input");
    assert_eq!(seen["elicitMessage"], "What is your name?");
    assert_eq!(seen["hello"], "Hello, TypeScript!");
    assert_eq!(seen["summary"], "Summary by ts-model: it is short");
}

#[test]
fn the_typescript_client_gets_a_resource_update_from_the_example_server() {
    let seen = run_ts_client("notify");
    assert_eq!(seen["capabilities"]["resources"], json!({"listChanged": true, "subscribe": true}));
    assert_eq!(seen["updated"], "note://shopping");
    assert_eq!(seen["toolsChanged"], true);
}

fn discover(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": {"_meta": request_meta(json!({}))}})
        .to_string()
}

#[tokio::test]
async fn discover_then_initialize_takes_the_legacy_path() {
    let mut peer = RawPeer::spawn(SERVER, &[]);
    peer.send(&discover(1)).await;
    let found = peer.recv().await;
    assert_eq!(found["result"]["supportedVersions"], json!(["2026-07-28"]), "{found}");
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "mcp-example-server");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#).await;
    let listed = peer.recv_response(2).await;
    assert!(listed["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "ask_name"), "{listed}");
    assert!(listed["result"].get("resultType").is_none(), "a legacy result: {listed}");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn discover_then_tools_list_takes_the_modern_path() {
    let mut peer = RawPeer::spawn(SERVER, &[]);
    peer.send(&discover(1)).await;
    assert!(peer.recv().await["result"]["capabilities"]["tools"].is_object());
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": request_meta(json!({}))}});
    peer.send(&list.to_string()).await;
    let listed = peer.recv().await;
    assert_eq!(listed["result"]["resultType"], "complete", "{listed}");
    // A legacy request now is a modern server's -32602 (no _meta), not a
    // second path.
    peer.send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#).await;
    assert_eq!(peer.recv().await["error"]["code"], -32602);
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn end_of_input_in_an_input_round_on_the_legacy_path() {
    let mut peer = RawPeer::spawn(SERVER, &[]);
    legacy_initialize(&mut peer, json!({"elicitation": {}})).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    let call =
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "ask_name", "arguments": {}}});
    peer.send(&call.to_string()).await;
    let asked = loop {
        let message = peer.recv().await;
        if message["method"] == "elicitation/create" {
            break message;
        }
    };
    assert!(asked["id"].as_str().unwrap().starts_with("b-"), "{asked}");
    // Without waiting for the elicitation's answer (its time limit is an hour).
    let finished = tokio::time::timeout(Duration::from_secs(5), peer.finish()).await;
    assert_eq!(finished.expect("the end of input ends the process at once"), Some(0), "and cleanly");
}

#[tokio::test]
async fn end_of_input_in_a_call_on_the_modern_path_still_answers_it() {
    let mut peer = RawPeer::spawn(SERVER, &[]);
    let slow = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "slow", "arguments": {"steps": 2, "step_ms": 100}, "_meta": request_meta(json!({}))}});
    peer.send(&slow.to_string()).await;
    let ask = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "ask_name", "arguments": {}, "_meta": request_meta(json!({"elicitation": {}}))}});
    peer.send(&ask.to_string()).await;
    let round = peer.recv().await;
    assert_eq!((round["id"].clone(), round["result"]["resultType"].clone()), (json!(8), json!("input_required")));
    // The client goes away between the round and its retry.
    peer.close_stdin();
    let answered = peer.recv().await;
    assert_eq!(
        (answered["id"].clone(), answered["result"]["content"][0]["text"].clone()),
        (json!(7), json!("counted to 2"))
    );
    assert_eq!(peer.finish().await, Some(0));
}

/// Serves one connection in-process with `policy`: writes `input`, reads
/// `wait_for` lines before closing the input, then the rest; returns every
/// line written and the chosen path.
async fn in_process(input: &str, policy: DiscoverPolicy, wait_for: usize) -> (Vec<Value>, Chosen) {
    let (client, server_side) = tokio::io::duplex(1 << 20);
    let (read, write) = tokio::io::split(server_side);
    let server = mcp_example_server::build_server();
    let options = EmbedOptions::default().with_discover(policy);
    let serving = tokio::spawn(async move { serve_stdio_auto(&server, read, write, options).await });
    let (client_read, mut client_write) = tokio::io::split(client);
    client_write.write_all(input.as_bytes()).await.unwrap();
    let mut lines = BufReader::new(client_read).lines();
    let mut out = Vec::new();
    for _ in 0..wait_for {
        out.push(serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap());
    }
    client_write.shutdown().await.unwrap();
    while let Some(line) = lines.next_line().await.unwrap() {
        out.push(serde_json::from_str(&line).unwrap());
    }
    (out, serving.await.unwrap().unwrap())
}

#[tokio::test]
async fn the_first_request_chooses_the_path_and_discover_can_be_refused() {
    let (out, path) = in_process(&format!("{}\n", discover(1)), DiscoverPolicy::Refuse, 0).await;
    assert_eq!((out[0]["error"]["code"].clone(), path), (json!(-32601), Chosen::None));
    // Blank lines are skipped; the last line may come without its newline.
    let (out, path) = in_process(&format!("\n{}", discover(1)), DiscoverPolicy::Answer, 0).await;
    assert_eq!((out[0]["result"]["resultType"].clone(), path), (json!("complete"), Chosen::None));
    let (out, path) = in_process("not json\n", DiscoverPolicy::Answer, 0).await;
    assert_eq!((out[0]["error"]["code"].clone(), path), (json!(-32700), Chosen::Modern));
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let (out, path) = in_process(&format!("{}\n{init}\n", discover(1)), DiscoverPolicy::Answer, 2).await;
    assert_eq!(out[0]["id"], 1);
    assert_eq!((out[1]["result"]["protocolVersion"].clone(), path), (json!("2025-11-25"), Chosen::Legacy));
    let (out, path) = in_process("", DiscoverPolicy::Answer, 0).await;
    assert_eq!((out.len(), path), (0, Chosen::None));
}

//! `mcp-bridge` in front of a real `fastmcp` server (4.1): it answers
//! `server/discover` with 2026-07-28 alone, yet its `ctx.elicit()` works
//! only on 2025-11-25 connections. With `--protocol auto` (the default) the
//! bridge speaks 2026-07-28 and the tool's error reaches the client as the
//! server said it; with `--protocol 2025-11-25` the elicitation is relayed
//! and answered. The book's failure table (docs/src/clients.md) names the flag.

use serde_json::{Value, json};
use test_support::{RawPeer, legacy_initialize};

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

/// The bridge with `args` in front of the fastmcp server.
fn bridge(args: &[&str]) -> RawPeer {
    let server = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/fastmcp_elicit.py");
    let python = test_support::fastmcp_python();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", python.to_str().unwrap(), server]);
    RawPeer::spawn(BRIDGE, &all)
}

/// Calls `greet`, answering an elicitation with `name` when one comes: the
/// call's result (or error) and whether the client was asked.
async fn greet(peer: &mut RawPeer, name: &str) -> (Value, bool) {
    let init = legacy_initialize(peer, json!({"elicitation": {"form": {}}})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "fastmcp-elicit", "{init}");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet","arguments":{}}}"#).await;
    let mut asked = false;
    loop {
        let message = peer.recv().await;
        if message["method"] == "elicitation/create" {
            asked = true;
            let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept", "content": {"value": name}}});
            peer.send(&answer.to_string()).await;
        } else if message["id"] == 1 {
            return (message, asked);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fastmcp_elicitation_is_relayed_with_protocol_2025_11_25() {
    let mut peer = bridge(&["--protocol", "2025-11-25"]);
    let (answer, asked) = greet(&mut peer, "Ada").await;
    assert!(asked, "the client was asked: {answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "Hello, Ada!", "{answer}");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test(flavor = "multi_thread")]
async fn with_protocol_auto_a_fastmcp_elicitation_fails_as_the_server_says_and_the_bridge_goes_on() {
    let mut peer = bridge(&[]);
    let (answer, asked) = greet(&mut peer, "Ada").await;
    assert!(!asked, "{answer}");
    let said = answer.to_string();
    eprintln!("the tool answered: {said}");
    assert!(said.contains("2026-07-28"), "the server's own reason reaches the client: {said}");
    peer.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}"#)
        .await;
    let sum = peer.recv_response(2).await;
    assert_eq!(sum["result"]["content"][0]["text"], "5", "{sum}");
    assert_eq!(peer.finish().await, Some(0));
}

//! The `mcp-bridge` binary driven by a scripted legacy client over pipes,
//! in front of the example server and of small misbehaving servers.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::{RawPeer, workspace_binary};

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

fn example_server() -> PathBuf {
    workspace_binary("mcp-example-server", "mcp-example-server")
}

fn bridge(args: &[&str]) -> RawPeer {
    RawPeer::spawn(BRIDGE, args)
}

fn bridge_to_example(extra: &[&str]) -> RawPeer {
    let server = example_server();
    let mut args: Vec<&str> = extra.to_vec();
    args.push("--");
    args.push(server.to_str().unwrap());
    bridge(&args)
}

fn request(id: Value, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn initialize(id: i64) -> String {
    request(
        json!(id),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "scripted", "version": "1"}}),
    )
}

fn cause(reply: &Value) -> &str {
    reply["error"]["data"]["cause"].as_str().unwrap_or("")
}

/// Initializes a bridge and checks the result.
async fn ready(peer: &mut RawPeer) {
    peer.send(&initialize(1)).await;
    let reply = peer.recv().await;
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25", "{reply}");
    // Forwarded requests wait for the first listen stream: no need to.
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
}

#[tokio::test]
async fn before_initialize_the_reader_answers_the_lifecycle_table() {
    let mut peer = bridge_to_example(&[]);
    peer.send(&request(json!(1), "ping", json!({}))).await;
    assert_eq!(peer.recv().await, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    peer.send(&request(json!(2), "logging/setLevel", json!({"level": "debug"}))).await;
    assert_eq!(peer.recv().await["result"], json!({}));
    peer.send(&request(json!(3), "logging/setLevel", json!({"level": "loud"}))).await;
    assert_eq!(cause(&peer.recv().await), "invalid_params");
    peer.send(&request(json!(4), "server/discover", json!({}))).await;
    let reply = peer.recv().await;
    assert_eq!((reply["error"]["code"].as_i64(), cause(&reply)), (Some(-32601), "method_not_found"));
    peer.send(&request(json!(5), "tools/list", json!({}))).await;
    let reply = peer.recv().await;
    assert_eq!((reply["error"]["code"].as_i64(), cause(&reply)), (Some(-32600), "not_initialized"));
    let modern = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}});
    peer.send(&request(json!(6), "tools/list", modern)).await;
    assert_eq!(peer.recv().await["error"]["code"], -32601);
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    peer.send(&request(json!(7), "initialize", json!({"capabilities": {}}))).await;
    assert_eq!(cause(&peer.recv().await), "invalid_params");
    ready(&mut peer).await;
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn when_ready_the_bridge_forwards_and_answers_the_rest_itself() {
    let mut peer = bridge_to_example(&[]);
    ready(&mut peer).await;
    peer.send(&request(json!(2), "ping", json!({}))).await;
    assert_eq!(peer.recv().await["result"], json!({}));
    peer.send(&initialize(3)).await;
    assert_eq!(cause(&peer.recv().await), "already_initialized");
    peer.send(&request(json!(4), "server/discover", json!({}))).await;
    assert_eq!(peer.recv().await["error"]["code"], -32601);
    peer.send(&request(json!(5), "resources/subscribe", json!({"uri": "note://shopping"}))).await;
    assert_eq!(peer.recv().await, json!({"jsonrpc": "2.0", "id": 5, "result": {}}));
    peer.send(&request(json!(6), "tasks/list", json!({}))).await;
    assert_eq!(peer.recv().await["error"]["code"], -32601);
    peer.send(&request(json!(7), "tools/list", json!({}))).await;
    let tools = peer.recv().await;
    assert!(tools["result"]["tools"].as_array().unwrap().len() >= 9);
    assert!(tools["result"].get("ttlMs").is_none() && tools["result"].get("resultType").is_none());
    peer.send(&request(json!(8), "tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 2}}))).await;
    let sum = peer.recv().await;
    assert_eq!(sum["result"], json!({"content": [{"type": "text", "text": "3"}], "structuredContent": {"sum": 3}}));
    peer.send(&request(json!(9), "tools/call", json!({"name": "nope"}))).await;
    assert_eq!(peer.recv().await["error"]["code"], -32602, "the upstream's error passes through");
    peer.send(&request(json!(10), "prompts/get", json!({"name": "greet", "arguments": {"name": "Ada"}}))).await;
    assert_eq!(peer.recv().await["result"]["messages"][0]["role"], "user");
    peer.send(&request(json!(11), "resources/read", json!({"uri": "example://readme"}))).await;
    assert!(peer.recv().await["result"]["contents"][0]["text"].as_str().unwrap().contains("mcp-example-server"));
    peer.send(&request(
        json!(12),
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "greet"},
        "argument": {"name": "style", "value": "c"}}),
    ))
    .await;
    assert_eq!(peer.recv().await["result"]["completion"]["values"], json!(["casual"]));
    assert_eq!(peer.finish().await, Some(0));
}

/// A result the bridge changes only at its top level (it drops
/// `resultType`) is passed on from the upstream's line, not rebuilt: the
/// client gets every byte of it under its own id.
#[tokio::test]
async fn a_large_result_reaches_the_client_whole_without_its_2026_members() {
    let mut peer = bridge_to_example(&[]);
    ready(&mut peer).await;
    let bytes = 1 << 20;
    peer.send(&request(json!("big \"one\""), "tools/call", json!({"name": "big", "arguments": {"bytes": bytes}})))
        .await;
    let reply = peer.recv().await;
    assert_eq!(reply["id"], "big \"one\"");
    let result = reply["result"].as_object().expect("a result");
    assert_eq!(result.keys().collect::<Vec<_>>(), ["content"], "only what a 2025-11-25 client knows");
    let text = reply["result"]["content"][0]["text"].as_str().expect("a text block");
    assert!(text.len() == bytes && text.bytes().all(|b| b == b'x'));
    assert_eq!(peer.finish().await, Some(0));
}

/// Long results one after another, each shorter or longer than the last:
/// the buffer of one long line written is read into again for the next
/// (the SDK's `transport::lines`), and each result comes whole with its
/// own length; a long echo of its own letter after them comes with only
/// its own bytes.
#[tokio::test]
async fn long_results_one_after_another_each_reach_the_client_whole() {
    let mut peer = bridge_to_example(&[]);
    ready(&mut peer).await;
    for (id, bytes) in [700_000, 300_000, 900_000, 5].into_iter().enumerate() {
        peer.send(&request(json!(id), "tools/call", json!({"name": "big", "arguments": {"bytes": bytes}}))).await;
        let reply = peer.recv().await;
        assert_eq!(reply["id"], id);
        let text = reply["result"]["content"][0]["text"].as_str().expect("a text block");
        assert!(text.len() == bytes && text.bytes().all(|b| b == b'x'), "{bytes}: {}", text.len());
    }
    let text = "b".repeat(400_000);
    peer.send(&request(json!("echo"), "tools/call", json!({"name": "echo", "arguments": {"text": text}}))).await;
    let reply = peer.recv().await;
    assert!(reply["result"]["content"][0]["text"] == text.as_str(), "only its own bytes");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn bad_lines_get_their_error_and_bad_response_ids_are_dropped() {
    let mut peer = bridge_to_example(&[]);
    peer.send("{not json").await;
    let reply = peer.recv().await;
    assert_eq!((reply["error"]["code"].as_i64(), cause(&reply)), (Some(-32700), "parse_error"));
    peer.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffng\"}\n").await;
    let reply = peer.recv().await;
    assert_eq!((reply["id"].clone(), cause(&reply)), (json!(1), "parse_error"));
    let deep =
        format!(r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{{"a":{}{}}}}}"#, "[".repeat(70), "]".repeat(70));
    peer.send(&deep).await;
    let reply = peer.recv().await;
    assert_eq!(
        (reply["id"].clone(), cause(&reply), reply["error"]["data"]["detail"].clone()),
        (json!(2), "too_deep", json!(64))
    );
    peer.send(r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#).await;
    assert_eq!(cause(&peer.recv().await), "invalid_request_shape");
    peer.send(r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":[1]}"#).await;
    let reply = peer.recv().await;
    assert_eq!((reply["id"].clone(), cause(&reply)), (json!(4), "invalid_request_shape"));
    peer.send(r#"{"jsonrpc":"2.0","id":null,"result":{}}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":"b-99","result":{}}"#).await;
    peer.send(&request(json!(5), "ping", json!({}))).await;
    assert_eq!(peer.recv().await["id"], 5, "the responses before were dropped without a word");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_hundred_mib_line_with_the_id_last_gets_line_too_long_with_that_id() {
    let mut peer = bridge_to_example(&[]);
    let head = br#"{"method":"tools/call","params":{"name":"echo","arguments":{"text":""#;
    let tail = br#""}},"jsonrpc":"2.0","id":"huge-1"}"#;
    peer.send_bytes(head).await;
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..100 {
        peer.send_bytes(&chunk).await;
    }
    peer.send_bytes(tail).await;
    peer.send_bytes(b"\n").await;
    let reply = peer.recv().await;
    assert_eq!(reply["id"], "huge-1");
    assert_eq!((cause(&reply), reply["error"]["data"]["detail"].clone()), ("line_too_long", json!(64 * 1024 * 1024)));
    peer.send(&request(json!(2), "ping", json!({}))).await;
    assert_eq!(peer.recv().await["id"], 2);
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn concurrent_requests_are_answered_out_of_order_with_their_own_ids() {
    let mut peer = bridge_to_example(&[]);
    ready(&mut peer).await;
    // Ids equal to the bridge's own upstream ids, and a string twin of a number.
    peer.send(&request(json!(1), "tools/call", json!({"name": "slow", "arguments": {"steps": 2, "step_ms": 300}})))
        .await;
    peer.send(&request(json!("1"), "tools/call", json!({"name": "echo", "arguments": {"text": "string one"}}))).await;
    peer.send(&request(json!(2), "tools/call", json!({"name": "echo", "arguments": {"text": "two"}}))).await;
    let mut replies = Vec::new();
    for _ in 0..3 {
        replies.push(peer.recv().await);
    }
    let ids: Vec<Value> = replies.iter().map(|r| r["id"].clone()).collect();
    assert_eq!(ids.last(), Some(&json!(1)), "the slow one comes last: {ids:?}");
    for r in &replies {
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        let expected = match &r["id"] {
            Value::String(_) => "string one",
            v if v == &json!(2) => "two",
            _ => "counted to 2",
        };
        assert_eq!(text, expected);
    }
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_cancelled_request_gets_no_response_and_progress_reaches_the_clients_token() {
    let mut peer = bridge_to_example(&[]);
    ready(&mut peer).await;
    peer.send(&request(
        json!(5),
        "tools/call",
        json!({"name": "slow", "arguments": {"steps": 50, "step_ms": 100},
        "_meta": {"progressToken": "tok-5"}}),
    ))
    .await;
    let progress = peer.recv().await;
    assert_eq!(progress["method"], "notifications/progress");
    assert_eq!(progress["params"]["progressToken"], "tok-5");
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}"#).await;
    peer.send(&request(json!(6), "ping", json!({}))).await;
    loop {
        let next = peer.recv().await;
        if next["method"] == "notifications/progress" {
            continue;
        }
        assert_eq!(next["id"], 6, "request 5 got no response: {next}");
        break;
    }
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn the_257th_request_in_flight_is_refused_at_once_and_eof_ends_the_rest() {
    let mut peer = bridge_to_example(&[]);
    ready(&mut peer).await;
    let mut burst = String::new();
    for id in 0..257 {
        burst.push_str(&request(
            json!(1000 + id),
            "tools/call",
            json!({"name": "slow", "arguments": {"steps": 1, "step_ms": 20000}}),
        ));
        burst.push('\n');
    }
    peer.send_bytes(burst.as_bytes()).await;
    let reply = peer.recv().await;
    assert_eq!((reply["id"].clone(), cause(&reply)), (json!(1256), "too_many_requests"));
    peer.close_stdin();
    // The slow requests take 20 s each unless cancelled at the end of input.
    let finished = tokio::time::timeout(Duration::from_secs(8), peer.finish()).await;
    assert_eq!(finished.expect("the slow requests were cancelled at the end of input"), Some(0));
}

/// A fake upstream in Python: answers server/discover, then runs `on_call`
/// for every other request.
fn fake_upstream(on_call: &str) -> String {
    format!(
        r#"
import json, os, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "server/discover":
        print(json.dumps({{"jsonrpc": "2.0", "id": msg["id"], "result": {{"resultType": "complete",
            "supportedVersions": ["2026-07-28"], "capabilities": {{"tools": {{}}}}}}}}), flush=True)
        continue
{on_call}
"#
    )
}

#[tokio::test]
async fn losing_the_upstream_mid_request_answers_upstream_exited_and_exits_1() {
    let script = fake_upstream("    sys.exit(3)");
    let mut peer = bridge(&["--", "python3", "-u", "-c", script.as_str()]);
    ready(&mut peer).await;
    peer.send(&request(json!(2), "tools/call", json!({"name": "x"}))).await;
    let reply = peer.recv().await;
    assert_eq!(
        (reply["id"].clone(), reply["error"]["code"].clone(), cause(&reply)),
        (json!(2), json!(-32603), "upstream_exited")
    );
    let status = tokio::time::timeout(Duration::from_secs(10), peer.child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(1));
}

#[tokio::test]
async fn a_failed_discover_is_an_error_and_initialize_can_be_sent_again() {
    let refuse = r#"
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32099, "message": "not today"}}), flush=True)
"#;
    let mut peer = bridge(&["--", "python3", "-u", "-c", refuse]);
    for id in [1, 2] {
        peer.send(&initialize(id)).await;
        let reply = peer.recv().await;
        assert_eq!(
            (reply["id"].clone(), reply["error"]["code"].clone(), cause(&reply)),
            (json!(id), json!(-32099), "discover_failed")
        );
        // The bridge's fixed message; the server's own in data.detail.
        assert!(reply["error"]["message"].as_str().unwrap().contains("server/discover"), "{reply}");
        assert_eq!(reply["error"]["data"]["detail"], "not today", "{reply}");
    }
    assert_eq!(peer.finish().await, Some(0));

    let mut silent = bridge(&["--discover-timeout", "1", "--", "sleep", "30"]);
    silent.send(&initialize(1)).await;
    let reply = silent.recv().await;
    assert_eq!(
        (cause(&reply), reply["error"]["data"]["detail"]["timeout_ms"].clone()),
        ("discover_failed", json!(1000))
    );
    assert_eq!(silent.finish().await, Some(0));
}

#[tokio::test]
async fn a_command_that_cannot_start_is_spawn_failed_each_time() {
    let mut peer = bridge(&["--", "/nonexistent/server"]);
    for id in [1, 2] {
        peer.send(&initialize(id)).await;
        let reply = peer.recv().await;
        assert_eq!(cause(&reply), "spawn_failed");
        assert!(!reply.to_string().contains("nonexistent"), "the command stays out of the message: {reply}");
    }
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn no_process_is_left_behind_after_the_end_of_input() {
    let dir = std::env::temp_dir().join(format!("mcp-bridge-pg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = format!(
        "sleep 300 & echo $! > {dir}/grandchild; echo $$ > {dir}/child; exec {server}",
        dir = dir.display(),
        server = example_server().display()
    );
    let mut peer = bridge(&["--", "sh", "-c", script.as_str()]);
    ready(&mut peer).await;
    let read_pid = |name: &str| -> i32 { std::fs::read_to_string(dir.join(name)).unwrap().trim().parse().unwrap() };
    let (child, grandchild) = (read_pid("child"), read_pid("grandchild"));
    assert_eq!(peer.finish().await, Some(0));
    let gone = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
            .unwrap_or(true)
    };
    for _ in 0..200 {
        if gone(child) && gone(grandchild) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(gone(child) && gone(grandchild), "a process of the server's group survived");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_arguments_exit_2_and_help_exits_0() {
    let run = |args: &[&str]| std::process::Command::new(BRIDGE).args(args).output().unwrap();
    assert_eq!(run(&[]).status.code(), Some(2));
    assert_eq!(run(&["--profile", "emacs", "--", "x"]).status.code(), Some(2));
    assert_eq!(run(&["--log-level", "loud", "--", "x"]).status.code(), Some(2));
    let protocol = run(&["--protocol", "2024-11-05", "--", "x"]);
    assert_eq!(protocol.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&protocol.stderr).contains("use auto, 2026-07-28 or 2025-11-25"));
    let help = run(&["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("mcp.json"));
}

#[tokio::test]
async fn stderr_lines_have_the_fixed_format() {
    let child = tokio::process::Command::new(BRIDGE)
        .args(["--log-level", "debug", "--", "/nonexistent/server"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    use tokio::io::AsyncWriteExt;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{}\n", initialize(1)).as_bytes()).await.unwrap();
    // The failed initialize is answered before the end of the input: at the
    // end of the input a request still in flight is cancelled, unstarted.
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
    let mut answer = String::new();
    use tokio::io::AsyncBufReadExt;
    tokio::time::timeout(Duration::from_secs(10), stdout.read_line(&mut answer)).await.unwrap().unwrap();
    assert!(answer.contains("\"error\""), "{answer}");
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output()).await.unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.is_empty());
    for line in stderr.lines() {
        let parts: Vec<&str> = line.splitn(4, ": ").collect();
        assert_eq!(parts.len(), 4, "{line}");
        assert_eq!(parts[0], "mcp-bridge", "{line}");
        assert!(["error", "warning", "info", "debug", "trace"].contains(&parts[2]), "{line}");
    }
    assert!(stderr.contains("cannot start the MCP server"));
}

#[tokio::test]
async fn upstream_log_messages_reach_the_client_only_at_its_level() {
    let mut peer = bridge_to_example(&[]);
    ready(&mut peer).await;
    let slow = json!({"name": "slow", "arguments": {"steps": 1, "step_ms": 10}});
    peer.send(&request(json!(2), "tools/call", slow.clone())).await;
    assert_eq!(peer.recv().await["id"], 2, "no level set: no log message");
    peer.send(&request(json!(3), "logging/setLevel", json!({"level": "info"}))).await;
    assert_eq!(peer.recv().await["id"], 3);
    peer.send(&request(json!(4), "tools/call", slow.clone())).await;
    let log = peer.recv().await;
    assert_eq!(log["method"], "notifications/message", "{log}");
    assert_eq!((log["params"]["level"].clone(), log["params"]["logger"].clone()), (json!("info"), json!("slow")));
    assert_eq!(peer.recv().await["id"], 4);
    peer.send(&request(json!(5), "logging/setLevel", json!({"level": "error"}))).await;
    assert_eq!(peer.recv().await["id"], 5);
    peer.send(&request(json!(6), "tools/call", slow)).await;
    assert_eq!(peer.recv().await["id"], 6, "info is below error: no log message");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn initialize_while_initializing_is_refused_and_the_first_completes() {
    let slow_discover = fake_upstream("    pass").replace(
        "    if msg[\"method\"] == \"server/discover\":\n",
        "    if msg[\"method\"] == \"server/discover\":\n        import time; time.sleep(1)\n",
    );
    assert!(slow_discover.contains("time.sleep(1)"));
    let mut peer = bridge(&["--", "python3", "-u", "-c", slow_discover.as_str()]);
    peer.send(&initialize(1)).await;
    peer.send(&initialize(2)).await;
    let second = peer.recv().await;
    assert_eq!((second["id"].clone(), cause(&second)), (json!(2), "already_initialized"));
    peer.send(&request(json!(3), "tools/list", json!({}))).await;
    assert_eq!(cause(&peer.recv().await), "not_initialized", "still initializing");
    let first = peer.recv().await;
    assert_eq!(first["id"], 1);
    assert_eq!(first["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_server_command_whose_dashes_a_launcher_dropped_is_started() {
    // As both MCP Inspector CLIs start `mcp-bridge -- server ARGS`.
    let server = example_server();
    let mut peer = bridge(&["--log-level", "warning", server.to_str().unwrap()]);
    ready(&mut peer).await;
    peer.send(&request(json!(2), "tools/list", json!({}))).await;
    assert!(peer.recv().await["result"]["tools"].is_array());
    assert_eq!(peer.finish().await, Some(0));

    let refused = std::process::Command::new(BRIDGE).args(["no-such-program-here", "x"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("unexpected argument"), "{said}");
}

#[tokio::test]
async fn the_clients_log_level_becomes_the_bridges_own() {
    let mut command = tokio::process::Command::new(BRIDGE);
    command.args(["--log-level", "warning", "--"]).arg(example_server()).stderr(std::process::Stdio::piped());
    let mut peer = RawPeer::start(command);
    ready(&mut peer).await;
    peer.send(&request(json!(2), "tools/list", json!({}))).await;
    assert!(peer.recv().await["result"]["tools"].is_array());
    peer.send(&request(json!(3), "logging/setLevel", json!({"level": "debug"}))).await;
    assert_eq!(peer.recv().await["result"], json!({}));
    peer.send(&request(json!(4), "tools/list", json!({}))).await;
    assert!(peer.recv().await["result"]["tools"].is_array());
    let mut stderr = peer.child.stderr.take().unwrap();
    assert_eq!(peer.finish().await, Some(0));
    let mut log = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut log).await.unwrap();
    let traced: Vec<&str> = log.lines().filter(|l| l.contains(": debug: exchange: request ")).collect();
    assert_eq!(traced.len(), 1, "only the request after logging/setLevel debug is traced:\n{log}");
    assert!(traced[0].contains("exchange: request 4 "), "{log}");
}

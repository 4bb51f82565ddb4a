//! Fault injection: `mcp-bridge` in front of a scripted upstream that
//! misbehaves in one way per test, and driven by a client that misbehaves.
//! Each test checks the answer from the error table, that the bridge keeps
//! serving (or exits with the right code), that every stdout line parses
//! (the peer reads JSON only), and for the burst that every request gets
//! exactly one answer with the bridge's memory bounded.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::RawPeer;

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

/// A scripted 2026-07-28 upstream in Python: answers `server/discover`,
/// and runs `on_call` for every other request, with `msg` the request and
/// `calls` its number (1 for the first).
fn faulty(on_call: &str) -> String {
    format!(
        r#"
import json, os, sys, time
def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
def ok(msg, text="ok"):
    out({{"jsonrpc": "2.0", "id": msg["id"], "result": {{"resultType": "complete", "content": [{{"type": "text", "text": text}}]}}}})
calls = 0
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "server/discover":
        out({{"jsonrpc": "2.0", "id": msg["id"], "result": {{"resultType": "complete",
            "supportedVersions": ["2026-07-28"], "capabilities": {{"tools": {{}}}}}}}})
        continue
    calls += 1
{on_call}
"#
    )
}

fn bridge_to(script: &str) -> RawPeer {
    RawPeer::spawn(BRIDGE, &["--", "python3", "-u", "-c", script])
}

fn call(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "t", "arguments": {}}}).to_string()
}

async fn ready(peer: &mut RawPeer) {
    peer.send(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}"#,
    )
    .await;
    assert!(peer.recv().await["result"].is_object());
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
}

fn cause(reply: &Value) -> &str {
    reply["error"]["data"]["cause"].as_str().unwrap_or("")
}

/// Sends calls 1 and 2 and returns their answers by id (every line read
/// must parse: the peer panics otherwise).
async fn two_calls(peer: &mut RawPeer) -> HashMap<i64, Value> {
    peer.send(&call(1)).await;
    let first = peer.recv_response(1).await;
    peer.send(&call(2)).await;
    let second = peer.recv_response(2).await;
    HashMap::from([(1, first), (2, second)])
}

#[tokio::test]
async fn an_upstream_line_that_is_not_json_is_dropped_and_the_call_answered() {
    let mut peer = bridge_to(&faulty("    print('this is not json {', flush=True)\n    ok(msg)"));
    ready(&mut peer).await;
    let answers = two_calls(&mut peer).await;
    assert_eq!(answers[&1]["result"]["content"][0]["text"], "ok");
    assert_eq!(answers[&2]["result"]["content"][0]["text"], "ok");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_response_with_an_unknown_id_is_dropped() {
    let script = faulty(
        "    out({'jsonrpc': '2.0', 'id': 987654, 'result': {'resultType': 'complete', 'content': []}})\n    ok(msg)",
    );
    let mut peer = bridge_to(&script);
    ready(&mut peer).await;
    let answers = two_calls(&mut peer).await;
    assert!(answers.values().all(|a| a["result"]["content"][0]["text"] == "ok"));
    finish_clean(peer, 0).await;
}

#[tokio::test]
async fn a_100_mib_answer_fails_its_request_only_and_memory_stays_bounded() {
    // The first call gets a 100 MiB line (over the 64 MiB limit) that ends
    // with its id; the second a normal answer.
    let script = faulty(
        r#"    if calls == 1:
        sys.stdout.write('{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"' + 'a' * (100 * 1024 * 1024) + '"}]},"id":' + json.dumps(msg["id"]) + '}\n'); sys.stdout.flush()
    else:
        ok(msg)"#,
    );
    let mut peer = bridge_to(&script);
    ready(&mut peer).await;
    peer.send(&call(1)).await;
    let failed = tokio::time::timeout(Duration::from_secs(60), peer.recv_response(1)).await.unwrap();
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    peer.send(&call(2)).await;
    assert_eq!(peer.recv_response(2).await["result"]["content"][0]["text"], "ok");
    let rss = peak_rss_kib(peer.child.id().unwrap());
    eprintln!("bridge peak RSS after a 100 MiB upstream line: {rss} KiB");
    assert!(rss < 200 * 1024, "the bridge held more than 200 MiB: {rss} KiB");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn an_answer_201_levels_deep_fails_its_request_only() {
    let script = faulty(
        r#"    if calls == 1:
        sys.stdout.write('{"jsonrpc":"2.0","id":' + json.dumps(msg["id"]) + ',"result":{"content":' + '[' * 201 + ']' * 201 + '}}\n'); sys.stdout.flush()
    else:
        ok(msg)"#,
    );
    let mut peer = bridge_to(&script);
    ready(&mut peer).await;
    let answers = two_calls(&mut peer).await;
    assert_eq!(answers[&1]["error"]["code"], -32603, "{}", answers[&1]);
    assert_eq!(answers[&2]["result"]["content"][0]["text"], "ok");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn an_upstream_that_closes_stdout_but_runs_on_is_lost_and_stopped() {
    let script = faulty("    os.close(1)\n    time.sleep(300)");
    let mut peer = bridge_to(&script);
    ready(&mut peer).await;
    peer.send(&call(1)).await;
    let reply = peer.recv_response(1).await;
    assert_eq!(cause(&reply), "upstream_exited", "{reply}");
    let status = tokio::time::timeout(Duration::from_secs(15), peer.child.wait()).await.unwrap().unwrap();
    assert_eq!(status.code(), Some(1));
}

#[tokio::test]
async fn a_flood_of_progress_reaches_the_client_at_the_rate_limit() {
    let script = faulty(
        r#"    token = msg["params"]["_meta"].get("progressToken")
    for i in range(5000):
        out({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": i}})
    ok(msg)"#,
    );
    let mut peer = bridge_to(&script);
    ready(&mut peer).await;
    let with_token = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "t", "arguments": {}, "_meta": {"progressToken": "p"}}});
    let started = Instant::now();
    peer.send(&with_token.to_string()).await;
    let mut progress = 0;
    loop {
        let message = peer.recv().await;
        if message["id"] == 1 {
            assert_eq!(message["result"]["content"][0]["text"], "ok");
            break;
        }
        if message["method"] == "notifications/progress" {
            assert_eq!(message["params"]["progressToken"], "p");
            progress += 1;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    eprintln!("5000 upstream progress notifications: {progress} reached the client in {seconds:.2} s");
    assert!(f64::from(progress) <= 50.0 * (seconds + 1.0) + 1.0, "{progress} in {seconds} s is over 50/s");
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_hanging_call_cancelled_by_the_client_gets_no_answer_and_the_bridge_goes_on() {
    let script = faulty("    if calls == 1:\n        continue\n    ok(msg)");
    let mut peer = bridge_to(&script);
    ready(&mut peer).await;
    peer.send(&call(1)).await;
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#).await;
    // Cancels of unknown ids are ignored.
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}"#).await;
    peer.send(&call(2)).await;
    let next = peer.recv().await;
    assert_eq!(next["id"], 2, "the cancelled call got no answer: {next}");
    finish_clean(peer, 0).await;
}

#[tokio::test]
async fn garbage_between_valid_lines_is_answered_and_the_valid_lines_served() {
    let mut peer = bridge_to(&faulty("    ok(msg)"));
    ready(&mut peer).await;
    peer.send("garbage").await;
    assert_eq!(peer.recv().await["error"]["code"], -32700);
    peer.send(r#"{"jsonrpc":"2.0","id":7}"#).await;
    assert_eq!(peer.recv().await["error"]["code"], -32600);
    peer.send(&call(3)).await;
    assert_eq!(peer.recv_response(3).await["result"]["content"][0]["text"], "ok");
    // An answer to a b- request nobody asked (or already cancelled).
    peer.send(r#"{"jsonrpc":"2.0","id":"b-99","result":{"action":"accept"}}"#).await;
    peer.send(&call(4)).await;
    assert_eq!(peer.recv().await["id"], 4);
    assert_eq!(peer.finish().await, Some(0));
}

#[tokio::test]
async fn a_burst_of_10000_requests_gets_exactly_one_answer_each() {
    let mut peer = bridge_to(&faulty("    ok(msg)"));
    ready(&mut peer).await;
    let mut burst = String::new();
    for id in 1..=10_000 {
        burst.push_str(&call(id));
        burst.push('\n');
    }
    let started = Instant::now();
    // Written from another task while this one reads, as a client does.
    let mut stdin = peer.take_stdin().unwrap();
    let writer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        stdin.write_all(burst.as_bytes()).await.unwrap();
        stdin.flush().await.unwrap();
        stdin
    });
    let mut answered: HashMap<i64, usize> = HashMap::new();
    let (mut ok, mut refused) = (0, 0);
    while answered.len() < 10_000 {
        let message = peer.recv().await;
        let Some(id) = message["id"].as_i64() else { continue };
        *answered.entry(id).or_default() += 1;
        if message["result"].is_object() {
            ok += 1;
        } else {
            assert_eq!(cause(&message), "too_many_requests", "{message}");
            refused += 1;
        }
    }
    assert!(answered.values().all(|n| *n == 1), "a request was answered twice");
    peer.put_stdin(writer.await.unwrap());
    let rss = peak_rss_kib(peer.child.id().unwrap());
    eprintln!(
        "burst of 10000: {ok} served, {refused} refused at the in-flight limit, in {:.2} s; bridge peak RSS {rss} KiB",
        started.elapsed().as_secs_f64()
    );
    assert!(rss < 100 * 1024, "{rss} KiB");
    finish_clean(peer, 0).await;
}

#[tokio::test]
async fn a_client_that_never_reads_stderr_does_not_stall_the_bridge() {
    // Every exchange is a debug line: 2,000 of them are far more than a
    // pipe holds (64 KiB), and nobody reads the pipe.
    let mut command = tokio::process::Command::new(BRIDGE);
    command.args(["--log-level", "debug", "--", "python3", "-u", "-c", &faulty("    ok(msg)")]);
    command.stderr(std::process::Stdio::piped());
    let mut peer = RawPeer::start(command);
    let unread_stderr = peer.child.stderr.take();
    ready(&mut peer).await;
    for batch in 0..20 {
        let ids = batch * 100 + 1..=batch * 100 + 100;
        let lines: String = ids.clone().map(|id| call(id) + "\n").collect();
        peer.send_bytes(lines.as_bytes()).await;
        for id in ids {
            let answer = peer.recv_response(id).await;
            assert!(answer["result"].is_object(), "{answer}");
        }
    }
    finish_clean(peer, 0).await;
    drop(unread_stderr);
}

fn peak_rss_kib(pid: u32) -> u64 {
    test_support::proc_status_kib(pid, "VmHWM").unwrap_or(0)
}

/// The processes below `pid` (children, grandchildren, ...).
fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut stack = vec![pid];
    while let Some(parent) = stack.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else { continue };
        for task in tasks.flatten() {
            let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                found.push(child);
                stack.push(child);
            }
        }
    }
    found
}

fn gone(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
        .unwrap_or(true)
}

/// Ends the peer (end of input) and checks the exit code and that no
/// process it started is left.
async fn finish_clean(peer: RawPeer, code: i32) {
    let below = descendants(peer.child.id().unwrap());
    assert!(!below.is_empty(), "the bridge had started its upstream");
    assert_eq!(peer.finish().await, Some(code));
    for _ in 0..300 {
        if below.iter().all(|p| gone(*p)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let left: Vec<u32> = below.into_iter().filter(|p| !gone(*p)).collect();
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[tokio::test]
async fn a_listen_event_storm_reaches_the_client_and_the_bridge_stays_responsive() {
    // An upstream that declares tool list changes and, on the listen
    // stream, acknowledges and then sends 20000 events at once.
    let script = r#"
import json, sys
def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    m = msg["method"]
    if m == "server/discover":
        out({"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete", "supportedVersions": ["2026-07-28"],
             "capabilities": {"tools": {"listChanged": True}}}})
    elif m == "subscriptions/listen":
        tag = {"io.modelcontextprotocol/subscriptionId": msg["id"]}
        out({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"_meta": tag, "notifications": {"toolsListChanged": True}}})
        for _ in range(20000):
            out({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": tag}})
    else:
        out({"jsonrpc": "2.0", "id": msg["id"], "result": {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}})
"#;
    let mut peer = bridge_to(script);
    ready(&mut peer).await;
    let started = Instant::now();
    peer.send(&call(9)).await;
    let mut events = 0usize;
    loop {
        let message = peer.recv().await;
        if message["id"] == 9 {
            assert_eq!(message["result"]["content"][0]["text"], "ok");
            break;
        }
        if message["method"] == "notifications/tools/list_changed" {
            events += 1;
        }
    }
    let rss = peak_rss_kib(peer.child.id().unwrap());
    eprintln!(
        "listen storm of 20000 events: {events} list changes before the call's answer, {:.2} s; bridge peak RSS {rss} KiB",
        started.elapsed().as_secs_f64()
    );
    assert!(rss < 100 * 1024, "{rss} KiB");
    finish_clean(peer, 0).await;
}

#[tokio::test]
async fn cancelling_every_request_leaves_no_answer_and_no_process() {
    // The upstream answers one call at a time: 200 × 10 ms before the fresh call.
    let mut peer = bridge_to(&faulty("    time.sleep(0.01)\n    ok(msg)"));
    ready(&mut peer).await;
    for id in 1..=200 {
        peer.send(&call(id)).await;
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}});
        peer.send(&cancel.to_string()).await;
    }
    peer.send(&call(1000)).await;
    // Answers of cancelled requests never come; the fresh call is answered.
    loop {
        let message = peer.recv().await;
        let id = message["id"].as_i64();
        assert!(id.is_none() || id == Some(1000), "a cancelled request was answered: {message}");
        if id == Some(1000) {
            break;
        }
    }
    finish_clean(peer, 0).await;
}

#[tokio::test]
async fn the_end_of_input_in_the_middle_of_an_input_round_ends_cleanly() {
    let server = test_support::workspace_binary("mcp-example-server", "mcp-example-server");
    let mut peer = RawPeer::spawn(BRIDGE, &["--", server.to_str().unwrap()]);
    peer.send(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"f","version":"1"}}}"#,
    )
    .await;
    assert!(peer.recv().await["result"].is_object());
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask_name","arguments":{}}}"#).await;
    loop {
        if peer.recv().await["method"] == "elicitation/create" {
            break;
        }
    }
    // The unanswered elicitation does not hold the exit (its time limit is an hour).
    tokio::time::timeout(Duration::from_secs(5), finish_clean(peer, 0))
        .await
        .expect("the bridge exits without waiting for the elicitation's answer");
}

//! `mcp-bridge --listen`: legacy clients over Streamable HTTP, several at
//! once, each a session in front of the one upstream child.

use std::time::Duration;

use serde_json::{Value, json};
use test_support::workspace_binary;
use tokio::process::{Child, Command};

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

/// Starts `mcp-bridge --listen 127.0.0.1:0 --listen-no-auth ARGS` and
/// returns it with the endpoint URL it logs. (Access tokens and sockets:
/// `listen_access.rs`.)
async fn listening(args: &[&str]) -> (Child, String) {
    test_support::listening_bridge(BRIDGE, args).await
}

fn post(url: &str, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    test_support::legacy_http_post(url, session, body)
}

/// The JSON-RPC response in a response body (JSON, or the last SSE event).
async fn answer(response: reqwest::Response) -> Value {
    let text = response.text().await.unwrap();
    let data = text.lines().filter_map(|l| l.strip_prefix("data: ")).next_back().map(str::to_owned).unwrap_or(text);
    serde_json::from_str(&data).unwrap()
}

async fn initialize(url: &str, name: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": name, "version": "1"}}});
    let response = post(url, None, &init).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let result = answer(response).await;
    assert_eq!(result["result"]["serverInfo"]["name"], "mcp-example-server", "{result}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(url, Some(&session), &initialized).send().await.unwrap().status(), 202);
    session
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_http_clients_share_one_upstream_through_the_bridge() {
    let server = workspace_binary("mcp-example-server", "mcp-example-server");
    let (mut bridge, url) = listening(&["--", server.to_str().unwrap()]).await;
    let (first, second) = (initialize(&url, "first").await, initialize(&url, "second").await);
    assert_ne!(first, second);
    let sum = answer(post(&url, Some(&first), &call(1, "add", json!({"a": 2, "b": 3}))).send().await.unwrap()).await;
    assert_eq!(sum["result"]["structuredContent"], json!({"sum": 5}));
    // A note set through one session is read through the other: one server.
    let set = call(2, "set_note", json!({"name": "shared", "text": "one upstream"}));
    answer(post(&url, Some(&first), &set).send().await.unwrap()).await;
    let read = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "note://shared"}});
    let note = answer(post(&url, Some(&second), &read).send().await.unwrap()).await;
    assert_eq!(note["result"]["contents"][0]["text"], "one upstream", "{note}");
    // The child's log messages (asked for by the first session's call at
    // its level) belong to no request on stdio: they go to the sessions'
    // GET streams, each at its own level.
    let set_level = json!({"jsonrpc": "2.0", "id": 5, "method": "logging/setLevel", "params": {"level": "info"}});
    answer(post(&url, Some(&first), &set_level).send().await.unwrap()).await;
    let get = |session: &str| {
        reqwest::Client::new()
            .get(&url)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", session)
            .send()
    };
    let mut first_stream = get(&first).await.unwrap();
    let slow = call(6, "slow", json!({"steps": 2, "step_ms": 1}));
    answer(post(&url, Some(&first), &slow).send().await.unwrap()).await;
    let mut seen = String::new();
    let logged = tokio::time::timeout(Duration::from_secs(30), async {
        while !seen.contains("notifications/message") {
            let chunk = first_stream.chunk().await.unwrap().unwrap();
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await;
    assert!(logged.is_ok(), "no log message on the first session's GET stream: {seen}");
    assert!(seen.contains("step 1 of 2 done"), "{seen}");

    // A 2026-07-28 request on the same endpoint is forwarded to the same server.
    let modern = json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {
        "uri": "note://shared", "_meta": test_support::request_meta(json!({}))}});
    let forwarded = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "resources/read")
        .header("mcp-name", "note://shared")
        .body(modern.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(forwarded.status(), 200);
    let note = answer(forwarded).await;
    assert_eq!(note["result"]["contents"][0]["text"], "one upstream", "{note}");
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

#[tokio::test]
async fn a_listen_address_that_is_not_one_is_refused_with_exit_code_2() {
    let output = Command::new(BRIDGE).args(["--listen", "localhost", "--", "true"]).output().await.unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("--listen"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_http_client_uses_the_example_server_through_the_bridge() {
    let server = workspace_binary("mcp-example-server", "mcp-example-server");
    let (mut bridge, url) = listening(&["--", server.to_str().unwrap()]).await;
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp-example-server/tests/ts/legacy_http_client.mjs");
    let output = Command::new("node")
        .env("TS_SDK_DIR", test_support::ts_sdk_dir())
        .arg(script)
        .arg(&url)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), output).await.unwrap().unwrap();
    assert!(output.status.success(), "the TypeScript client failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(seen["server"]["name"], "mcp-example-server");
    assert_eq!(seen["sum"], "42");
    assert!(seen["logs"].as_array().unwrap().contains(&json!("step 1 of 3 done")), "{seen}");
    assert!(seen["greeting"].as_str().unwrap().contains("TypeScript"), "{seen}");
    assert_eq!(seen["updated"], json!(["note://shopping"]));
    assert!(seen["toolListChanges"].as_u64().unwrap() >= 1);
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

/// A session's `initialize` with `capabilities`; its session id.
async fn initialize_with(url: &str, capabilities: Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}});
    let response = post(url, None, &init).send().await.unwrap();
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    assert!(answer(response).await["result"]["serverInfo"].is_object());
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(url, Some(&session), &initialized).send().await.unwrap();
    session
}

/// The next JSON-RPC message of an SSE response, read as it arrives.
async fn next_event(stream: &mut reqwest::Response, buffer: &mut String) -> Value {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Some(end) = buffer.find("\n\n") {
                let event: String = buffer.drain(..end + 2).collect();
                if let Some(data) = event.lines().filter_map(|l| l.strip_prefix("data: ")).next()
                    && !data.trim().is_empty()
                {
                    return serde_json::from_str(data).unwrap();
                }
                continue;
            }
            let chunk = stream.chunk().await.unwrap().unwrap_or_else(|| panic!("the stream ended: {buffer}"));
            buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .expect("no event in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_legacy_upstreams_requests_reach_the_session_they_are_for() {
    let (_server, upstream) = test_support::ts_legacy_http_server().await;
    let (mut bridge, url) = listening(&[&upstream]).await;
    let asking = initialize_with(&url, json!({"elicitation": {"form": {}}})).await;
    let other = initialize_with(&url, json!({})).await;

    // The upstream's elicitation comes on the call's stream of the session
    // that called; its answer goes back through that session.
    let mut stream = post(&url, Some(&asking), &call(1, "ask", json!({}))).send().await.unwrap();
    let mut buffer = String::new();
    let asked = next_event(&mut stream, &mut buffer).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let reply =
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    assert_eq!(post(&url, Some(&asking), &reply).send().await.unwrap().status(), 202);
    let done = loop {
        let message = next_event(&mut stream, &mut buffer).await;
        if message["id"] == 1 {
            break message;
        }
    };
    assert_eq!(done["result"]["content"][0]["text"], "accept: Ada", "{done}");

    // A session that declared no elicitation is not asked: the upstream hears a refusal.
    let refused = answer(post(&url, Some(&other), &call(2, "ask", json!({}))).send().await.unwrap()).await;
    let text = refused.to_string();
    assert!(refused["result"]["isError"] == true || refused["error"].is_object(), "{text}");
    assert!(!text.contains("Ada"), "{text}");
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

/// `--listen` with `--config`: many HTTP clients, many servers. A
/// 2025-11-25 server at a URL asks on the stream of the call it is for, so
/// its request reaches the session that called, and only that one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_http_clients_use_many_servers_and_each_is_asked_only_about_its_own_calls() {
    let (_legacy, legacy_url) = test_support::ts_legacy_http_server().await;
    let dir = test_support::ScratchDir::new("listen-gateway");
    let file = dir.join("mcp.json");
    let config = json!({"servers": {
        "notes": {"command": workspace_binary("mcp-example-server", "mcp-example-server")},
        "legacy": {"url": legacy_url}
    }});
    std::fs::write(&file, config.to_string()).unwrap();
    let (mut bridge, url) = listening(&["--config", file.to_str().unwrap()]).await;
    let asking = initialize_with(&url, json!({"elicitation": {"form": {}}})).await;
    let other = initialize_with(&url, json!({})).await;

    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let listed = answer(post(&url, Some(&other), &list).send().await.unwrap()).await;
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"notes__add") && names.contains(&"legacy__ask"), "{names:?}");

    // The legacy server's elicitation reaches the session that called,
    // while the other session's call to another server goes on.
    let mut stream = post(&url, Some(&asking), &call(2, "legacy__ask", json!({}))).send().await.unwrap();
    let mut buffer = String::new();
    let asked = next_event(&mut stream, &mut buffer).await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let sum =
        answer(post(&url, Some(&other), &call(3, "notes__add", json!({"a": 2, "b": 3}))).send().await.unwrap()).await;
    assert_eq!(sum["result"]["structuredContent"], json!({"sum": 5}), "{sum}");
    let reply =
        json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada"}}});
    assert_eq!(post(&url, Some(&asking), &reply).send().await.unwrap().status(), 202);
    let done = loop {
        let message = next_event(&mut stream, &mut buffer).await;
        if message["id"] == 2 {
            break message;
        }
    };
    assert_eq!(done["result"]["content"][0]["text"], "accept: Ada", "{done}");

    // The session that declared no elicitation is not asked.
    let refused = answer(post(&url, Some(&other), &call(4, "legacy__ask", json!({}))).send().await.unwrap()).await;
    let text = refused.to_string();
    assert_eq!(refused["result"]["isError"], true, "{text}");
    assert!(text.contains("the client did not declare elicitation.form"), "{text}");
    assert!(!text.contains("Ada"), "{text}");
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

/// Calls another client makes during a flood.
const OTHER_CALLS: usize = 50;

/// `mcp-bridge --listen` with a low cap in front of the example server: one
/// client (127.0.0.2) holding connections that never finish their head does
/// not keep another (127.0.0.3) out. Its figures: `--nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_finish_their_head_do_not_lock_other_clients_out_of_the_bridge() {
    let server = workspace_binary("mcp-example-server", "mcp-example-server");
    let (_bridge, url) = listening(&["--max-connections", "64", "--", server.to_str().unwrap()]).await;
    let addr = url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();
    let flooding = test_support::hostile::flood_unfinished_heads(addr, 200).await;
    let figures = test_support::hostile::other_legacy_client_calls(&url, OTHER_CALLS).await;
    flooding.abort();
    test_support::hostile::report("never-finished heads at mcp-bridge --listen", OTHER_CALLS, figures);
}

/// One client opening more 2025-11-25 sessions than the bridge keeps (1,000)
/// does not keep another out: the flood's idlest sessions give way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_opening_every_session_of_the_bridge_does_not_lock_others_out() {
    let server = workspace_binary("mcp-example-server", "mcp-example-server");
    let (_bridge, url) = listening(&["--", server.to_str().unwrap()]).await;
    let started = std::time::Instant::now();
    let opened = test_support::hostile::flood_sessions(&url, 1_100).await;
    eprintln!("session flood at mcp-bridge --listen: {opened}/1100 initialize answered 200 in {:?}", started.elapsed());
    let figures = test_support::hostile::other_legacy_client_calls(&url, OTHER_CALLS).await;
    test_support::hostile::report("after a session flood at mcp-bridge --listen", OTHER_CALLS, figures);
}

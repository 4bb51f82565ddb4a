//! End to end with a real legacy client: the TypeScript SDK 1.x (what VS
//! Code-era clients are built on) drives `mcp-bridge` in front of the
//! example server, a Python `mcp` 2.x server, and server-everything (a
//! 2025-11-25 server) in each of its modes: stdio, Streamable HTTP and the
//! HTTP+SSE transport of 2024-11-05.

use std::path::Path;

use serde_json::{Value, json};
use test_support::{python_peer, ts_sdk_dir, workspace_binary};

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

fn run_ts_client(mode: &str, server: &[&str]) -> Value {
    let mut bridge_args = vec!["--"];
    bridge_args.extend(server);
    run_ts_client_with(mode, &bridge_args)
}

/// The TypeScript client in `mode`, starting the bridge with `bridge_args`.
fn run_ts_client_with(mode: &str, bridge_args: &[&str]) -> Value {
    run_ts_client_in(mode, bridge_args, &[])
}

/// [`run_ts_client_with`], the client's environment with `env` too.
fn run_ts_client_in(mode: &str, bridge_args: &[&str], env: &[(&str, &str)]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ts/legacy_client.mjs");
    let output = std::process::Command::new("node")
        .env("TS_SDK_DIR", ts_sdk_dir())
        .env("MCP_BRIDGE_ERA_CACHE", "off")
        .envs(env.iter().copied())
        .arg(script)
        .arg(mode)
        .arg(BRIDGE)
        .args(bridge_args)
        .output()
        .expect("node is on the PATH");
    assert!(output.status.success(), "the TypeScript client failed:\n{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_typescript_client_uses_the_example_server_through_the_bridge() {
    let server = workspace_binary("mcp-example-server", "mcp-example-server");
    let seen = run_ts_client("example", &[server.to_str().unwrap()]);
    assert_eq!(seen["server"]["name"], "mcp-example-server");
    assert!(seen["tools"].as_array().unwrap().contains(&json!("slow")));
    assert_eq!(seen["sum"], "42");
    assert_eq!(seen["sumStructured"], json!({"sum": 42}));
    assert_eq!(seen["slow"], "counted to 3");
    // The TypeScript SDK runs notification handlers a microtask later than
    // it settles a response, so progress that arrives with the result can
    // miss the (already removed) handler: the earlier steps must be there.
    let progress = seen["progress"].as_array().unwrap();
    assert!(!progress.is_empty() && [json!(1), json!(2), json!(3)].starts_with(progress), "{progress:?}");
    assert_eq!(seen["cancelled"], true);
    assert_eq!(seen["afterCancel"], "still here");
    assert_eq!(seen["prompt"], "Please write a formal greeting for Ada.");
    assert_eq!(seen["resources"], json!(test_support::EXAMPLE_SERVER_RESOURCES));
    assert_eq!(seen["templates"], json!(["note://{name}"]));
    assert_eq!(seen["logoMime"], "image/png");
    assert_eq!(seen["completion"], json!(["shopping"]));
}

#[test]
fn the_typescript_client_uses_a_python_server_through_the_bridge() {
    let python = python_peer();
    let server = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp-example-server/tests/python/python_server.py");
    let seen = run_ts_client("python", &[python.to_str().unwrap(), server.to_str().unwrap()]);
    assert_eq!(seen["server"]["name"], "python-peer");
    assert_eq!(seen["tools"], json!(["add", "greet", "shout"]));
    assert_eq!(seen["sum"], "42");
    assert_eq!(seen["shout"], "BRIDGE");
}

#[test]
fn the_typescript_clients_handlers_answer_elicitation_and_sampling_through_the_bridge() {
    let server = workspace_binary("mcp-example-server", "mcp-example-server");
    let seen = run_ts_client("input", &[server.to_str().unwrap()]);
    assert_eq!(seen["elicitMessage"], "What is your name?");
    assert_eq!(seen["hello"], "Hello, TypeScript!");
    assert_eq!(seen["samplingPrompt"], "Summarize in one sentence: a long story");
    assert_eq!(seen["summary"], "Summary by ts-model: it is short");
}

#[test]
fn the_typescript_client_gets_resource_updates_and_list_changes_through_the_bridge() {
    let server = workspace_binary("mcp-example-server", "mcp-example-server");
    let seen = run_ts_client("notify", &[server.to_str().unwrap()]);
    assert_eq!(seen["capabilities"]["resources"], json!({"listChanged": true, "subscribe": true}));
    assert_eq!(seen["updated"], "note://shopping");
    assert_eq!(seen["toolsChanged"], true);
    assert_eq!(seen["toolsAfter"], true);
}

#[tokio::test]
async fn the_typescript_client_uses_a_python_server_on_http_sse_through_the_bridge() {
    let (_server, url) = test_support::python_sse_server().await;
    let seen = tokio::task::spawn_blocking(move || run_ts_client_with("python", &[&url])).await.unwrap();
    assert_eq!(seen["server"]["name"], "python-peer");
    assert_eq!(seen["tools"], json!(["add", "greet", "shout"]));
    assert_eq!(seen["sum"], "42");
    assert_eq!(seen["shout"], "BRIDGE");
}

#[tokio::test]
async fn the_typescript_client_uses_server_everything_in_every_mode_through_the_bridge() {
    let script = test_support::server_everything();
    for mode in ["stdio", "streamableHttp", "sse"] {
        let (_server, seen) = if mode == "stdio" {
            (None, run_ts_client("everything", &["node", script.to_str().unwrap(), "stdio"]))
        } else {
            let (server, url) = test_support::server_everything_http(mode).await;
            let url2 = url.clone();
            let seen = tokio::task::spawn_blocking(move || run_ts_client_with("everything", &[&url2])).await.unwrap();
            (Some(server), seen)
        };
        assert_eq!(seen["server"]["name"], "mcp-servers/everything", "{mode}: the server's own initialize result");
        assert_eq!(seen["echo"], "Echo: hi", "{mode}");
        assert!(seen["elicited"].as_str().unwrap().contains("TypeScript"), "{mode}: {}", seen["elicited"]);
        assert!(seen["sampled"].as_str().unwrap().contains("it is short"), "{mode}: {}", seen["sampled"]);
        assert!(seen["samplingPrompt"].as_str().unwrap().contains("how long?"), "{mode}: {}", seen["samplingPrompt"]);
        let progress = seen["progress"].as_array().unwrap();
        assert!(!progress.is_empty(), "{mode}: no progress");
        assert_eq!(seen["updated"], "demo://resource/dynamic/text/1", "{mode}");
        assert_eq!(seen["cancelled"], true, "{mode}");
        assert_eq!(seen["afterCancel"], "Echo: after", "{mode}");
    }
}

/// `mcp-bridge --config` (a Claude Desktop file) in front of three servers
/// of three SDKs, each era's input requests, a server killed mid-session.
#[test]
fn the_typescript_client_uses_three_servers_as_one_through_a_configuration_file() {
    let dir = std::env::temp_dir().join(format!("mcp-ts-gateway-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mark = format!("ts-gateway-{}", std::process::id());
    let python_server =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../mcp-example-server/tests/python/python_server.py");
    let config = json!({"mcpServers": {
        "notes": {"command": workspace_binary("mcp-example-server", "mcp-example-server"), "env": {"TS_GATEWAY": mark}},
        "everything": {"command": "node", "args": [test_support::server_everything(), "stdio"]},
        "python": {"command": python_peer(), "args": [python_server]}
    }});
    let file = dir.join("claude_desktop_config.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let marker = format!("TS_GATEWAY={mark}");
    let seen = run_ts_client_in("gateway", &["--config", file.to_str().unwrap()], &[("GATEWAY_MARK", &marker)]);

    assert_eq!(seen["server"]["name"], "mcp-bridge");
    assert_eq!(seen["sum"], "42");
    assert_eq!(seen["pySum"], "42");
    assert!(seen["echo"].as_str().unwrap().contains("hi"), "{}", seen["echo"]);
    assert_eq!(seen["greeted"], "Hello, TypeScript!");
    assert!(seen["elicited"].as_str().unwrap().contains("TypeScript"), "{}", seen["elicited"]);
    assert!(seen["sampled"].as_str().unwrap().contains("it is short"), "{}", seen["sampled"]);
    assert!(seen["hello"].as_str().unwrap().contains("TypeScript"), "{}", seen["hello"]);
    assert!(seen["elicitMessages"].as_array().unwrap().contains(&json!("Who is there?")), "{seen}");
    assert!(!seen["progress"].as_array().unwrap().is_empty(), "no progress passed on: {seen}");
    assert!(seen["prompts"].as_array().unwrap().contains(&json!("notes__greet")), "{}", seen["prompts"]);
    assert_eq!(seen["prompt"], "Please write a formal greeting for Ada.");
    assert!(seen["resources"].as_array().unwrap().contains(&json!("example://readme")), "{}", seen["resources"]);
    assert!(seen["readme"].as_str().is_some_and(|t| !t.is_empty()));
    assert_eq!(seen["marked"], 1, "one notes server");
    let after: Vec<&str> = seen["afterKill"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(after.contains(&"python__add") && after.contains(&"everything__echo"), "{after:?}");
    assert_eq!(seen["stillPy"], "2");
    let _ = std::fs::remove_dir_all(&dir);
}

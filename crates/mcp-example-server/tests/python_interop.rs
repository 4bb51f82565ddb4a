//! Interoperability with the Python `mcp` 2.x SDK, talking 2026-07-28 on
//! stdio, in both directions. A tap records every line; every message our
//! side writes is validated against the official schema.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use mcp_bridge_protocol::types::ContentBlock;
use mcp_bridge_sdk::transport::stdio::{StdioCommand, spawn};
use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions};
use serde_json::{Value, json};
use test_support::{Schema, python_peer, result_response_definition};

const SERVER: &str = env!("CARGO_BIN_EXE_mcp-example-server");

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python").join(name)
}

fn log_path(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-interop-{name}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// The recorded lines: (true when the tapped program received it, message).
fn read_tap(path: &Path) -> Vec<(bool, Value)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let (dir, json) = line.split_at(2);
            (dir == "> ", serde_json::from_str(json).unwrap_or_else(|e| panic!("not JSON ({e}): {json}")))
        })
        .collect()
}

/// Validates what one side wrote: requests and notifications of a client,
/// or responses and notifications of a server (responses by the method of
/// the request they answer). Returns how many messages were checked.
fn validate_side(tap: &[(bool, Value)], ours_is_input: bool, schema: &Schema) -> usize {
    let methods: HashMap<String, String> = tap
        .iter()
        .filter(|(input, m)| *input != ours_is_input && m.get("method").is_some() && m.get("id").is_some())
        .map(|(_, m)| (m["id"].to_string(), m["method"].as_str().unwrap().to_owned()))
        .collect();
    let mut failures = Vec::new();
    let mut checked = 0;
    for (_, message) in tap.iter().filter(|(input, _)| *input == ours_is_input) {
        let definition = match (message.get("method"), message.get("id"), message.get("error")) {
            (Some(_), Some(_), _) => "ClientRequest",
            (Some(_), None, _) if ours_is_input => "ClientNotification",
            (Some(_), None, _) => "ServerNotification",
            (None, _, Some(_)) => "JSONRPCErrorResponse",
            (None, Some(id), None) => {
                let method = methods.get(&id.to_string()).map(String::as_str).unwrap_or("?");
                result_response_definition(method).unwrap_or("JSONRPCResultResponse")
            }
            _ => "JSONRPCMessage",
        };
        checked += 1;
        let errors = schema.errors(definition, message);
        if !errors.is_empty() {
            failures.push(format!("{definition}: {message}\n  {}", errors.join("\n  ")));
        }
    }
    assert!(failures.is_empty(), "messages that break the schema:\n{}", failures.join("\n"));
    checked
}

#[test]
fn the_python_client_uses_our_example_server() {
    let python = python_peer();
    let log = log_path("server");
    let output = std::process::Command::new(&python)
        .arg(script("python_client.py"))
        .arg("--listen")
        .arg(&python)
        .arg(script("tap.py"))
        .arg(&log)
        .arg("--")
        .arg(SERVER)
        .output()
        .unwrap();
    assert!(output.status.success(), "python client failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(seen["protocol_version"], "2026-07-28", "the client stayed modern after server/discover");
    assert_eq!(seen["server_name"], "mcp-example-server");
    assert!(seen["tools"].as_array().unwrap().contains(&json!("ask_name")));
    assert_eq!(seen["add_text"], "42");
    assert_eq!(seen["add_structured"], json!({"sum": 42}));
    assert_eq!(seen["ask_name"], "Hello, Python!", "the elicitation round went through the Python callback");
    assert_eq!(seen["prompt"], "Please write a formal greeting for Ada.");
    assert!(seen["readme"].as_str().unwrap().starts_with("# mcp-example-server"));
    assert_eq!(seen["note"], "milk, bread");
    assert_eq!(seen["updated"], "note://shopping", "the listen stream carried the update");
    assert_eq!(seen["note_after"], "eggs");

    let tap = read_tap(&log);
    let methods: Vec<&str> = tap.iter().filter(|(i, _)| *i).filter_map(|(_, m)| m["method"].as_str()).collect();
    assert_eq!(methods.first(), Some(&"server/discover"));
    assert!(tap.iter().any(|(i, m)| !*i && m["result"]["resultType"] == "input_required"));
    let checked = validate_side(&tap, false, &Schema::load("2026-07-28"));
    assert!(checked >= 8, "only {checked} messages checked");
    let _ = std::fs::remove_file(&log);
}

#[tokio::test]
async fn our_client_uses_a_python_server() {
    let python = python_peer();
    let log = log_path("client");
    let command = StdioCommand::new(&python).args([
        script("tap.py").into_os_string(),
        log.clone().into_os_string(),
        "--".into(),
        python.clone().into_os_string(),
        script("python_server.py").into_os_string(),
    ]);
    let client = Client::new(ClientOptions::new("mcp-sdk-interop", "0.1"), spawn(command).unwrap());
    let o = RequestOptions::default();
    let discover = client.discover(&o).await.unwrap();
    assert_eq!(discover.meta.unwrap().server_info.unwrap().name, "python-peer");
    let tools = client.list_all_tools(&o).await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["add", "shout", "greet"]);
    let diagnostics = std::sync::Arc::new(std::sync::Mutex::new(Default::default()));
    let options = RequestOptions::default().with_diagnostics(diagnostics.clone());
    let sum = client.call_tool("add", json!({"a": 40, "b": 2}), &options).await.unwrap();
    assert!(matches!(&sum.content[0], ContentBlock::Text(t) if t.text == "42"));
    assert_eq!(sum.structured_content, Some(json!({"result": 42})));
    let diagnostics: mcp_bridge_sdk::client::Diagnostics = diagnostics.lock().unwrap().clone();
    assert!(!diagnostics.structured_content_invalid, "matches the Python tool's output schema");
    let shout = client.call_tool("shout", json!({"text": "hi"}), &o).await.unwrap();
    assert!(matches!(&shout.content[0], ContentBlock::Text(t) if t.text == "HI"));
    // Python reports an unknown tool as a tool error, not a protocol error.
    let unknown = client.call_tool("nope", json!({}), &o).await;
    assert!(unknown.map(|r| r.is_error == Some(true)).unwrap_or(true));
    client.close().await;

    let tap = read_tap(&log);
    let checked = validate_side(&tap, true, &Schema::load("2026-07-28"));
    assert!(checked >= 5, "only {checked} messages checked");
    let _ = std::fs::remove_file(&log);
}

#[tokio::test]
async fn our_client_caches_the_lists_a_python_server_gives_a_lifetime() {
    let python = python_peer();
    let log = log_path("cache");
    let command = StdioCommand::new(&python)
        .args([
            script("tap.py").into_os_string(),
            log.clone().into_os_string(),
            "--".into(),
            python.clone().into_os_string(),
            script("python_server.py").into_os_string(),
        ])
        .env("PY_CACHE_TTL_MS", "60000");
    let options = ClientOptions::new("mcp-sdk-interop", "0.1")
        .with_cache(mcp_bridge_sdk::client::CacheOptions::default().with_enabled(true));
    let client = Client::new(options, spawn(command).unwrap());
    let diagnostics = std::sync::Arc::new(std::sync::Mutex::new(mcp_bridge_sdk::client::Diagnostics::default()));
    let o = RequestOptions::default().with_diagnostics(diagnostics.clone());
    let first = client.list_tools(None, &o).await.unwrap();
    assert_eq!((first.ttl_ms, first.cache_scope), (Some(60000), Some(mcp_bridge_protocol::types::CacheScope::Public)));
    assert!(!diagnostics.lock().unwrap().from_cache);
    let second = client.list_tools(None, &o).await.unwrap();
    assert!(diagnostics.lock().unwrap().from_cache);
    assert_eq!(second.tools.len(), first.tools.len());
    // Discovery has no hint from this server: it is asked each time.
    client.discover(&o).await.unwrap();
    client.discover(&o).await.unwrap();
    client.close().await;
    let asked =
        |method: &str| read_tap(&log).iter().filter(|(to_server, m)| *to_server && m["method"] == method).count();
    // server/discover: the client's era probe before its first request, then the two asked.
    assert_eq!((asked("tools/list"), asked("server/discover")), (1, 3));
    let _ = std::fs::remove_file(&log);
}

#[tokio::test]
async fn our_client_speaks_2025_11_25_to_the_python_server_in_its_legacy_modes() {
    let python = python_peer();
    // On stdio, opened with `initialize`: the Python server's legacy loop.
    let command = StdioCommand::new(&python).args([script("python_server.py").into_os_string()]);
    let mut options = ClientOptions::new("mcp-sdk-legacy", "0.1");
    options.era = mcp_bridge_sdk::client::Era::Legacy;
    let client = Client::new(options, spawn(command).unwrap());
    let o = RequestOptions::default();
    let sum = client.call_tool("add", json!({"a": 40, "b": 2}), &o).await.unwrap();
    assert!(matches!(&sum.content[0], ContentBlock::Text(t) if t.text == "42"));
    let spoken = client.spoken().unwrap();
    assert!(spoken.is_legacy() && spoken.protocol_version() == "2025-11-25", "{spoken:?}");
    client.close().await;

    // On its HTTP+SSE transport, found by the default negotiation.
    let (_server, url) = test_support::python_sse_server().await;
    let transport =
        mcp_bridge_sdk::transport::http::connect(mcp_bridge_sdk::transport::http::HttpConfig::new(&url)).unwrap();
    let client = Client::new(ClientOptions::new("mcp-sdk-legacy", "0.1"), transport);
    let tools = client.list_all_tools(&o).await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["add", "shout", "greet"]);
    let shout = client.call_tool("shout", json!({"text": "sse"}), &o).await.unwrap();
    assert!(matches!(&shout.content[0], ContentBlock::Text(t) if t.text == "SSE"));
    assert!(client.spoken().is_some_and(|s| s.is_legacy()));
    client.close().await;
}

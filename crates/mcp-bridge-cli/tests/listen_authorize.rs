//! `mcp-bridge --listen --config FILE --listen-auth-issuer URL`: the
//! gateway as an OAuth protected resource of a real authorization server
//! (oidc-provider), a server's `"authorize"` rules choosing by the token's
//! scopes which tools each caller sees and may call, for 2025-11-25
//! sessions and 2026-07-28 requests alike.

use std::sync::Arc;

use mcp_bridge_protocol::types::ContentBlock;
use mcp_bridge_sdk::client::Era;
use mcp_bridge_sdk::transport::http::{BearerToken, HttpConfig, connect};
use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions};
use serde_json::{Value, json};
use test_support::oidc::{INTROSPECTION_CLIENT, OidcProvider, SERVICE_CLIENT, TokenFormat};
use test_support::{ScratchDir, bridge_on_loopback, workspace_binary};

/// A second caller of the authorization server: another subject.
const WRITER: (&str, &str) = ("writer", "writer-secret");

fn client(url: &str, era: Era, token: &str) -> Client {
    let config = HttpConfig::new(url).with_auth(Arc::new(BearerToken::new(token)));
    Client::new(ClientOptions::new("authorize-test", "1").with_era(era), connect(config).unwrap())
}

async fn tool_names(client: &Client) -> Vec<String> {
    let tools = client.list_all_tools(&RequestOptions::default()).await.unwrap();
    tools.into_iter().map(|t| t.name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caller_sees_and_calls_the_tools_its_scopes_allow_in_both_eras() {
    callers_see_what_their_scopes_allow(TokenFormat::Jwt).await;
}

/// Opaque tokens, checked by introspection: the introspection client's
/// variables are the bridge's alone, no server it starts inherits them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opaque_tokens_are_introspected_and_the_client_secret_stays_with_the_bridge() {
    callers_see_what_their_scopes_allow(TokenFormat::Opaque).await;
}

/// The environment of the processes whose environment holds `marker`.
fn environments_marked(marker: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let variables: Vec<String> =
            environ.split(|b| *b == 0).map(|v| String::from_utf8_lossy(v).into_owned()).collect();
        if variables.iter().any(|v| v == marker) {
            found.push(variables);
        }
    }
    found
}

async fn callers_see_what_their_scopes_allow(format: TokenFormat) {
    let writer = json!({"client_id": WRITER.0, "client_secret": WRITER.1,
        "grant_types": ["client_credentials"], "response_types": [], "redirect_uris": []});
    let provider = OidcProvider::start_with_clients(format, vec![writer]).await;
    let dir = ScratchDir::new("listen-authorize");
    let file = dir.path().join("config.json");
    let example = workspace_binary("mcp-example-server", "mcp-example-server");
    let mark = format!("authorize-{}-{format:?}", std::process::id());
    let config = json!({"mcpServers": {"notes": {"command": example, "env": {"AUTHORIZE_TEST_MARK": mark},
        "authorize": {"add": ["notes:write"]}}}});
    std::fs::write(&file, config.to_string()).unwrap();
    let mut args = vec!["--config", file.to_str().unwrap(), "--listen-auth-issuer", &provider.issuer];
    let mut command = tokio::process::Command::new(workspace_binary("mcp-bridge-cli", "mcp-bridge"));
    if format == TokenFormat::Opaque {
        command.env("MCP_BRIDGE_INTROSPECTION_CLIENT_ID", INTROSPECTION_CLIENT.0);
        command.env("MCP_BRIDGE_INTROSPECTION_CLIENT_SECRET", INTROSPECTION_CLIENT.1);
        args.push("--listen-auth-introspection");
    }
    let (mut bridge, url) = bridge_on_loopback(command, &args).await;

    // The endpoint's metadata names its issuer and the scopes of the rules.
    let metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    let metadata: Value = reqwest::get(&metadata_url).await.unwrap().json().await.unwrap();
    assert_eq!((&metadata["resource"], &metadata["authorization_servers"][0]), (&json!(url), &json!(provider.issuer)));
    assert_eq!(metadata["scopes_supported"], json!(["notes:write"]));

    let reader_token = provider.client_token(SERVICE_CLIENT, &url, "notes:read").await;
    let writer_token = provider.client_token(WRITER, &url, "notes:read notes:write").await;
    let o = RequestOptions::default();
    for era in [Era::Legacy, Era::Modern] {
        let reader = client(&url, era, &reader_token);
        let names = tool_names(&reader).await;
        assert!(names.iter().any(|n| n == "notes__echo"), "{era:?}: {names:?}");
        assert!(!names.iter().any(|n| n == "notes__add"), "{era:?}: the reader does not see add: {names:?}");
        let refused = reader.call_tool("notes__add", json!({"a": 2, "b": 3}), &o).await;
        assert!(refused.is_err(), "{era:?}: the reader may not call add: {refused:?}");
        let echoed = reader.call_tool("notes__echo", json!({"text": "hi"}), &o).await.unwrap();
        assert!(matches!(&echoed.content[0], ContentBlock::Text(t) if t.text == "hi"), "{echoed:?}");

        let writer = client(&url, era, &writer_token);
        assert!(tool_names(&writer).await.iter().any(|n| n == "notes__add"), "{era:?}");
        let sum = writer.call_tool("notes__add", json!({"a": 2, "b": 3}), &o).await.unwrap();
        assert_eq!(sum.structured_content, Some(json!({"sum": 5})), "{era:?}");
    }

    // Without a token, or with the access token scheme of an open endpoint: 401.
    let status = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).to_string())
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 401);
    // Progressive discovery, by a reload: search_tools shows the reader
    // nothing it may not call, and call_tool calls nothing it may not.
    let progressive = json!({"discovery": "progressive", "mcpServers": config["mcpServers"]});
    let saved = dir.path().join("config.json.tmp");
    std::fs::write(&saved, progressive.to_string()).unwrap();
    std::fs::rename(&saved, &file).unwrap();
    let reader = client(&url, Era::Modern, &reader_token);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while !tool_names(&reader).await.iter().any(|n| n == "search_tools") {
        assert!(tokio::time::Instant::now() < deadline, "the reload never applied");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let found = reader.call_tool("search_tools", json!({"query": "add numbers"}), &o).await.unwrap();
    let found = found.structured_content.unwrap_or_default().to_string();
    assert!(!found.contains("notes__add"), "{found}");
    let refused = reader.call_tool("call_tool", json!({"name": "notes__add", "arguments": {"a": 1, "b": 1}}), &o).await;
    assert!(refused.is_err(), "{refused:?}");
    let writer = client(&url, Era::Modern, &writer_token);
    let sum = writer.call_tool("call_tool", json!({"name": "notes__add", "arguments": {"a": 1, "b": 1}}), &o).await;
    assert_eq!(sum.unwrap().structured_content, Some(json!({"sum": 2})));

    let servers = environments_marked(&format!("AUTHORIZE_TEST_MARK={mark}"));
    assert_eq!(servers.len(), 1, "one notes server");
    assert!(!servers[0].iter().any(|v| v.starts_with("MCP_BRIDGE_INTROSPECTION_")), "{:?}", servers[0]);
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

/// In front of one server, a task a subject started through the bridge is
/// that subject's: another subject's `tasks/get` and `tasks/cancel` find
/// no such task (the server behind knows no subjects).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_task_is_reachable_by_the_subject_that_started_it_only() {
    use mcp_bridge_protocol::types::TaskStatus;
    use mcp_bridge_sdk::client::ToolOutcome;
    let other = json!({"client_id": WRITER.0, "client_secret": WRITER.1,
        "grant_types": ["client_credentials"], "response_types": [], "redirect_uris": []});
    let provider = OidcProvider::start_with_clients(TokenFormat::Jwt, vec![other]).await;
    let example = workspace_binary("mcp-example-server", "mcp-example-server");
    let example = example.to_str().unwrap();
    let args = ["--listen-auth-issuer", &provider.issuer, "--", example];
    let bridge_binary = tokio::process::Command::new(workspace_binary("mcp-bridge-cli", "mcp-bridge"));
    let (mut bridge, url) = bridge_on_loopback(bridge_binary, &args).await;
    let with_tasks = |token: &str| {
        let mut options = ClientOptions::new("tasks", "1").with_era(Era::Modern);
        options.capabilities =
            serde_json::from_value(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})).unwrap();
        let config = HttpConfig::new(&url).with_auth(Arc::new(BearerToken::new(token)));
        Client::new(options, connect(config).unwrap())
    };
    let alice = with_tasks(&provider.client_token(SERVICE_CLIENT, &url, "notes:read").await);
    let bob = with_tasks(&provider.client_token(WRITER, &url, "notes:read").await);
    let o = RequestOptions::default();
    let started = alice.call_tool_or_task("long_job", json!({"seconds": 60}), &o).await.unwrap();
    let ToolOutcome::Task(task) = started else { panic!("a task was expected: {started:?}") };
    assert_eq!(alice.get_task(&task.task_id, &o).await.unwrap().status, TaskStatus::Working);
    let stolen = bob.get_task(&task.task_id, &o).await.unwrap_err();
    assert!(stolen.to_string().contains("Task not found"), "{stolen}");
    assert!(bob.cancel_task(&task.task_id, &o).await.is_err());
    assert_eq!(alice.get_task(&task.task_id, &o).await.unwrap().status, TaskStatus::Working, "not cancelled");
    alice.cancel_task(&task.task_id, &o).await.unwrap();
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

//! `"sharing": "per-session"` through `mcp-bridge --listen --config`: each
//! 2025-11-25 session gets an instance of its own of such a server (its own
//! process), every 2026-07-28 request of one caller the caller's, while a
//! shared server is one process for all; `/readyz` counts the instances;
//! a reload that makes the server shared ends them.

use std::time::Duration;

use mcp_bridge_protocol::types::ContentBlock;
use mcp_bridge_sdk::client::Era;
use mcp_bridge_sdk::transport::http::{HttpConfig, connect};
use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions};
use serde_json::{Value, json};
use test_support::{ScratchDir, listening_bridge, python_tool_server};

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

fn config(own_sharing: &str) -> Value {
    // Its tool `pid` answers with the process id of the instance.
    let script = python_tool_server(&["pid"], "str(os.getpid())", "False");
    let server = json!({"command": "python3", "args": ["-c", script]});
    let mut own = server.clone();
    own["sharing"] = json!(own_sharing);
    json!({"mcpServers": {"shared": server, "own": own}})
}

fn client(url: &str, era: Era) -> Client {
    Client::new(ClientOptions::new("sharing-test", "1").with_era(era), connect(HttpConfig::new(url)).unwrap())
}

async fn pid(client: &Client, tool: &str) -> u32 {
    let result = client.call_tool(tool, json!({}), &RequestOptions::default()).await.unwrap();
    let ContentBlock::Text(text) = &result.content[0] else { panic!("{result:?}") };
    text.text.parse().unwrap()
}

async fn instances(base: &str) -> Value {
    let ready: Value = reqwest::get(format!("{base}/readyz")).await.unwrap().json().await.unwrap();
    let servers = ready["servers"].as_array().unwrap();
    servers.iter().find(|s| s["name"] == "own").map(|s| s["instances"].clone()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_session_server_runs_once_for_each_session_and_a_shared_one_once() {
    let dir = ScratchDir::new("gateway-sharing");
    let file = dir.path().join("config.json");
    std::fs::write(&file, config("per-session").to_string()).unwrap();
    let (mut bridge, url) = listening_bridge(BRIDGE, &["--config", file.to_str().unwrap()]).await;
    let base = url.trim_end_matches("/mcp").to_owned();

    let (first, second) = (client(&url, Era::Legacy), client(&url, Era::Legacy));
    let first_own = pid(&first, "own__pid").await;
    assert_eq!(pid(&first, "own__pid").await, first_own, "a session keeps its instance");
    let second_own = pid(&second, "own__pid").await;
    assert_ne!(first_own, second_own, "each session has its own");
    assert_eq!(pid(&first, "shared__pid").await, pid(&second, "shared__pid").await, "a shared server is one");

    // 2026-07-28 requests have no session: one caller's go to one instance.
    let modern = client(&url, Era::Modern);
    let modern_own = pid(&modern, "own__pid").await;
    assert_eq!(pid(&client(&url, Era::Modern), "own__pid").await, modern_own);
    assert!(![first_own, second_own].contains(&modern_own));
    assert_eq!(instances(&base).await, 3, "two sessions and one caller");

    // Shared from now on: the instances end, every client has the one.
    std::fs::write(&file, config("shared").to_string()).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while instances(&base).await != Value::Null {
        assert!(tokio::time::Instant::now() < deadline, "the reload was applied in time");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let shared_own = pid(&first, "own__pid").await;
    assert_eq!(pid(&second, "own__pid").await, shared_own);
    for ended in [first_own, second_own, modern_own] {
        let gone = tokio::time::timeout(Duration::from_secs(10), async {
            while std::path::Path::new(&format!("/proc/{ended}")).exists() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        });
        assert!(gone.await.is_ok(), "the instance {ended} ended with the reload");
    }
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

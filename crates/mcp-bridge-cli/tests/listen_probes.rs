//! `mcp-bridge --listen`'s probes for what runs it: `/healthz` while it
//! serves, `/readyz` with each configured server's state (ready, degraded
//! with one server down), both refused to a page of another site.

use serde_json::{Value, json};
use test_support::{ScratchDir, listening_bridge, workspace_binary};

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

async fn get(url: &str, host: Option<&str>) -> (u16, Value) {
    let mut request = reqwest::Client::new().get(url);
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_names_each_server_and_a_server_down_is_degraded() {
    let dir = ScratchDir::new("listen-probes");
    let file = dir.path().join("config.json");
    let example = workspace_binary("mcp-example-server", "mcp-example-server");
    let config = json!({"mcpServers": {"up": {"command": example}, "down": {"command": "/nonexistent/mcp-server"}}});
    std::fs::write(&file, config.to_string()).unwrap();
    let (mut bridge, url) = listening_bridge(BRIDGE, &["--config", file.to_str().unwrap()]).await;
    let base = url.trim_end_matches("/mcp").to_owned();

    assert_eq!(get(&format!("{base}/healthz"), None).await, (200, json!({"status": "live"})));
    let (status, ready) = get(&format!("{base}/readyz"), None).await;
    assert_eq!((status, &ready["status"]), (200, &json!("degraded")), "{ready}");
    let servers = ready["servers"].as_array().unwrap();
    let state = |name: &str| servers.iter().find(|s| s["name"] == name).cloned().unwrap_or_default();
    assert_eq!(state("up")["available"], true, "{ready}");
    assert!(state("up")["tools"].as_u64().unwrap() > 5, "{ready}");
    assert_eq!(state("down")["available"], false, "{ready}");
    assert!(!ready.to_string().contains("nonexistent"), "why a server is down stays in the log: {ready}");

    // A page of another site (DNS rebinding) reads nothing.
    assert_eq!(get(&format!("{base}/readyz"), Some("evil.example")).await.0, 403);
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_front_of_one_server_the_bridge_is_ready_while_it_serves() {
    let example = workspace_binary("mcp-example-server", "mcp-example-server");
    let (mut bridge, url) = listening_bridge(BRIDGE, &["--", example.to_str().unwrap()]).await;
    let base = url.trim_end_matches("/mcp").to_owned();
    let (status, ready) = get(&format!("{base}/readyz"), None).await;
    assert_eq!((status, &ready["status"]), (200, &json!("ready")), "{ready}");
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

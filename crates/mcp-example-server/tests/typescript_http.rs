//! A real legacy client over HTTP: the TypeScript SDK 1.x's
//! `StreamableHTTPClientTransport` (what VS Code-era clients use for
//! `"type": "http"`) against the example server's dual-era endpoint.

use std::path::Path;

use mcp_bridge_sdk::server::http::HttpOptions;
use mcp_bridge_sdk::server::legacy::embed::http::{LegacyHttpOptions, serve_http};
use serde_json::{Value, json};
use test_support::ts_sdk_dir;
use tokio_util::sync::CancellationToken;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_client_uses_the_example_server_over_http() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let server = mcp_example_server::build_server();
    let stopped = stop.clone();
    let serving = tokio::spawn(async move {
        let (http, legacy) = (HttpOptions::default(), LegacyHttpOptions::default());
        serve_http(&server, listener, http, legacy, async move { stopped.cancelled().await }).await
    });
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ts/legacy_http_client.mjs");
    let output = tokio::process::Command::new("node")
        .env("TS_SDK_DIR", ts_sdk_dir())
        .arg(script)
        .arg(format!("http://{addr}/mcp"))
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), output).await.unwrap().unwrap();
    assert!(output.status.success(), "the TypeScript client failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(seen["server"]["name"], "mcp-example-server");
    assert!(seen["sessionId"].as_str().is_some_and(|id| id.len() == 32), "{seen}");
    assert!(seen["tools"].as_array().unwrap().contains(&json!("ask_name")));
    assert_eq!(seen["sum"], "42");
    assert_eq!(seen["slow"], "counted to 3");
    assert!(!seen["progress"].as_array().unwrap().is_empty(), "{seen}");
    assert!(seen["logs"].as_array().unwrap().contains(&json!("step 1 of 3 done")), "{seen}");
    assert_eq!(seen["elicitMessage"].as_str().map(|m| !m.is_empty()), Some(true));
    assert!(seen["greeting"].as_str().unwrap().contains("TypeScript"), "{seen}");
    assert_eq!(seen["updated"], json!(["note://shopping"]));
    assert!(seen["toolListChanges"].as_u64().unwrap() >= 1);
    stop.cancel();
    serving.await.unwrap().unwrap();
}

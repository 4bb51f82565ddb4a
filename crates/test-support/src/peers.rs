//! The installed third-party peers (Python, Node, Chromium) and the servers
//! of theirs the tests start.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::{LINE_DEADLINE, spare_port, stderr_line, workspace_root};

/// The Python interpreter of the venv `scripts/test` installs, with the
/// `mcp` SDK. Panics with the way to install it when it is missing: a test
/// that needs the peer never passes without it.
pub fn python_peer() -> PathBuf {
    let python = workspace_root().join(".peers/py/bin/python");
    assert!(python.is_file(), "the Python peer is not installed at {}: run scripts/test", python.display());
    python
}

/// The Python of `.peers/grpc`, with Google's generated MCP gRPC stubs
/// (`mcp-grpc-transport-proto`) and grpcio. Panics with the way to install
/// them when they are missing.
pub fn grpc_python() -> PathBuf {
    let python = workspace_root().join(".peers/grpc/bin/python");
    assert!(python.is_file(), "the gRPC peer is not installed at {}: run scripts/test", python.display());
    python
}

/// The Python of `.peers/fastmcp`, with the `fastmcp` server framework.
/// Panics with the way to install it when it is missing.
pub fn fastmcp_python() -> PathBuf {
    let python = workspace_root().join(".peers/fastmcp/bin/python");
    assert!(python.is_file(), "fastmcp is not installed at {}: run scripts/test", python.display());
    python
}

/// The Python of `.peers/langchain`, with `langchain-mcp-adapters` and the
/// Python `mcp` 1.x client. Panics with the way to install them when they
/// are missing.
pub fn langchain_python() -> PathBuf {
    let python = workspace_root().join(".peers/langchain/bin/python");
    assert!(python.is_file(), "langchain-mcp-adapters is not installed at {}: run scripts/test", python.display());
    python
}

/// Debian's Chromium, the real browser of the sign-in tests. Panics with
/// the way to install it when it is missing.
pub fn chromium() -> &'static str {
    let path = "/usr/bin/chromium";
    assert!(
        Path::new(path).exists(),
        "{path} is missing: scripts/test installs Debian's chromium package (apt-get install chromium)"
    );
    path
}

/// `node`, with its WebSocket client on: Node 20 has it behind a flag,
/// 22 has it on by default (the TypeScript SDK's WebSocket transport uses
/// the global `WebSocket`).
pub fn node_with_websocket() -> tokio::process::Command {
    let mut node = tokio::process::Command::new("node");
    let version = std::process::Command::new("node").arg("--version").output().expect("node is on the PATH");
    if String::from_utf8_lossy(&version.stdout).starts_with("v20.") {
        node.arg("--experimental-websocket");
    }
    node
}

/// The TypeScript SDK 1.x that `scripts/test` installs (a legacy client, as
/// VS Code uses). Panics with the way to install it when it is missing.
pub fn ts_sdk_dir() -> PathBuf {
    let dir = workspace_root().join(".peers/ts/node_modules/@modelcontextprotocol/sdk");
    assert!(
        dir.join("package.json").is_file(),
        "the TypeScript SDK is not installed at {}: run scripts/test",
        dir.display()
    );
    dir
}

/// The TypeScript SDK 2.x client package (`@modelcontextprotocol/client`)
/// `scripts/test` installs. Panics with the way to install it when it is
/// missing.
pub fn ts_client_v2_dir() -> PathBuf {
    let dir = workspace_root().join(".peers/ts2/node_modules/@modelcontextprotocol/client");
    assert!(
        dir.join("package.json").is_file(),
        "the TypeScript SDK 2.x client is not installed at {}: run scripts/test",
        dir.display()
    );
    dir
}

/// Checks tool definitions with the LLM vendors' own published types
/// (`llm/validate_tools.py`, in the Python SDKs `scripts/test` installs
/// into `.peers/llm`): `Ok` with its summary, or `Err` with each problem.
pub fn validate_llm_tools(openai: &[Value], anthropic: &[Value]) -> Result<String, String> {
    let python = workspace_root().join(".peers/llm/bin/python");
    assert!(python.is_file(), "the LLM SDKs are not installed at {}: run scripts/test", python.display());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("llm/validate_tools.py");
    let mut child =
        std::process::Command::new(python).arg(script).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let input = serde_json::json!({"openai": openai, "anthropic": anthropic}).to_string();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if output.status.success() { Ok(text) } else { Err(text) }
}

/// The entry script of `@modelcontextprotocol/server-everything` (a
/// 2025-11-25 server on the TypeScript SDK 1.x; modes `stdio`,
/// `streamableHttp`, `sse`) that `scripts/test` installs. Panics with the
/// way to install it when it is missing.
pub fn server_everything() -> PathBuf {
    let script =
        workspace_root().join(".peers/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(script.is_file(), "server-everything is not installed at {}: run scripts/test", script.display());
    script
}

/// server-everything in one of its HTTP modes (`streamableHttp`: its
/// endpoint is `/mcp`; `sse`: the HTTP+SSE transport of 2024-11-05 at
/// `/sse`) on a free loopback port (it binds every interface by itself:
/// `js/loopback.cjs` keeps it to 127.0.0.1); stopped when the returned
/// child is dropped. Returns the endpoint's URL.
pub async fn server_everything_http(mode: &str) -> (tokio::process::Child, String) {
    let shim = workspace_root().join("crates/test-support/js/loopback.cjs");
    let mut child = Command::new("node")
        .arg("-r")
        .arg(shim)
        .arg(server_everything())
        .arg(mode)
        .env("PORT", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let port = stderr_line(&mut child, "server-everything", |l| l.strip_prefix("LISTENING ").map(str::to_owned)).await;
    let path = if mode == "sse" { "sse" } else { "mcp" };
    (child, format!("http://127.0.0.1:{port}/{path}"))
}

/// The Python `mcp` server of the interop tests
/// (`crates/mcp-example-server/tests/python/python_server.py`: tools `add`
/// and `shout`) on its legacy HTTP+SSE transport (2024-11-05) on a free
/// loopback port, once uvicorn says it runs; stopped when the returned
/// child is dropped. Returns the URL of its event stream.
pub async fn python_sse_server() -> (tokio::process::Child, String) {
    let port = spare_port();
    let script = workspace_root().join("crates/mcp-example-server/tests/python/python_server.py");
    let mut child = Command::new(python_peer())
        .arg(script)
        .args(["--sse", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    stderr_line(&mut child, "the Python server", |l| l.contains("Uvicorn running on").then_some(())).await;
    (child, format!("http://127.0.0.1:{port}/sse"))
}

/// A 2025-11-25 server over Streamable HTTP with sessions, built with the
/// TypeScript SDK 1.x (`crates/mcp-bridge-sdk/tests/ts/legacy_http_server.mjs`:
/// tools `echo`, `ask`, `grow`, `sessions`) on a free loopback port; the
/// process is stopped when the returned child is dropped.
pub async fn ts_legacy_http_server() -> (tokio::process::Child, String) {
    let script = workspace_root().join("crates/mcp-bridge-sdk/tests/ts/legacy_http_server.mjs");
    let mut child = Command::new("node")
        .arg(script)
        .env("TS_SDK_DIR", ts_sdk_dir())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = tokio::time::timeout(LINE_DEADLINE, lines.next_line())
        .await
        .expect("the server printed no port")
        .unwrap()
        .expect("the server ended before printing its port");
    (child, format!("http://127.0.0.1:{}/mcp", port.trim()))
}

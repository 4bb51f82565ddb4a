//! `langchain-mcp-adapters` (0.3, on the Python `mcp` 1.x client) calling
//! a tool 20 times, through `mcp-bridge` and straight at the example
//! server. It opens a session per call and the `mcp` 1.x client fails
//! (`BrokenResourceError`) when a message lands while it closes one, and
//! waits 2 s before killing a server that is slow to exit: the burst of
//! `list_changed` at a session's start and the slow exit after a
//! 2025-11-25 session both broke or slowed it.

use std::time::Instant;

use serde_json::Value;
use test_support::workspace_binary;

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");
const CALLS: usize = 20;

/// Runs the adapters' `CALLS` calls of `add` against `command`: the
/// script's report, its stderr.
async fn langchain_calls(command: &[&str]) -> (Value, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/langchain_calls.py");
    let output = tokio::process::Command::new(test_support::langchain_python())
        .arg(script)
        .arg(CALLS.to_string())
        .args(command)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let report = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("no report ({e}): {stdout}\n{stderr}"));
    (report, stderr)
}

fn assert_all_answered(what: &str, (report, stderr): &(Value, String)) {
    assert_eq!(report["errors"], serde_json::json!([]), "{what}: {stderr}");
    let answers = report["answers"].as_array().unwrap();
    assert_eq!(answers.len(), CALLS, "{what}: {report}");
    for (n, answer) in answers.iter().enumerate() {
        let expected = format!("'text': '{}'", n + 1);
        assert!(answer.as_str().unwrap_or_default().contains(&expected), "{what}: call {n}: {answer}");
    }
    for noise in ["BrokenResourceError", "termination failed", "Traceback"] {
        assert!(!stderr.contains(noise), "{what}: {noise} in:\n{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn langchain_calls_a_tool_twenty_times_through_the_bridge_and_directly_without_an_error() {
    let server = workspace_binary("mcp-example-server", "mcp-example-server");
    let server = server.to_str().unwrap();
    let started = Instant::now();
    let bridged = langchain_calls(&[BRIDGE, "--", server]).await;
    let through_bridge = started.elapsed();
    assert_all_answered("through mcp-bridge", &bridged);
    let started = Instant::now();
    let direct = langchain_calls(&[server]).await;
    let straight = started.elapsed();
    assert_all_answered("straight at the example server", &direct);
    eprintln!("{CALLS} langchain calls: {through_bridge:?} through the bridge, {straight:?} straight at the server");
}

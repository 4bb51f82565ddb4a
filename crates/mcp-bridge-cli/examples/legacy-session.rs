//! A scripted legacy (2025-11-25) client session through `mcp-bridge` in
//! front of `mcp-example-server`, printed as a readable transcript: what a
//! client like VS Code sends (→) and what it gets back (←).
//!
//! ```sh
//! cargo run -p mcp-bridge-cli --example legacy-session
//! ```
//!
//! It builds the two programs it starts first, in one cargo invocation with
//! this example's own selection (so with the same features: the tree is
//! built once, not once for the programs and again for the example).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// `target/<profile>/`, where this example's own directory is.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the example knows where it runs");
    exe.parent().and_then(|examples| examples.parent()).expect("target/<profile>/examples/").to_owned()
}

/// Builds `mcp-bridge` and `mcp-example-server` with the profile this
/// example was built with (a no-op when they are current).
fn build_programs(target: &std::path::Path) -> std::io::Result<()> {
    let profile = match target.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev",
        Some(other) => other,
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    // What `cargo run` set for this example is not the build's: build
    // scripts that watch such a variable (ring's CARGO_MANIFEST_DIR) would
    // otherwise run again, and the next `cargo run` once more.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let set_by_cargo_run = name.starts_with("CARGO_PKG_")
            || ["CARGO_MANIFEST_DIR", "CARGO_MANIFEST_PATH", "CARGO_CRATE_NAME", "CARGO_PRIMARY_PACKAGE"]
                .contains(&name.as_ref());
        if set_by_cargo_run {
            build.env_remove(name.as_ref());
        }
    }
    let status = build
        .args(["build", "--quiet", "--profile", profile, "-p", "mcp-bridge-cli", "-p", "mcp-example-server"])
        .args(["--bins", "--example", "legacy-session"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()?;
    if !status.success() {
        eprintln!("building mcp-bridge and mcp-example-server failed");
        std::process::exit(2);
    }
    Ok(())
}

fn show(arrow: &str, message: &Value) {
    let mut text = serde_json::to_string(message).unwrap_or_default();
    if text.len() > 400 {
        text.truncate(400);
        text.push_str(" …");
    }
    println!("{arrow} {text}");
}

fn main() -> std::io::Result<()> {
    let target = target_dir();
    build_programs(&target)?;
    let (bridge, server) = (target.join("mcp-bridge"), target.join("mcp-example-server"));
    println!("$ {} -- {}\n", bridge.display(), server.display());
    let mut child = Command::new(&bridge)
        .arg("--")
        .arg(&server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut send = |message: Value| -> std::io::Result<()> {
        show("→", &message);
        writeln!(stdin, "{message}")?;
        stdin.flush()
    };
    let mut receive = |until_id: i64| -> std::io::Result<()> {
        loop {
            let mut line = String::new();
            if stdout.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let message: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            show("←", &message);
            if message["id"] == until_id {
                println!();
                return Ok(());
            }
        }
    };
    let steps = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": {"name": "transcript", "version": "1.0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 40}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "slow",
            "arguments": {"steps": 3, "step_ms": 100}, "_meta": {"progressToken": "p-4"}}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {"name": "greet", "arguments": {"name": "Ada"}}}),
        json!({"jsonrpc": "2.0", "id": 6, "method": "resources/read", "params": {"uri": "note://welcome"}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "server/discover"}),
    ];
    for step in steps {
        let id = step["id"].as_i64();
        send(step)?;
        if let Some(id) = id {
            receive(id)?;
        }
    }
    drop(stdin);
    let status = child.wait()?;
    println!("mcp-bridge exited with {status}");
    Ok(())
}

//! A scripted legacy (2025-11-25) client session through `mcp-bridge` in
//! front of `mcp-example-server`, printed as a readable transcript: what a
//! client like VS Code sends (→) and what it gets back (←).
//!
//! ```sh
//! cargo build -p mcp-bridge-cli -p mcp-example-server && cargo run -p mcp-bridge-cli --example legacy-session
//! ```

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

/// The binaries sit beside this example's own directory (`target/<profile>/`).
fn binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the example knows where it runs");
    let dir = exe.parent().and_then(|examples| examples.parent()).expect("target/<profile>/examples/");
    let path = dir.join(name);
    if !path.is_file() {
        eprintln!("{} is missing: run `cargo build -p mcp-bridge-cli -p mcp-example-server` first", path.display());
        std::process::exit(2);
    }
    path
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
    let (bridge, server) = (binary("mcp-bridge"), binary("mcp-example-server"));
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

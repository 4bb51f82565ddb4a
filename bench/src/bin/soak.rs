//! A soak run of the bridge (not in CI): a legacy client drives
//! `mcp-bridge -- mcp-example-server` with mixed traffic for `SOAK_SECONDS`
//! (600 by default): tool calls, elicitation rounds answered by the client,
//! resource subscriptions with updates, and cancelled calls. Every minute
//! the client ends its session and starts a new bridge, as VS Code does
//! when it restarts a server. Prints, per minute: requests answered,
//! errors by cause, p50/p99 latency, and the bridge's RSS at the end of
//! the minute.
//!
//! ```sh
//! cargo build --release -p mcp-bridge-cli -p mcp-example-server
//! SOAK_SECONDS=600 cargo run --release -p mcp-bench --bin soak
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: tokio::io::Lines<BufReader<ChildStdout>>,
    next_id: i64,
}

impl Session {
    async fn start(root: &Path) -> std::io::Result<Session> {
        let mut child = Command::new(root.join("target/release/mcp-bridge"))
            .arg("--")
            .arg(root.join("target/release/mcp-example-server"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().ok_or_else(|| std::io::Error::other("no stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| std::io::Error::other("no stdout"))?;
        let mut session = Session { child, stdin, lines: BufReader::new(stdout).lines(), next_id: 0 };
        let init = json!({"protocolVersion": "2025-11-25", "clientInfo": {"name": "soak", "version": "1"},
            "capabilities": {"elicitation": {"form": {}}, "roots": {}}});
        session.call("initialize", init).await?;
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
        Ok(session)
    }

    async fn send(&mut self, message: &Value) -> std::io::Result<()> {
        self.stdin.write_all(format!("{message}\n").as_bytes()).await
    }

    /// Sends a request and answers the bridge's input requests until its
    /// response; returns the response.
    async fn call(&mut self, method: &str, params: Value) -> std::io::Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        self.until(id).await
    }

    async fn until(&mut self, id: i64) -> std::io::Result<Value> {
        loop {
            let line =
                self.lines.next_line().await?.ok_or_else(|| std::io::Error::other("the bridge closed stdout"))?;
            let message: Value =
                serde_json::from_str(&line).map_err(|e| std::io::Error::other(format!("{e}: {line}")))?;
            match message["method"].as_str() {
                Some("elicitation/create") => {
                    let answer = json!({"action": "accept", "content": {"name": "Soak"}});
                    self.send(&json!({"jsonrpc": "2.0", "id": message["id"], "result": answer})).await?;
                }
                Some("roots/list") => {
                    self.send(&json!({"jsonrpc": "2.0", "id": message["id"], "result": {"roots": []}})).await?;
                }
                _ if message["id"] == id => return Ok(message),
                _ => {}
            }
        }
    }

    /// A call of `slow` cancelled right away: no response is expected; a
    /// ping after it shows the bridge went on.
    async fn cancelled_call(&mut self) -> std::io::Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        let slow = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "slow", "arguments": {"steps": 50, "step_ms": 100}}});
        self.send(&slow).await?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})).await?;
        self.call("ping", json!({})).await
    }

    fn rss_kib(&self) -> u64 {
        mcp_bench::proc_status::kib(self.child.id().unwrap_or(0), "VmRSS").unwrap_or(0)
    }

    async fn end(mut self) {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
    }
}

/// One minute's figures.
#[derive(Default)]
struct Minute {
    latencies: Vec<Duration>,
    errors: BTreeMap<String, usize>,
}

fn percentile(sorted: &[Duration], q: f64) -> f64 {
    sorted
        .get(((sorted.len() as f64 * q) as usize).min(sorted.len().saturating_sub(1)))
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for binary in ["mcp-bridge", "mcp-example-server"] {
        if !root.join("target/release").join(binary).exists() {
            eprintln!("build it first: cargo build --release -p mcp-bridge-cli -p mcp-example-server");
            std::process::exit(2);
        }
    }
    let seconds: u64 = std::env::var("SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(600);
    let started = Instant::now();
    println!("| minute | answered | errors | p50 | p99 | bridge RSS at the end |");
    println!("|---|---|---|---|---|---|");
    let mut total = 0usize;
    let mut minute_index = 0;
    while started.elapsed() < Duration::from_secs(seconds) {
        minute_index += 1;
        let mut session = Session::start(&root).await?;
        session.call("resources/subscribe", json!({"uri": "note://soak"})).await?;
        let mut minute = Minute::default();
        let minute_end = Instant::now()
            + Duration::from_secs(60).min(Duration::from_secs(seconds).saturating_sub(started.elapsed()));
        let mut n = 0u64;
        while Instant::now() < minute_end {
            n += 1;
            let sent = Instant::now();
            let reply = match n % 20 {
                0 => session.cancelled_call().await?,
                1 => session.call("tools/call", json!({"name": "ask_name", "arguments": {}})).await?,
                2 => {
                    session
                        .call(
                            "tools/call",
                            json!({"name": "set_note", "arguments": {"name": "soak", "text": n.to_string()}}),
                        )
                        .await?
                }
                3 => session.call("tools/list", json!({})).await?,
                4 => session.call("resources/read", json!({"uri": "note://soak"})).await?,
                5 => session.call("tools/call", json!({"name": "add", "arguments": {"a": n, "b": 1}})).await?,
                _ => session.call("tools/call", json!({"name": "echo", "arguments": {"text": "soak"}})).await?,
            };
            minute.latencies.push(sent.elapsed());
            if let Some(cause) = reply["error"]["data"]["cause"].as_str().or(reply["error"]["message"].as_str()) {
                *minute.errors.entry(cause.to_owned()).or_default() += 1;
            }
        }
        let rss = session.rss_kib();
        session.end().await;
        minute.latencies.sort_unstable();
        total += minute.latencies.len();
        let errors: Vec<String> = minute.errors.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        println!(
            "| {minute_index} | {} | {} | {:.2} ms | {:.2} ms | {rss} KiB |",
            minute.latencies.len(),
            if errors.is_empty() { "0".to_owned() } else { errors.join(", ") },
            percentile(&minute.latencies, 0.5),
            percentile(&minute.latencies, 0.99),
        );
    }
    println!("\n{total} requests answered in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

//! Requests per second of `tools/call` over Streamable HTTP, from this
//! process to a server process on loopback: `mcp-example-server --http`
//! beside the Python `mcp` 2.x server (`python_server.py --http`), the same
//! tool (`add`) on both, in the same run. Each concurrency level is a number
//! of clients, each with its own keep-alive connection, sending one request
//! after another. Prints a Markdown table; the median of the runs is shown
//! with the p50/p99 latency of that run.
//!
//! ```sh
//! scripts/test mcp_protocol   # once: installs the Python peer into .peers/py
//! cargo build --release -p mcp-example-server
//! cargo run --release -p mcp-bench --bin http-load
//! ```

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONCURRENCY: [usize; 2] = [1, 64];
const RUNS: usize = 3;
const WARM_UP: Duration = Duration::from_secs(1);
const MEASURE: Duration = Duration::from_secs(4);

/// One measured run: requests completed and their latencies.
struct Run {
    per_second: f64,
    p50: Duration,
    p99: Duration,
}

/// A server process that is stopped when dropped.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn wait_until_listening(addr: SocketAddr) -> std::io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(addr).is_err() {
        if Instant::now() > deadline {
            return Err(std::io::Error::other(format!("nothing listens on {addr} after 30 s")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

fn start(program: &Path, args: &[String], port: u16) -> std::io::Result<Served> {
    let child =
        Command::new(program).args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
    let served = Served(child);
    wait_until_listening(SocketAddr::from(([127, 0, 0, 1], port)))?;
    Ok(served)
}

fn call_body(id: u64) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "add", "arguments": {"a": 1, "b": 2},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "http-load", "version": "1"}
        }
    }})
    .to_string()
}

/// One client's loop: calls until `stop`, recording each latency.
async fn client_loop(url: Arc<String>, started: Instant, stop: Instant) -> Result<Vec<Duration>, String> {
    let http = reqwest::Client::builder().no_proxy().build().map_err(|e| e.to_string())?;
    let mut latencies = Vec::new();
    let mut id = 0;
    loop {
        id += 1;
        let sent = Instant::now();
        if sent >= stop {
            return Ok(latencies);
        }
        let response = http
            .post(url.as_str())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "add")
            .body(call_body(id))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| e.to_string())?;
        if !status.is_success() || !body.windows(8).any(|w| w == b"\"result\"") {
            return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)])));
        }
        if sent.duration_since(started) >= WARM_UP {
            latencies.push(sent.elapsed());
        }
    }
}

async fn measure(url: &str, clients: usize) -> Result<Run, String> {
    let url = Arc::new(url.to_owned());
    let started = Instant::now();
    let stop = started + WARM_UP + MEASURE;
    let tasks: Vec<_> = (0..clients).map(|_| tokio::spawn(client_loop(url.clone(), started, stop))).collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.map_err(|e| e.to_string())??);
    }
    latencies.sort_unstable();
    let at = |q: f64| latencies.get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)));
    Ok(Run {
        per_second: latencies.len() as f64 / MEASURE.as_secs_f64(),
        p50: at(0.50).copied().unwrap_or_default(),
        p99: at(0.99).copied().unwrap_or_default(),
    })
}

/// The median run (by requests per second) of several.
async fn median_run(url: &str, clients: usize) -> Result<Run, String> {
    let mut runs = Vec::new();
    for _ in 0..RUNS {
        runs.push(measure(url, clients).await?);
    }
    runs.sort_by(|a, b| a.per_second.total_cmp(&b.per_second));
    Ok(runs.swap_remove(RUNS / 2))
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn main() -> Result<(), String> {
    let root = workspace();
    let ours = root.join("target/release/mcp-example-server");
    let python = root.join(".peers/py/bin/python");
    for (path, how) in [
        (&ours, "cargo build --release -p mcp-example-server"),
        (&python, "scripts/test (it installs the Python peer)"),
    ] {
        if !path.exists() {
            return Err(format!("{} is missing; run {how}", path.display()));
        }
    }
    let script = root.join("crates/mcp-example-server/tests/python/python_server.py");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    let port = free_port().map_err(|e| e.to_string())?;
    let server = start(&ours, &["--http".into(), format!("127.0.0.1:{port}")], port).map_err(|e| e.to_string())?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    for clients in CONCURRENCY {
        rows.push(("mcp-example-server (Rust, this SDK)", clients, runtime.block_on(median_run(&url, clients))?));
    }
    drop(server);
    let port = free_port().map_err(|e| e.to_string())?;
    let server = start(&python, &[script.display().to_string(), "--http".into(), port.to_string()], port)
        .map_err(|e| e.to_string())?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    for clients in CONCURRENCY {
        rows.push(("Python mcp 2.3.0 MCPServer", clients, runtime.block_on(median_run(&url, clients))?));
    }
    drop(server);

    println!("| server | clients | requests/s | p50 | p99 | requests/s vs Python |");
    println!("|---|---|---|---|---|---|");
    for (name, clients, run) in &rows {
        let python =
            rows.iter().find(|(n, c, _)| n.starts_with("Python") && c == clients).map(|(_, _, r)| r.per_second);
        let ratio = python.map(|p| format!("{:.1}x", run.per_second / p)).unwrap_or_default();
        println!(
            "| {name} | {clients} | {:.0} | {:.2} ms | {:.2} ms | {ratio} |",
            run.per_second,
            run.p50.as_secs_f64() * 1e3,
            run.p99.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

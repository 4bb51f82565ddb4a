//! Load over Streamable HTTP: a number of clients, each with its own
//! keep-alive connection, sending `tools/call` one after another.

use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::stats::Run;
use crate::stdio_peer::{Dialect, request_line};

/// A server process, stopped when dropped.
#[derive(Debug)]
pub struct Served(Child);

impl Served {
    /// The process id, for its memory figures.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port nothing listens on at the moment.
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Starts `program ARGS` and waits (at most 30 s) until it accepts
/// connections on `port`.
pub fn serve(program: &Path, args: &[String], port: u16) -> std::io::Result<Served> {
    let child =
        Command::new(program).args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
    let served = Served(child);
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(addr).is_err() {
        if Instant::now() > deadline {
            return Err(std::io::Error::other(format!("{} does not listen on {addr} after 30 s", program.display())));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(served)
}

/// One client's loop: `tools/call` of `tool` until `stop`, returning the
/// latencies of the calls sent from `measure_from` on.
async fn client_loop(
    url: Arc<String>,
    tool: Arc<(String, serde_json::Value)>,
    measure_from: Instant,
    stop: Instant,
) -> Result<Vec<Duration>, String> {
    let http = reqwest::Client::builder().no_proxy().build().map_err(|e| e.to_string())?;
    let mut latencies = Vec::new();
    for id in 1.. {
        let sent = Instant::now();
        if sent >= stop {
            break;
        }
        let params = serde_json::json!({"name": tool.0, "arguments": tool.1});
        let response = http
            .post(url.as_str())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", tool.0.as_str())
            .body(request_line(Dialect::Modern, id, "tools/call", params))
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| e.to_string())?;
        if !status.is_success() || !body.windows(8).any(|w| w == b"\"result\"") {
            return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)])));
        }
        if sent >= measure_from {
            latencies.push(sent.elapsed());
        }
    }
    Ok(latencies)
}

/// `clients` clients calling `tool` with `arguments` at `url` for
/// `warm_up + window`; the calls sent in the window are measured.
pub async fn measure(
    url: &str,
    tool: &str,
    arguments: serde_json::Value,
    clients: usize,
    warm_up: Duration,
    window: Duration,
) -> Result<Run, String> {
    let url = Arc::new(url.to_owned());
    let tool = Arc::new((tool.to_owned(), arguments));
    let measure_from = Instant::now() + warm_up;
    let stop = measure_from + window;
    let tasks: Vec<_> =
        (0..clients).map(|_| tokio::spawn(client_loop(url.clone(), tool.clone(), measure_from, stop))).collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.map_err(|e| e.to_string())??);
    }
    Ok(Run::new(latencies, window))
}

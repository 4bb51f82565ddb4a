//! Hostile clients for the flood tests: the hostile client and the other
//! one each bind their own loopback address (on Linux all of 127.0.0.0/8
//! is loopback), so an endpoint's per-address shares tell them apart.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinHandle;

/// The hostile client's address.
pub const HOSTILE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
/// The other client's address.
pub const OTHER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);
/// A hang guard for one step, not a speed measure.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A TCP connection to `addr` from `from`.
pub async fn connect_from(from: Ipv4Addr, addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((from, 0))).unwrap();
    socket.connect(addr).await.unwrap()
}

/// An HTTP client whose connections come from `from`.
pub fn client_from(from: Ipv4Addr) -> reqwest::Client {
    // No idle connection kept for the next call: at the cap the server may
    // end an idle one (its right), and a pooled connection ended as it is
    // reused fails the call before the server ever sees it (CI saw "closed
    // before message completed" for 1 call in 50, twice in four runs).
    let builder = reqwest::Client::builder().local_address(IpAddr::V4(from)).timeout(DEADLINE);
    builder.pool_max_idle_per_host(0).build().unwrap()
}

/// Opens `keep` connections to `addr` from [`HOSTILE`] that send half a
/// request head and never the rest, then goes on opening more (holding the
/// newest `keep`) until the handle is aborted.
pub async fn flood_unfinished_heads(addr: SocketAddr, keep: usize) -> JoinHandle<()> {
    async fn unfinished(addr: SocketAddr) -> TcpStream {
        let mut socket = connect_from(HOSTILE, addr).await;
        // A connection given up by the server may be reset under the write.
        let _ = socket.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await;
        socket
    }
    let mut held = std::collections::VecDeque::new();
    for _ in 0..keep {
        held.push_back(unfinished(addr).await);
    }
    tokio::spawn(async move {
        loop {
            held.push_back(unfinished(addr).await);
            held.pop_front();
            tokio::task::yield_now().await;
        }
    })
}

/// A 2025-11-25 POST of `body` with `client`, in `session` when given.
pub fn legacy_request(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request
}

/// A 2025-11-25 `initialize` (declaring `capabilities`) and `initialized`
/// with `client`: the session's id, or `None` when refused.
pub async fn legacy_initialize(client: &reqwest::Client, url: &str, capabilities: Value) -> Option<String> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}});
    let response = legacy_request(client, url, None, &init).send().await.ok()?;
    if response.status() != 200 {
        return None;
    }
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let status = legacy_request(client, url, Some(&session), &initialized).send().await.ok()?.status();
    (status == 202).then_some(session)
}

/// Opens `count` 2025-11-25 sessions at `url` from [`HOSTILE`], four at a
/// time; how many were answered 200.
pub async fn flood_sessions(url: &str, count: usize) -> usize {
    let hostile = client_from(HOSTILE);
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (hostile, url) = (hostile.clone(), url.to_owned());
            tokio::spawn(async move {
                let mut opened = 0;
                for _ in 0..count / 4 {
                    opened += usize::from(legacy_initialize(&hostile, &url, json!({})).await.is_some());
                }
                opened
            })
        })
        .collect();
    let mut opened = 0;
    for worker in workers {
        opened += worker.await.unwrap();
    }
    opened
}

/// What the other client saw of its calls during a flood: how long each
/// took, and why each one that failed did.
#[derive(Debug, Default)]
pub struct Calls {
    latencies: Vec<Duration>,
    failures: Vec<String>,
}

impl Calls {
    /// Records call `n`, started at `started`: answered, or why not.
    pub fn record(&mut self, n: usize, started: std::time::Instant, outcome: Result<(), String>) {
        let took = started.elapsed();
        if let Err(why) = outcome {
            self.failures.push(format!("call {n} after {took:?}: {why}"));
        }
        self.latencies.push(took);
    }
}

/// Why a call's `response` was not the sum the example server's `add`
/// answers: the transport's error with its causes, the status, or the body.
pub async fn sum_answered(response: reqwest::Result<reqwest::Response>) -> Result<(), String> {
    let response = response.map_err(|e| {
        let mut why = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            why.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        why
    })?;
    let status = response.status();
    let body = response.text().await.map_err(|e| format!("status {status}, body unread: {e}"))?;
    // JSON, or the last data line of an SSE stream.
    let last = body.lines().filter_map(|line| line.strip_prefix("data: ")).next_back().unwrap_or(&body);
    match serde_json::from_str::<Value>(last) {
        Ok(answer) if status == 200 && answer["result"]["structuredContent"] == json!({"sum": 5}) => Ok(()),
        _ => Err(format!("status {status}, body {body:?}")),
    }
}

/// `calls` calls of the example server's `add` tool from [`OTHER`] in a
/// 2025-11-25 session at `url`, one after another.
pub async fn other_legacy_client_calls(url: &str, calls: usize) -> Calls {
    let other = client_from(OTHER);
    let mut seen = Calls::default();
    let started = std::time::Instant::now();
    let Some(session) = legacy_initialize(&other, url, json!({})).await else {
        seen.record(0, started, Err("initialize was refused".into()));
        return seen;
    };
    for id in 0..calls {
        let call = json!({"jsonrpc": "2.0", "id": id + 1, "method": "tools/call", "params": {
            "name": "add", "arguments": {"a": 2, "b": 3}}});
        let started = std::time::Instant::now();
        let outcome = sum_answered(legacy_request(&other, url, Some(&session), &call).send().await).await;
        seen.record(id, started, outcome);
    }
    seen
}

/// Prints the other client's figures during `flood` and asserts all of its
/// `calls` were answered, listing why the others were not.
pub fn report(flood: &str, calls: usize, mut seen: Calls) {
    seen.latencies.sort();
    let latencies = &seen.latencies;
    let percentile = |p: usize| latencies[(latencies.len() * p / 100).min(latencies.len() - 1)];
    let answered = calls.saturating_sub(seen.failures.len()).min(latencies.len());
    eprintln!(
        "{flood}: other client {answered}/{calls} answered 200, p50 {:?}, p99 {:?}",
        percentile(50),
        percentile(99)
    );
    assert!(
        seen.failures.is_empty() && latencies.len() == calls,
        "during {flood}, {answered} of {calls} calls of another client were answered: {:#?}",
        seen.failures
    );
}

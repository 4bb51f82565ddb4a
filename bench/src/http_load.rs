//! Load over Streamable HTTP: a number of clients, each with its own
//! keep-alive connection, sending `tools/call` one after another, as
//! 2026-07-28 clients or as 2025-11-25 clients (an `initialize` handshake
//! first, then the session's id and version on every request).

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
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

/// Starts `program ARGS` with `envs` and waits (at most 30 s) until it
/// accepts connections on `port`.
pub fn serve(program: &Path, args: &[String], envs: &[(&'static str, PathBuf)], port: u16) -> std::io::Result<Served> {
    let child = Command::new(program)
        .args(args)
        .envs(envs.iter().map(|(k, v)| (*k, v.as_os_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
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

/// Where the load goes: the endpoint's URL, the revision its clients speak,
/// and the bearer token they send, if any.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// The revision of the clients.
    pub dialect: Dialect,
    /// The access token each request carries (`Authorization: Bearer`).
    pub bearer: Option<String>,
}

impl Endpoint {
    /// Clients of `dialect` at `url`, without a token.
    pub fn new(url: impl Into<String>, dialect: Dialect) -> Endpoint {
        Endpoint { url: url.into(), dialect, bearer: None }
    }

    /// The same clients with `token`.
    #[must_use]
    pub fn with_bearer(mut self, token: impl Into<String>) -> Endpoint {
        self.bearer = Some(token.into());
        self
    }
}

/// One client's connection: its HTTP client and, for a legacy client, what
/// its handshake settled: the version and the session the server gave it
/// (stateless servers give none).
struct Connection {
    http: reqwest::Client,
    endpoint: Arc<Endpoint>,
    negotiated: bool,
    session: Option<String>,
}

impl Connection {
    /// A connection; a legacy one has done its `initialize` handshake.
    async fn open(endpoint: Arc<Endpoint>) -> Result<Connection, String> {
        let http = reqwest::Client::builder().no_proxy().build().map_err(|e| e.to_string())?;
        let dialect = endpoint.dialect;
        let mut connection = Connection { http, endpoint, negotiated: false, session: None };
        if dialect == Dialect::Legacy {
            let params = serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "mcp-bench", "version": "1"}});
            let response = connection.post(request_line(dialect, 0, "initialize", params), None).await?;
            connection.session =
                response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
            expect_result(response).await?;
            connection.negotiated = true;
            let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
            let status = connection.post(initialized, None).await?.status();
            if !status.is_success() {
                return Err(format!("notifications/initialized: HTTP {status}"));
            }
        }
        Ok(connection)
    }

    /// Posts one message with the headers of the connection's dialect.
    async fn post(&self, body: Vec<u8>, tool: Option<&str>) -> Result<reqwest::Response, String> {
        let mut request = self
            .http
            .post(self.endpoint.url.as_str())
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(token) = &self.endpoint.bearer {
            request = request.bearer_auth(token);
        }
        match self.endpoint.dialect {
            Dialect::Modern => {
                request = request.header("mcp-protocol-version", "2026-07-28").header("mcp-method", "tools/call");
                if let Some(tool) = tool {
                    request = request.header("mcp-name", tool);
                }
            }
            Dialect::Legacy if self.negotiated => {
                request = request.header("mcp-protocol-version", "2025-11-25");
                if let Some(session) = &self.session {
                    request = request.header("mcp-session-id", session);
                }
            }
            Dialect::Legacy => {}
        }
        request.body(body).send().await.map_err(|e| e.to_string())
    }
}

/// Reads a response whole (JSON or an SSE stream) and checks it holds a result.
async fn expect_result(response: reqwest::Response) -> Result<(), String> {
    let status = response.status();
    let body = response.bytes().await.map_err(|e| e.to_string())?;
    if !status.is_success() || !body.windows(8).any(|w| w == b"\"result\"") {
        return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(&body[..body.len().min(300)])));
    }
    Ok(())
}

/// One client's loop: `tools/call` of `tool` until `stop`, returning the
/// latencies of the calls sent from `measure_from` on.
async fn client_loop(
    connection: Connection,
    tool: Arc<(String, serde_json::Value)>,
    measure_from: Instant,
    stop: Instant,
) -> Result<Vec<Duration>, String> {
    let mut latencies = Vec::new();
    for id in 1.. {
        let sent = Instant::now();
        if sent >= stop {
            break;
        }
        let params = serde_json::json!({"name": tool.0, "arguments": tool.1});
        let response =
            connection.post(request_line(connection.endpoint.dialect, id, "tools/call", params), Some(&tool.0)).await?;
        expect_result(response).await?;
        if sent >= measure_from {
            latencies.push(sent.elapsed());
        }
    }
    Ok(latencies)
}

/// `clients` clients calling `tool` with `arguments` at `endpoint` for
/// `warm_up + window`; the calls sent in the window are measured.
pub async fn measure(
    endpoint: &Endpoint,
    tool: &str,
    arguments: serde_json::Value,
    clients: usize,
    warm_up: Duration,
    window: Duration,
) -> Result<Run, String> {
    let endpoint = Arc::new(endpoint.clone());
    let tool = Arc::new((tool.to_owned(), arguments));
    // Every client's handshake before the clock starts: the calls are measured, not the sign-on.
    let opening: Vec<_> = (0..clients).map(|_| tokio::spawn(Connection::open(endpoint.clone()))).collect();
    let mut connections = Vec::with_capacity(clients);
    for open in opening {
        connections.push(open.await.map_err(|e| e.to_string())??);
    }
    let measure_from = Instant::now() + warm_up;
    let stop = measure_from + window;
    let tasks: Vec<_> = connections
        .into_iter()
        .map(|connection| tokio::spawn(client_loop(connection, tool.clone(), measure_from, stop)))
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.map_err(|e| e.to_string())??);
    }
    Ok(Run::new(latencies, window))
}

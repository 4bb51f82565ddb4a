//! Helpers shared by the tests of the workspace: where the official MCP
//! schemas are, validators for their definitions, a raw line-level peer for
//! stdio programs, the installed Python peer, and a small OAuth world
//! ([`oauth`]).

#![allow(clippy::unwrap_used, clippy::missing_panics_doc, missing_debug_implementations)]

pub mod hostile;
pub mod jwt;
pub mod oauth;
pub mod oidc;
pub mod scale;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The root of the workspace.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The folder of the official schemas and examples of `revision`, kept in
/// the repository's `spec/` (see its README for their source and license).
pub fn spec_dir(revision: &str) -> PathBuf {
    workspace_root().join("spec").join(revision)
}

/// Reads a JSON file, naming it in the panic when it cannot.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Validators for the definitions of one schema file, compiled on demand.
pub struct Schema {
    root: Value,
    compiled: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl Schema {
    /// The schema of `revision` (`2026-07-28` or `2025-11-25`).
    pub fn load(revision: &str) -> Schema {
        Schema { root: read_json(&spec_dir(revision).join("schema.json")), compiled: Mutex::default() }
    }

    /// The raw schema.
    pub fn root(&self) -> &Value {
        &self.root
    }

    /// The validator of one definition.
    pub fn validator(&self, definition: &str) -> Arc<jsonschema::Validator> {
        let mut compiled = self.compiled.lock().unwrap();
        compiled
            .entry(definition.to_owned())
            .or_insert_with(|| {
                assert!(self.root["$defs"].get(definition).is_some(), "{definition} is not a schema definition");
                let mut root = self.root.clone();
                root["$ref"] = Value::String(format!("#/$defs/{definition}"));
                Arc::new(jsonschema::validator_for(&root).unwrap())
            })
            .clone()
    }

    /// The errors of `instance` against `definition`, as text.
    pub fn errors(&self, definition: &str, instance: &Value) -> Vec<String> {
        self.validator(definition).iter_errors(instance).map(|e| format!("{e} at {}", e.instance_path())).collect()
    }
}

/// The schema definition of the response to a 2026-07-28 method.
pub fn result_response_definition(method: &str) -> Option<&'static str> {
    Some(match method {
        "server/discover" => "DiscoverResultResponse",
        "tools/list" => "ListToolsResultResponse",
        "tools/call" => "CallToolResultResponse",
        "prompts/list" => "ListPromptsResultResponse",
        "prompts/get" => "GetPromptResultResponse",
        "resources/list" => "ListResourcesResultResponse",
        "resources/templates/list" => "ListResourceTemplatesResultResponse",
        "resources/read" => "ReadResourceResultResponse",
        "completion/complete" => "CompleteResultResponse",
        "subscriptions/listen" => "SubscriptionsListenResultResponse",
        _ => return None,
    })
}

/// A program on stdio driven line by line, with a deadline on every read.
pub struct RawPeer {
    /// The process.
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
}

/// How long a test waits for one line: a guard against a hang, not a
/// measure of speed, so generous enough for a loaded two-core CI machine
/// running a dozen bridges and Python peers at once.
pub const LINE_DEADLINE: Duration = Duration::from_secs(30);

impl RawPeer {
    /// Starts `program` with `args`, stderr passed through.
    pub fn spawn(program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> RawPeer {
        let mut command = Command::new(program);
        command.args(args).stderr(Stdio::inherit());
        RawPeer::start(command)
    }

    /// Starts a prepared command (its environment, its stderr) with piped
    /// stdin and stdout. A bridge started so keeps no era cache between
    /// runs (`MCP_BRIDGE_ERA_CACHE=off`) unless the command sets one: a
    /// test must not read or write the user's.
    pub fn start(mut command: Command) -> RawPeer {
        if !command.as_std().get_envs().any(|(name, _)| name == "MCP_BRIDGE_ERA_CACHE") {
            command.env("MCP_BRIDGE_ERA_CACHE", "off");
        }
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).kill_on_drop(true).spawn().unwrap();
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        RawPeer { child, stdin, lines }
    }

    /// Writes raw bytes.
    pub async fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Writes one line.
    pub async fn send(&mut self, line: &str) {
        self.send_bytes(format!("{line}\n").as_bytes()).await;
    }

    /// Reads one line as JSON, or panics after [`LINE_DEADLINE`].
    pub async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(LINE_DEADLINE, self.lines.next_line())
            .await
            .expect("no line within the deadline")
            .unwrap()
            .expect("the program closed its stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Reads lines until the response with this id; the messages before it
    /// (notifications, other responses) are skipped.
    pub async fn recv_response(&mut self, id: i64) -> Value {
        loop {
            let message = self.recv().await;
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Takes the program's stdin, to write from another task while this
    /// one reads (a large burst would otherwise fill both pipes).
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// Gives back a stdin taken with [`RawPeer::take_stdin`].
    pub fn put_stdin(&mut self, stdin: ChildStdin) {
        self.stdin = Some(stdin);
    }

    /// Closes the program's stdin (the end of its input).
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Closes stdin and waits for the exit code, or panics after 10 s.
    pub async fn finish(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let status = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await.expect("no exit").unwrap();
        status.code()
    }
}

/// A binary of the workspace, built on demand when a test of another
/// package needs it (cargo only exposes a package's own binaries to its
/// tests).
pub fn workspace_binary(package: &str, name: &str) -> PathBuf {
    built(package, "--bin", name, Path::new(name))
}

/// An example of a workspace package, built on demand (cargo gives tests
/// no path to examples).
pub fn workspace_example(package: &str, name: &str) -> PathBuf {
    built(package, "--example", name, &Path::new("examples").join(name))
}

fn built(package: &str, kind: &str, name: &str, under_debug: &Path) -> PathBuf {
    static BUILD: Mutex<()> = Mutex::new(());
    let _one_at_a_time = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| workspace_root().join("target"));
    let path = target.join("debug").join(under_debug);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--quiet", "-p", package, kind, name])
        .current_dir(workspace_root())
        .status()
        .unwrap();
    assert!(status.success(), "cannot build {name}");
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// Sends a 2025-11-25 `initialize` with these client capabilities (id 0)
/// and returns the response.
pub async fn legacy_initialize(peer: &mut RawPeer, capabilities: Value) -> Value {
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "scripted", "version": "1"}}});
    peer.send(&init.to_string()).await;
    peer.recv().await
}

/// Sends `notifications/initialized`, then a `tools/list` (id
/// `"listening"`), which the bridge forwards once the session's first
/// listen stream is live: after it, every change reaches the client.
/// Returns what came before the list's answer (a fresh session gets
/// nothing unprompted).
pub async fn initialized_and_listening(peer: &mut RawPeer) -> Vec<Value> {
    peer.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    peer.send(r#"{"jsonrpc":"2.0","id":"listening","method":"tools/list"}"#).await;
    let mut before = Vec::new();
    loop {
        let message = peer.recv().await;
        if message["id"] == "listening" {
            return before;
        }
        before.push(message);
    }
}

/// A size field of `/proc/<pid>/status` (`VmHWM`, `VmRSS`, ...) in KiB;
/// `None` once the process is gone.
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The URIs of the example server's resources, sorted: what a client that
/// lists them all sees.
pub const EXAMPLE_SERVER_RESOURCES: [&str; 5] = [
    "example://logo.png",
    "example://readme",
    "skill://example-tour/SKILL.md",
    "skill://example-tour/reference/tools.md",
    "ui://example/weather",
];

/// The `_meta` of a 2026-07-28 request with these client capabilities.
pub fn request_meta(capabilities: Value) -> Value {
    serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"}
    })
}

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

/// Starts `mcp-bridge --listen 127.0.0.1:0 --listen-no-auth ARGS` (the
/// binary at `bridge`) and returns it with the endpoint URL it logs.
pub async fn listening_bridge(bridge: &str, args: &[&str]) -> (Child, String) {
    let mut child = tokio::process::Command::new(bridge)
        .args(["--listen", "127.0.0.1:0", "--listen-no-auth"])
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = stderr_line(&mut child, "mcp-bridge", |line| {
        line.split("serving 2025-11-25 clients at ").nth(1).map(|url| url.trim().to_owned())
    })
    .await;
    (child, url)
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

/// Reads the piped stderr of `child` until `pick` takes a line, within
/// [`LINE_DEADLINE`]; the rest is drained on a task, so the child's writes
/// never block. `who` names the child in the panic.
pub async fn stderr_line<T>(child: &mut Child, who: &str, pick: impl FnMut(&str) -> Option<T>) -> T {
    stderr_line_and_log(child, who, pick).await.0
}

/// [`stderr_line`], and every line the child writes from then on, kept.
pub async fn stderr_line_and_log<T>(
    child: &mut Child,
    who: &str,
    mut pick: impl FnMut(&str) -> Option<T>,
) -> (T, Arc<Mutex<String>>) {
    let mut lines = BufReader::new(child.stderr.take().expect("stderr is piped")).lines();
    let found = tokio::time::timeout(LINE_DEADLINE, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(found) = pick(&line) {
                return found;
            }
        }
        panic!("{who} ended before it said it was ready");
    })
    .await
    .unwrap_or_else(|_| panic!("{who} was not ready in time"));
    (found, kept_lines(lines))
}

/// Reads `lines` to their end on a task, keeping them, so the writer
/// never blocks on a full pipe.
pub fn kept_lines<R>(mut lines: Lines<R>) -> Arc<Mutex<String>>
where
    R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
{
    let log = Arc::new(Mutex::new(String::new()));
    let kept = log.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let mut log = kept.lock().unwrap_or_else(|e| e.into_inner());
            log.push_str(&line);
            log.push('\n');
        }
    });
    log
}

/// Waits until `condition` holds, checking every 10 ms for at most 15 s
/// of the test's clock (virtual on a paused clock); panics naming `what`.
/// For states no event announces; an event is better where there is one.
pub async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !condition() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A running `mcp-example-server --http`: ended on drop.
pub struct ExampleServer {
    /// The process.
    pub child: Child,
    /// The endpoint it serves (`http://127.0.0.1:PORT/mcp`).
    pub url: String,
    /// What it wrote on stderr after it started serving.
    pub log: Arc<Mutex<String>>,
}

/// `mcp-example-server --http 127.0.0.1:0` started by `command` (its
/// binary, with any other arguments and variables).
pub async fn example_server_http(mut command: tokio::process::Command) -> ExampleServer {
    let mut child = command
        .args(["--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (url, log) = stderr_line_and_log(&mut child, "mcp-example-server", |line| {
        line.strip_prefix("mcp-example-server: serving ").map(str::to_owned)
    })
    .await;
    ExampleServer { child, url, log }
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

/// The log lines of one test: a tracing subscriber for the current thread
/// that writes into memory, read back with [`LogCapture::text`].
#[derive(Clone, Default)]
pub struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl LogCapture {
    /// Captures the events of the current thread until the guard is dropped.
    pub fn start() -> (LogCapture, tracing::subscriber::DefaultGuard) {
        let capture = LogCapture::default();
        let writer = capture.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .finish();
        (capture, tracing::subscriber::set_default(subscriber))
    }

    /// What was written so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A 2025-11-25 Streamable HTTP POST of `body` to `url`, with the session id
/// when there is one (a 30 s time limit: a hang guard).
pub fn legacy_http_post(url: &str, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .timeout(Duration::from_secs(30))
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request
}

/// A 2026-07-28 `tools/list` POST to `url` with these `Authorization`
/// values: the status and the `WWW-Authenticate` value.
pub async fn modern_post(url: &str, authorization: &[&str]) -> (u16, Option<String>) {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": request_meta(serde_json::json!({}))}});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(body.to_string());
    for value in authorization {
        request = request.header("authorization", *value);
    }
    let response = request.send().await.unwrap();
    let challenge = response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), challenge)
}

/// A loopback port nothing listens on now, for a program that must be told
/// its port before it binds (a sign-in redirect, haproxy, a uvicorn
/// server). Picked below the kernel's ephemeral range (32768..61000), where
/// no outgoing connection of a test running beside this one can take it
/// between this check and the program's bind, as a port the kernel hands
/// out for `127.0.0.1:0` can be.
pub fn spare_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let seed = std::process::id().wrapping_mul(2_654_435_761)
        ^ std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    loop {
        let n = seed.wrapping_add(NEXT.fetch_add(7_919, Ordering::Relaxed));
        let port = 20_000 + (n % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// `mcp-bridge` (at `bridge`) for `url`, signing in through the `$BROWSER`
/// `browser`: its home, tokens in files there, the sign-in redirected to a
/// free loopback port, the authorization server trusted through `ca_file`;
/// its stderr piped.
pub fn bridge_signing_in(bridge: &Path, home: &Path, browser: &Path, ca_file: &Path, url: &str) -> Command {
    let port = spare_port();
    let mut command = Command::new(bridge);
    command
        .env("HOME", home)
        .env_remove("XDG_STATE_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env("MCP_BRIDGE_TOKEN_STORE", "files")
        .env("BROWSER", browser)
        .args(["--ca-file", ca_file.to_str().unwrap(), "--redirect-port", &port.to_string(), url])
        .stderr(Stdio::piped());
    command
}

/// The messages of a Streamable HTTP response: its JSON body, or each
/// event of its SSE stream.
pub async fn response_messages(response: reqwest::Response) -> Vec<Value> {
    let is_sse = response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream");
    let text = response.text().await.unwrap();
    if !is_sse {
        return vec![serde_json::from_str(&text).unwrap()];
    }
    text.split("\n\n")
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

/// A folder of one test's own under the system's temporary folder
/// (`mcp-NAME-PID`), empty at the start and removed when dropped, unless
/// the test is failing (then it is kept to be looked at).
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// Makes the folder `mcp-NAME-PID`, emptied first.
    pub fn new(name: &str) -> ScratchDir {
        let dir = std::env::temp_dir().join(format!("mcp-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        ScratchDir(dir)
    }
}

impl std::ops::Deref for ScratchDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

//! A raw line-level peer for stdio programs, and the 2025-11-25 opening it
//! often starts with.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

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

/// The `_meta` of a 2026-07-28 request with these client capabilities.
pub fn request_meta(capabilities: Value) -> Value {
    serde_json::json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"}
    })
}

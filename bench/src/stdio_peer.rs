//! A program under test spoken to in JSON-RPC lines over its stdin and
//! stdout, as a legacy (2025-11-25) or a modern (2026-07-28) client.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::stats::Run;

/// Which protocol revision the client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// 2025-11-25: an `initialize` handshake first, no `_meta` envelope.
    Legacy,
    /// 2026-07-28: every request carries its version and capabilities.
    Modern,
}

/// Answers longer than this are not parsed whole: their id is read from
/// the start of the line, so a 64 MiB result costs the client one scan.
const PARSE_WHOLE_UP_TO: usize = 64 * 1024;

/// The capabilities the benchmark client declares: form elicitation, so
/// input rounds can be answered.
fn capabilities() -> Value {
    json!({"elicitation": {"form": {}}})
}

/// One request line (without the newline).
pub fn request_line(dialect: Dialect, id: u64, method: &str, mut params: Value) -> Vec<u8> {
    if dialect == Dialect::Modern
        && let Some(object) = params.as_object_mut()
    {
        object.insert(
            "_meta".into(),
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": capabilities(),
                "io.modelcontextprotocol/clientInfo": {"name": "mcp-bench", "version": "1"}
            }),
        );
    }
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string().into_bytes()
}

/// What the client learned from one line the program wrote.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// An answer to one of the client's requests.
    Answer {
        /// The request's id.
        id: u64,
        /// False for an error.
        ok: bool,
    },
    /// A request from the program (an input request of the bridge).
    Request {
        /// Its id, to answer with.
        id: Value,
        /// Its method.
        method: String,
    },
    /// A notification or anything else the client does not act on.
    Other,
}

/// Reads what a line is; a long line is judged by its first and last
/// bytes only (the id is the first `"id":` member of its start, or else the
/// last of its end: members may come in any order).
pub fn classify(line: &[u8]) -> Incoming {
    if line.len() > PARSE_WHOLE_UP_TO {
        let (head, tail) = (&line[..512], &line[line.len() - 512..]);
        let ok =
            memchr::memmem::find(head, b"\"error\"").is_none() && memchr::memmem::rfind(tail, b"\"error\"").is_none();
        let id = id_after(head, memchr::memmem::find(head, b"\"id\":"))
            .or_else(|| id_after(tail, memchr::memmem::rfind(tail, b"\"id\":")));
        return match id {
            Some(id) => Incoming::Answer { id, ok },
            None => Incoming::Other,
        };
    }
    let Ok(message) = serde_json::from_slice::<Value>(line) else { return Incoming::Other };
    match (message.get("method").and_then(Value::as_str), message.get("id")) {
        (Some(method), Some(id)) => Incoming::Request { id: id.clone(), method: method.to_owned() },
        (None, Some(id)) => match id.as_u64() {
            Some(id) => Incoming::Answer { id, ok: message.get("result").is_some() },
            None => Incoming::Other,
        },
        _ => Incoming::Other,
    }
}

/// The number after the `"id":` found at `at` in `bytes`.
fn id_after(bytes: &[u8], at: Option<usize>) -> Option<u64> {
    let at = at? + 5;
    let digits: Vec<u8> =
        bytes[at..].iter().copied().skip_while(|b| *b == b' ').take_while(u8::is_ascii_digit).collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

/// A running program with its pipes.
#[derive(Debug)]
pub struct StdioPeer {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    line: Vec<u8>,
    dialect: Dialect,
    next_id: u64,
}

impl StdioPeer {
    /// Starts `program ARGS` (its stderr discarded) and returns once it
    /// answers: a legacy client runs the `initialize` handshake, a modern
    /// one `server/discover`.
    pub async fn start<S: AsRef<OsStr>>(
        program: impl AsRef<OsStr>,
        args: &[S],
        envs: &[(&str, &OsStr)],
        dialect: Dialect,
    ) -> io::Result<StdioPeer> {
        let mut child = Command::new(program)
            .args(args)
            .envs(envs.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().ok_or_else(|| io::Error::other("no stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| io::Error::other("no stdout"))?;
        let mut peer = StdioPeer {
            child,
            stdin: BufWriter::with_capacity(64 * 1024, stdin),
            stdout: BufReader::with_capacity(1024 * 1024, stdout),
            line: Vec::new(),
            dialect,
            next_id: 0,
        };
        match dialect {
            Dialect::Legacy => peer.initialize().await?,
            Dialect::Modern => {
                peer.call("server/discover", json!({})).await?;
            }
        }
        Ok(peer)
    }

    /// The `initialize` request and the `initialized` notification.
    async fn initialize(&mut self) -> io::Result<()> {
        let params = json!({"protocolVersion": "2025-11-25", "capabilities": capabilities(),
            "clientInfo": {"name": "mcp-bench", "version": "1"}});
        self.call("initialize", params).await?;
        self.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await?;
        self.stdin.flush().await
    }

    /// The process id, for its memory figures.
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    /// Peak resident memory of the process so far (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> u64 {
        crate::proc_status::kib(self.pid(), "VmHWM").unwrap_or(0)
    }

    /// A request line of this client's dialect with a fresh id.
    pub fn request(&mut self, method: &str, params: Value) -> (u64, Vec<u8>) {
        self.next_id += 1;
        (self.next_id, request_line(self.dialect, self.next_id, method, params))
    }

    async fn send(&mut self, line: &[u8]) -> io::Result<()> {
        self.stdin.write_all(line).await?;
        self.stdin.write_all(b"\n").await
    }

    async fn next_line(&mut self) -> io::Result<&[u8]> {
        self.line.clear();
        if self.stdout.read_until(b'\n', &mut self.line).await? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the program closed its stdout"));
        }
        Ok(&self.line)
    }

    /// Sends one request and waits for its answer, answering input requests
    /// (a form elicitation is accepted with a name; a modern input round is
    /// retried with the answer and the request state).
    pub async fn call(&mut self, method: &str, params: Value) -> io::Result<Value> {
        let (id, line) = self.request(method, params.clone());
        self.send(&line).await?;
        self.stdin.flush().await?;
        loop {
            let line = self.next_line().await?;
            let message: Value = match serde_json::from_slice(line) {
                Ok(message) => message,
                Err(_) => continue,
            };
            if message.get("method").and_then(Value::as_str) == Some("elicitation/create") {
                let answer = json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"action": "accept", "content": {"name": "Bench"}}});
                self.send(answer.to_string().as_bytes()).await?;
                self.stdin.flush().await?;
                continue;
            }
            if message.get("id").and_then(Value::as_u64) != Some(id) || message.get("method").is_some() {
                continue;
            }
            if let Some(error) = message.get("error") {
                return Err(io::Error::other(format!("{method} failed: {error}")));
            }
            let result = message.get("result").cloned().unwrap_or(Value::Null);
            if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
                return Box::pin(self.call(method, retry_params(&params, &result))).await;
            }
            return Ok(result);
        }
    }

    /// Keeps `in_flight` requests made by `make` outstanding, from now until
    /// `warm_up + window` has passed; the calls sent after the warm-up are
    /// measured. Every answer must be a result.
    pub async fn closed_loop(
        &mut self,
        make: &dyn Fn(&mut StdioPeer) -> (u64, Vec<u8>),
        in_flight: usize,
        warm_up: Duration,
        window: Duration,
    ) -> io::Result<Run> {
        let started = Instant::now();
        let (measure_from, stop) = (started + warm_up, started + warm_up + window);
        let mut sent_at = HashMap::with_capacity(in_flight);
        for _ in 0..in_flight {
            let (id, line) = make(self);
            self.send(&line).await?;
            sent_at.insert(id, Instant::now());
        }
        self.stdin.flush().await?;
        let mut latencies = Vec::new();
        while !sent_at.is_empty() {
            let line = self.next_line().await?;
            let Incoming::Answer { id, ok } = classify(line) else { continue };
            let Some(sent) = sent_at.remove(&id) else { continue };
            if !ok {
                let start = String::from_utf8_lossy(&line[..line.len().min(300)]).into_owned();
                return Err(io::Error::other(format!("request {id} was answered with an error: {start}")));
            }
            if sent >= measure_from && sent < stop {
                latencies.push(sent.elapsed());
            }
            if Instant::now() < stop {
                let (id, line) = make(self);
                self.send(&line).await?;
                self.stdin.flush().await?;
                sent_at.insert(id, Instant::now());
            }
        }
        Ok(Run::new(latencies, window))
    }

    /// `count` calls of `method` one after another; each answer must be a
    /// result. The runs' latencies, with calls per second over their sum.
    pub async fn sequential(&mut self, method: &str, params: &Value, count: usize) -> io::Result<Run> {
        let mut latencies = Vec::with_capacity(count);
        for _ in 0..count {
            let (id, line) = self.request(method, params.clone());
            let sent = Instant::now();
            self.send(&line).await?;
            self.stdin.flush().await?;
            loop {
                match classify(self.next_line().await?) {
                    Incoming::Answer { id: got, ok } if got == id => {
                        if !ok {
                            return Err(io::Error::other(format!("{method} was answered with an error")));
                        }
                        break;
                    }
                    _ => continue,
                }
            }
            latencies.push(sent.elapsed());
        }
        let total = latencies.iter().sum();
        Ok(Run::new(latencies, total))
    }

    /// Whole calls of `method` (input rounds answered, see [`call`](Self::call))
    /// one after another for `warm_up + window`; those sent in the window
    /// are measured.
    pub async fn timed_calls(
        &mut self,
        method: &str,
        params: &Value,
        warm_up: Duration,
        window: Duration,
    ) -> io::Result<Run> {
        let measure_from = Instant::now() + warm_up;
        let stop = measure_from + window;
        let mut latencies = Vec::new();
        while Instant::now() < stop {
            let sent = Instant::now();
            self.call(method, params.clone()).await?;
            if sent >= measure_from {
                latencies.push(sent.elapsed());
            }
        }
        Ok(Run::new(latencies, window))
    }

    /// Closes stdin and waits (at most 10 s) for the program to exit.
    pub async fn close(mut self) {
        let _ = self.stdin.shutdown().await;
        drop(self.stdin);
        if tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}

/// The params of a modern retry after an `InputRequiredResult`: every input
/// request answered (form elicitations accepted with a name) and the
/// request state echoed.
fn retry_params(params: &Value, input_required: &Value) -> Value {
    let mut retry = params.clone();
    let mut responses = serde_json::Map::new();
    if let Some(requests) = input_required.get("inputRequests").and_then(Value::as_object) {
        for key in requests.keys() {
            responses.insert(key.clone(), json!({"action": "accept", "content": {"name": "Bench"}}));
        }
    }
    if let Some(object) = retry.as_object_mut() {
        object.insert("inputResponses".into(), Value::Object(responses));
        if let Some(state) = input_required.get("requestState") {
            object.insert("requestState".into(), state.clone());
        }
    }
    retry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_are_parsed_whole() {
        assert_eq!(classify(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#), Incoming::Answer { id: 7, ok: true });
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":8,"error":{"code":-1,"message":"x"}}"#),
            Incoming::Answer { id: 8, ok: false }
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":"b-1","method":"elicitation/create","params":{}}"#),
            Incoming::Request { id: json!("b-1"), method: "elicitation/create".into() }
        );
        assert_eq!(classify(br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#), Incoming::Other);
        assert_eq!(classify(b"not json"), Incoming::Other);
    }

    #[test]
    fn long_lines_are_judged_by_their_start() {
        let text = "x".repeat(PARSE_WHOLE_UP_TO);
        let line = json!({"jsonrpc": "2.0", "id": 42, "result": {"content": [{"type": "text", "text": text}]}});
        assert_eq!(classify(line.to_string().as_bytes()), Incoming::Answer { id: 42, ok: true });
        let error = json!({"jsonrpc": "2.0", "id": 43, "error": {"code": -1, "message": text}});
        assert_eq!(classify(error.to_string().as_bytes()), Incoming::Answer { id: 43, ok: false });
    }

    #[test]
    fn modern_requests_carry_the_envelope_and_legacy_ones_do_not() {
        let modern: Value = serde_json::from_slice(&request_line(Dialect::Modern, 1, "tools/list", json!({}))).unwrap();
        assert_eq!(modern["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
        let legacy: Value = serde_json::from_slice(&request_line(Dialect::Legacy, 2, "tools/list", json!({}))).unwrap();
        assert!(legacy["params"].get("_meta").is_none());
        assert_eq!(legacy["id"], 2);
    }

    #[test]
    fn a_retry_answers_every_input_request_and_echoes_the_state() {
        let result = json!({"resultType": "input_required", "requestState": "s1",
            "inputRequests": {"name": {"method": "elicitation/create", "params": {}}}});
        let retry = retry_params(&json!({"name": "ask_name"}), &result);
        assert_eq!(retry["requestState"], "s1");
        assert_eq!(retry["inputResponses"]["name"]["action"], "accept");
        assert_eq!(retry["name"], "ask_name");
    }
}

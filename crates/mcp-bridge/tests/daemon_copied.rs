//! The daemon serving a client whose bytes `attach` copies on the
//! connection itself (Windows, which passes no descriptors): MCP follows
//! the answer on the connection, and a handshake made with a daemon that
//! went away is resumed without a second answer.
#![cfg(unix)]

use std::time::Duration;

use mcp_bridge::daemon::wire::{self, Answer, Hello, Resume};
use mcp_bridge::daemon::{self, DaemonListener, DaemonOptions};
use mcp_bridge_sdk::toolset::config;
use serde_json::{Value, json};
use test_support::ScratchDir;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio_util::sync::CancellationToken;

const DEADLINE: Duration = Duration::from_secs(30);

/// A connection attached with `resume`, MCP from here on.
struct Copied {
    lines: Lines<BufReader<OwnedReadHalf>>,
    write: OwnedWriteHalf,
}

impl Copied {
    async fn attach(socket: &std::path::Path, resume: Option<Resume>) -> Copied {
        let (read, mut write) = UnixStream::connect(socket).await.unwrap().into_split();
        let hello = Hello::Attach { servers: None, hand_over: false, resume };
        write.write_all(&wire::line(&hello)).await.unwrap();
        let mut lines = BufReader::new(read).lines();
        let answer: Answer = serde_json::from_str(&next(&mut lines).await).unwrap();
        assert!(matches!(answer, Answer::Attached { hand_over: false, .. }), "{answer:?}");
        Copied { lines, write }
    }

    async fn send(&mut self, message: &Value) {
        self.write.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }

    /// The lines up to the answer to `id`, that one last.
    async fn until_answer(&mut self, id: u64) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message: Value = serde_json::from_str(&next(&mut self.lines).await).unwrap();
            let done = message["id"] == id && message.get("method").is_none();
            seen.push(message);
            if done {
                return seen;
            }
        }
    }
}

async fn next(lines: &mut Lines<BufReader<OwnedReadHalf>>) -> String {
    let line = tokio::time::timeout(DEADLINE, lines.next_line()).await.expect("a line within the deadline");
    line.unwrap().expect("the connection is open")
}

fn echo(id: u64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "example__echo", "arguments": {"text": text}}})
}

#[tokio::test]
async fn a_copied_client_is_served_on_the_connection_and_resumes_its_handshake_without_a_second_answer() {
    let dir = ScratchDir::new("daemon-copied");
    let example = test_support::workspace_binary("mcp-example-server", "mcp-example-server");
    let file = json!({"mcpServers": {"example": {"command": example}}}).to_string();
    let servers = config::parse_file(&file, |_| None).unwrap();
    let (_file_changed, servers) = tokio::sync::watch::channel(servers);
    let socket = dir.join("daemon.sock");
    let listener = DaemonListener::bind(&socket).unwrap();
    let stop = CancellationToken::new();
    let serving =
        tokio::spawn(daemon::serve(listener, servers, DaemonOptions::new(dir.join("servers.json")), stop.clone()));

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "copied", "version": "1"}}});
    let mut first = Copied::attach(&socket, None).await;
    first.send(&initialize).await;
    let answered = first.until_answer(1).await;
    assert_eq!(answered.last().unwrap()["result"]["protocolVersion"], "2025-11-25");
    first.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    first.send(&echo(2, "first")).await;
    assert_eq!(first.until_answer(2).await.last().unwrap()["result"]["content"][0]["text"], "first");
    drop(first);

    // The next daemon, as `attach` resumes with it: the client goes on
    // with a call at once, and never sees its initialize answered again.
    let resume = Resume { initialize: initialize.to_string(), initialized: true };
    let mut again = Copied::attach(&socket, Some(resume)).await;
    again.send(&echo(3, "again")).await;
    let seen = again.until_answer(3).await;
    assert_eq!(seen.last().unwrap()["result"]["content"][0]["text"], "again", "{seen:?}");
    assert!(!seen.iter().any(|m| m["id"] == 1), "no second answer to initialize: {seen:?}");
    assert!(seen.iter().any(|m| m["method"] == "notifications/tools/list_changed"), "told to list again: {seen:?}");

    stop.cancel();
    tokio::time::timeout(DEADLINE, serving).await.unwrap().unwrap().unwrap();
    assert!(!socket.exists(), "the socket file goes with the listener");
}

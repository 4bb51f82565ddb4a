//! One hostile client must not lock the others out of `mcp-example-server
//! --http`: floods of connections from one address (127.0.0.2) while
//! another address (127.0.0.3) calls, every call answered 200. On Linux all
//! of 127.0.0.0/8 is loopback, so each client binds its own address.
//!
//! Each flood prints the other client's success rate and latency (run with
//! `--nocapture` to see them).

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::hostile::{self, Calls, DEADLINE, HOSTILE, OTHER, connect_from, legacy_initialize, legacy_request};
use test_support::{ExampleServer, example_server_http, request_meta, workspace_binary};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A low cap keeps the floods cheap.
const CAP: usize = 64;
/// Connections of each flood: well over the cap.
const FLOOD: usize = 100;
/// Calls the other client makes during a flood.
const CALLS: usize = 50;

async fn start(args: &[&str]) -> (ExampleServer, SocketAddr) {
    let mut command = tokio::process::Command::new(workspace_binary("mcp-example-server", "mcp-example-server"));
    command.args(args);
    let server = example_server_http(command).await;
    let addr = server.url.trim_start_matches("http://").trim_end_matches("/mcp").parse().unwrap();
    (server, addr)
}

/// The status of the response head arriving on `socket`; `None` when the
/// connection is closed first. Reads the head and no further on purpose.
async fn status_of(socket: &mut TcpStream) -> Option<u16> {
    let mut head = Vec::new();
    let mut buf = [0u8; 512];
    let read = tokio::time::timeout(DEADLINE, async {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        String::from_utf8_lossy(&head).split(' ').nth(1)?.parse().ok()
    });
    read.await.expect("no response head in time")
}

/// A raw POST of `body` with these extra header lines.
fn raw_post(body: &Value, headers: &str) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Opens [`FLOOD`] connections from the hostile address, the n-th sending
/// `request(n)` and reading no more than its response head; returns the ones
/// the server keeps answering (status 200).
async fn flood(addr: SocketAddr, request: impl Fn(usize) -> Vec<u8>) -> Vec<TcpStream> {
    let mut sockets = Vec::new();
    for n in 0..FLOOD {
        let mut socket = connect_from(HOSTILE, addr).await;
        // A connection given up by the server may be reset under the write.
        let _ = socket.write_all(&request(n)).await;
        sockets.push(socket);
    }
    let mut held = Vec::new();
    for mut socket in sockets {
        if status_of(&mut socket).await == Some(200) {
            held.push(socket);
        }
    }
    held
}

/// The other client's [`CALLS`] calls of `add`, one after another.
async fn other_client_calls(addr: SocketAddr) -> Calls {
    let client = hostile::client_from(OTHER);
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "_meta": request_meta(json!({})), "name": "add", "arguments": {"a": 2, "b": 3}}});
    let mut seen = Calls::default();
    for n in 0..CALLS {
        let started = Instant::now();
        let response = client
            .post(format!("http://{addr}/mcp"))
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "add")
            .body(body.to_string())
            .send()
            .await;
        seen.record(n, started, hostile::sum_answered(response).await);
    }
    seen
}

/// Asserts every call of the other client was answered; prints the figures.
fn report(flood: &str, seen: Calls) {
    hostile::report(flood, CALLS, seen);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_never_finish_their_head_do_not_lock_others_out() {
    let (_server, addr) = start(&["--max-connections", &CAP.to_string()]).await;
    let flooding = hostile::flood_unfinished_heads(addr, FLOOD * 3).await;
    report("never-finished heads", other_client_calls(addr).await);
    flooding.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_streams_never_read_do_not_lock_others_out() {
    let (_server, addr) = start(&["--max-connections", &CAP.to_string()]).await;
    let listen = json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "_meta": request_meta(json!({})), "notifications": {"toolsListChanged": true}}});
    let headers = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\n";
    let held = flood(addr, |_| raw_post(&listen, headers)).await;
    assert!(held.len() >= CAP / 2, "the flood holds only {} listen streams", held.len());
    report("listen streams never read", other_client_calls(addr).await);
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_waiting_on_an_elicitation_do_not_lock_others_out() {
    let (_server, addr) = start(&["--max-connections", &CAP.to_string()]).await;
    let session = legacy_session(HOSTILE, addr, json!({"elicitation": {}})).await;
    let headers = format!("MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {session}\r\n");
    // Ids are unique within a session: a reused one is refused.
    let ask = |id| json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "ask_name", "arguments": {}}});
    let held = flood(addr, |n| raw_post(&ask(n), &headers)).await;
    assert!(held.len() >= CAP / 2, "the flood holds only {} calls", held.len());
    report("calls waiting on an elicitation", other_client_calls(addr).await);
    drop(held);
}

/// A 2025-11-25 session started from `from`; its id.
async fn legacy_session(from: Ipv4Addr, addr: SocketAddr, capabilities: Value) -> String {
    let url = format!("http://{addr}/mcp");
    legacy_initialize(&hostile::client_from(from), &url, capabilities).await.expect("the session was refused")
}

/// Sessions the flood opens: past the cap of 1,000.
const SESSION_FLOOD: usize = 1_100;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_opening_every_session_does_not_lock_others_out() {
    let (_server, addr) = start(&[]).await;
    let url = format!("http://{addr}/mcp");
    let started = Instant::now();
    let opened = hostile::flood_sessions(&url, SESSION_FLOOD).await;
    eprintln!("session flood: {opened}/{SESSION_FLOOD} initialize answered 200 in {:?}", started.elapsed());
    // The flood's newest sessions take the places of its idlest ones.
    assert_eq!(opened, SESSION_FLOOD);
    let other = hostile::client_from(OTHER);
    let session = legacy_initialize(&other, &url, json!({})).await.expect("another client's initialize was refused");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}});
    let response = legacy_request(&other, &url, Some(&session), &call).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let answer = test_support::response_messages(response).await;
    assert_eq!(answer.last().unwrap()["result"]["structuredContent"], json!({"sum": 5}), "{answer:?}");
}

/// The bound on the server's resident memory while eight calls of `big`
/// (64 MiB each) are never read: their results are refused (over the
/// 16 MiB a connection may queue), so what stays is the server's own
/// (about 20 MiB) and the allocator's leftovers of building them.
const RSS_BOUND_KIB: u64 = 96 * 1024;

/// The two memory tests run one after the other: each builds 512 MiB of
/// results, and their servers' memory is what they measure.
static ONE_BIG_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_results_never_read_do_not_pile_up_in_memory() {
    let _alone = ONE_BIG_AT_A_TIME.lock().await;
    let (server, addr) = start(&[]).await;
    let headers = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: big\r\n";
    let call = |id| {
        let big = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "_meta": request_meta(json!({})), "name": "big", "arguments": {"bytes": 64 * 1024 * 1024}}});
        raw_post(&big, headers)
    };
    eight_unread_calls(&server, addr, call, "eight unread calls of big").await;
}

/// The same through a 2025-11-25 session: the embedded bridge's answers
/// are bounded as the SDK's are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_legacy_results_never_read_do_not_pile_up_in_memory() {
    let _alone = ONE_BIG_AT_A_TIME.lock().await;
    let (server, addr) = start(&[]).await;
    let session = legacy_session(HOSTILE, addr, json!({})).await;
    let headers = format!("MCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {session}\r\n");
    let call = |id| {
        let big = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "big", "arguments": {"bytes": 64 * 1024 * 1024}}});
        raw_post(&big, &headers)
    };
    eight_unread_calls(&server, addr, call, "eight unread legacy calls of big").await;
}

/// Sends `call(id)` (a call of `big`) on eight connections that never read
/// their answers, then checks the server's memory and that another client
/// is served.
async fn eight_unread_calls(server: &ExampleServer, addr: SocketAddr, call: impl Fn(u64) -> Vec<u8>, what: &str) {
    let pid = server.child.id().unwrap();
    let mut never_read = Vec::new();
    for id in 1..=8 {
        let mut socket = connect_from(HOSTILE, addr).await;
        socket.write_all(&call(id)).await.unwrap();
        never_read.push(socket);
    }
    // Each answer has started (peeked at, not read: the bytes stay queued).
    for socket in &never_read {
        let mut head = [0u8; 12];
        let peeked = tokio::time::timeout(Duration::from_secs(120), socket.peek(&mut head)).await;
        assert!(matches!(peeked, Ok(Ok(12))), "no answer to a call of big: {peeked:?}");
        assert_eq!(&head, b"HTTP/1.1 200", "{}", String::from_utf8_lossy(&head));
    }
    let rss = test_support::proc_status_kib(pid, "VmRSS").unwrap();
    eprintln!("{what}: the server's VmRSS is {} MiB", rss / 1024);
    assert!(rss < RSS_BOUND_KIB, "the server holds {} MiB for {what}", rss / 1024);
    report(what, other_client_calls(addr).await);
    drop(never_read);
}

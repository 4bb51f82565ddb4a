//! Clients that stop reading or never finish their request must not freeze
//! the server for everyone else: a listen stream that falls behind is ended
//! (its publishers never wait), and a half-open HTTP connection is dropped.

use std::net::SocketAddr;
use std::time::Duration;

use mcp_bridge_sdk::server::ChangeEvent;
use mcp_bridge_sdk::server::http::{ConnectionLimits, HttpOptions};
use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions, Server, transport};
use serde_json::{Value, json};
use test_support::request_meta;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// The changes published in each scenario: far past the 16,600 `set_note`
/// calls after which a single stalled listener used to freeze every
/// publisher.
const PUBLISHES: usize = 100_000;

/// How long the whole burst may take: a hang guard, not a speed measure.
const BURST_DEADLINE: Duration = Duration::from_secs(60);

async fn serve_http(server: &Server, options: HttpOptions) -> (SocketAddr, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let (server, stopped) = (server.clone(), stop.clone());
    tokio::spawn(async move { server.serve_http(listener, options, async move { stopped.cancelled().await }).await });
    (addr, stop)
}

fn listen_body(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "_meta": request_meta(json!({})),
        "notifications": {"resourcesListChanged": true, "resourceSubscriptions": ["note://n"]}
    }})
    .to_string()
}

/// Opens a listen stream over HTTP on a raw socket that is never read.
async fn stalled_http_listener(addr: SocketAddr) -> TcpStream {
    let body = listen_body(1);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let mut socket = TcpStream::connect(addr).await.unwrap();
    socket.write_all(format!("{head}{body}").as_bytes()).await.unwrap();
    socket
}

/// Waits until the server holds `count` listen streams, or panics.
async fn wait_for_streams(server: &Server, count: usize) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while server.open_subscriptions() != count {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{} listen streams open, not {count}", server.open_subscriptions()));
}

/// Publishes the change `set_note` publishes [`PUBLISHES`] times from four
/// tasks at once, then calls `set_note` itself through the in-memory link:
/// every publish and every call must end.
async fn publish_burst(server: &Server) {
    let publishers: Vec<_> = (0..4)
        .map(|_| {
            let server = server.clone();
            tokio::spawn(async move {
                for _ in 0..PUBLISHES / 4 {
                    server.publish(ChangeEvent::ResourceUpdated { uri: "note://n".into() }).await;
                }
            })
        })
        .collect();
    let client = Client::new(ClientOptions::new("publisher", "1"), transport::memory::connect(server));
    tokio::time::timeout(BURST_DEADLINE, async {
        for publisher in publishers {
            publisher.await.unwrap();
        }
        for i in 0..100 {
            let args = json!({"name": "n", "text": format!("text {i}")});
            client.call_tool("set_note", args, &RequestOptions::default()).await.unwrap();
        }
    })
    .await
    .expect("publishers hung behind a listener that does not read");
}

/// A normal call over HTTP, answered.
async fn call_over_http(addr: SocketAddr) -> Value {
    tokio::time::timeout(Duration::from_secs(10), call_over_http_fallible(addr))
        .await
        .expect("a normal call waited more than 10 s")
        .expect("a normal call failed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_over_http_that_never_reads_does_not_stall_publishers() {
    let server = mcp_example_server::build_server();
    let (addr, stop) = serve_http(&server, HttpOptions::default()).await;
    let _stalled = stalled_http_listener(addr).await;
    wait_for_streams(&server, 1).await;
    publish_burst(&server).await;
    // The stalled stream was ended when it fell behind.
    wait_for_streams(&server, 0).await;
    assert_eq!(call_over_http(addr).await["result"]["structuredContent"], json!({"sum": 5}));
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_on_a_stream_that_never_reads_does_not_stall_publishers() {
    let server = mcp_example_server::build_server();
    // A stdio-like connection whose client writes its listen request and
    // never reads: the pipe holds 4 KiB.
    let (client_side, server_side) = tokio::io::duplex(4096);
    let (server_in, server_out) = tokio::io::split(server_side);
    let served = server.clone();
    tokio::spawn(async move { served.serve_stream(server_in, server_out).await });
    let (_never_read, mut client_out) = tokio::io::split(client_side);
    client_out.write_all(format!("{}\n", listen_body(1)).as_bytes()).await.unwrap();
    wait_for_streams(&server, 1).await;
    publish_burst(&server).await;
    wait_for_streams(&server, 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_client_of_the_bridge_that_never_reads_does_not_stall_the_upstream() {
    let server = mcp_example_server::build_server();
    let (addr, stop) = serve_http(&server, HttpOptions::default()).await;
    let bridge = test_support::workspace_binary("mcp-bridge-cli", "mcp-bridge");
    let mut peer = test_support::RawPeer::spawn(&bridge, &[&format!("http://{addr}/mcp")]);
    test_support::legacy_initialize(&mut peer, json!({})).await;
    peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string()).await;
    peer.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": "note://n"}}).to_string(),
    )
    .await;
    assert_eq!(peer.recv_response(1).await["result"], json!({}));
    // From here on the client reads nothing: the bridge's stdout fills, then
    // its listen stream to the upstream stops being read.
    publish_burst(&server).await;
    assert_eq!(call_over_http(addr).await["result"]["structuredContent"], json!({"sum": 5}));
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_http_connections_are_dropped_while_calls_go_on() {
    let limits = ConnectionLimits::default()
        .with_request_read_timeout(Duration::from_millis(500))
        .with_idle_timeout(Duration::from_secs(2))
        .with_max_connections(300);
    let server = mcp_example_server::build_server();
    let (addr, stop) = serve_http(&server, HttpOptions::default().with_connections(limits)).await;
    // Slow clients: a request line and no end of headers.
    let mut slow = Vec::new();
    for _ in 0..200 {
        let mut socket = TcpStream::connect(addr).await.unwrap();
        socket.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
        slow.push(socket);
    }
    assert_eq!(call_over_http(addr).await["result"]["structuredContent"], json!({"sum": 5}));
    // Each slow client is closed by the server (end of stream) within the
    // request read timeout, and the cap is free for normal clients again.
    for mut socket in slow {
        let mut buf = [0u8; 64];
        let read = tokio::time::timeout(Duration::from_secs(30), socket.read(&mut buf)).await;
        assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "a half-open connection was kept: {read:?}");
    }
    assert_eq!(call_over_http(addr).await["result"]["structuredContent"], json!({"sum": 5}));

    // An unused kept-alive connection is closed after the idle timeout.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "_meta": request_meta(json!({})), "name": "add", "arguments": {"a": 1, "b": 1}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: add\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    idle.write_all(request.as_bytes()).await.unwrap();
    let mut answered = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(30), idle.read_to_end(&mut answered)).await;
    assert!(closed.is_ok(), "an idle connection was kept open");
    assert!(String::from_utf8_lossy(&answered).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&answered));
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_over_the_cap_gets_503_and_the_others_go_on() {
    let limits = ConnectionLimits::default().with_max_connections(4);
    let server = mcp_example_server::build_server();
    let (addr, stop) = serve_http(&server, HttpOptions::default().with_connections(limits)).await;
    // Listen streams of this one address fill the cap: a newcomer from the
    // same address finds nobody holding more than it does.
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(stalled_http_listener(addr).await);
    }
    wait_for_streams(&server, 4).await;
    let mut extra = TcpStream::connect(addr).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(30), extra.read_to_string(&mut answer)).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("Retry-After: 1"), "{answer}");
    drop(held);
    // Freed places are taken again (the server notices the closes first).
    let reply = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match tokio::time::timeout(Duration::from_secs(5), call_over_http_fallible(addr)).await {
                Ok(Some(reply)) => return reply,
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(reply["result"]["structuredContent"], json!({"sum": 5}));
    stop.cancel();
}

/// `add` called over HTTP; `None` when the call fails.
async fn call_over_http_fallible(addr: SocketAddr) -> Option<Value> {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "_meta": request_meta(json!({})), "name": "add", "arguments": {"a": 2, "b": 3}
    }});
    let response = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "add")
        .body(body.to_string())
        .send()
        .await
        .ok()?;
    if response.status() != 200 {
        return None;
    }
    response.json().await.ok()
}

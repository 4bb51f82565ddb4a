//! A server built with the SDK serves 2025-11-25 clients by itself (the
//! `legacy` feature): on a byte stream (stdio), a Unix socket, its HTTP
//! endpoint and WebSocket, an `initialize` starts a session on the same registrations a
//! 2026-07-28 client reaches; `ServerBuilder::legacy_clients(None)` turns
//! that off; a stopped listener ends a legacy connection as the end of its
//! input does.

use futures_util::{SinkExt, StreamExt};
use mcp_bridge_protocol::types::{Implementation, Tool};
use mcp_bridge_sdk::Server;
use mcp_bridge_sdk::server::http::HttpOptions;
use serde_json::{Value, json};
use test_support::{legacy_http_post, response_messages};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_tungstenite::tungstenite::Message as WsMessage;
use tokio_util::sync::CancellationToken;

/// A deadline for what a stop must end (far above the grace times).
const ENDS_WITHIN: std::time::Duration = std::time::Duration::from_secs(20);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: f64,
    b: f64,
}

fn calculator() -> mcp_bridge_sdk::server::ServerBuilder {
    Server::builder(Implementation::new("calculator", "1.0"))
        .typed_tool(Tool::new("add"), |x: Add, _| async move { (x.a + x.b).to_string() })
}

fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "legacy-test", "version": "1"}}})
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn add(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}}})
}

/// A 2025-11-25 client on a line stream: one message per line.
struct LineClient<R, W> {
    lines: tokio::io::Lines<BufReader<R>>,
    write: W,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> LineClient<R, W> {
    fn new(read: R, write: W) -> Self {
        LineClient { lines: BufReader::new(read).lines(), write }
    }

    async fn send(&mut self, message: &Value) {
        self.write.write_all(format!("{message}\n").as_bytes()).await.unwrap();
    }

    /// The answer to request `id` (notifications before it are skipped).
    async fn answer(&mut self, id: i64) -> Value {
        loop {
            let line = self.lines.next_line().await.unwrap().expect("the server ended the connection");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// `initialize`, `initialized`, `tools/list` and `tools/call add(2, 3)`.
    async fn use_calculator(&mut self) {
        self.send(&initialize(1)).await;
        let result = self.answer(1).await["result"].clone();
        assert_eq!(result["protocolVersion"], "2025-11-25", "{result}");
        assert_eq!(result["serverInfo"]["name"], "calculator", "{result}");
        self.send(&initialized()).await;
        self.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})).await;
        let tools = self.answer(2).await;
        assert_eq!(tools["result"]["tools"][0]["name"], "add", "{tools}");
        self.send(&add(3)).await;
        let call = self.answer(3).await;
        assert_eq!(call["result"]["content"][0]["text"], "5", "{call}");
    }
}

#[tokio::test]
async fn a_legacy_client_uses_the_server_on_a_byte_stream() {
    let server = calculator().build();
    let (client_side, server_side) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_side);
    let serving = tokio::spawn(async move { server.serve_stream(read, write).await });
    let (read, write) = tokio::io::split(client_side);
    let mut client = LineClient::new(read, write);
    client.use_calculator().await;
    drop(client);
    serving.await.unwrap().unwrap();
}

#[tokio::test]
async fn the_first_request_chooses_however_its_bytes_arrive_and_blank_lines_before_it_are_skipped() {
    let server = calculator().build();
    let (client_side, server_side) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_side);
    tokio::spawn(async move { server.serve_stream(read, write).await });
    let (read, mut write) = tokio::io::split(client_side);
    let first = format!("\n  \r\n{}\n", initialize(1));
    for byte in first.as_bytes() {
        write.write_all(std::slice::from_ref(byte)).await.unwrap();
        write.flush().await.unwrap();
    }
    let mut client = LineClient::new(read, write);
    let result = client.answer(1).await["result"].clone();
    assert_eq!(result["protocolVersion"], "2025-11-25", "{result}");
    client.send(&initialized()).await;
    client.send(&add(2)).await;
    assert_eq!(client.answer(2).await["result"]["content"][0]["text"], "5");
}

#[tokio::test]
async fn a_first_line_over_the_limit_is_answered_by_the_2026_server_and_the_connection_goes_on() {
    let limits = mcp_bridge_sdk::limits::ServerLimits::default().with_max_line_bytes(256);
    let server = calculator().limits(limits).build();
    let (client_side, server_side) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_side);
    tokio::spawn(async move { server.serve_stream(read, write).await });
    let (read, write) = tokio::io::split(client_side);
    let mut client = LineClient::new(read, write);
    let long = json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"pad": "x".repeat(1000)}});
    client.send(&long).await;
    let refused = client.answer(7).await;
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(refused["error"]["data"]["cause"], "line_too_long", "{refused}");
    // The 2026-07-28 server has the connection now: initialize is unknown.
    client.send(&initialize(8)).await;
    assert_eq!(client.answer(8).await["error"]["code"], -32601);
}

#[tokio::test]
async fn without_legacy_clients_initialize_is_an_unknown_method() {
    let server = calculator().legacy_clients(None).build();
    let (client_side, server_side) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_side);
    tokio::spawn(async move { server.serve_stream(read, write).await });
    let (read, write) = tokio::io::split(client_side);
    let mut client = LineClient::new(read, write);
    client.send(&initialize(1)).await;
    assert_eq!(client.answer(1).await["error"]["code"], -32601);
}

#[tokio::test]
async fn a_stopped_stream_ends_a_legacy_connection() {
    let server = calculator().build();
    let (client_side, server_side) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_side);
    let stop = CancellationToken::new();
    let stopping = stop.clone();
    let serving = tokio::spawn(async move { server.serve_stream_until(read, write, stopping).await });
    let (read, write) = tokio::io::split(client_side);
    let mut client = LineClient::new(read, write);
    client.use_calculator().await;
    stop.cancel();
    // The client's end stays open: only the stop can end the connection.
    tokio::time::timeout(ENDS_WITHIN, serving).await.expect("the stop ended the connection").unwrap().unwrap();
    assert_eq!(client.lines.next_line().await.unwrap(), None, "the output closed");
}

#[cfg(unix)]
#[tokio::test]
async fn a_legacy_client_uses_the_server_on_a_unix_socket() {
    let dir = test_support::ScratchDir::new("legacy-unix");
    let path = dir.join("server.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    let server = calculator().build();
    let stop = CancellationToken::new();
    let stopping = stop.clone();
    let serving = tokio::spawn(async move { server.serve_unix(listener, stopping.cancelled_owned()).await });
    let (read, write) = tokio::net::UnixStream::connect(&path).await.unwrap().into_split();
    let mut client = LineClient::new(read, write);
    client.use_calculator().await;
    // The listener stops with the client still connected: its connection ends.
    stop.cancel();
    serving.await.unwrap().unwrap();
    assert_eq!(client.lines.next_line().await.unwrap(), None, "the connection ended");
}

async fn serve_http(server: Server) -> (String, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let stopping = stop.clone();
    tokio::spawn(async move { server.serve_http(listener, HttpOptions::default(), stopping.cancelled_owned()).await });
    (url, stop)
}

#[tokio::test]
async fn a_legacy_client_uses_the_server_over_http() {
    let (url, stop) = serve_http(calculator().build()).await;
    let response = legacy_http_post(&url, None, &initialize(1)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let result = response_messages(response).await.remove(0);
    assert_eq!(result["result"]["serverInfo"]["name"], "calculator", "{result}");
    let status = legacy_http_post(&url, Some(&session), &initialized()).send().await.unwrap().status();
    assert_eq!(status, 202);
    let response = legacy_http_post(&url, Some(&session), &add(2)).send().await.unwrap();
    let call = response_messages(response).await.pop().unwrap();
    assert_eq!(call["result"]["content"][0]["text"], "5", "{call}");
    stop.cancel();
}

#[tokio::test]
async fn without_legacy_clients_the_endpoint_has_no_sessions() {
    let (url, stop) = serve_http(calculator().legacy_clients(None).build()).await;
    let client = reqwest::Client::new();
    assert_eq!(client.get(&url).send().await.unwrap().status(), 405);
    assert_eq!(client.delete(&url).send().await.unwrap().status(), 405);
    let response = legacy_http_post(&url, None, &initialize(1)).send().await.unwrap();
    assert!(response.headers().get("mcp-session-id").is_none(), "no session was started");
    stop.cancel();
}

/// `server` on WebSocket at a free loopback port: its URL, and the token
/// that stops it.
async fn serve_websocket(server: Server) -> (String, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let stopping = stop.clone();
    tokio::spawn(
        async move { server.serve_websocket(listener, HttpOptions::default(), stopping.cancelled_owned()).await },
    );
    (url, stop)
}

/// A raw WebSocket connection to `url`.
async fn ws_connect(url: &str) -> tokio_tungstenite::WebSocketStream<tokio::net::TcpStream> {
    let addr = url.trim_start_matches("ws://").trim_end_matches("/mcp");
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio_tungstenite::client_async(url, tcp).await.unwrap().0
}

/// The answer to request `id` on a WebSocket (notifications skipped).
async fn ws_answer<S>(socket: &mut S, id: i64) -> Value
where
    S: futures_util::Stream<Item = Result<WsMessage, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        let next = tokio::time::timeout(ENDS_WITHIN, socket.next()).await.expect("an answer in time");
        let Some(Ok(WsMessage::Text(text))) = next else { panic!("the connection ended: {next:?}") };
        let message: Value = serde_json::from_str(&text).unwrap();
        if message["id"] == json!(id) {
            return message;
        }
    }
}

#[tokio::test]
async fn a_legacy_client_uses_the_server_over_websocket() {
    let (url, stop) = serve_websocket(calculator().build()).await;
    let mut socket = ws_connect(&url).await;
    // A message spread over lines is one message on WebSocket.
    socket.send(WsMessage::text(serde_json::to_string_pretty(&initialize(1)).unwrap())).await.unwrap();
    let result = ws_answer(&mut socket, 1).await["result"].clone();
    assert_eq!(result["protocolVersion"], "2025-11-25", "{result}");
    assert_eq!(result["serverInfo"]["name"], "calculator", "{result}");
    socket.send(WsMessage::text(initialized().to_string())).await.unwrap();
    socket.send(WsMessage::text(add(2).to_string())).await.unwrap();
    let call = ws_answer(&mut socket, 2).await;
    assert_eq!(call["result"]["content"][0]["text"], "5", "{call}");
    // A stopped listener ends the session and closes the connection.
    stop.cancel();
    let closed = tokio::time::timeout(ENDS_WITHIN, async {
        while let Some(Ok(message)) = socket.next().await {
            if message.is_close() {
                break;
            }
        }
    });
    closed.await.expect("the connection closed after the stop");
}

#[tokio::test]
async fn without_legacy_clients_initialize_over_websocket_is_an_unknown_method() {
    let (url, stop) = serve_websocket(calculator().legacy_clients(None).build()).await;
    let mut socket = ws_connect(&url).await;
    socket.send(WsMessage::text(initialize(1).to_string())).await.unwrap();
    let answer = ws_answer(&mut socket, 1).await;
    assert!(answer["error"].is_object(), "{answer}");
    stop.cancel();
}

#[tokio::test]
async fn the_typescript_1x_client_uses_the_server_over_websocket() {
    let (url, stop) = serve_websocket(calculator().build()).await;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ts/quick_start_client.mjs");
    let node = test_support::node_with_websocket()
        .arg(script)
        .args(["websocket", &url])
        .env("TS_SDK_DIR", test_support::ts_sdk_dir())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(ENDS_WITHIN, node).await.expect("the client ended").unwrap();
    assert!(output.status.success(), "the client failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(seen, json!({"server": "calculator", "tools": ["add"], "add": "5"}));
    stop.cancel();
}

//! The WebSocket transport: the SDK's client and server over ws:// and
//! wss://, the TypeScript SDK's WebSocket client against our server, and
//! the rules that close a connection (size, UTF-8, binary messages).

// The test servers' upgrade callbacks return tungstenite's own (large) error response type.
#![allow(clippy::result_large_err)]

mod common;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use mcp_bridge_protocol::types::{CallToolResult, ContentBlock, SubscriptionFilter, Tool};
use mcp_bridge_sdk::BoxFuture;
use mcp_bridge_sdk::server::http::{ConnectionLimits, HttpOptions};
use mcp_bridge_sdk::transport::http::{AuthProvider, AuthRefusal, BearerToken, Credentials};
use mcp_bridge_sdk::transport::websocket::{WebSocketConfig, connect};
use mcp_bridge_sdk::{Client, ClientOptions, Error, Reply, RequestOptions, Server};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{Message as WsMessage, client::IntoClientRequest};
use tokio_util::sync::CancellationToken;

/// The ping server plus `blob`, which answers `size` bytes of text.
fn server() -> Server {
    let server = common::ping_server();
    let tool: Tool = serde_json::from_value(json!({"name": "blob", "inputSchema": {"type": "object"}})).unwrap();
    let blob = |call: mcp_bridge_sdk::server::ToolCall, _ctx| async move {
        let size = call.arguments.get("size").and_then(Value::as_u64).unwrap_or(0) as usize;
        Ok(Reply::Complete(CallToolResult {
            result_type: Default::default(),
            content: vec![ContentBlock::text("x".repeat(size))],
            structured_content: None,
            is_error: None,
            meta: None,
            extra: Default::default(),
        }))
    };
    futures_util::FutureExt::now_or_never(server.add_tool(tool, blob)).unwrap();
    server
}

/// Serves `server` on a loopback port; the token stops it.
async fn serve(server: Server, options: HttpOptions) -> (SocketAddr, CancellationToken, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let stopped = stop.clone();
    let task = tokio::spawn(async move {
        server.serve_websocket(listener, options, stopped.cancelled_owned()).await.unwrap();
    });
    (addr, stop, task)
}

async fn client(config: WebSocketConfig) -> Client {
    Client::new(ClientOptions::new("ws-test", "1"), connect(config).await.unwrap())
}

fn pong(result: &CallToolResult) -> bool {
    matches!(&result.content[0], ContentBlock::Text(t) if t.text == "pong")
}

#[tokio::test]
async fn clients_over_websocket_are_served_and_a_listen_stream_ends_at_shutdown() {
    let (addr, stop, serving) = serve(server(), HttpOptions::default()).await;
    let url = format!("ws://{addr}/mcp");
    let (a, b) = (client(WebSocketConfig::new(&url)).await, client(WebSocketConfig::new(&url)).await);
    let o = RequestOptions::default();
    let (ra, rb) = tokio::join!(a.call_tool("ping", json!({}), &o), b.call_tool("ping", json!({}), &o));
    assert!(pong(&ra.unwrap()) && pong(&rb.unwrap()));
    let tools = a.list_all_tools(&o).await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["ping", "blob"]);
    // A result near the default limit of 4 MiB arrives whole.
    let big = a.call_tool("blob", json!({"size": 3 << 20}), &o).await.unwrap();
    assert!(matches!(&big.content[0], ContentBlock::Text(t) if t.text.len() == 3 << 20));
    let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    let listening = common::listening(a, filter).await;
    stop.cancel();
    serving.await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(5), listening).await.unwrap().unwrap();
    assert!(ended.is_ok(), "{ended:?}");
    // The server's connections end with it (a close): none outlives it.
    let after = b.call_tool("ping", json!({}), &o).await.unwrap_err();
    assert!(matches!(after, Error::Closed), "{after:?}");
}

#[tokio::test]
async fn a_refused_or_impossible_connection_says_why() {
    let (addr, _stop, _serving) = serve(server(), HttpOptions::default()).await;
    let status_of = |e: Error| match e {
        Error::Upgrade { status, .. } => status,
        other => panic!("an upgrade error was expected, got {other:?}"),
    };
    let wrong_path = connect(WebSocketConfig::new(format!("ws://{addr}/elsewhere"))).await.unwrap_err();
    assert_eq!(status_of(wrong_path), Some(404));
    let mut from_a_web_page = WebSocketConfig::new(format!("ws://{addr}/mcp"));
    from_a_web_page.headers.push(("Origin".into(), "https://evil.example".into()));
    assert_eq!(status_of(connect(from_a_web_page).await.unwrap_err()), Some(403));
    let free = TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    let nobody = connect(WebSocketConfig::new(format!("ws://{free}/mcp"))).await.unwrap_err();
    assert!(matches!(nobody, Error::Connect { .. }), "{nobody:?}");
    for (url, why) in [
        (format!("http://{addr}/mcp"), "ws:// or wss://"),
        (format!("ws://user:s3cret@{addr}/mcp"), "no user name or password"),
        ("ws://".to_owned(), "not a valid URL"),
    ] {
        let e = connect(WebSocketConfig::new(&url)).await.unwrap_err();
        assert!(matches!(&e, Error::InvalidRequest { reason } if reason.contains(why)), "{url}: {e:?}");
        assert!(!e.to_string().contains("s3cret"));
    }
    let mut bad_header = WebSocketConfig::new(format!("ws://{addr}/mcp"));
    bad_header.headers.push(("X-Token".into(), "a\nb".into()));
    assert!(matches!(connect(bad_header).await.unwrap_err(), Error::InvalidRequest { .. }));
}

#[tokio::test]
async fn a_message_over_the_client_limit_closes_the_connection() {
    let (addr, _stop, _serving) = serve(server(), HttpOptions::default()).await;
    let mut config = WebSocketConfig::new(format!("ws://{addr}/mcp"));
    config.max_message_bytes = 4096;
    let client = client(config).await;
    let o = RequestOptions::default();
    assert!(pong(&client.call_tool("ping", json!({}), &o).await.unwrap()));
    let err = client.call_tool("blob", json!({"size": 8192}), &o).await.unwrap_err();
    assert!(matches!(err, Error::Closed), "{err:?}");
    let after = client.call_tool("ping", json!({}), &o).await.unwrap_err();
    assert!(matches!(after, Error::Closed), "{after:?}");
}

/// The upgrade callback of a raw test server: selects the `mcp` subprotocol.
fn select_mcp(_: &Request, mut response: Response) -> Result<Response, ErrorResponse> {
    response.headers_mut().insert("sec-websocket-protocol", HeaderValue::from_static("mcp"));
    Ok(response)
}

/// A server that accepts one upgrade (selecting `mcp`), reads the client's
/// first message, then runs `misbehave` on the raw connection and reports
/// the close frame the client sent back.
async fn one_shot_server<F, Fut>(misbehave: F) -> (String, tokio::task::JoinHandle<Option<CloseCode>>)
where
    F: FnOnce(tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>) -> Fut + Send + 'static,
    Fut: Future<Output = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_hdr_async(tcp, select_mcp).await.unwrap();
        let _first = ws.next().await;
        let mut ws = misbehave(ws).await;
        loop {
            match ws.next().await {
                Some(Ok(WsMessage::Close(frame))) => return frame.map(|f| f.code),
                Some(Ok(_)) => continue,
                _ => return None,
            }
        }
    });
    (url, task)
}

#[tokio::test]
async fn invalid_utf8_or_a_binary_message_from_the_server_closes_the_connection() {
    // A text frame (FIN, opcode 1) of two bytes that are not UTF-8.
    let (url, closed) = one_shot_server(|mut ws| async move {
        ws.get_mut().write_all(&[0x81, 0x02, 0xc3, 0x28]).await.unwrap();
        ws
    })
    .await;
    let ws_client = client(WebSocketConfig::new(url)).await;
    let err = ws_client.discover(&RequestOptions::default()).await.unwrap_err();
    assert!(matches!(err, Error::Closed), "{err:?}");
    assert_eq!(closed.await.unwrap(), Some(CloseCode::Invalid));

    let (url, closed) = one_shot_server(|mut ws| async move {
        ws.send(WsMessage::binary(b"{}".to_vec())).await.unwrap();
        ws
    })
    .await;
    let ws_client = client(WebSocketConfig::new(url)).await;
    let err = ws_client.discover(&RequestOptions::default()).await.unwrap_err();
    assert!(matches!(err, Error::Closed), "{err:?}");
    assert_eq!(closed.await.unwrap(), Some(CloseCode::Unsupported));
}

#[tokio::test]
async fn the_server_answers_bad_json_and_closes_on_oversized_binary_or_invalid_utf8() {
    let options = HttpOptions::default().with_max_body_bytes(1024);
    let (addr, _stop, _serving) = serve(server(), options).await;
    let raw = || async move {
        let mut request = format!("ws://{addr}/mcp").into_client_request().unwrap();
        request.headers_mut().insert("sec-websocket-protocol", HeaderValue::from_static("mcp"));
        let (ws, response) =
            tokio_tungstenite::client_async(request, tokio::net::TcpStream::connect(addr).await.unwrap())
                .await
                .unwrap();
        assert_eq!(response.headers()["sec-websocket-protocol"], "mcp");
        ws
    };
    let close_code = |message: Option<Result<WsMessage, _>>| match message {
        Some(Ok(WsMessage::Close(Some(frame)))) => frame.code,
        other => panic!("a close frame was expected, got {other:?}"),
    };

    let mut ws = raw().await;
    ws.send(WsMessage::text("{not json")).await.unwrap();
    let Some(Ok(WsMessage::Text(answer))) = ws.next().await else { panic!("an answer was expected") };
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    // The connection goes on after a bad message.
    let meta = test_support::request_meta(json!({}));
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "ping", "arguments": {}, "_meta": meta}});
    ws.send(WsMessage::text(call.to_string())).await.unwrap();
    let Some(Ok(WsMessage::Text(answer))) = ws.next().await else { panic!("an answer was expected") };
    assert_eq!(serde_json::from_str::<Value>(&answer).unwrap()["id"], 7);
    ws.send(WsMessage::text("x".repeat(2048))).await.unwrap();
    assert_eq!(close_code(ws.next().await), CloseCode::Size);

    let mut ws = raw().await;
    ws.send(WsMessage::binary(b"{}".to_vec())).await.unwrap();
    assert_eq!(close_code(ws.next().await), CloseCode::Unsupported);

    let mut ws = raw().await;
    // A masked text frame (the client must mask) of two bytes that are not UTF-8.
    let (mask, payload) = ([1u8, 2, 3, 4], [0xc3u8, 0x28]);
    let frame = [0x81, 0x82, mask[0], mask[1], mask[2], mask[3], payload[0] ^ mask[0], payload[1] ^ mask[1]];
    ws.get_mut().write_all(&frame).await.unwrap();
    assert_eq!(close_code(ws.next().await), CloseCode::Invalid);

    // Subprotocols that do not include mcp are refused.
    let mut request = format!("ws://{addr}/mcp").into_client_request().unwrap();
    request.headers_mut().insert("sec-websocket-protocol", HeaderValue::from_static("graphql-ws"));
    let refused = tokio_tungstenite::client_async(request, tokio::net::TcpStream::connect(addr).await.unwrap()).await;
    let Err(tokio_tungstenite::tungstenite::Error::Http(response)) = refused else { panic!("{refused:?}") };
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

/// A WebSocket server that answers every request with `pong` once `check`
/// let its upgrade through; its `ws://` URL.
async fn pong_server<F>(check: F) -> String
where
    F: Fn(&Request) -> Result<(), ErrorResponse> + Clone + Send + Unpin + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let check = check.clone();
            let upgrade = move |request: &Request, mut response: Response| -> Result<Response, ErrorResponse> {
                check(request)?;
                response.headers_mut().insert("sec-websocket-protocol", HeaderValue::from_static("mcp"));
                Ok(response)
            };
            let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(tcp, upgrade).await else { continue };
            tokio::spawn(async move {
                while let Some(Ok(WsMessage::Text(text))) = ws.next().await {
                    let request: Value = serde_json::from_str(&text).unwrap();
                    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"content": [{"type": "text", "text": "pong"}]}});
                    ws.send(WsMessage::text(answer.to_string())).await.unwrap();
                }
            });
        }
    });
    url
}

/// Gives no credentials until the server refuses, then a token.
#[derive(Debug, Default)]
struct SignInOnRefusal {
    token: Mutex<Option<String>>,
    refusals: Mutex<Vec<AuthRefusal>>,
}

impl AuthProvider for SignInOnRefusal {
    fn authorization(&self) -> BoxFuture<Result<Option<String>, mcp_bridge_sdk::BoxError>> {
        let token = self.token.lock().unwrap().clone();
        Box::pin(async move { Ok(token.map(|t| format!("Bearer {t}"))) })
    }

    fn refused(&self, refusal: AuthRefusal) -> BoxFuture<bool> {
        self.refusals.lock().unwrap().push(refusal);
        *self.token.lock().unwrap() = Some("tok-ws-s3cret".into());
        Box::pin(async { true })
    }
}

#[tokio::test]
async fn credentials_go_on_the_upgrade_and_a_refusal_asks_the_provider_once() {
    // A server that wants `Bearer tok-ws-s3cret`.
    let url = pong_server(|request: &Request| {
        if request.headers().get("authorization").is_none_or(|v| v != "Bearer tok-ws-s3cret") {
            let mut refusal = ErrorResponse::new(None);
            *refusal.status_mut() = StatusCode::UNAUTHORIZED;
            refusal.headers_mut().insert("www-authenticate", HeaderValue::from_static("Bearer realm=\"mcp\""));
            return Err(refusal);
        }
        Ok(())
    })
    .await;
    let provider = Arc::new(SignInOnRefusal::default());
    let mut config = WebSocketConfig::new(&url);
    config.auth = Some(provider.clone());
    let client = client(config).await;
    assert!(pong(&client.call_tool("ping", json!({}), &RequestOptions::default()).await.unwrap()));
    let refusals = provider.refusals.lock().unwrap().clone();
    assert_eq!(refusals.len(), 1);
    assert_eq!((refusals[0].status, refusals[0].www_authenticate.as_deref()), (401, Some("Bearer realm=\"mcp\"")));

    // A fixed token the server refuses: the status, and never the token.
    let mut config = WebSocketConfig::new(&url);
    config.auth = Some(Arc::new(BearerToken::new("wrong-s3cret")));
    assert!(!format!("{config:?}").contains("s3cret"));
    let err = connect(config).await.unwrap_err();
    assert!(matches!(err, Error::Upgrade { status: Some(401), .. }), "{err:?}");
    assert!(!format!("{err} {err:?}").contains("s3cret"));
}

/// A provider of a key-bound token: its proof names the request it was
/// made for.
#[derive(Debug)]
struct KeyBound;

impl AuthProvider for KeyBound {
    fn authorization(&self) -> BoxFuture<Result<Option<String>, mcp_bridge_sdk::BoxError>> {
        Box::pin(async { Ok(Some("DPoP tok-bound".to_owned())) })
    }

    fn credentials(&self, method: &str, url: &str) -> BoxFuture<Result<Credentials, mcp_bridge_sdk::BoxError>> {
        let proof = format!("proof-for {method} {url}");
        Box::pin(async move { Ok(Credentials::new(Some("DPoP tok-bound".to_owned()), Some(proof))) })
    }

    fn refused(&self, _refusal: AuthRefusal) -> BoxFuture<bool> {
        Box::pin(async { false })
    }
}

#[tokio::test]
async fn a_dpop_proof_goes_on_the_upgrade_made_for_its_http_request() {
    let seen: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let recorded = seen.clone();
    let url = pong_server(move |request: &Request| {
        let header = |name: &str| request.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
        recorded.lock().unwrap().push((header("authorization").unwrap(), header("dpop").unwrap_or_default()));
        Ok(())
    })
    .await;
    let config = WebSocketConfig::new(&url).with_auth(Arc::new(KeyBound));
    let client = client(config).await;
    assert!(pong(&client.call_tool("ping", json!({}), &RequestOptions::default()).await.unwrap()));
    let seen = seen.lock().unwrap().clone();
    let http_url = url.replace("ws://", "http://");
    assert_eq!(seen, [("DPoP tok-bound".to_owned(), format!("proof-for GET {http_url}"))]);
}

#[tokio::test]
async fn wss_trusts_a_ca_file_and_refuses_an_unknown_issuer() {
    let dir = std::env::temp_dir().join(format!("mcp-sdk-wss-{}", std::process::id()));
    let pki = test_support::oauth::TestPki::new(&dir);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (acceptor, server) = (pki.acceptor(), server());
    tokio::spawn(async move {
        let options = HttpOptions::default();
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, server, options) = (acceptor.clone(), server.clone(), options.clone());
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(tcp).await {
                    server.serve_websocket_connection(tls, &options).await;
                }
            });
        }
    });
    let url = format!("wss://127.0.0.1:{}/mcp", addr.port());
    let untrusted = connect(WebSocketConfig::new(&url)).await.unwrap_err();
    assert!(matches!(untrusted, Error::Connect { .. }), "{untrusted:?}");
    let mut config = WebSocketConfig::new(&url);
    config.tls.ca_file = Some(pki.ca_file.clone());
    let client = client(config).await;
    assert!(pong(&client.call_tool("ping", json!({}), &RequestOptions::default()).await.unwrap()));
    let mut missing = WebSocketConfig::new(&url);
    missing.tls.ca_file = Some(dir.join("nothing.pem"));
    let e = connect(missing).await.unwrap_err();
    assert!(matches!(&e, Error::InvalidRequest { reason } if reason.contains("cannot read the CA file")), "{e:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_typescript_sdk_websocket_client_is_served() {
    let (addr, _stop, _serving) = serve(server(), HttpOptions::default()).await;
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ts/websocket_client.mjs");
    let mut node = test_support::node_with_websocket();
    let meta = test_support::request_meta(json!({}));
    let output = node
        .env("TS_SDK_DIR", test_support::ts_sdk_dir())
        .arg(script)
        .arg(format!("ws://{addr}/mcp"))
        .arg(meta.to_string())
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "the TypeScript client failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let answers: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    let by_id = |id: i64| answers.iter().find(|a| a["id"] == id).unwrap();
    assert_eq!(by_id(1)["result"]["tools"][0]["name"], "ping");
    assert_eq!(by_id(2)["result"]["content"][0]["text"], "pong");
}

#[tokio::test]
async fn an_unused_connection_is_closed_and_one_over_the_cap_gets_503() {
    let connections = ConnectionLimits::default().with_idle_timeout(Duration::from_millis(300)).with_max_connections(2);
    let (addr, _stop, _serving) = serve(server(), HttpOptions::default().with_connections(connections)).await;
    let upgrade = || async move {
        let request = format!("ws://{addr}/mcp").into_client_request().unwrap();
        tokio_tungstenite::client_async(request, tokio::net::TcpStream::connect(addr).await.unwrap()).await
    };
    let (mut first, _) = upgrade().await.unwrap();
    let (_second, _) = upgrade().await.unwrap();
    match upgrade().await {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => assert_eq!(response.status(), 503),
        other => panic!("a third connection over the cap of 2 was not refused: {other:?}"),
    }
    // Used, the first connection stays open past the idle timeout of its
    // quiet time before; unused afterwards, it is closed as going away.
    let meta = test_support::request_meta(json!({}));
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping", "arguments": {}, "_meta": meta}});
    first.send(WsMessage::text(call.to_string())).await.unwrap();
    let Some(Ok(WsMessage::Text(_))) = first.next().await else { panic!("an answer was expected") };
    let closed = tokio::time::timeout(Duration::from_secs(30), first.next()).await.expect("never closed");
    match closed {
        Some(Ok(WsMessage::Close(Some(frame)))) => assert_eq!(frame.code, CloseCode::Away),
        other => panic!("a close frame was expected, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_holding_every_connection_does_not_lock_another_out() {
    use test_support::hostile::{HOSTILE, OTHER, connect_from};
    const CAP: usize = 8;
    let connections = ConnectionLimits::default().with_max_connections(CAP);
    let (addr, _stop, _serving) = serve(server(), HttpOptions::default().with_connections(connections)).await;
    let upgrade_from = |from| async move {
        let request = format!("ws://{addr}/mcp").into_client_request().unwrap();
        tokio_tungstenite::client_async(request, connect_from(from, addr).await).await
    };
    let mut hostile = Vec::new();
    for _ in 0..CAP * 2 {
        if let Ok((socket, _)) = upgrade_from(HOSTILE).await {
            hostile.push(socket);
        }
    }
    assert_eq!(hostile.len(), CAP, "one client alone may fill the cap, and no more");
    let meta = test_support::request_meta(json!({}));
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping", "arguments": {}, "_meta": meta}});
    let mut other = Vec::new();
    // Its fair share: half the places, each taken from the idle flood.
    for n in 0..CAP / 2 {
        let (mut socket, _) = upgrade_from(OTHER).await.unwrap_or_else(|e| panic!("connection {n} refused: {e}"));
        socket.send(WsMessage::text(call.to_string())).await.unwrap();
        let Some(Ok(WsMessage::Text(answer))) = socket.next().await else { panic!("no answer on connection {n}") };
        assert!(answer.contains("pong"), "{answer}");
        other.push(socket);
    }
    let mut given_up = 0;
    for mut socket in hostile {
        if let Ok(Some(Ok(WsMessage::Close(Some(frame))))) =
            tokio::time::timeout(Duration::from_millis(100), socket.next()).await
        {
            assert_eq!(frame.code, CloseCode::Away);
            given_up += 1;
        }
    }
    assert_eq!(given_up, CAP / 2, "the flood's connections gave way, closed as going away");
}

#[tokio::test]
async fn closing_a_client_sends_its_close_frame_and_fails_later_requests() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/mcp", listener.local_addr().unwrap());
    // Whether the client's first frame after the upgrade is a close frame.
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tokio_tungstenite::accept_hdr_async(tcp, select_mcp).await.unwrap();
        matches!(ws.next().await, Some(Ok(WsMessage::Close(_))))
    });
    let ws_client = client(WebSocketConfig::new(url)).await;
    assert_eq!(ws_client.close().await, None);
    assert!(tokio::time::timeout(Duration::from_secs(10), server).await.unwrap().unwrap());
    let after = ws_client.discover(&RequestOptions::default()).await.unwrap_err();
    assert!(matches!(after, Error::Closed), "{after:?}");
}

#[tokio::test]
async fn a_protected_endpoint_checks_the_token_of_each_upgrade() {
    use mcp_bridge_sdk::server::protect::{Caller, ProtectedResource, Protection, Refusal, TokenValidator};
    struct OneToken;
    impl TokenValidator for OneToken {
        fn validate(&self, token: &str) -> BoxFuture<Result<Caller, Refusal>> {
            let known = token == "good-token";
            Box::pin(async move {
                if known {
                    Ok(Caller::new("alice", ["mcp"]))
                } else {
                    Err(Refusal::InvalidToken { description: "unknown" })
                }
            })
        }
    }
    let protection = Protection::new(ProtectedResource::new("http://127.0.0.1/mcp", "https://a.example"), OneToken);
    let (addr, _stop, _serving) = serve(server(), HttpOptions::default().with_protection(protection)).await;
    let url = format!("ws://{addr}/mcp");
    let status_of = |e: Error| match e {
        Error::Upgrade { status, .. } => status,
        other => panic!("an upgrade error was expected, got {other:?}"),
    };
    assert_eq!(status_of(connect(WebSocketConfig::new(&url)).await.unwrap_err()), Some(401));
    let wrong = WebSocketConfig::new(&url).with_auth(Arc::new(BearerToken::new("bad-token")));
    assert_eq!(status_of(connect(wrong).await.unwrap_err()), Some(401));
    // As an HTTP request: the path, then Origin and Host, then the token.
    let elsewhere = WebSocketConfig::new(format!("ws://{addr}/elsewhere"));
    assert_eq!(status_of(connect(elsewhere).await.unwrap_err()), Some(404));
    let mut from_a_web_page = WebSocketConfig::new(&url).with_auth(Arc::new(BearerToken::new("good-token")));
    from_a_web_page.headers.push(("Origin".into(), "https://evil.example".into()));
    assert_eq!(status_of(connect(from_a_web_page).await.unwrap_err()), Some(403));
    let mut stranger_from_a_page = WebSocketConfig::new(&url);
    stranger_from_a_page.headers.push(("Origin".into(), "https://evil.example".into()));
    assert_eq!(status_of(connect(stranger_from_a_page).await.unwrap_err()), Some(403));
    let good = client(WebSocketConfig::new(&url).with_auth(Arc::new(BearerToken::new("good-token")))).await;
    assert!(pong(&good.call_tool("ping", json!({}), &RequestOptions::default()).await.unwrap()));
}

#[tokio::test]
async fn handlers_see_the_upgrades_http_headers_but_not_its_credentials() {
    let server = server();
    let trace = |_call, ctx: mcp_bridge_sdk::RequestContext| async move {
        Ok(Reply::Complete(CallToolResult::text(common::trace_and_credentials(&ctx))))
    };
    server.add_tool(Tool::new("trace"), trace).await;
    let (addr, _stop, _serving) = serve(server, HttpOptions::default()).await;
    let config = WebSocketConfig::new(format!("ws://{addr}/mcp"))
        .with_auth(Arc::new(BearerToken::new("any-token")))
        .with_headers(vec![
            ("x-trace".into(), "ws-7".into()),
            ("cookie".into(), "session=secret".into()),
            ("dpop".into(), "eyJ.proof".into()),
        ]);
    let result = client(config).await.call_tool("trace", json!({}), &RequestOptions::default()).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "ws-7"), "{result:?}");
}

#[tokio::test]
async fn a_first_message_sent_with_the_upgrade_in_one_write_is_not_lost() {
    use tokio::io::AsyncReadExt;
    let (addr, stop, serving) = serve(server(), HttpOptions::default()).await;
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut bytes = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: mcp\r\n\r\n"
    )
    .into_bytes();
    // A masked text frame (RFC 6455 section 5.2) right behind the head.
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": test_support::request_meta(json!({}))}})
    .to_string();
    let mask = [7u8, 1, 2, 3];
    bytes.extend([0x81, 0x80 | 126]);
    bytes.extend(u16::try_from(request.len()).unwrap().to_be_bytes());
    bytes.extend(mask);
    bytes.extend(request.bytes().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    tcp.write_all(&bytes).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(tcp.read_u8().await.unwrap());
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 101") && head.contains("Sec-WebSocket-Protocol: mcp"), "{head}");
    let role = tokio_tungstenite::tungstenite::protocol::Role::Client;
    let mut socket = tokio_tungstenite::WebSocketStream::from_raw_socket(tcp, role, None).await;
    let reply = tokio::time::timeout(Duration::from_secs(10), socket.next()).await.unwrap().unwrap().unwrap();
    let reply: Value = serde_json::from_str(reply.to_text().unwrap()).unwrap();
    assert_eq!(reply["id"], 1, "{reply}");
    assert!(reply["result"]["supportedVersions"].is_array(), "{reply}");
    stop.cancel();
    serving.await.unwrap();
}

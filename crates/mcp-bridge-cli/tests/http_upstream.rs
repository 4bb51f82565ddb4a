//! `mcp-bridge URL` in front of the example server over Streamable HTTP:
//! what arrives on a request's SSE stream (log messages) reaches the legacy
//! client, and a listen stream that the network cuts is opened again.

use std::net::SocketAddr;

use mcp_bridge_sdk::server::http::HttpOptions;
use serde_json::{Value, json};
use test_support::{RawPeer, initialized_and_listening, legacy_initialize};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

/// The example server over HTTP on a loopback port.
async fn upstream() -> (SocketAddr, CancellationToken) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let server = mcp_example_server::build_server();
    let stopped = stop.clone();
    tokio::spawn(async move {
        server.serve_http(listener, HttpOptions::default(), async move { stopped.cancelled().await }).await
    });
    (addr, stop)
}

/// A TCP relay in front of `target` whose open connections can be cut at
/// once (a proxy's idle cut, a load balancer's redeploy) while new ones
/// go through.
struct CuttingProxy {
    addr: SocketAddr,
    cut: std::sync::Mutex<CancellationToken>,
    clean: std::sync::atomic::AtomicBool,
}

impl CuttingProxy {
    async fn start(target: SocketAddr) -> std::sync::Arc<CuttingProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = std::sync::Arc::new(CuttingProxy {
            addr: listener.local_addr().unwrap(),
            cut: std::sync::Mutex::new(CancellationToken::new()),
            clean: std::sync::atomic::AtomicBool::new(false),
        });
        let relaying = proxy.clone();
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let cut = relaying.cut.lock().unwrap().clone();
                let proxy = relaying.clone();
                tokio::spawn(async move {
                    let mut outbound = TcpStream::connect(target).await.unwrap();
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        () = cut.cancelled() => {
                            if proxy.clean.load(std::sync::atomic::Ordering::SeqCst) {
                                // The last chunk of a chunked body: the
                                // stream in progress ends as if the server
                                // had ended it, without its result.
                                let _ = inbound.write_all(b"0\r\n\r\n").await;
                                let _ = inbound.shutdown().await;
                            }
                        }
                    }
                });
            }
        });
        proxy
    }

    /// Cuts every connection open now: cleanly (the body in progress ends)
    /// or abruptly (the connection just closes).
    fn cut_all(&self, clean: bool) {
        self.clean.store(clean, std::sync::atomic::Ordering::SeqCst);
        let mut cut = self.cut.lock().unwrap();
        cut.cancel();
        *cut = CancellationToken::new();
    }
}

/// Reads the three list changes that end a gap.
async fn gap_events(peer: &mut RawPeer) {
    for _ in 0..3 {
        let event = peer.recv().await;
        assert!(event["method"].as_str().is_some_and(|m| m.ends_with("/list_changed")), "{event}");
    }
}

/// Toggles the bonus tool and checks its list change arrives. Over HTTP the
/// change comes on the listen stream's connection and the result on the
/// call's: their order is not defined. A cut may be seen twice (the stream
/// opened again was cut too), so another gap's list changes may come first.
async fn toggle_and_see_the_change(peer: &mut RawPeer, id: i64) {
    peer.send(&request(id, "tools/call", json!({"name": "toggle_bonus", "arguments": {}}))).await;
    let (mut changed, mut answered) = (false, false);
    while !(changed && answered) {
        let message = peer.recv().await;
        if message["id"] == id {
            assert_eq!(message["result"]["isError"], Value::Null, "{message}");
            answered = true;
        } else {
            let method = message["method"].as_str().unwrap_or_default();
            assert!(method.ends_with("/list_changed"), "{message}");
            changed |= method == "notifications/tools/list_changed";
        }
    }
}

fn request(id: i64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_messages_on_a_request_stream_reach_the_client_at_its_level() {
    let (addr, stop) = upstream().await;
    let mut peer = RawPeer::spawn(BRIDGE, &[&format!("http://{addr}/mcp")]);
    let init = legacy_initialize(&mut peer, json!({})).await;
    assert_eq!(init["result"]["capabilities"]["logging"], json!({}), "{init}");
    initialized_and_listening(&mut peer).await;
    peer.send(&request(1, "logging/setLevel", json!({"level": "info"}))).await;
    assert_eq!(peer.recv_response(1).await["result"], json!({}));
    peer.send(&request(2, "tools/call", json!({"name": "slow", "arguments": {"steps": 2, "step_ms": 1}}))).await;
    let mut logs = Vec::new();
    loop {
        let message = peer.recv().await;
        if message["id"] == 2 {
            break;
        }
        if message["method"] == "notifications/message" {
            logs.push(message["params"].clone());
        }
    }
    assert_eq!(logs.len(), 2, "{logs:?}");
    assert_eq!(logs[0]["level"], "info");
    assert_eq!(logs[0]["data"], "step 1 of 2 done");
    assert!(logs.iter().all(|l| l.get("_meta").is_none()), "{logs:?}");

    // Above the messages' level, none is forwarded.
    peer.send(&request(3, "logging/setLevel", json!({"level": "error"}))).await;
    assert_eq!(peer.recv_response(3).await["result"], json!({}));
    peer.send(&request(4, "tools/call", json!({"name": "slow", "arguments": {"steps": 2, "step_ms": 1}}))).await;
    let answer = peer.recv().await;
    assert_eq!(answer["id"], 4, "a log message below the level was forwarded: {answer}");
    assert_eq!(peer.finish().await, Some(0));
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_stream_cut_by_the_network_or_ended_by_the_server_is_opened_again() {
    let (addr, stop) = upstream().await;
    let proxy = CuttingProxy::start(addr).await;
    let mut peer = RawPeer::spawn(BRIDGE, &[&format!("http://{}/mcp", proxy.addr)]);
    legacy_initialize(&mut peer, json!({})).await;
    let before = initialized_and_listening(&mut peer).await;
    assert!(before.is_empty(), "no change notification before a gap: {before:?}");

    // The stream ends cleanly without a result (a proxy's idle cut): the
    // bridge opens a new stream, whose acknowledgment ends the gap.
    proxy.cut_all(true);
    gap_events(&mut peer).await;
    toggle_and_see_the_change(&mut peer, 1).await;
    // The connection breaks.
    proxy.cut_all(false);
    gap_events(&mut peer).await;
    toggle_and_see_the_change(&mut peer, 2).await;
    // The server ends every stream gracefully (a redeploy).
    peer.send(&request(3, "tools/call", json!({"name": "end_streams", "arguments": {}}))).await;
    peer.recv_response(3).await;
    gap_events(&mut peer).await;
    toggle_and_see_the_change(&mut peer, 4).await;
    assert_eq!(peer.finish().await, Some(0));
    stop.cancel();
}

/// A 2026-07-28 server whose `open_page` tool asks the user to open the
/// `url` argument (a URL elicitation), then says whether they accepted.
async fn page_opener() -> SocketAddr {
    use mcp_bridge_protocol::types::{CallToolResult, Implementation, InputResponse, ResultType, Tool};
    use mcp_bridge_sdk::{Reply, Server};
    let tool: Tool = serde_json::from_value(json!({"name": "open_page", "inputSchema": {"type": "object"}})).unwrap();
    let server = Server::builder(Implementation::new("page-opener", "1"))
        .tool(tool, |call, _ctx| async move {
            if let Some(InputResponse::Elicit(answer)) = call.input_responses.get("page") {
                return Ok(Reply::Complete(CallToolResult::text(format!("{:?}", answer.action))));
            }
            let url = call.arguments.get("url").cloned().unwrap_or_default();
            // Written raw, as a server that does not check its rounds would
            // (the SDK's own refuses a round with a URL that is no web page).
            let asked = json!({"page": {"method": "elicitation/create", "params": {
                "mode": "url", "message": "Open this page", "url": url, "elicitationId": "e-1"
            }}});
            let mut raw = CallToolResult::of(Vec::new());
            raw.result_type = ResultType::InputRequired;
            raw.extra.insert("inputRequests".into(), asked);
            Ok(Reply::Complete(raw))
        })
        .build();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve_http(listener, HttpOptions::default(), std::future::pending()).await });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_elicitation_reaches_the_client_only_with_a_web_url() {
    let addr = page_opener().await;
    let mut peer = RawPeer::spawn(BRIDGE, &[&format!("http://{addr}/mcp")]);
    let init = legacy_initialize(&mut peer, json!({"elicitation": {"url": {}}})).await;
    assert!(init.get("result").is_some(), "{init}");
    initialized_and_listening(&mut peer).await;
    let mut id = 0;
    for hostile in [
        "javascript:alert(1)",
        "javascript://example.com/%0aalert(1)",
        "file://localhost/etc/passwd",
        "data://text/html,<script>alert(1)</script>",
        "vscode://evil.extension/run",
    ] {
        id += 1;
        peer.send(&request(id, "tools/call", json!({"name": "open_page", "arguments": {"url": hostile}}))).await;
        // The first message back is the answer: the client was never asked.
        let reply = peer.recv().await;
        assert_eq!(reply["id"], id, "{hostile}: the client got {reply}");
        assert_eq!(reply["error"]["data"]["cause"], "invalid_input_request", "{hostile}: {reply}");
        let detail = reply["error"]["data"]["detail"].to_string();
        assert!(detail.contains("http:// or https://"), "{hostile}: the refusal says why: {detail}");
    }
    id += 1;
    peer.send(&request(id, "tools/call", json!({"name": "open_page", "arguments": {"url": "https://example.com/a"}})))
        .await;
    let ask = peer.recv().await;
    assert_eq!(
        (ask["method"].as_str(), ask["params"]["url"].as_str()),
        (Some("elicitation/create"), Some("https://example.com/a"))
    );
    peer.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}}).to_string()).await;
    let reply = peer.recv().await;
    assert_eq!(
        (reply["id"].as_i64(), reply["result"]["content"][0]["text"].as_str()),
        (Some(id), Some("Accept")),
        "{reply}"
    );
    assert_eq!(peer.finish().await, Some(0));
}

/// What a recording server was sent: each request's head and body.
type Received = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bridge_follows_no_redirect_to_another_origin() {
    use axum::http::{HeaderMap, StatusCode, header::LOCATION};
    let received: Received = Default::default();
    let log = received.clone();
    let recorder = axum::Router::new().fallback(move |headers: HeaderMap, body: String| {
        let log = log.clone();
        async move {
            log.lock().unwrap().push(format!("{headers:?} {body}"));
            StatusCode::OK
        }
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let elsewhere = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, recorder).await });
    let away = format!("http://{elsewhere}/mcp?key=q-s3cret");
    let redirecting = axum::Router::new()
        .route("/mcp", axum::routing::any(move || async move { (StatusCode::TEMPORARY_REDIRECT, [(LOCATION, away)]) }));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, redirecting).await });

    let mut command = tokio::process::Command::new(BRIDGE);
    command
        .env("X_VALUE", "h-s3cret")
        .args(["--header-env", "X-Api-Key=X_VALUE", &format!("http://{addr}/mcp")])
        .stderr(std::process::Stdio::piped());
    let mut peer = RawPeer::start(command);
    let init = legacy_initialize(&mut peer, json!({})).await;
    let error = init["error"].to_string();
    assert!(error.contains(&format!("redirected to http://{elsewhere}, another origin")), "{init}");
    assert!(!error.contains("s3cret"), "{init}");
    assert!(received.lock().unwrap().is_empty(), "the other origin got nothing: {:?}", received.lock().unwrap());
    peer.finish().await;
}

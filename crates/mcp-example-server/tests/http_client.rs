//! The SDK's Streamable HTTP client: against the example server, against the
//! Python `mcp` server over HTTP, and against small servers that misbehave.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use axum::response::IntoResponse;
use mcp_bridge_protocol::types::{ContentBlock, ElicitResult, SubscriptionFilter};
use mcp_bridge_sdk::server::http::HttpOptions;
use mcp_bridge_sdk::transport::http::{HttpConfig, connect};
use mcp_bridge_sdk::{Client, ClientOptions, Error, RequestOptions};
use serde_json::json;
use test_support::python_peer;
use tokio_util::sync::CancellationToken;

async fn serve(router: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

async fn example() -> SocketAddr {
    serve(mcp_example_server::build_server().http_router(HttpOptions::default())).await
}

fn client(addr: SocketAddr) -> Client {
    let mut options = ClientOptions::new("http-test", "1");
    options.capabilities = serde_json::from_value(json!({"elicitation": {}})).unwrap();
    options.hooks.elicit_form = Some(Arc::new(|_p| {
        Box::pin(async {
            Ok(serde_json::from_value::<ElicitResult>(json!({"action": "accept", "content": {"name": "Http"}}))
                .unwrap())
        })
    }));
    Client::new(options, connect(HttpConfig::new(format!("http://{addr}/mcp"))).unwrap())
}

fn text_of(content: &[ContentBlock]) -> &str {
    match content.first() {
        Some(ContentBlock::Text(t)) => &t.text,
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn a_session_over_http_with_json_sse_and_an_input_round() {
    let client = client(example().await);
    let o = RequestOptions::default();
    assert_eq!(client.discover(&o).await.unwrap().meta.unwrap().server_info.unwrap().name, "mcp-example-server");
    assert!(client.list_all_tools(&o).await.unwrap().iter().any(|t| t.name == "echo"));
    let sum = client.call_tool("add", json!({"a": 1, "b": 41}), &o).await.unwrap();
    assert_eq!(sum.structured_content, Some(json!({"sum": 42})));
    let progress = Arc::new(Mutex::new(Vec::new()));
    let logs = Arc::new(Mutex::new(Vec::new()));
    let (sink, log_sink) = (progress.clone(), logs.clone());
    // Log messages carry no progress token: they reach this request
    // because they came on its stream.
    let with_progress = RequestOptions::default()
        .with_on_progress(Arc::new(move |p: &mcp_bridge_protocol::types::ProgressNotificationParams| {
            sink.lock().unwrap().push(p.progress.as_u64())
        }))
        .with_log_level(mcp_bridge_protocol::types::LoggingLevel::Info)
        .with_on_log(Arc::new(move |m: &mcp_bridge_protocol::types::LoggingMessageNotificationParams| {
            log_sink.lock().unwrap().push(m.data.clone())
        }));
    let slow = client.call_tool("slow", json!({"steps": 3, "step_ms": 10}), &with_progress).await.unwrap();
    assert_eq!(text_of(&slow.content), "counted to 3");
    assert_eq!(*progress.lock().unwrap(), vec![Some(1), Some(2), Some(3)], "SSE events reach the request's callbacks");
    assert_eq!(logs.lock().unwrap().len(), 3, "log messages on the stream reach the request's callback");
    let hello = client.call_tool("ask_name", json!({}), &o).await.unwrap();
    assert_eq!(text_of(&hello.content), "Hello, Http!");
}

#[tokio::test]
async fn listen_over_http_and_cancel_by_closing_the_stream() {
    let client = client(example().await);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let cancel = CancellationToken::new();
    let options = RequestOptions::default()
        .with_on_notification(Arc::new(move |n: &mcp_bridge_protocol::JsonRpcNotification| {
            sink.lock().unwrap().push(n.method.clone())
        }))
        .with_inline_notifications(true)
        .with_cancel(cancel.clone());
    let filter: SubscriptionFilter = serde_json::from_value(json!({"toolsListChanged": true})).unwrap();
    let listener = tokio::spawn({
        let client = client.clone();
        async move { client.listen(filter, &options).await }
    });
    for _ in 0..200 {
        if !events.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    client.call_tool("toggle_bonus", json!({}), &RequestOptions::default()).await.unwrap();
    for _ in 0..200 {
        if events.lock().unwrap().len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        *events.lock().unwrap(),
        ["notifications/subscriptions/acknowledged", "notifications/tools/list_changed"]
    );
    cancel.cancel();
    assert!(matches!(listener.await.unwrap(), Err(Error::Cancelled { .. })));
}

#[tokio::test]
async fn answers_that_are_not_json_rpc_are_invalid_responses_with_their_status() {
    let router = axum::Router::new()
        .route("/html", axum::routing::post(|| async { ([("content-type", "text/html")], "<html>login</html>") }))
        .route("/gone", axum::routing::post(|| async { (StatusCode::NOT_FOUND, "no such endpoint").into_response() }))
        .route(
            "/cut",
            axum::routing::post(|| async {
                (
                    [("content-type", "text/event-stream")],
                    "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"",
                )
            }),
        )
        .route(
            "/huge",
            axum::routing::post(|| async {
                ([("content-type", "text/event-stream")], format!("data: {}\n\n", "x".repeat(10_000)))
            }),
        )
        .route(
            "/huge-json",
            axum::routing::post(|| async {
                ([("content-type", "application/json")], format!("{{\"x\": \"{}\"}}", "x".repeat(10_000)))
            }),
        );
    let addr = serve(router).await;
    let o = RequestOptions::default();
    let at = |path: &str, max: usize| {
        let config = HttpConfig::new(format!("http://{addr}{path}")).with_max_response_bytes(max);
        Client::new(ClientOptions::new("t", "1"), connect(config).unwrap())
    };
    // Each answer is refused as it comes: none waits for a time limit.
    let checks = async {
        let err = at("/html", 4096).discover(&o).await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidResponse { reason, .. } if reason.contains("200") && reason.contains("text/html")),
            "{err:?}"
        );
        let err = at("/gone", 4096).discover(&o).await.unwrap_err();
        assert!(matches!(&err, Error::InvalidResponse { reason, .. } if reason.contains("404")), "{err:?}");
        assert!(!err.to_string().contains("127.0.0.1"), "the URL stays out of errors: {err}");
        assert!(matches!(at("/cut", 4096).discover(&o).await, Err(Error::Closed)));
        let err = at("/huge", 1024).discover(&o).await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidResponse { reason, .. } if reason.contains("larger than 1024")),
            "{err:?}"
        );
        let err = at("/huge-json", 1024).discover(&o).await.unwrap_err();
        assert!(
            matches!(&err, Error::InvalidResponse { reason, .. } if reason.contains("JSON body is larger than 1024")),
            "{err:?}"
        );
        let refused =
            Client::new(ClientOptions::new("t", "1"), connect(HttpConfig::new("http://127.0.0.1:9/mcp")).unwrap());
        let err = refused.discover(&o).await.unwrap_err();
        assert!(matches!(&err, Error::Transport { reason } if reason.contains("cannot connect")), "{err:?}");
    };
    tokio::time::timeout(Duration::from_secs(10), checks).await.expect("nothing hangs");
}

#[tokio::test]
async fn our_client_uses_the_python_server_over_http() {
    let python = python_peer();
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/python_server.py");
    let mut server = tokio::process::Command::new(&python)
        .arg(script)
        .args(["--http", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let client = Client::new(
        ClientOptions::new("mcp-sdk-http", "0.1"),
        connect(HttpConfig::new(format!("http://127.0.0.1:{port}/mcp"))).unwrap(),
    );
    let o = RequestOptions::default();
    let mut discovered = None;
    for _ in 0..100 {
        match client.discover(&o).await {
            Ok(d) => {
                discovered = Some(d);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let discovered = discovered.expect("the Python server answers over HTTP");
    assert_eq!(discovered.meta.unwrap().server_info.unwrap().name, "python-peer");
    let tools = client.list_all_tools(&o).await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["add", "shout", "greet"]);
    let sum = client.call_tool("add", json!({"a": 40, "b": 2}), &o).await.unwrap();
    assert_eq!(text_of(&sum.content), "42");
    server.kill().await.unwrap();
}

/// A server that lists annotated tools and echoes the `Mcp-Param-*`
/// headers it gets; its first `tools/call` is refused with -32020 when
/// `strict` is set, to exercise the re-list.
fn header_echo_server(lists: Arc<std::sync::atomic::AtomicUsize>, strict: bool) -> axum::Router {
    let refused = Arc::new(std::sync::atomic::AtomicBool::new(!strict));
    axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let (lists, refused) = (lists.clone(), refused.clone());
            async move {
                let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
                let result = match request["method"].as_str() {
                    Some("tools/list") => {
                        lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        json!({"resultType": "complete", "tools": [
                            {"name": "query", "inputSchema": {"type": "object", "properties": {
                                "region": {"type": "string", "x-mcp-header": "Region"},
                                "limit": {"type": "integer", "x-mcp-header": "Limit"},
                                "opts": {"type": "object", "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry"}}}}}},
                            {"name": "bad_items", "inputSchema": {"type": "object", "properties": {
                                "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}}},
                            {"name": "bad_number", "inputSchema": {"type": "object", "properties": {
                                "n": {"type": "number", "x-mcp-header": "N"}}}}
                        ]})
                    }
                    Some("tools/call") if !refused.swap(true, std::sync::atomic::Ordering::SeqCst) => {
                        let error = json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32020, "message": "Header mismatch"}});
                        return (StatusCode::BAD_REQUEST, [("content-type", "application/json")], error.to_string());
                    }
                    _ => {
                        let mut seen: Vec<String> = headers
                            .iter()
                            .filter(|(k, _)| k.as_str().starts_with("mcp-param-"))
                            .map(|(k, v)| format!("{k}={}", v.to_str().unwrap_or("")))
                            .collect();
                        seen.sort();
                        json!({"resultType": "complete", "content": [{"type": "text", "text": seen.join(";")}]})
                    }
                };
                let reply = json!({"jsonrpc": "2.0", "id": request["id"], "result": result});
                (StatusCode::OK, [("content-type", "application/json")], reply.to_string())
            }
        }),
    )
}

#[tokio::test]
async fn annotated_parameters_are_mirrored_and_invalid_tools_dropped() {
    let lists = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let addr = serve(header_echo_server(lists.clone(), false)).await;
    let client =
        Client::new(ClientOptions::new("t", "1"), connect(HttpConfig::new(format!("http://{addr}/mcp"))).unwrap());
    let o = RequestOptions::default();
    let tools = client.list_all_tools(&o).await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["query"],
        "tools with invalid annotations are removed"
    );
    let result =
        client.call_tool("query", json!({"region": "Zürich", "limit": 7, "opts": {"dry": true}}), &o).await.unwrap();
    assert_eq!(
        text_of(&result.content),
        "mcp-param-dry=true;mcp-param-limit=7;mcp-param-region==?base64?WsO8cmljaA==?="
    );
    let err = client.call_tool("query", json!({"limit": 9_007_199_254_740_993_i64}), &o).await.unwrap_err();
    assert!(matches!(err, Error::InvalidRequest { .. }), "{err:?}");
}

#[tokio::test]
async fn a_header_mismatch_reads_the_tools_again_and_retries_once() {
    let lists = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let addr = serve(header_echo_server(lists.clone(), true)).await;
    let client =
        Client::new(ClientOptions::new("t", "1"), connect(HttpConfig::new(format!("http://{addr}/mcp"))).unwrap());
    let result = client.call_tool("query", json!({"region": "eu"}), &RequestOptions::default()).await.unwrap();
    assert_eq!(text_of(&result.content), "mcp-param-region=eu", "the annotations learned by the re-list are used");
    assert_eq!(lists.load(std::sync::atomic::Ordering::SeqCst), 1);
}

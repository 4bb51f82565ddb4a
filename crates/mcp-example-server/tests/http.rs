//! The example server over Streamable HTTP: the endpoint's checks, JSON and
//! SSE answers, listen streams, and the Python `mcp` client over HTTP.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use mcp_bridge_sdk::server::http::HttpOptions;
use serde_json::{Value, json};
use test_support::{python_peer, request_meta};
use tokio_util::sync::CancellationToken;

/// Starts the example server on a free loopback port; the token stops it.
async fn start(options: HttpOptions) -> (SocketAddr, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let server = mcp_example_server::build_server();
    let stopped = stop.clone();
    tokio::spawn(async move { server.serve_http(listener, options, async move { stopped.cancelled().await }).await });
    (addr, stop)
}

fn body(id: i64, method: &str, mut params: Value) -> Value {
    params["_meta"] = request_meta(json!({}));
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A POST with the standard headers taken from the body.
fn post(addr: SocketAddr, body: &Value) -> reqwest::RequestBuilder {
    let mut request = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28");
    if let Some(method) = body["method"].as_str() {
        request = request.header("mcp-method", method);
    }
    if let Some(name) = body["params"]["name"].as_str().or(body["params"]["uri"].as_str()) {
        request = request.header("mcp-name", name);
    }
    request.body(body.to_string())
}

async fn json_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    (status, serde_json::from_slice(&response.bytes().await.unwrap()).unwrap())
}

#[tokio::test]
async fn a_plain_request_is_answered_with_json() {
    let (addr, stop) = start(HttpOptions::default()).await;
    let response =
        post(addr, &body(1, "tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 2}}))).send().await.unwrap();
    assert_eq!(response.headers()["content-type"], "application/json");
    let (status, reply) = json_of(response).await;
    assert_eq!((status, reply["result"]["structuredContent"].clone()), (200, json!({"sum": 3})));
    stop.cancel();
}

#[tokio::test]
async fn progress_turns_the_answer_into_an_sse_stream_that_ends_with_the_result() {
    let (addr, stop) = start(HttpOptions::default()).await;
    let mut request = body(2, "tools/call", json!({"name": "slow", "arguments": {"steps": 2, "step_ms": 10}}));
    request["params"]["_meta"]["progressToken"] = json!("p");
    let response = post(addr, &request).send().await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.unwrap();
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(events.len(), 3, "{text}");
    assert_eq!(events[0]["params"]["progressToken"], "p");
    assert_eq!(events[2]["result"]["content"][0]["text"], "counted to 2");
    stop.cancel();
}

#[tokio::test]
async fn headers_must_match_the_body() {
    let (addr, stop) = start(HttpOptions::default()).await;
    let call = body(3, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}}));
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/mcp");
    let base = || client.post(&url).header("content-type", "application/json").body(call.to_string());
    let cases = [
        base().header("mcp-method", "tools/call").header("mcp-name", "echo"),
        base().header("mcp-protocol-version", "2026-07-28").header("mcp-name", "echo"),
        base()
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/list")
            .header("mcp-name", "echo"),
        base().header("mcp-protocol-version", "2026-07-28").header("mcp-method", "tools/call"),
        base()
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "add"),
        base()
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "echo"),
    ];
    for case in cases {
        let (status, reply) = json_of(case.send().await.unwrap()).await;
        assert_eq!(
            (status, reply["error"]["code"].clone(), reply["id"].clone()),
            (400, json!(-32020), json!(3)),
            "{reply}"
        );
    }
    // The base64 sentinel is decoded before the comparison.
    let encoded = base()
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "=?base64?ZWNobw==?=");
    assert_eq!(json_of(encoded.send().await.unwrap()).await.0, 200);
    stop.cancel();
}

#[tokio::test]
async fn bodies_up_to_the_limit_are_read_whole() {
    let (addr, stop) = start(HttpOptions::default()).await;
    let text = "x".repeat(3 * 1024 * 1024);
    let big = body(1, "tools/call", json!({"name": "echo", "arguments": {"text": text}}));
    let (status, reply) = json_of(post(addr, &big).send().await.unwrap()).await;
    assert_eq!(
        status,
        200,
        "3 MiB is under the default 4 MiB limit: {}",
        &reply.to_string()[..200.min(reply.to_string().len())]
    );
    assert_eq!(reply["result"]["content"][0]["text"].as_str().map(str::len), Some(text.len()));
    let over = body(2, "tools/call", json!({"name": "echo", "arguments": {"text": "x".repeat(5 * 1024 * 1024)}}));
    assert_eq!(post(addr, &over).send().await.unwrap().status(), 413);
    stop.cancel();
}

#[tokio::test]
async fn the_endpoint_refuses_what_it_cannot_serve() {
    let (addr, stop) = start(HttpOptions::default().with_max_body_bytes(1024)).await;
    let url = format!("http://{addr}/mcp");
    let client = reqwest::Client::new();
    // GET and DELETE are a 2025-11-25 session's: without its id, 400.
    assert_eq!(client.get(&url).send().await.unwrap().status(), 400);
    assert_eq!(client.delete(&url).send().await.unwrap().status(), 400);
    let list = body(4, "tools/list", json!({}));
    assert_eq!(post(addr, &list).header("origin", "https://evil.example").send().await.unwrap().status(), 403);
    assert_eq!(post(addr, &list).header("origin", "http://localhost:3000").send().await.unwrap().status(), 200);
    assert_eq!(post(addr, &list).header("host", "[::1]evil.example").send().await.unwrap().status(), 403);
    let plain = client
        .post(&url)
        .header("content-type", "text/plain")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(list.to_string());
    assert_eq!(plain.send().await.unwrap().status(), 415);
    let big = body(5, "tools/call", json!({"name": "echo", "arguments": {"text": "x".repeat(2000)}}));
    assert_eq!(post(addr, &big).send().await.unwrap().status(), 413);
    let (status, reply) = json_of(post(addr, &body(6, "no/such", json!({}))).send().await.unwrap()).await;
    assert_eq!((status, reply["error"]["code"].clone()), (404, json!(-32601)));
    let mut old = body(7, "tools/list", json!({}));
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let request = client
        .post(&url)
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "1900-01-01")
        .header("mcp-method", "tools/list")
        .body(old.to_string());
    let (status, reply) = json_of(request.send().await.unwrap()).await;
    assert_eq!((status, reply["error"]["code"].clone()), (400, json!(-32022)));
    let (status, reply) = json_of(post(addr, &json!("not an object")).send().await.unwrap()).await;
    assert_eq!((status, reply["error"]["code"].clone()), (400, json!(-32600)));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    assert_eq!(post(addr, &note).send().await.unwrap().status(), 202);
    stop.cancel();
}

#[tokio::test]
async fn a_listen_stream_carries_events_and_ends_with_a_result_at_shutdown() {
    let (addr, stop) = start(HttpOptions::default()).await;
    let listen = body(8, "subscriptions/listen", json!({"notifications": {"toolsListChanged": true}}));
    let mut response = post(addr, &listen).send().await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let first = tokio::time::timeout(Duration::from_secs(5), response.chunk()).await.unwrap().unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("notifications/subscriptions/acknowledged"));
    post(addr, &body(9, "tools/call", json!({"name": "toggle_bonus", "arguments": {}}))).send().await.unwrap();
    let event = tokio::time::timeout(Duration::from_secs(5), response.chunk()).await.unwrap().unwrap().unwrap();
    assert!(String::from_utf8_lossy(&event).contains("notifications/tools/list_changed"));
    stop.cancel();
    let rest = tokio::time::timeout(Duration::from_secs(5), response.text()).await.unwrap().unwrap();
    assert!(rest.contains(r#""id":8"#) && rest.contains("io.modelcontextprotocol/subscriptionId"), "{rest}");
}

#[tokio::test]
async fn the_python_client_uses_the_example_server_over_http() {
    let python = python_peer();
    let (addr, stop) = start(HttpOptions::default()).await;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/python_client.py");
    let output =
        tokio::process::Command::new(&python).arg(script).arg(format!("http://{addr}/mcp")).output().await.unwrap();
    assert!(output.status.success(), "python client failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(seen["protocol_version"], "2026-07-28");
    assert_eq!(seen["add_structured"], json!({"sum": 42}));
    assert_eq!(seen["ask_name"], "Hello, Python!", "an input round over HTTP");
    assert_eq!(seen["note"], "milk, bread");
    stop.cancel();
}

//! The example server's HTTP endpoint for 2025-11-25 clients (the embedded
//! bridge over Streamable HTTP): sessions, a request's own SSE stream with
//! its input requests, the GET stream with list changes and its
//! resumption, DELETE, and the refusals; the 2026-07-28 path beside it.

use std::net::SocketAddr;
use std::time::Duration;

use mcp_bridge_sdk::server::http::HttpOptions;
use mcp_bridge_sdk::server::legacy::embed::http::{LegacyHttpOptions, serve_http};
use serde_json::{Value, json};
use test_support::request_meta;
use tokio_util::sync::CancellationToken;

async fn start(legacy: LegacyHttpOptions) -> (SocketAddr, CancellationToken) {
    start_with(HttpOptions::default(), legacy).await
}

/// [`start`] with these HTTP options.
async fn start_with(http: HttpOptions, legacy: LegacyHttpOptions) -> (SocketAddr, CancellationToken) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let server = mcp_example_server::build_server();
    let stopped = stop.clone();
    tokio::spawn(
        async move { serve_http(&server, listener, http, legacy, async move { stopped.cancelled().await }).await },
    );
    (addr, stop)
}

/// A legacy POST, with the session id when there is one.
fn post(addr: SocketAddr, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    test_support::legacy_http_post(&format!("http://{addr}/mcp"), session, body)
}

fn request(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The messages of a response: its JSON body, or each event of its SSE stream.
async fn messages(response: reqwest::Response) -> Vec<Value> {
    test_support::response_messages(response).await
}

/// Initializes a session with these client capabilities; its id.
async fn initialize(addr: SocketAddr, capabilities: Value) -> String {
    let init = request(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let response = post(addr, None, &init).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let answer = messages(response).await;
    assert_eq!(answer[0]["result"]["protocolVersion"], "2025-11-25", "{answer:?}");
    assert_eq!(answer[0]["result"]["serverInfo"]["name"], "mcp-example-server");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(addr, Some(&session), &initialized).send().await.unwrap().status(), 202);
    session
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_session_lists_calls_and_answers_an_elicitation_on_its_request_stream() {
    let (addr, stop) = start(LegacyHttpOptions::default()).await;
    let session = initialize(addr, json!({"elicitation": {}})).await;

    let tools =
        messages(post(addr, Some(&session), &request(json!(1), "tools/list", json!({}))).send().await.unwrap()).await;
    let names: Vec<&str> =
        tools[0]["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"add") && names.contains(&"ask_name"), "{names:?}");

    let sum = request(json!(2), "tools/call", json!({"name": "add", "arguments": {"a": 2, "b": 40}}));
    let answer = messages(post(addr, Some(&session), &sum).send().await.unwrap()).await;
    assert_eq!(answer[0]["result"]["structuredContent"], json!({"sum": 42}));

    // The elicitation of the call's round comes on the call's own stream;
    // the answer is a POST of its own.
    let ask = request(json!(3), "tools/call", json!({"name": "ask_name", "arguments": {}}));
    let call = tokio::spawn(post(addr, Some(&session), &ask).send());
    let response = call.await.unwrap().unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response;
    let mut buffer = String::new();
    let elicitation = loop {
        let chunk = tokio::time::timeout(Duration::from_secs(30), body.chunk()).await.unwrap().unwrap().unwrap();
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        if let Some(data) = buffer.lines().find_map(|l| l.strip_prefix("data: ")) {
            break serde_json::from_str::<Value>(data).unwrap();
        }
    };
    assert_eq!(elicitation["method"], "elicitation/create", "{elicitation}");
    // Another request with the id of the one under way is refused; the one
    // under way goes on.
    let reused = request(json!(3), "tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 1}}));
    let refused = post(addr, Some(&session), &reused).send().await.unwrap();
    assert_eq!(refused.status(), 400);
    let refused = messages(refused).await;
    assert_eq!(
        (refused[0]["id"].clone(), refused[0]["error"]["code"].clone()),
        (json!(3), json!(-32600)),
        "{refused:?}"
    );
    let b_id = elicitation["id"].clone();
    let answer = json!({"jsonrpc": "2.0", "id": b_id, "result": {"action": "accept", "content": {"name": "Ada"}}});
    assert_eq!(post(addr, Some(&session), &answer).send().await.unwrap().status(), 202);
    let rest = tokio::time::timeout(Duration::from_secs(30), body.text()).await.unwrap().unwrap();
    let result: Value = serde_json::from_str(rest.lines().find_map(|l| l.strip_prefix("data: ")).unwrap()).unwrap();
    assert_eq!(result["id"], 3);
    assert!(result["result"]["content"][0]["text"].as_str().unwrap().contains("Ada"), "{result}");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changes_come_on_the_get_stream_which_resumes_after_its_last_event() {
    let (addr, stop) = start(LegacyHttpOptions::default()).await;
    let session = initialize(addr, json!({})).await;
    let get = || {
        reqwest::Client::new()
            .get(format!("http://{addr}/mcp"))
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &session)
    };
    let mut stream = get().send().await.unwrap();
    assert_eq!(stream.status(), 200);
    assert_eq!(get().send().await.unwrap().status(), 409, "one GET stream per session");
    // Two changes (a fresh session gets no change notification unprompted).
    for id in [1, 2] {
        let toggle = request(json!(id), "tools/call", json!({"name": "toggle_bonus", "arguments": {}}));
        messages(post(addr, Some(&session), &toggle).send().await.unwrap()).await;
    }
    let mut buffer = String::new();
    let mut events: Vec<(u64, Value)> = Vec::new();
    while events.len() < 2 {
        let chunk = tokio::time::timeout(Duration::from_secs(30), stream.chunk()).await.unwrap().unwrap().unwrap();
        buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let id = event.lines().find_map(|l| l.strip_prefix("id: ")).unwrap().parse().unwrap();
            let data = event.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
            events.push((id, serde_json::from_str(data).unwrap()));
        }
    }
    assert!(events.iter().all(|(_, e)| e["method"] == "notifications/tools/list_changed"), "{events:?}");
    drop(stream);
    // Back with the id of the first event: the others again.
    let (first, _) = events[0];
    let resumed = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let response = get().header("last-event-id", first.to_string()).send().await.unwrap();
            if response.status() == 200 {
                return response;
            }
            // The dropped stream is noticed at the next event or write.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    let mut resumed = resumed;
    let chunk = tokio::time::timeout(Duration::from_secs(30), resumed.chunk()).await.unwrap().unwrap().unwrap();
    let text = std::str::from_utf8(&chunk).unwrap();
    let replayed: u64 = text.lines().find_map(|l| l.strip_prefix("id: ")).unwrap().parse().unwrap();
    assert_eq!(replayed, events[1].0, "{text}");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_end_with_delete_and_bad_or_missing_ids_versions_and_floods_are_refused() {
    let legacy = LegacyHttpOptions::default().with_max_sessions(2);
    let (addr, stop) = start(legacy).await;
    let session = initialize(addr, json!({})).await;
    let ping = request(json!(1), "ping", json!({}));
    assert_eq!(post(addr, Some("not-a-session"), &ping).send().await.unwrap().status(), 404);
    let without_id = post(addr, None, &request(json!(2), "tools/list", json!({}))).send().await.unwrap();
    assert_eq!(without_id.status(), 400);
    let bad_version = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "1999-01-01")
        .header("mcp-session-id", &session)
        .body(ping.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(bad_version.status(), 400);
    let garbage = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("mcp-session-id", &session)
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(garbage.status(), 400);
    assert_eq!(garbage.json::<Value>().await.unwrap()["error"]["code"], -32700);

    // The bound: a third session waits for a free place.
    let second = initialize(addr, json!({})).await;
    let init = request(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let refused = post(addr, None, &init).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    // The existing ones are unaffected.
    assert_eq!(messages(post(addr, Some(&second), &ping).send().await.unwrap()).await[0]["result"], json!({}));

    let delete = |id: &str| {
        reqwest::Client::new()
            .delete(format!("http://{addr}/mcp"))
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", id)
            .send()
    };
    assert_eq!(delete(&session).await.unwrap().status(), 204);
    assert_eq!(post(addr, Some(&session), &ping).send().await.unwrap().status(), 404, "an ended session is gone");
    assert_eq!(delete(&session).await.unwrap().status(), 404);
    // Its place is free again.
    initialize(addr, json!({})).await;

    // The 2026-07-28 path beside it is untouched.
    let mut modern = request(json!(9), "tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 2}}));
    modern["params"]["_meta"] = request_meta(json!({}));
    let answer = reqwest::Client::new()
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "add")
        .body(modern.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.json::<Value>().await.unwrap()["result"]["structuredContent"], json!({"sum": 3}));
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unused_session_ends_after_its_idle_time_and_oversized_bodies_are_refused() {
    let legacy = LegacyHttpOptions::default().with_idle_timeout(Duration::from_millis(200));
    // A low limit: the oversized body fits the socket's buffers whole, so
    // the 413 is read rather than lost to a reset under the client's write.
    let (addr, stop) = start_with(HttpOptions::default().with_max_body_bytes(1024), legacy).await;
    let session = initialize(addr, json!({})).await;
    let big = request(json!(1), "tools/call", json!({"name": "echo", "arguments": {"text": "x".repeat(2048)}}));
    assert_eq!(post(addr, Some(&session), &big).send().await.unwrap().status(), 413);
    let ping = request(json!(2), "ping", json!({}));
    // Unused, the session ends within a few sweeps of its idle time. Each
    // look uses the session, so the looks come further and further apart:
    // soon one comes after an idle time, however slow the machine.
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        let mut gap = Duration::from_millis(100);
        loop {
            tokio::time::sleep(gap).await;
            if post(addr, Some(&session), &ping).send().await.unwrap().status() == 404 {
                return;
            }
            gap *= 2;
        }
    })
    .await;
    assert!(ended.is_ok(), "the idle session was never ended");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_stream_that_never_reads_is_cut_off_and_the_session_goes_on() {
    let legacy = LegacyHttpOptions::default().with_kept_events(4);
    let (addr, stop) = start(legacy).await;
    let session = initialize(addr, json!({})).await;
    // Updates of a note with a long name: 16 KiB an event.
    let name = "n".repeat(16 << 10);
    let subscribe = request(json!(1), "resources/subscribe", json!({"uri": format!("note://{name}")}));
    assert_eq!(messages(post(addr, Some(&session), &subscribe).send().await.unwrap()).await[0]["result"], json!({}));
    // A GET stream on a raw socket with a small window that is never read.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(addr).await.unwrap();
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nMcp-Session-Id: {session}\r\n\r\n"
    );
    tokio::io::AsyncWriteExt::write_all(&mut stalled, head.as_bytes()).await.unwrap();
    let get = || {
        reqwest::Client::new()
            .get(format!("http://{addr}/mcp"))
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &session)
            .timeout(Duration::from_secs(30))
            .send()
    };
    // Updates until the stream's queue (twice the kept events) and the
    // socket's buffers are full: the stream is then cut off, and a new GET
    // stream is taken (no longer 409).
    let mut reopened = None;
    for i in 0..2000 {
        let set = request(
            json!(100 + i),
            "tools/call",
            json!({"name": "set_note", "arguments": {"name": name, "text": "t"}}),
        );
        messages(post(addr, Some(&session), &set).send().await.unwrap()).await;
        if i % 20 == 19 {
            let response = get().await.unwrap();
            if response.status() == 200 {
                reopened = Some(response);
                break;
            }
        }
    }
    assert!(reopened.is_some(), "the stalled GET stream was never cut off");
    let ping = request(json!(2), "ping", json!({}));
    assert_eq!(messages(post(addr, Some(&session), &ping).send().await.unwrap()).await[0]["result"], json!({}));
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_page_can_neither_open_a_session_with_a_simple_request_nor_pass_a_malformed_host() {
    let (addr, stop) = start(LegacyHttpOptions::default()).await;
    let init = request(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let client = reqwest::Client::new();
    // A CORS "simple" request: no preflight, so any page may send it.
    let simple = |content_type: Option<&str>| {
        let request = client.post(format!("http://{addr}/mcp")).body(init.to_string());
        match content_type {
            Some(content_type) => request.header("content-type", content_type),
            None => request,
        }
    };
    for content_type in [Some("text/plain"), Some("application/x-www-form-urlencoded"), None] {
        let response = simple(content_type).send().await.unwrap();
        assert_eq!(response.status(), 415, "{content_type:?}");
        assert!(response.headers().get("mcp-session-id").is_none());
    }
    let session = initialize(addr, json!({})).await;
    let list = request(json!(1), "tools/list", json!({}));
    let in_session = client
        .post(format!("http://{addr}/mcp"))
        .header("content-type", "text/plain")
        .header("mcp-session-id", &session)
        .body(list.to_string());
    assert_eq!(in_session.send().await.unwrap().status(), 415);
    for host in ["[::1]evil.example", "localhost:80@evil.example", "127.0.0.1:8080x"] {
        let response = post(addr, None, &init).header("host", host).send().await.unwrap();
        assert_eq!(response.status(), 403, "{host}");
    }
    let ipv6_host = format!("[::1]:{}", addr.port());
    assert_eq!(post(addr, None, &init).header("host", ipv6_host).send().await.unwrap().status(), 200);
    stop.cancel();
}

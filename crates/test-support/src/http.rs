//! HTTP requests the tests make by hand, and free ports.

use std::time::Duration;

use serde_json::Value;

use crate::request_meta;

/// A 2025-11-25 Streamable HTTP POST of `body` to `url`, with the session id
/// when there is one (a 30 s time limit: a hang guard).
pub fn legacy_http_post(url: &str, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .timeout(Duration::from_secs(30))
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request
}

/// A 2026-07-28 `tools/list` POST to `url` with these `Authorization`
/// values: the status and the `WWW-Authenticate` value.
pub async fn modern_post(url: &str, authorization: &[&str]) -> (u16, Option<String>) {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": request_meta(serde_json::json!({}))}});
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(body.to_string());
    for value in authorization {
        request = request.header("authorization", *value);
    }
    let response = request.send().await.unwrap();
    let challenge = response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), challenge)
}

/// A loopback port nothing listens on now, for a program that must be told
/// its port before it binds (a sign-in redirect, haproxy, a uvicorn
/// server). Picked below the kernel's ephemeral range (32768..61000), where
/// no outgoing connection of a test running beside this one can take it
/// between this check and the program's bind, as a port the kernel hands
/// out for `127.0.0.1:0` can be.
pub fn spare_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let seed = std::process::id().wrapping_mul(2_654_435_761)
        ^ std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    loop {
        let n = seed.wrapping_add(NEXT.fetch_add(7_919, Ordering::Relaxed));
        let port = 20_000 + (n % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
}

/// The messages of a Streamable HTTP response: its JSON body, or each
/// event of its SSE stream.
pub async fn response_messages(response: reqwest::Response) -> Vec<Value> {
    let is_sse = response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream");
    let text = response.text().await.unwrap();
    if !is_sse {
        return vec![serde_json::from_str(&text).unwrap()];
    }
    text.split("\n\n")
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

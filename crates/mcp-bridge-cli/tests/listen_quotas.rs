//! `mcp-bridge --listen` quotas per caller: a rate of requests
//! (`--listen-rate-limit`: 429 with `Retry-After` beyond it, other callers
//! untouched, a caller being a token's subject of a real authorization
//! server) and requests under way (`--listen-max-in-flight`: 429 while the
//! caller's call runs, room again when it ends; an open listen stream is
//! not one).

use serde_json::{Value, json};
use test_support::oidc::{OidcProvider, SERVICE_CLIENT, TokenFormat};
use test_support::{bridge_on_loopback, request_meta, workspace_binary};

const BRIDGE: &str = env!("CARGO_BIN_EXE_mcp-bridge");

/// A 2026-07-28 request `method` with `params` to `url`, with `token`: the
/// status, `Retry-After`, and the body.
async fn post(url: &str, token: Option<&str>, method: &str, params: Value) -> (u16, Option<String>, String) {
    let mut params = params;
    params["_meta"] = request_meta(json!({}));
    let mut request = modern(url, &json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let retry_after = response.headers().get("retry-after").map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), retry_after, response.text().await.unwrap())
}

/// A POST of the 2026-07-28 request `body` to `url`, with the headers its
/// method and name call for.
fn modern(url: &str, body: &Value) -> reqwest::RequestBuilder {
    let method = body["method"].as_str().unwrap_or_default();
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(body.to_string());
    if method == "tools/call" {
        request = request.header("mcp-name", body["params"]["name"].as_str().unwrap_or_default());
    }
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_over_its_rate_gets_429_with_retry_after_and_another_caller_does_not() {
    let other = json!({"client_id": "other", "client_secret": "other-secret",
        "grant_types": ["client_credentials"], "response_types": [], "redirect_uris": []});
    let provider = OidcProvider::start_with_clients(TokenFormat::Jwt, vec![other]).await;
    let example = workspace_binary("mcp-example-server", "mcp-example-server");
    let example = example.to_str().unwrap();
    let args = ["--listen-auth-issuer", &provider.issuer, "--listen-rate-limit", "3/m", "--", example];
    let (mut bridge, url) = bridge_on_loopback(tokio::process::Command::new(BRIDGE), &args).await;
    let busy = provider.client_token(SERVICE_CLIENT, &url, "notes:read").await;
    let calm = provider.client_token(("other", "other-secret"), &url, "notes:read").await;
    for _ in 0..3 {
        assert_eq!(post(&url, Some(&busy), "tools/list", json!({})).await.0, 200, "within the burst");
    }
    let (status, retry_after, _) = post(&url, Some(&busy), "tools/list", json!({})).await;
    assert_eq!(status, 429);
    let seconds: u64 = retry_after.expect("Retry-After").parse().unwrap();
    assert!((1..=20).contains(&seconds), "a token comes back every 20 s: {seconds}");
    assert_eq!(post(&url, Some(&calm), "tools/list", json!({})).await.0, 200, "another subject has its own quota");
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_under_way_beyond_the_cap_get_429_until_one_ends() {
    let example = workspace_binary("mcp-example-server", "mcp-example-server");
    let (mut bridge, url) =
        test_support::listening_bridge(BRIDGE, &["--listen-max-in-flight", "1", "--", example.to_str().unwrap()]).await;
    // An open listen stream is no request under way: it leaves the one place free.
    let listen_body = json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}, "_meta": request_meta(json!({}))}});
    let listening = modern(&url, &listen_body).send().await.unwrap();
    assert_eq!(listening.status(), 200, "the stream is open");

    // A call that reports progress: its answer is a stream, whose head says
    // the gate admitted it.
    let (admitted, under_way) = tokio::sync::oneshot::channel();
    let slow_url = url.clone();
    let slow = tokio::spawn(async move {
        let mut meta = request_meta(json!({}));
        meta["progressToken"] = json!("slow-1");
        let params = json!({"name": "slow", "arguments": {"steps": 40, "step_ms": 100}, "_meta": meta});
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let response = modern(&slow_url, &body).send().await.unwrap();
        let _ = admitted.send(response.status().as_u16());
        response.text().await.unwrap()
    });
    assert_eq!(under_way.await.unwrap(), 200, "the call is admitted");
    let (status, retry_after, body) = post(&url, None, "tools/list", json!({})).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(retry_after, None, "waiting for a call's end has no fixed time");
    assert!(body.contains("under way"), "{body}");
    let body = slow.await.unwrap();
    assert!(body.contains("counted to 40"), "{body}");
    drop(listening);
    assert_eq!(post(&url, None, "tools/list", json!({})).await.0, 200, "room again");
    bridge.start_kill().unwrap();
    bridge.wait().await.unwrap();
}

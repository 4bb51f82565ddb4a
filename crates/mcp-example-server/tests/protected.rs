//! `mcp-example-server --http ADDR --auth-issuer URL`: a protected endpoint
//! for both eras. Tokens come from an issuer on loopback (its metadata and
//! key set, ES256 keys); every request needs one with the scope
//! `notes:read`, `set_note` needs `notes:write` too, and a legacy session
//! belongs to the subject that started it.

use std::sync::Arc;

use mcp_bridge_sdk::transport::http::{BearerToken, HttpConfig, connect};
use mcp_bridge_sdk::{Client, ClientOptions, Error, RequestOptions};
use serde_json::{Value, json};
use test_support::jwt::{SigningKey, access_token, claims, issuer, signing_key};

/// The example server, protected by `issuer` (with `extra` arguments): the
/// process and its URL.
async fn protected_server(issuer: &str, extra: &[&str]) -> (tokio::process::Child, String) {
    let (id, secret) = test_support::jwt::INTROSPECTION_CLIENT;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-example-server"));
    command.args(["--auth-issuer", issuer]).args(extra);
    command.env("MCP_AUTH_CLIENT_ID", id).env("MCP_AUTH_CLIENT_SECRET", secret);
    let server = test_support::example_server_http(command).await;
    (server.child, server.url)
}

fn token(key: &SigningKey, issuer: &str, audience: &str, scope: &str, subject: &str) -> String {
    let mut claims = claims(issuer, audience, scope);
    claims["sub"] = json!(subject);
    access_token(key, &claims)
}

fn client(url: &str, token: String) -> Client {
    let config = HttpConfig::new(url).with_auth(Arc::new(BearerToken::new(token)));
    Client::new(ClientOptions::new("protected-test", "1"), connect(config).unwrap())
}

/// A 2025-11-25 POST with `token`, in session `session` when given: the
/// status and the session id the answer names.
async fn legacy_post(url: &str, token: Option<&str>, session: Option<&str>, body: Value) -> (u16, Option<String>) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(session) = session {
        request = request.header("mcp-session-id", session).header("mcp-protocol-version", "2025-11-25");
    }
    let response = request.send().await.unwrap();
    let id = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
    (response.status().as_u16(), id)
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "legacy", "version": "1"}}})
}

#[tokio::test]
async fn tokens_scopes_and_sessions_are_checked_in_both_eras() {
    let issuer = issuer().await;
    let key = signing_key("k1");
    issuer.published.lock().unwrap().push(key.jwk.clone());
    let (_server, url) = protected_server(&issuer.url, &[]).await;
    let reader = token(&key, &issuer.url, &url, "notes:read", "alice");
    let writer = token(&key, &issuer.url, &url, "notes:read notes:write", "alice");
    let scopeless = token(&key, &issuer.url, &url, "", "alice");
    let o = RequestOptions::default();

    // The metadata, and a request without a token pointed to it.
    let metadata_url = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
    let metadata: Value = reqwest::get(&metadata_url).await.unwrap().json().await.unwrap();
    assert_eq!(
        (metadata["resource"].as_str(), metadata["authorization_servers"][0].as_str()),
        (Some(url.as_str()), Some(issuer.url.as_str()))
    );
    let anonymous =
        reqwest::Client::new().post(&url).header("content-type", "application/json").body("{}").send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let challenge = anonymous.headers()["www-authenticate"].to_str().unwrap().to_owned();
    assert_eq!(challenge, format!(r#"Bearer resource_metadata="{metadata_url}", scope="notes:read""#));
    assert_eq!(metadata["scopes_supported"], json!(["notes:read", "notes:write"]));

    // 2026-07-28: a token with notes:read lists and calls; set_note needs
    // notes:write; a valid token without notes:read is refused with 403.
    let seen = Arc::new(std::sync::Mutex::new(mcp_bridge_sdk::client::Diagnostics::default()));
    let refused = client(&url, scopeless).discover(&o.clone().with_diagnostics(seen.clone())).await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(seen.lock().unwrap().http_status, Some(403));
    let as_reader = client(&url, reader.clone());
    assert!(as_reader.list_all_tools(&o).await.unwrap().iter().any(|t| t.name == "set_note"));
    let seen = Arc::new(std::sync::Mutex::new(mcp_bridge_sdk::client::Diagnostics::default()));
    let note = json!({"name": "n", "text": "t"});
    let refused = as_reader.call_tool("set_note", note.clone(), &o.clone().with_diagnostics(seen.clone())).await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(seen.lock().unwrap().http_status, Some(403));
    client(&url, writer.clone()).call_tool("set_note", note, &o).await.unwrap();
    let expired = {
        let mut c = claims(&issuer.url, &url, "notes:read notes:write");
        c["exp"] = json!(test_support::jwt::now() - 120);
        access_token(&key, &c)
    };
    let err = client(&url, expired).discover(&o).await.unwrap_err();
    assert!(matches!(err, Error::InvalidResponse { .. }), "{err:?}");

    // 2025-11-25: the session is its subject's; another subject's token gets 404.
    assert_eq!(legacy_post(&url, None, None, initialize()).await.0, 401);
    let (status, session) = legacy_post(&url, Some(&reader), None, initialize()).await;
    assert_eq!(status, 200);
    let session = session.expect("a session id");
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(legacy_post(&url, Some(&reader), Some(&session), list.clone()).await.0, 200);
    let bob = token(&key, &issuer.url, &url, "notes:read notes:write", "bob");
    assert_eq!(legacy_post(&url, Some(&bob), Some(&session), list.clone()).await.0, 404, "not bob's session");
    assert_eq!(legacy_post(&url, None, Some(&session), list).await.0, 401);
    let set = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "set_note", "arguments": {"name": "n", "text": "legacy"}}});
    assert_eq!(legacy_post(&url, Some(&reader), Some(&session), set).await.0, 403, "the scope holds for sessions too");
}

#[tokio::test]
async fn an_issuer_that_cannot_be_reached_stops_the_server_at_start() {
    let nobody = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-example-server"))
        .args(["--http", "127.0.0.1:0", "--auth-issuer", &format!("http://{nobody}")])
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--auth-issuer") && stderr.contains("metadata"), "{stderr}");
    let usage = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-example-server"))
        .args(["--auth-issuer", "https://a.example"])
        .output()
        .await
        .unwrap();
    assert_eq!(usage.status.code(), Some(2), "--auth-issuer needs --http");
}

#[tokio::test]
async fn with_introspection_opaque_tokens_are_asked_about_at_the_issuer() {
    let issuer = issuer().await;
    let (_server, url) = protected_server(&issuer.url, &["--auth-introspection"]).await;
    issuer.opaque.lock().unwrap().insert(
        "opaque-writer".into(),
        json!({"active": true, "sub": "carol", "scope": "notes:read notes:write", "aud": url, "iss": issuer.url}),
    );
    let o = RequestOptions::default();
    let note = json!({"name": "n", "text": "from an opaque token"});
    client(&url, "opaque-writer".into()).call_tool("set_note", note, &o).await.unwrap();
    let err = client(&url, "opaque-unknown".into()).discover(&o).await.unwrap_err();
    assert!(matches!(err, Error::InvalidResponse { .. }), "{err:?}");
    assert!(issuer.introspections.load(std::sync::atomic::Ordering::SeqCst) >= 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_opening_every_session_does_not_lock_other_users_out() {
    let issuer = issuer().await;
    let key = signing_key("k1");
    issuer.published.lock().unwrap().push(key.jwk.clone());
    let (_server, url) = protected_server(&issuer.url, &[]).await;
    let alice = token(&key, &issuer.url, &url, "notes:read", "alice");
    // Past the cap of 1,000 sessions, from the same address as bob's.
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (url, alice) = (url.clone(), alice.clone());
            tokio::spawn(async move {
                let mut opened = 0;
                for _ in 0..275 {
                    opened += usize::from(legacy_post(&url, Some(&alice), None, initialize()).await.0 == 200);
                }
                opened
            })
        })
        .collect();
    let mut opened = 0;
    for worker in workers {
        opened += worker.await.unwrap();
    }
    assert_eq!(opened, 1_100, "alice's newest sessions take the places of her idlest ones");
    let bob = token(&key, &issuer.url, &url, "notes:read", "bob");
    let (status, session) = legacy_post(&url, Some(&bob), None, initialize()).await;
    assert_eq!(status, 200, "bob's initialize was refused");
    let session = session.unwrap();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(legacy_post(&url, Some(&bob), Some(&session), initialized).await.0, 202);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(legacy_post(&url, Some(&bob), Some(&session), list).await.0, 200);
}

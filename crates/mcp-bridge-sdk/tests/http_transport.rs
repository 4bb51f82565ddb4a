//! The Streamable HTTP client's connection options, each against a real
//! peer on loopback: the HTTP status in the diagnostics, an authorization
//! provider (a token per request, a new one after 401), proxies (explicit,
//! refused tunnels, never for loopback from the environment), and HTTPS
//! with a CA file and a client certificate.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod common;

use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use mcp_bridge_protocol::types::{CallToolResult, ContentBlock};
use mcp_bridge_sdk::BoxFuture;
use mcp_bridge_sdk::client::Diagnostics;
use mcp_bridge_sdk::server::http::HttpOptions;
use mcp_bridge_sdk::transport::http::{AuthProvider, AuthRefusal, BearerToken, HttpConfig, ProxyConfig, connect};
use mcp_bridge_sdk::{Client, ClientOptions, Error, RequestOptions, Server};
use serde_json::json;
use test_support::oauth::{TestPki, serve as serve_tls};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn server() -> Server {
    common::ping_server()
}

async fn serve(router: axum::Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    addr
}

fn client(config: HttpConfig) -> Client {
    Client::new(ClientOptions::new("transport-test", "1"), connect(config).unwrap())
}

fn with_diagnostics() -> (RequestOptions, Arc<Mutex<Diagnostics>>) {
    let diagnostics = Arc::new(Mutex::new(Diagnostics::default()));
    (RequestOptions::default().with_diagnostics(diagnostics.clone()), diagnostics)
}

#[tokio::test]
async fn the_http_status_of_every_answer_is_in_the_diagnostics() {
    let router = server()
        .http_router(HttpOptions::default())
        .route("/gone", axum::routing::post(|| async { (StatusCode::NOT_FOUND, "no such endpoint").into_response() }));
    let addr = serve(router).await;
    let (o, diagnostics) = with_diagnostics();
    client(HttpConfig::new(format!("http://{addr}/mcp"))).discover(&o).await.unwrap();
    assert_eq!(diagnostics.lock().unwrap().http_status, Some(200));
    let (o, diagnostics) = with_diagnostics();
    let err = client(HttpConfig::new(format!("http://{addr}/gone"))).discover(&o).await.unwrap_err();
    assert!(matches!(err, Error::InvalidResponse { .. }), "{err:?}");
    assert_eq!(diagnostics.lock().unwrap().http_status, Some(404), "a wrong path is told apart by its status");
}

/// A provider that hands out `token-N`, a new N after each refusal, and
/// records the challenges it was shown.
#[derive(Debug, Default)]
struct RotatingToken {
    generation: AtomicUsize,
    challenges: Mutex<Vec<AuthRefusal>>,
}

impl AuthProvider for RotatingToken {
    fn authorization(&self) -> BoxFuture<Result<Option<String>, mcp_bridge_sdk::BoxError>> {
        let value = format!("Bearer token-{}", self.generation.load(Ordering::SeqCst));
        Box::pin(async move { Ok(Some(value)) })
    }

    fn refused(&self, refusal: AuthRefusal) -> BoxFuture<bool> {
        self.challenges.lock().unwrap().push(refusal);
        self.generation.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { true })
    }
}

/// The SDK's endpoint behind a check of `Authorization: Bearer <wanted>`.
fn guarded(wanted: &'static str, seen: Arc<Mutex<Vec<String>>>) -> axum::Router {
    let inner = server().http_router(HttpOptions::default());
    axum::Router::new().fallback_service(inner).layer(axum::middleware::from_fn(
        move |headers: HeaderMap, request: axum::extract::Request, next: axum::middleware::Next| {
            let seen = seen.clone();
            async move {
                let given = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
                seen.lock().unwrap().push(given.clone());
                if given != format!("Bearer {wanted}") {
                    return (
                        StatusCode::UNAUTHORIZED,
                        [("www-authenticate", "Bearer resource_metadata=\"http://127.0.0.1/prm\"")],
                        "",
                    )
                        .into_response();
                }
                next.run(request).await
            }
        },
    ))
}

#[tokio::test]
async fn an_auth_provider_gives_each_request_its_token_and_a_new_one_after_401() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let addr = serve(guarded("token-1", seen.clone())).await;
    let provider = Arc::new(RotatingToken::default());
    let config = HttpConfig::new(format!("http://{addr}/mcp")).with_auth(provider.clone());
    let rotating = client(config);
    let o = RequestOptions::default();
    let result = rotating.call_tool("ping", json!({}), &o).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "pong"));
    // The first request is the era probe (server/discover): refused once, then sent again; then the call.
    assert_eq!(
        *seen.lock().unwrap(),
        vec!["Bearer token-0", "Bearer token-1", "Bearer token-1"],
        "refused once, then sent again"
    );
    let challenge = provider.challenges.lock().unwrap()[0].clone();
    assert_eq!(challenge.status, 401);
    assert!(challenge.www_authenticate.unwrap().contains("resource_metadata"));
    rotating.discover(&o).await.unwrap();
    assert_eq!(seen.lock().unwrap().last().unwrap(), "Bearer token-1", "the new token is kept");

    // A fixed token that is refused is not sent again; the 401 is the answer.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let addr = serve(guarded("right", seen.clone())).await;
    let config = HttpConfig::new(format!("http://{addr}/mcp")).with_auth(Arc::new(BearerToken::new("wrong-s3cret")));
    let (o, diagnostics) = with_diagnostics();
    let err = client(config).discover(&o).await.unwrap_err();
    assert_eq!(seen.lock().unwrap().len(), 1);
    assert_eq!(diagnostics.lock().unwrap().http_status, Some(401));
    assert!(!format!("{err} {err:?}").contains("s3cret"), "the token stays out of errors: {err:?}");
}

/// A small HTTP proxy: forwards absolute-form requests to their host, and
/// answers CONNECT with 403 (refused) or a tunnel. It records each request
/// head it was sent.
async fn proxy(refuse_connect: bool) -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let log = heads.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut downstream, _)) = listener.accept().await else { return };
            let log = log.clone();
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = [0u8; 4096];
                let head_end = loop {
                    let n = downstream.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buffer.extend_from_slice(&chunk[..n]);
                    if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
                log.lock().unwrap().push(head.clone());
                let target = head.split_whitespace().nth(1).unwrap_or_default().to_owned();
                if head.starts_with("CONNECT ") {
                    if refuse_connect {
                        let _ = downstream.write_all(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n").await;
                        return;
                    }
                    let Ok(mut upstream) = TcpStream::connect(&target).await else { return };
                    let _ = downstream.write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n").await;
                    let _ = tokio::io::copy_bidirectional(&mut downstream, &mut upstream).await;
                    return;
                }
                let host = target.trim_start_matches("http://").split('/').next().unwrap_or_default().to_owned();
                let Ok(mut upstream) = TcpStream::connect(&host).await else { return };
                let _ = upstream.write_all(&buffer).await;
                let _ = tokio::io::copy_bidirectional(&mut downstream, &mut upstream).await;
            });
        }
    });
    (addr, heads)
}

#[tokio::test]
async fn an_explicit_proxy_carries_the_requests_and_gets_its_credentials() {
    let origin = serve(server().http_router(HttpOptions::default())).await;
    let (proxy_addr, heads) = proxy(false).await;
    let config = HttpConfig::new(format!("http://{origin}/mcp"))
        .with_proxy(ProxyConfig::Explicit { url: format!("http://user:pa55@{proxy_addr}"), no_proxy: Vec::new() });
    client(config).call_tool("ping", json!({}), &RequestOptions::default()).await.unwrap();
    let heads = heads.lock().unwrap();
    assert!(!heads.is_empty(), "the request went through the proxy");
    assert!(heads.iter().all(|h| h.to_ascii_lowercase().contains("proxy-authorization: basic")), "{heads:?}");
    // On Unix a plain http:// endpoint is tunnelled too: the proxy sees no
    // request. Elsewhere reqwest forwards it (an absolute URL).
    let through = if cfg!(unix) { format!("CONNECT {origin} ") } else { format!("POST http://{origin}/mcp ") };
    assert!(heads.iter().all(|h| h.starts_with(&through)), "{heads:?}");
}

#[tokio::test]
async fn a_proxy_that_refuses_the_tunnel_fails_the_request_without_hanging() {
    let (proxy_addr, heads) = proxy(true).await;
    let config = HttpConfig::new("https://mcp.example.test/mcp")
        .with_proxy(ProxyConfig::Explicit { url: format!("http://{proxy_addr}"), no_proxy: Vec::new() });
    let (o, _) = with_diagnostics();
    let (lines, guard) = test_support::LogCapture::start();
    let client = client(config);
    let refused = tokio::time::timeout(Duration::from_secs(10), client.discover(&o));
    let err = refused.await.expect("a refused tunnel fails at once").unwrap_err();
    drop(guard);
    assert!(matches!(&err, Error::Transport { .. }), "{err:?}");
    assert!(heads.lock().unwrap()[0].starts_with("CONNECT mcp.example.test:443 "));
    let log = lines.text();
    let warning = log.lines().find(|l| l.contains("mcp_proxy")).unwrap_or_else(|| panic!("no proxy warning: {log}"));
    assert!(
        warning.contains(&format!("http://{proxy_addr}")) && warning.contains("mcp.example.test:443"),
        "the warning names the proxy and the target: {warning}"
    );
    // Only our own tunnel (Unix) reads the proxy's status; reqwest's says
    // "unsuccessful".
    assert!(!cfg!(unix) || warning.contains("HTTP 403"), "the warning names the status: {warning}");
}

#[tokio::test]
async fn a_proxy_from_the_environment_never_gets_a_loopback_host() {
    let origin = serve(server().http_router(HttpOptions::default())).await;
    let (proxy_addr, heads) = proxy(false).await;
    let url = format!("http://{origin}/mcp");
    let environment = |name: &str| (name == "HTTP_PROXY").then(|| format!("http://{proxy_addr}"));
    let config = HttpConfig::new(&url).with_proxy(ProxyConfig::from_environment(&url, environment));
    assert!(matches!(config.proxy, ProxyConfig::Explicit { .. }));
    client(config).discover(&RequestOptions::default()).await.unwrap();
    assert!(heads.lock().unwrap().is_empty(), "127.0.0.1 is reached directly");
}

#[tokio::test]
async fn https_with_a_ca_file_and_a_client_certificate() {
    let dir = std::env::temp_dir().join(format!("mcp-sdk-tls-{}", std::process::id()));
    let pki = TestPki::with_client_certificates(&dir);
    let client_identity = pki.client_identity_file.clone().unwrap();
    let url = format!("{}/mcp", serve_tls(server().http_router(HttpOptions::default()), Some(&pki)).await);
    let o = RequestOptions::default();
    let both =
        HttpConfig::new(&url).with_ca_file(pki.ca_file.clone()).with_client_identity_file(client_identity.clone());
    let result = client(both).call_tool("ping", json!({}), &o).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "pong"));

    let untrusted = HttpConfig::new(&url).with_client_identity_file(client_identity.clone());
    let err = client(untrusted).discover(&o).await.unwrap_err();
    assert!(matches!(err, Error::Transport { .. }), "a server outside the trust anchors is refused: {err:?}");
    let anonymous = HttpConfig::new(&url).with_ca_file(pki.ca_file.clone());
    assert!(client(anonymous).discover(&o).await.is_err(), "the server requires a client certificate");

    let missing = HttpConfig::new(&url).with_ca_file(dir.join("nope.pem"));
    let err = connect(missing).unwrap_err();
    assert!(err.to_string().contains("cannot read the CA file"), "{err}");
    std::fs::write(dir.join("key-only.pem"), "-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n")
        .unwrap();
    let broken = HttpConfig::new(&url).with_client_identity_file(dir.join("key-only.pem"));
    let err = connect(broken).unwrap_err().to_string();
    assert!(err.contains("needs a certificate and its private key") && !err.contains("c2VjcmV0"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn requests_beyond_max_in_flight_wait_for_a_slot_and_pending_requests_are_bounded() {
    // A server that answers after 300 ms and records how many it holds at once.
    let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (n, m) = (now.clone(), most.clone());
    let router = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |body: axum::body::Bytes| {
            let (now, most) = (n.clone(), m.clone());
            async move {
                let held = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(held, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(300)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
                axum::Json(json!({"jsonrpc": "2.0", "id": request["id"],
                    "result": {"resultType": "complete", "content": [{"type": "text", "text": "pong"}]}}))
            }
        }),
    );
    let addr = serve(router).await;
    let config = HttpConfig::new(format!("http://{addr}/mcp")).with_max_in_flight(2);
    let options = ClientOptions::new("bounded", "1").with_max_pending(6);
    let client = Client::new(options, connect(config).unwrap());
    let o = RequestOptions::default();
    let waiting: Vec<_> = (0..6)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("ping", json!({}), &RequestOptions::default()).await })
        })
        .collect();
    common::until("the server to hold two requests", || now.load(Ordering::SeqCst) == 2).await;
    // All six are waiting; a seventh is refused at once.
    let refused = client.call_tool("ping", json!({}), &o).await;
    assert!(matches!(refused, Err(Error::Busy { limit: 6 })), "{refused:?}");
    for result in futures_util::future::join_all(waiting).await {
        assert!(result.unwrap().is_ok());
    }
    assert_eq!(most.load(Ordering::SeqCst), 2, "never more than two at once on the wire");
}

/// What a server that records every request it gets was sent: each
/// request's method, headers and body.
type Received = Arc<Mutex<Vec<(String, HeaderMap, Vec<u8>)>>>;

/// A server that records every request and answers it with an empty JSON
/// object; its address.
async fn recorder() -> (SocketAddr, Received) {
    let received: Received = Arc::default();
    let log = received.clone();
    let router =
        axum::Router::new().fallback(move |method: axum::http::Method, headers: HeaderMap, body: axum::body::Bytes| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push((method.to_string(), headers, body.to_vec()));
                axum::Json(json!({}))
            }
        });
    (serve(router).await, received)
}

/// Answers with `status` and `location`.
fn redirect(status: StatusCode, location: String) -> axum::routing::MethodRouter {
    axum::routing::any(move || {
        let location = location.clone();
        async move { (status, [(axum::http::header::LOCATION, location)]).into_response() }
    })
}

#[tokio::test]
async fn redirects_are_followed_on_the_servers_origin_only_and_others_get_nothing() {
    let (elsewhere, received) = recorder().await;
    let away = format!("http://{elsewhere}/mcp?token=q-s3cret");
    let router = server()
        .http_router(HttpOptions::default())
        .route("/moved", redirect(StatusCode::PERMANENT_REDIRECT, "/mcp".into()))
        .route("/loop", redirect(StatusCode::TEMPORARY_REDIRECT, "/loop".into()))
        .route("/307", redirect(StatusCode::TEMPORARY_REDIRECT, away.clone()))
        .route("/302", redirect(StatusCode::FOUND, away.clone()));
    let addr = serve(router).await;
    let headers = vec![("x-api-key".to_owned(), "h-s3cret".to_owned())];
    let token = Arc::new(BearerToken::new("b-s3cret"));
    let config = |path: &str| {
        HttpConfig::new(format!("http://{addr}{path}")).with_headers(headers.clone()).with_auth(token.clone())
    };
    let o = RequestOptions::default();

    let moved = client(config("/moved"));
    let result = moved.call_tool("ping", json!({}), &o).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "pong"), "same origin: followed");

    for path in ["/307", "/302"] {
        let err = client(config(path)).discover(&o).await.unwrap_err();
        let text = format!("{err}");
        assert!(matches!(err, Error::Transport { .. }), "{path}: {err:?}");
        assert!(text.contains(&format!("redirected to http://{elsewhere}, another origin")), "{path}: {text}");
        assert!(!text.contains("s3cret"), "{path}: the redirect's query stays out of the error: {text}");
    }
    assert!(received.lock().unwrap().is_empty(), "the other origin got no request, header or body");

    let err = client(config("/loop")).discover(&o).await.unwrap_err();
    assert!(err.to_string().contains("redirected more than 5 times"), "{err}");
}

#[tokio::test]
async fn a_2025_11_25_sessions_get_stream_and_delete_follow_no_redirect_to_another_origin() {
    use axum::http::{Method, header::LOCATION};
    let (elsewhere, received) = recorder().await;
    let away = format!("http://{elsewhere}/mcp");
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    // A 2025-11-25 server: refuses the probe, starts a session, answers
    // every other request with an empty tool list; its GET stream and its
    // DELETE redirect to another origin.
    let legacy = axum::Router::new().fallback(move |method: Method, body: String| {
        let (log, away) = (log.clone(), away.clone());
        async move {
            log.lock().unwrap().push(method.to_string());
            let message: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
            let id = message["id"].clone();
            match (method, message["method"].as_str()) {
                (Method::GET | Method::DELETE, _) => {
                    (StatusCode::TEMPORARY_REDIRECT, [(LOCATION, away)]).into_response()
                }
                (_, Some("server/discover")) => StatusCode::BAD_REQUEST.into_response(),
                (_, Some("initialize")) => (
                    [("mcp-session-id", "s-1")],
                    axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                        "serverInfo": {"name": "legacy", "version": "1"}
                    }})),
                )
                    .into_response(),
                _ if id.is_null() => StatusCode::ACCEPTED.into_response(),
                _ => axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}})).into_response(),
            }
        }
    });
    let addr = serve(legacy).await;
    let headers = vec![("x-api-key".to_owned(), "h-s3cret".to_owned())];
    let config = HttpConfig::new(format!("http://{addr}/mcp")).with_headers(headers);
    let client = client(config);
    client.list_tools(None, &RequestOptions::default()).await.unwrap();
    client.close().await;
    let seen = seen.lock().unwrap().clone();
    assert!(seen.contains(&"GET".to_owned()) && seen.contains(&"DELETE".to_owned()), "{seen:?}");
    assert!(received.lock().unwrap().is_empty(), "the other origin got nothing");
}

#[tokio::test]
async fn a_tool_with_invalid_header_annotations_is_removed_and_the_hook_told_why() {
    let tool = |name: &str, header: &str| -> mcp_bridge_protocol::types::Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": header}}}}))
        .unwrap()
    };
    let answer = |_call, _ctx| async { Ok(mcp_bridge_sdk::Reply::Complete(CallToolResult::text("ok"))) };
    let server = Server::builder(mcp_bridge_protocol::types::Implementation::new("annotated", "1"))
        .tool(tool("good", "Region"), answer)
        .tool(tool("bad", "Bad Name"), answer)
        .build();
    let addr = serve(server.http_router(HttpOptions::default())).await;
    let rejected = Arc::new(Mutex::new(Vec::new()));
    let seen = rejected.clone();
    let hook: mcp_bridge_sdk::transport::http::RejectedToolHook =
        Arc::new(move |name: &str, reason: &str| seen.lock().unwrap().push((name.to_owned(), reason.to_owned())));
    let client = client(HttpConfig::new(format!("http://{addr}/mcp")).with_on_rejected_tool(hook));
    let tools = client.list_all_tools(&RequestOptions::default()).await.unwrap();
    assert_eq!(tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["good"]);
    let rejected = rejected.lock().unwrap().clone();
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert_eq!(rejected[0].0, "bad");
    assert!(rejected[0].1.contains("Bad Name"), "the reason names the header: {rejected:?}");
}

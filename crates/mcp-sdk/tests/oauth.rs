//! The OAuth client against a small authorization server and a protected
//! MCP server on loopback: sign-in on the first refusal, the refresh of a
//! token that expires soon, a newer stored record used instead of a
//! refresh, sign-out, and no token, code or secret in any error.
//! (The official conformance suite's `auth/*` scenarios run in
//! `scripts/conformance`.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use mcp_protocol::types::{CallToolResult, ContentBlock, Implementation, Tool};
use mcp_sdk::auth::{
    AuthorizationRequest, AuthorizationResponse, Authorize, MemoryStore, OAuthClient, OAuthConfig, TokenRecord,
    TokenStore,
};
use mcp_sdk::server::http::HttpOptions;
use mcp_sdk::transport::http::{HttpConfig, connect};
use mcp_sdk::{Client, ClientOptions, Reply, RequestOptions, Server};
use serde_json::json;
use tokio::net::TcpListener;

/// What the test authorization server has handed out and seen.
#[derive(Default)]
struct Issued {
    /// Access tokens the protected server accepts.
    valid: Vec<String>,
    /// Grant types of the token requests, in order.
    grants: Vec<String>,
    /// Seconds to the expiry of the next token.
    expires_in: u64,
    /// Refuse every token request with invalid_grant.
    refuse: bool,
}

type Shared = Arc<Mutex<Issued>>;

async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    (listener, base)
}

/// The authorization server: metadata, an authorize endpoint that approves
/// at once, a token endpoint, registration.
async fn authorization_server(issued: Shared) -> String {
    let (listener, base) = listen().await;
    let issuer = base.clone();
    let metadata = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": format!("{base}/token"),
        "registration_endpoint": format!("{base}/register"),
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": true,
        "scopes_supported": ["mcp", "offline_access"]
    });
    let iss = base.clone();
    let router = axum::Router::new()
        .route("/.well-known/oauth-authorization-server", get(move || async move { axum::Json(metadata) }))
        .route(
            "/authorize",
            get(move |Query(q): Query<std::collections::HashMap<String, String>>| async move {
                let to = format!("{}?code=code-s3cret&state={}&iss={}", q["redirect_uri"], q["state"], iss);
                (StatusCode::FOUND, [("location", to)]).into_response()
            }),
        )
        .route("/register", post(|| async { (StatusCode::CREATED, axum::Json(json!({"client_id": "client-1"}))) }))
        .route(
            "/token",
            post(|State(issued): State<Shared>, body: String| async move {
                let form: std::collections::HashMap<String, String> = body
                    .split('&')
                    .filter_map(|p| p.split_once('='))
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
                let mut issued = issued.lock().unwrap();
                issued.grants.push(form.get("grant_type").cloned().unwrap_or_default());
                if issued.refuse {
                    return (StatusCode::BAD_REQUEST, axum::Json(json!({"error": "invalid_grant"}))).into_response();
                }
                let token = format!("at-{}", issued.grants.len());
                issued.valid.push(token.clone());
                let answer = json!({"access_token": token, "token_type": "Bearer", "expires_in": issued.expires_in,
                    "refresh_token": format!("rt-{}", issued.grants.len()), "scope": "mcp offline_access"});
                axum::Json(answer).into_response()
            }),
        )
        .with_state(issued);
    tokio::spawn(async move { axum::serve(listener, router).await });
    base
}

/// The protected MCP server, with its resource metadata.
async fn protected_server(issued: Shared, issuer: String) -> String {
    let (listener, base) = listen().await;
    let tool: Tool = serde_json::from_value(json!({"name": "ping", "inputSchema": {"type": "object"}})).unwrap();
    let server = Server::builder(Implementation::new("protected", "1"))
        .tool(tool, |_call, _ctx| async move {
            Ok(Reply::Complete(CallToolResult {
                result_type: Default::default(),
                content: vec![ContentBlock::text("pong")],
                structured_content: None,
                is_error: None,
                meta: None,
                extra: Default::default(),
            }))
        })
        .build();
    let prm =
        json!({"resource": format!("{base}/mcp"), "authorization_servers": [issuer], "scopes_supported": ["mcp"]});
    let challenge = format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"");
    let guarded = axum::Router::new().fallback_service(server.http_router(HttpOptions::default())).layer(
        axum::middleware::from_fn(
            move |headers: HeaderMap, request: axum::extract::Request, next: axum::middleware::Next| {
                let (issued, challenge) = (issued.clone(), challenge.clone());
                async move {
                    let token = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.strip_prefix("Bearer "));
                    if !token.is_some_and(|t| issued.lock().unwrap().valid.iter().any(|v| v == t)) {
                        return (StatusCode::UNAUTHORIZED, [("www-authenticate", challenge)], "").into_response();
                    }
                    next.run(request).await
                }
            },
        ),
    );
    let router = axum::Router::new()
        .route("/.well-known/oauth-protected-resource/mcp", get(move || async move { axum::Json(prm) }))
        .merge(guarded);
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("{base}/mcp")
}

/// A browser whose user approves at once; counts the sign-ins.
fn approving(count: Arc<AtomicUsize>) -> Authorize {
    Arc::new(move |request: AuthorizationRequest| {
        let count = count.clone();
        Box::pin(async move {
            count.fetch_add(1, Ordering::SeqCst);
            let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
            let response = http.get(&request.url).send().await.map_err(|e| e.to_string())?;
            let location = response.headers()["location"].to_str().unwrap().to_owned();
            AuthorizationResponse::from_redirect(&location)
        })
    })
}

struct Setup {
    issued: Shared,
    url: String,
    sign_ins: Arc<AtomicUsize>,
    store: Arc<MemoryStore>,
}

async fn setup(expires_in: u64) -> Setup {
    let issued: Shared = Arc::new(Mutex::new(Issued { expires_in, ..Issued::default() }));
    let issuer = authorization_server(issued.clone()).await;
    let url = protected_server(issued.clone(), issuer).await;
    Setup { issued, url, sign_ins: Arc::default(), store: Arc::default() }
}

fn oauth(s: &Setup) -> OAuthClient {
    let config = OAuthConfig {
        server_url: s.url.clone(),
        redirect_uri: "http://127.0.0.1:1/callback".into(),
        client_name: "oauth-test".into(),
        pre_registered: None,
        client_metadata_url: None,
        connection: HttpConfig::new(&s.url),
    };
    OAuthClient::new(config, approving(s.sign_ins.clone()), s.store.clone()).unwrap()
}

fn client(s: &Setup, oauth: &OAuthClient) -> Client {
    let config = HttpConfig { auth: Some(Arc::new(oauth.clone())), ..HttpConfig::new(&s.url) };
    Client::new(ClientOptions::new("oauth-test", "1"), connect(config).unwrap())
}

fn stored(s: &Setup) -> TokenRecord {
    let key = mcp_sdk::auth::store::tokens_key(&s.url);
    serde_json::from_str(&s.store.load(&key).unwrap().unwrap()).unwrap()
}

#[tokio::test]
async fn the_first_refusal_signs_in_and_later_requests_use_the_token() {
    let s = setup(3600).await;
    let oauth = oauth(&s);
    let client = client(&s, &oauth);
    let o = RequestOptions::default();
    let result = client.call_tool("ping", json!({}), &o).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "pong"));
    client.discover(&o).await.unwrap();
    assert_eq!(s.sign_ins.load(Ordering::SeqCst), 1, "one sign-in for both requests");
    assert_eq!(s.issued.lock().unwrap().grants, ["authorization_code"]);
    let record = stored(&s);
    assert_eq!((record.access_token.as_str(), record.client_id.as_str()), ("at-1", "client-1"));
    assert!(!format!("{record:?}").contains("rt-1"), "the record's Debug hides its tokens");

    oauth.sign_out().await.unwrap();
    let key = mcp_sdk::auth::store::tokens_key(&s.url);
    assert_eq!(s.store.load(&key).unwrap(), None, "signing out forgets the tokens");
}

#[tokio::test]
async fn a_token_that_expires_soon_is_refreshed_without_a_new_sign_in() {
    let s = setup(4).await;
    let oauth = oauth(&s);
    let client = client(&s, &oauth);
    let o = RequestOptions::default();
    client.discover(&o).await.unwrap();
    client.discover(&o).await.unwrap();
    assert_eq!(s.issued.lock().unwrap().grants, ["authorization_code"], "a fresh 4 s token is used as it is");
    // Past half its lifetime.
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    client.discover(&o).await.unwrap();
    assert_eq!(s.sign_ins.load(Ordering::SeqCst), 1);
    assert_eq!(s.issued.lock().unwrap().grants, ["authorization_code", "refresh_token"]);
    assert_eq!(stored(&s).access_token, "at-2");
}

#[tokio::test]
async fn a_newer_stored_record_is_used_instead_of_a_refresh() {
    let s = setup(4).await;
    let oauth = oauth(&s);
    let client = client(&s, &oauth);
    let o = RequestOptions::default();
    client.discover(&o).await.unwrap();
    // Another process refreshed meanwhile and wrote a long-lived token.
    s.issued.lock().unwrap().valid.push("at-other".into());
    let mut newer = stored(&s);
    newer.access_token = "at-other".into();
    newer.expires_at = Some(u64::MAX / 2);
    let key = mcp_sdk::auth::store::tokens_key(&s.url);
    s.store.save(&key, &serde_json::to_string(&newer).unwrap()).unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    client.discover(&o).await.unwrap();
    assert_eq!(s.issued.lock().unwrap().grants, ["authorization_code"], "no refresh over the newer record");
    assert_eq!(stored(&s).access_token, "at-other", "the newer record is not overwritten");
}

#[tokio::test]
async fn a_refused_token_request_is_an_error_without_secrets() {
    let s = setup(3600).await;
    s.issued.lock().unwrap().refuse = true;
    let oauth = oauth(&s);
    let client = client(&s, &oauth);
    let err = client.discover(&RequestOptions::default()).await.unwrap_err();
    let problem = oauth.last_problem().unwrap();
    let text = format!("{err} {err:?} {problem} {problem:?}");
    assert!(text.contains("invalid_grant") && text.contains("401"), "{text}");
    for secret in ["code-s3cret", "at-", "rt-"] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
}

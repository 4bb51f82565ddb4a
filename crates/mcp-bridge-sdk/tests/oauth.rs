//! The OAuth client against a small authorization server and a protected
//! MCP server on loopback: sign-in on the first refusal, the refresh of a
//! token that expires soon, a newer stored record used instead of a
//! refresh, sign-out, a workload's token exchanged (JWT-bearer grant), a
//! sign-in asking the user of the request that needed it, and no token,
//! code or secret in any error.
//! (The official conformance suite's `auth/*` scenarios run in
//! `scripts/conformance`.)

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::types::{ClientCapabilities, ContentBlock, ElicitAction, ElicitResult, InputResponse};
use mcp_bridge_sdk::auth::{
    AuthorizationRequest, AuthorizationResponse, Authorize, DeviceAuthorization, DevicePrompt, OAuthClient,
    OAuthConfig, SignInError, TokenRecord, TokenSource, authorize,
};
use mcp_bridge_sdk::client::InputHooks;
use mcp_bridge_sdk::server::http::HttpOptions;
use mcp_bridge_sdk::store::{MemoryStore, RecordStore};
use mcp_bridge_sdk::transport::http::{HttpConfig, connect};
use mcp_bridge_sdk::{BoxError, Client, ClientOptions, RequestOptions};
use serde_json::json;
use test_support::oauth::{Issued, Shared, authorization_server, protected};

/// The MCP server the OAuth world protects.
fn ping_server() -> axum::Router {
    common::ping_server().http_router(HttpOptions::default())
}

/// A browser whose user approves at once; counts the sign-ins.
fn approving(count: Arc<AtomicUsize>) -> Authorize {
    authorize(move |request: AuthorizationRequest| {
        let count = count.clone();
        async move {
            count.fetch_add(1, Ordering::SeqCst);
            let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
            let response = http.get(&request.url).send().await?;
            let location = response.headers()["location"].to_str().unwrap().to_owned();
            Ok::<_, BoxError>(AuthorizationResponse::from_redirect(&location)?)
        }
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
    let issuer = authorization_server(issued.clone(), None).await;
    let url = protected(ping_server(), issued.clone(), issuer).await;
    Setup { issued, url, sign_ins: Arc::default(), store: Arc::default() }
}

fn oauth(s: &Setup) -> OAuthClient {
    let config = OAuthConfig::new(s.url.clone(), "http://127.0.0.1:1/callback", "oauth-test")
        .with_connection(HttpConfig::new(&s.url));
    OAuthClient::new(config, approving(s.sign_ins.clone()), s.store.clone()).unwrap()
}

fn client(s: &Setup, oauth: &OAuthClient) -> Client {
    let config = HttpConfig::new(&s.url).with_auth(Arc::new(oauth.clone()));
    Client::new(ClientOptions::new("oauth-test", "1"), connect(config).unwrap())
}

fn stored(s: &Setup) -> TokenRecord {
    let key = mcp_bridge_sdk::auth::store::tokens_key(&s.url);
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
    let key = mcp_bridge_sdk::auth::store::tokens_key(&s.url);
    assert_eq!(s.store.load(&key).unwrap(), None, "signing out forgets the tokens");
}

#[tokio::test(start_paused = true)]
async fn a_token_that_expires_soon_is_refreshed_without_a_new_sign_in() {
    let s = setup(4).await;
    let oauth = oauth(&s);
    let client = client(&s, &oauth);
    let o = RequestOptions::default();
    client.discover(&o).await.unwrap();
    client.discover(&o).await.unwrap();
    assert_eq!(s.issued.lock().unwrap().grants, ["authorization_code"], "a fresh 4 s token is used as it is");
    // Past half its lifetime.
    tokio::time::advance(std::time::Duration::from_millis(2100)).await;
    client.discover(&o).await.unwrap();
    assert_eq!(s.sign_ins.load(Ordering::SeqCst), 1);
    assert_eq!(s.issued.lock().unwrap().grants, ["authorization_code", "refresh_token"]);
    assert_eq!(stored(&s).access_token, "at-2");
}

/// What another process does after its refresh: the server accepts its
/// access token `at-other`, and its record (the stored one, changed by
/// `change`) replaces this client's in the store.
fn stored_by_another_process(s: &Setup, change: impl FnOnce(&mut TokenRecord)) {
    s.issued.lock().unwrap().valid.push("at-other".into());
    let mut other = stored(s);
    other.access_token = "at-other".into();
    change(&mut other);
    let key = mcp_bridge_sdk::auth::store::tokens_key(&s.url);
    s.store.save(&key, &serde_json::to_string(&other).unwrap()).unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_newer_stored_record_is_used_instead_of_a_refresh() {
    let s = setup(4).await;
    let oauth = oauth(&s);
    let client = client(&s, &oauth);
    let o = RequestOptions::default();
    client.discover(&o).await.unwrap();
    // Another process refreshed meanwhile and wrote a long-lived token.
    stored_by_another_process(&s, |newer| newer.expires_at = Some(u64::MAX / 2));
    tokio::time::advance(std::time::Duration::from_millis(2100)).await;
    client.discover(&o).await.unwrap();
    assert_eq!(s.issued.lock().unwrap().grants, ["authorization_code"], "no refresh over the newer record");
    assert_eq!(stored(&s).access_token, "at-other", "the newer record is not overwritten");
}

#[tokio::test(start_paused = true)]
async fn a_refresh_uses_the_refresh_token_another_process_rotated() {
    let s = setup(4).await;
    let oauth = oauth(&s);
    let client = client(&s, &oauth);
    let o = RequestOptions::default();
    client.discover(&o).await.unwrap();
    // Another process refreshed (the server rotated the refresh token) and
    // its token expires soon too.
    stored_by_another_process(&s, |other| other.refresh_token = Some("rt-other".into()));
    tokio::time::advance(std::time::Duration::from_millis(2100)).await;
    client.discover(&o).await.unwrap();
    let issued = s.issued.lock().unwrap();
    assert_eq!(issued.grants, ["authorization_code", "refresh_token"]);
    let sent = issued.forms.last().and_then(|f| f.get("refresh_token")).map(String::as_str);
    assert_eq!(sent, Some("rt-other"), "the stored, rotated refresh token, not the one this client held");
    assert_eq!(s.sign_ins.load(Ordering::SeqCst), 1, "no new sign-in");
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

/// Tokens the test authorization server issued and has not revoked, each
/// granting the scopes its function gives.
struct IssuedTokens(Shared, fn(&str) -> Vec<&'static str>);

impl mcp_bridge_sdk::server::protect::TokenValidator for IssuedTokens {
    fn validate(
        &self,
        token: &str,
    ) -> mcp_bridge_sdk::BoxFuture<
        Result<mcp_bridge_sdk::server::protect::Caller, mcp_bridge_sdk::server::protect::Refusal>,
    > {
        use mcp_bridge_sdk::server::protect::{Caller, Refusal};
        let known = self.0.lock().unwrap().valid.iter().any(|t| t == token);
        let scopes = (self.1)(token);
        Box::pin(async move {
            if known {
                Ok(Caller::new("user-1", scopes))
            } else {
                Err(Refusal::InvalidToken { description: "unknown" })
            }
        })
    }
}

#[tokio::test]
async fn the_oauth_client_signs_in_to_an_endpoint_the_sdk_protects() {
    use mcp_bridge_sdk::server::protect::{ProtectedResource, Protection};
    let issued: Shared = Arc::new(Mutex::new(Issued { expires_in: 3600, ..Issued::default() }));
    let issuer = authorization_server(issued.clone(), None).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let resource = ProtectedResource::new(&url, issuer).with_scopes_supported(["mcp"]);
    let options = HttpOptions::default()
        .with_protection(Protection::new(resource, IssuedTokens(issued.clone(), |_| vec!["mcp"])));
    let server = common::ping_server();
    tokio::spawn(async move { server.serve_http(listener, options, std::future::pending()).await });
    let s = Setup { issued, url, sign_ins: Arc::default(), store: Arc::default() };
    let oauth = oauth(&s);
    let client = client(&s, &oauth);
    let result = client.call_tool("ping", json!({}), &RequestOptions::default()).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "pong"));
    assert_eq!(s.sign_ins.load(Ordering::SeqCst), 1, "one sign-in, through the endpoint's own metadata");
    client.call_tool("ping", json!({}), &RequestOptions::default()).await.unwrap();
    assert_eq!(s.sign_ins.load(Ordering::SeqCst), 1, "the token is used again");
}

#[tokio::test]
async fn a_workload_exchanges_its_platform_token_read_anew_at_each_sign_in() {
    // Tokens that expire at once: every request signs in again.
    let s = setup(0).await;
    s.issued.lock().unwrap().without_refresh_tokens = true;
    let dir = std::env::temp_dir().join(format!("mcp-wif-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("token");
    std::fs::write(&file, "platform-jwt-one\n").unwrap();
    let oauth =
        OAuthClient::workload_identity(&s.url, "billing-job", TokenSource::file(&file), s.store.clone()).unwrap();
    let client = client(&s, &oauth);
    let o = RequestOptions::default();

    let result = client.call_tool("ping", json!({}), &o).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "pong"));
    {
        let issued = s.issued.lock().unwrap();
        assert!(
            issued.grants.iter().all(|g| g == "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            "{:?}",
            issued.grants
        );
        assert_eq!(issued.assertions.last().map(String::as_str), Some("platform-jwt-one"));
        assert!(issued.client_auth.iter().all(|a| a == "none billing-job"), "{:?}", issued.client_auth);
        assert_eq!(issued.authorizations, 0, "no browser");
    }
    // The platform rotated the token: the next exchange sends the new one.
    std::fs::write(&file, "platform-jwt-two").unwrap();
    client.call_tool("ping", json!({}), &o).await.unwrap();
    assert_eq!(s.issued.lock().unwrap().assertions.last().map(String::as_str), Some("platform-jwt-two"));

    // No token file (and the access tokens revoked): the sign-in fails
    // naming the file, never a token.
    std::fs::remove_file(&file).unwrap();
    s.issued.lock().unwrap().valid.clear();
    let failed = client.call_tool("ping", json!({}), &o).await.unwrap_err();
    let problem = oauth.last_problem().expect("the sign-in failed");
    assert!(matches!(&problem, SignInError::Token(reason) if reason.contains("token")), "{problem:?}");
    for text in [problem.to_string(), failed.to_string()] {
        assert!(!text.contains("platform-jwt"), "{text}");
    }
    assert!(problem.to_string().contains(file.to_str().unwrap()), "{problem}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_device_sign_in_polls_at_the_servers_pace_and_stops_when_the_code_expires() {
    let s = setup(3600).await;
    {
        let mut issued = s.issued.lock().unwrap();
        issued.device_expires_in = 600;
        issued.device_answers.extend(["authorization_pending", "slow_down"]);
    }
    let shown: Arc<Mutex<Vec<DeviceAuthorization>>> = Arc::default();
    let seen = shown.clone();
    let prompt = DevicePrompt::new(move |device: DeviceAuthorization| {
        seen.lock().unwrap().push(device);
        async { Ok::<_, String>(()) }
    });
    let oauth = OAuthClient::device_code(&s.url, "device-test", prompt.clone(), s.store.clone()).unwrap();
    let result = client(&s, &oauth).call_tool("ping", json!({}), &RequestOptions::default()).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "pong"));
    assert_eq!(shown.lock().unwrap()[0].user_code, "WDJB-MJHT");
    let polls = s.issued.lock().unwrap().device_polls.clone();
    assert_eq!(polls.len(), 3, "pending, slow_down, then the tokens");
    // The server's interval (1 s) between polls, 5 s more after slow_down.
    assert!(polls[1] - polls[0] >= std::time::Duration::from_secs(1), "{:?}", polls[1] - polls[0]);
    assert!(polls[2] - polls[1] >= std::time::Duration::from_secs(6), "{:?}", polls[2] - polls[1]);

    // A code that expires before the user finished: no poll after it, a clear error.
    let s = setup(3600).await;
    {
        let mut issued = s.issued.lock().unwrap();
        issued.device_expires_in = 1;
        issued.device_answers.extend(["authorization_pending"; 10]);
    }
    let oauth = OAuthClient::device_code(&s.url, "device-test", prompt, s.store.clone()).unwrap();
    client(&s, &oauth).call_tool("ping", json!({}), &RequestOptions::default()).await.unwrap_err();
    assert_eq!(oauth.last_problem(), Some(SignInError::DeviceCodeExpired));
    assert!(s.issued.lock().unwrap().device_polls.is_empty(), "the code expired before the first poll");
}

/// A hostile protected resource on loopback http that is its own
/// authorization server: its 401 asks for `scope`, its metadata names
/// `issuer` (itself when `None`) and `token_endpoint` (its own when
/// `None`). Returns the MCP URL and the paths it was asked for.
async fn hostile(
    scope: String,
    issuer: Option<&str>,
    token_endpoint: Option<&str>,
) -> (String, Arc<Mutex<Vec<String>>>) {
    use axum::http::{StatusCode, header::WWW_AUTHENTICATE};
    use axum::response::IntoResponse;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let challenge = format!("Bearer resource_metadata=\"{base}/prm\", scope=\"{scope}\"");
    let resource = json!({ "resource": format!("{base}/mcp"), "authorization_servers": [issuer.unwrap_or(&base)] });
    let metadata = json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/authorize"),
        "token_endpoint": token_endpoint.map_or(format!("{base}/token"), str::to_owned),
        "registration_endpoint": format!("{base}/register"),
        "code_challenge_methods_supported": ["S256"],
    });
    let paths: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = paths.clone();
    let router = axum::Router::new()
        .route(
            "/mcp",
            axum::routing::post(move || async move { (StatusCode::UNAUTHORIZED, [(WWW_AUTHENTICATE, challenge)]) }),
        )
        .route("/prm", axum::routing::get(move || async move { axum::Json(resource) }))
        .route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(move || async move { axum::Json(metadata) }),
        )
        .route(
            "/register",
            axum::routing::post(|| async {
                (StatusCode::CREATED, axum::Json(json!({ "client_id": "c-1" }))).into_response()
            }),
        )
        .layer(axum::middleware::from_fn(move |request: axum::extract::Request, next: axum::middleware::Next| {
            log.lock().unwrap().push(request.uri().path().to_owned());
            next.run(request)
        }));
    tokio::spawn(async move { axum::serve(listener, router).await });
    (format!("{base}/mcp"), paths)
}

/// A browser hook that records the authorization URLs it was given and
/// stops there.
fn recording(urls: Arc<Mutex<Vec<String>>>) -> Authorize {
    authorize(move |request: AuthorizationRequest| {
        urls.lock().unwrap().push(request.url);
        async { Err::<AuthorizationResponse, _>("the test stops at the browser") }
    })
}

/// Signs in at `url` with the [`recording`] hook, within `guard` (a hang
/// guard); the problem it met.
async fn sign_in_at(url: &str, urls: Arc<Mutex<Vec<String>>>, guard: Duration) -> SignInError {
    let config =
        OAuthConfig::new(url, "http://127.0.0.1:1/callback", "oauth-test").with_connection(HttpConfig::new(url));
    let oauth = OAuthClient::new(config, recording(urls), Arc::new(MemoryStore::default())).unwrap();
    let client = Client::new(
        ClientOptions::new("oauth-test", "1"),
        connect(HttpConfig::new(url).with_auth(Arc::new(oauth.clone()))).unwrap(),
    );
    let o = RequestOptions::default();
    let sent = tokio::time::timeout(guard, client.discover(&o));
    assert!(sent.await.expect("the sign-in does not hang").is_err());
    oauth.last_problem().expect("the sign-in failed")
}

#[tokio::test]
async fn oauth_endpoints_off_loopback_over_plain_http_are_refused_before_any_request() {
    let urls = Arc::new(Mutex::new(Vec::new()));
    let (url, paths) = hostile("mcp".into(), None, Some("http://evil.example/token")).await;
    let problem = sign_in_at(&url, urls.clone(), Duration::from_secs(20)).await;
    assert_eq!(
        problem,
        SignInError::InsecureEndpoint { what: "token endpoint", url: "http://evil.example/token".into() }
    );
    assert!(problem.to_string().contains("http://evil.example/token is not https"), "{problem}");
    assert!(urls.lock().unwrap().is_empty(), "the browser was never opened");
    let paths = paths.lock().unwrap().clone();
    assert!(!paths.iter().any(|p| p == "/register"), "no registration: {paths:?}");

    // Refused before a connection to 10.0.0.1 is tried (which could hang).
    let (url, _) = hostile("mcp".into(), Some("http://10.0.0.1"), None).await;
    let problem = sign_in_at(&url, urls.clone(), Duration::from_secs(20)).await;
    assert_eq!(problem, SignInError::InsecureEndpoint { what: "authorization server", url: "http://10.0.0.1/".into() });
}

// Two workers: the hang guard fires even while a worker is stuck computing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_challenged_scope_is_asked_for_once_per_scope() {
    // 380 KB of distinct scopes, then each of the first thousand again.
    let distinct: Vec<String> = (0..50_000).map(|n| format!("s{n:05x}")).collect();
    let repeated = distinct.iter().take(1000).cloned();
    let scope = distinct.iter().cloned().chain(repeated).collect::<Vec<_>>().join(" ");
    assert!(scope.len() > 350_000);
    let urls = Arc::new(Mutex::new(Vec::new()));
    let (url, _) = hostile(scope, None, None).await;
    // Done in well under a second; the quadratic de-duplication took 20 s.
    let problem = sign_in_at(&url, urls.clone(), Duration::from_secs(5)).await;
    assert!(matches!(problem, SignInError::Authorize(_)), "{problem:?}");
    let asked = reqwest::Url::parse(&urls.lock().unwrap()[0]).unwrap();
    let asked = asked.query_pairs().find(|(k, _)| k == "scope").unwrap().1.into_owned();
    assert_eq!(asked, distinct.join(" "), "every scope once, in order");
}

/// A store that counts its reads.
#[derive(Debug, Default)]
struct CountingStore {
    records: MemoryStore,
    loads: AtomicUsize,
}

impl RecordStore for CountingStore {
    fn load(&self, key: &str) -> Result<Option<String>, mcp_bridge_sdk::store::StoreError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        self.records.load(key)
    }
    fn save(&self, key: &str, value: &str) -> Result<(), mcp_bridge_sdk::store::StoreError> {
        self.records.save(key, value)
    }
    fn remove(&self, key: &str) -> Result<(), mcp_bridge_sdk::store::StoreError> {
        self.records.remove(key)
    }
}

/// The first token (`at-1`) grants `mcp`, every later one `mcp write`.
fn step_up_scopes(token: &str) -> Vec<&'static str> {
    if token == "at-1" { vec!["mcp"] } else { vec!["mcp", "write"] }
}

#[tokio::test]
async fn a_step_up_waiting_for_the_user_never_stalls_what_the_current_token_serves() {
    use mcp_bridge_protocol::types::{CallToolResult, Implementation, Tool};
    use mcp_bridge_sdk::Reply;
    use mcp_bridge_sdk::server::protect::{ProtectedResource, Protection, ScopeTarget};
    let issued: Shared = Arc::new(Mutex::new(Issued { expires_in: 3600, ..Issued::default() }));
    let issuer = authorization_server(issued.clone(), None).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let resource = ProtectedResource::new(&url, issuer).with_scopes_supported(["mcp", "write"]);
    let options =
        HttpOptions::default().with_protection(Protection::new(resource, IssuedTokens(issued.clone(), step_up_scopes)));
    let text = |t: &'static str| move |_call, _ctx| async move { Ok(Reply::Complete(CallToolResult::text(t))) };
    let server = mcp_bridge_sdk::Server::builder(Implementation::new("step-up", "1"))
        .tool(Tool::new("ping"), text("pong"))
        .tool(Tool::new("erase"), text("erased"))
        .require_scopes(ScopeTarget::tool("erase"), ["write"])
        .build();
    tokio::spawn(async move { server.serve_http(listener, options, std::future::pending()).await });

    // The first sign-in is approved at once; the second (the step-up)
    // waits until the test lets the user approve.
    let (entered_tx, mut entered) = tokio::sync::mpsc::unbounded_channel();
    let approve = Arc::new(tokio::sync::Notify::new());
    let sign_ins = Arc::new(AtomicUsize::new(0));
    let browser = {
        let (approve, sign_ins) = (approve.clone(), sign_ins.clone());
        let approving = approving(Arc::default());
        authorize(move |request: AuthorizationRequest| {
            let (approve, approving, entered) = (approve.clone(), approving.clone(), entered_tx.clone());
            let n = sign_ins.fetch_add(1, Ordering::SeqCst);
            async move {
                if n > 0 {
                    let _ = entered.send(request.url.clone());
                    approve.notified().await;
                }
                approving(request).await
            }
        })
    };
    let store = Arc::new(CountingStore::default());
    let config = OAuthConfig::new(url.clone(), "http://127.0.0.1:1/callback", "oauth-test")
        .with_connection(HttpConfig::new(&url));
    let oauth = OAuthClient::new(config, browser, store.clone()).unwrap();
    let client = Arc::new(Client::new(
        ClientOptions::new("oauth-test", "1"),
        connect(HttpConfig::new(&url).with_auth(Arc::new(oauth.clone()))).unwrap(),
    ));
    let o = RequestOptions::default();
    client.call_tool("ping", json!({}), &o).await.unwrap();

    // The store is read when the client starts and before a sign-in, not
    // for each request.
    let loads = store.loads.load(Ordering::SeqCst);
    for _ in 0..5 {
        client.call_tool("ping", json!({}), &o).await.unwrap();
    }
    assert_eq!(store.loads.load(Ordering::SeqCst), loads, "the tokens are kept in memory");

    let erasing = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("erase", json!({}), &RequestOptions::default()).await }
    });
    let asked = entered.recv().await.unwrap();
    assert!(asked.contains("write"), "the step-up asks for the missing scope: {asked}");
    // While the user has not answered, the current token still serves ping.
    let pinged = tokio::time::timeout(Duration::from_secs(20), client.call_tool("ping", json!({}), &o)).await;
    let result = pinged.expect("ping waited for the step-up").unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "pong"));
    approve.notify_one();
    let result = erasing.await.unwrap().unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "erased"), "{result:?}");
    assert_eq!(sign_ins.load(Ordering::SeqCst), 2);
}

/// A browser that first asks the user of the refused request, when there
/// is one, to open the URL (a URL elicitation); then approves.
fn asking_first(count: Arc<AtomicUsize>) -> Authorize {
    let approve = approving(count);
    authorize(move |request: AuthorizationRequest| {
        let approve = approve.clone();
        async move {
            let ask = request.ask_user.clone().ok_or("no request to ask through")?;
            let prompt = mcp_bridge_sdk::server::legacy::frontend::SignInPrompt {
                url: request.url.clone(),
                message: "Sign in".into(),
            };
            match ask.ask(prompt.input_request()).await {
                Ok(InputResponse::Elicit(answer)) if answer.action == ElicitAction::Accept => approve(request).await,
                // Sent for nobody in particular: the browser, say.
                Err(mcp_bridge_sdk::Error::NoUserToAsk) => approve(request).await,
                other => Err(format!("not accepted: {other:?}").into()),
            }
        }
    })
}

#[tokio::test]
async fn a_sign_in_asks_the_user_through_the_hooks_of_the_request_that_needed_it() {
    let s = setup(3600).await;
    let config = OAuthConfig::new(s.url.clone(), "http://127.0.0.1:1/callback", "oauth-test")
        .with_connection(HttpConfig::new(&s.url));
    let oauth = OAuthClient::new(config, asking_first(s.sign_ins.clone()), s.store.clone()).unwrap();
    let urls = |seen: Arc<Mutex<Vec<String>>>| {
        InputHooks::new().on_url(move |params| {
            seen.lock().unwrap().push(params.url);
            async { Ok::<_, std::convert::Infallible>(ElicitResult::accept(Default::default())) }
        })
    };
    let client_asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let request_asked: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut options = ClientOptions::new("oauth-test", "1");
    options.capabilities = ClientCapabilities::builder().url_elicitation().build();
    options.hooks = urls(client_asked.clone());
    let http = HttpConfig::new(&s.url).with_auth(Arc::new(oauth.clone()));
    let client = Client::new(options, connect(http).unwrap());

    // A request with hooks of its own (a gateway's, for one of its users).
    let own = RequestOptions::default().with_hooks(urls(request_asked.clone()));
    client.call_tool("ping", json!({}), &own).await.unwrap();
    let asked = request_asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("/authorize?"), "{asked:?}");
    assert!(client_asked.lock().unwrap().is_empty(), "the client's own hooks are not asked");

    // Sent without hooks of its own, a request has no user to ask.
    oauth.sign_out().await.unwrap();
    s.issued.lock().unwrap().valid.clear();
    client.call_tool("ping", json!({}), &RequestOptions::default()).await.unwrap();
    assert!(client_asked.lock().unwrap().is_empty(), "the client's own hooks are never asked");
    assert_eq!(request_asked.lock().unwrap().len(), 1);
    assert_eq!(s.sign_ins.load(Ordering::SeqCst), 2);
}

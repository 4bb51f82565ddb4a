//! `mcp-example-server --auth-issuer` with a real authorization server:
//! node's `oidc-provider`, its tokens for the endpoint asked for with
//! resource indicators, a user signing in on its own login and consent
//! pages in headless Chromium. Our SDK client signs in, steps up to
//! `notes:write` with a second consent, refreshes, and signs in again after
//! a revocation; every kind of bad token is refused with 401. Agents sign
//! in as themselves with the client credentials grant, by secret and by
//! private key (`private_key_jwt`). A user without a browser signs in on
//! another device with a code (the device flow). A sealed `requestState`
//! made for one user is refused to another.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_bridge_protocol::types::ContentBlock;
use mcp_bridge_sdk::auth::store::tokens_key;
use mcp_bridge_sdk::auth::{
    AuthorizationRequest, AuthorizationResponse, ClientKey, DeviceAuthorization, DevicePrompt, OAuthClient,
    OAuthConfig, PreRegistered, SignInError, SigningAlgorithm, TokenRecord,
};
use mcp_bridge_sdk::store::{MemoryStore, RecordStore};
use mcp_bridge_sdk::transport::http::{HttpConfig, connect};
use mcp_bridge_sdk::{BoxError, Client, ClientOptions, RequestOptions};
use serde_json::{Value, json};
use test_support::ExampleServer;
use test_support::oidc::{Browser, INTROSPECTION_CLIENT, OidcProvider, SERVICE_CLIENT, TokenFormat, es256_client_key};

/// Never loaded: the browser stops at it and hands its URL (the code) over.
const REDIRECT_URI: &str = "http://127.0.0.1:9/callback";

async fn protected_server(provider: &OidcProvider, extra: &[&str]) -> ExampleServer {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-example-server"));
    command.args(["--auth-issuer", &provider.issuer]).args(extra);
    command.env("MCP_AUTH_CLIENT_ID", INTROSPECTION_CLIENT.0).env("MCP_AUTH_CLIENT_SECRET", INTROSPECTION_CLIENT.1);
    test_support::example_server_http(command).await
}

/// Our client at `url`, signing in through `browser`, its records in `store`.
fn signed_in_client(url: &str, browser: Arc<Browser>, store: Arc<MemoryStore>) -> Client {
    let authorize = mcp_bridge_sdk::auth::authorize(move |request: AuthorizationRequest| {
        let browser = browser.clone();
        async move {
            let location = browser.sign_in_until(&request.url, REDIRECT_URI).await;
            Ok::<_, BoxError>(AuthorizationResponse::from_redirect(&location)?)
        }
    });
    let config = OAuthConfig::new(url, REDIRECT_URI, "oidc-test").with_connection(HttpConfig::new(url));
    let oauth = OAuthClient::new(config, authorize, store).unwrap();
    let http = HttpConfig::new(url).with_auth(Arc::new(oauth));
    Client::new(ClientOptions::new("oidc-test", "1"), connect(http).unwrap())
}

fn stored(store: &MemoryStore, url: &str) -> TokenRecord {
    serde_json::from_str(&store.load(&tokens_key(url)).unwrap().expect("a stored token")).unwrap()
}

fn pages(browser: &Browser) -> Vec<Value> {
    browser.sign_ins().iter().map(|s| s["pages"].clone()).collect()
}

fn temp_dir(name: &str) -> test_support::ScratchDir {
    test_support::ScratchDir::new(&format!("oidc-{name}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sdk_client_signs_in_steps_up_and_refreshes_at_oidc_provider() {
    let provider = OidcProvider::start(TokenFormat::Jwt).await;
    let server = protected_server(&provider, &[]).await;
    let url = server.url.clone();
    let dir = temp_dir("sdk");
    let browser = Arc::new(Browser::new(&dir));
    let store = Arc::new(MemoryStore::default());
    let client = signed_in_client(&url, browser.clone(), store.clone());
    let o = RequestOptions::default();

    // The first call signs in for what the 401 names: notes:read.
    let echoed = client.call_tool("echo", json!({"text": "hi"}), &o).await.unwrap();
    assert!(matches!(&echoed.content[0], ContentBlock::Text(t) if t.text == "hi"), "{echoed:?}");
    assert_eq!(pages(&browser), [json!(["login", "consent"])]);
    let first = stored(&store, &url);
    assert_eq!(first.scope.as_deref(), Some("notes:read"), "least privilege first");
    assert!(first.refresh_token.is_some(), "oidc-provider issued a refresh token");

    // set_note's 403 names notes:write: a second consent, no second login.
    client.call_tool("set_note", json!({"name": "n", "text": "from oidc"}), &o).await.unwrap();
    assert_eq!(pages(&browser), [json!(["login", "consent"]), json!(["consent"])]);
    let stepped_up = stored(&store, &url);
    let scopes: Vec<&str> = stepped_up.scope.as_deref().unwrap_or("").split(' ').collect();
    assert!(scopes.contains(&"notes:read") && scopes.contains(&"notes:write"), "{scopes:?}");

    // The next run finds its stored token about to expire: it refreshes,
    // without the browser, and keeps both scopes.
    drop(client);
    let mut expiring = stepped_up.clone();
    expiring.expires_at = expiring.issued_at;
    store.save(&tokens_key(&url), &serde_json::to_string(&expiring).unwrap()).unwrap();
    let client = signed_in_client(&url, browser.clone(), store.clone());
    client.call_tool("set_note", json!({"name": "n", "text": "after a refresh"}), &o).await.unwrap();
    let refreshed = stored(&store, &url);
    assert!(refreshed.access_token != stepped_up.access_token, "a new access token");
    assert_eq!(refreshed.scope, stepped_up.scope);
    assert_eq!(browser.sign_ins().len(), 2);
    assert_eq!(provider.count("/grants/refresh_token").await, 1);
    assert_eq!(provider.count("/grants/authorization_code").await, 2);
    assert_eq!(provider.count("/prompts/login").await, 1);
    assert_eq!(provider.count("/prompts/consent").await, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A client at `url` whose user signs in on another device: the prompt
/// records what it shows and has `browser` open the complete verification
/// URL, signing in (or declining with `decline`).
fn device_client(
    url: &str,
    browser: Arc<Browser>,
    decline: bool,
    store: Arc<MemoryStore>,
) -> (Client, OAuthClient, Arc<std::sync::Mutex<Vec<DeviceAuthorization>>>) {
    let shown = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = shown.clone();
    let prompt = DevicePrompt::new(move |device: DeviceAuthorization| {
        let (browser, seen) = (browser.clone(), seen.clone());
        async move {
            seen.lock().unwrap().push(device.clone());
            let url = device.verification_uri_complete.ok_or("no complete verification URI")?;
            if decline {
                browser.decline_device(&url).await
            } else {
                browser.sign_in(&url).await
            }
            Ok::<_, String>(())
        }
    });
    let oauth = OAuthClient::device_code(url, "device-test", prompt, store).unwrap();
    let http = HttpConfig::new(url).with_auth(Arc::new(oauth.clone()));
    (Client::new(ClientOptions::new("device-test", "1"), connect(http).unwrap()), oauth, shown)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_user_without_a_browser_signs_in_on_another_device_with_a_code() {
    let provider = OidcProvider::start(TokenFormat::Jwt).await;
    let server = protected_server(&provider, &[]).await;
    let url = server.url.clone();
    let dir = temp_dir("device");
    let browser = Arc::new(Browser::new(&dir));
    let store = Arc::new(MemoryStore::default());
    let (client, _, shown) = device_client(&url, browser.clone(), false, store.clone());
    let o = RequestOptions::default();

    // The first call: a code, the user confirms it on the provider's page,
    // signs in and consents; the client's polls get the tokens.
    let echoed = client.call_tool("echo", json!({"text": "from the couch"}), &o).await.unwrap();
    assert!(matches!(&echoed.content[0], ContentBlock::Text(t) if t.text == "from the couch"), "{echoed:?}");
    // The browser writes its report after its last page, which may come
    // after the client's poll got the tokens: wait for it.
    let device_pages = |count| {
        let browser = browser.clone();
        async move { browser.sign_ins_when(count).await.iter().map(|s| s["pages"].clone()).collect::<Vec<_>>() }
    };
    assert_eq!(device_pages(1).await, [json!(["device", "login", "consent"])]);
    let device = shown.lock().unwrap()[0].clone();
    assert!(device.verification_uri.starts_with(&provider.issuer), "{device:?}");
    assert!(device.verification_uri_complete.as_deref().unwrap().contains(&device.user_code.replace('-', "")[..2]));
    let record = stored(&store, &url);
    assert_eq!(record.scope.as_deref(), Some("notes:read"));
    assert!(record.refresh_token.is_some(), "a device sign-in is refreshed like any other");
    assert_eq!(provider.count("/grants/urn:ietf:params:oauth:grant-type:device_code").await, 1);

    // The 403 of set_note: a second code for both scopes, consent only.
    client.call_tool("set_note", json!({"name": "n", "text": "device"}), &o).await.unwrap();
    assert_eq!(shown.lock().unwrap().len(), 2);
    assert_eq!(device_pages(2).await[1], json!(["device", "consent"]));

    // A user who presses Abort: the sign-in fails as declined, at once.
    let (declining, oauth, _) = device_client(&url, browser.clone(), true, Arc::new(MemoryStore::default()));
    let refused = declining.call_tool("echo", json!({"text": "no"}), &o).await;
    assert!(refused.is_err(), "{refused:?}");
    assert!(matches!(oauth.last_problem(), Some(SignInError::Denied(_))), "{:?}", oauth.last_problem());
    let _ = std::fs::remove_dir_all(&dir);
}

/// What the endpoint answers a 2026-07-28 `tools/list` carrying `token`:
/// the status and the `WWW-Authenticate` value.
async fn answer_to(url: &str, token: Option<&str>) -> (u16, String) {
    let authorization = token.map(|t| format!("Bearer {t}"));
    let values: Vec<&str> = authorization.iter().map(String::as_str).collect();
    let (status, challenge) = test_support::modern_post(url, &values).await;
    (status, challenge.unwrap_or_default())
}

/// A JWT's three parts, decoded where they are JSON.
fn parts(token: &str) -> (Value, Value, String) {
    let mut parts = token.split('.');
    let mut json = || serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts.next().unwrap()).unwrap()).unwrap();
    let (header, claims) = (json(), json());
    (header, claims, parts.next().unwrap().to_owned())
}

fn encoded(header: &Value, claims: &Value, signature: &str) -> String {
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    format!("{}.{}.{signature}", part(header), part(claims))
}

#[tokio::test(flavor = "multi_thread")]
async fn every_kind_of_bad_token_of_a_real_provider_is_refused_with_401() {
    let provider = OidcProvider::start(TokenFormat::Jwt).await;
    let stranger = OidcProvider::start_with_keys(TokenFormat::Jwt, "stranger").await;
    let opaque = OidcProvider::start(TokenFormat::Opaque).await;
    let server = protected_server(&provider, &[]).await;
    let url = server.url.clone();
    let scopes = "notes:read notes:write";

    let good = provider.service_token(&url, scopes).await;
    assert_eq!(answer_to(&url, Some(&good)).await.0, 200);
    let (header, claims, signature) = parts(&good);
    assert_eq!((header["alg"].as_str(), header["typ"].as_str()), (Some("ES256"), Some("at+jwt")));
    let kid = header["kid"].as_str().unwrap().to_owned();
    let public_key =
        provider.jwks().await["keys"].as_array().unwrap().iter().find(|k| k["kid"] == kid).cloned().unwrap();
    let mut hs256 = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
    (hs256.kid, hs256.typ) = (Some(kid.clone()), Some("at+jwt".into()));
    let stranger_token = stranger.service_token(&url, scopes).await;
    let (_, _, stranger_signature) = parts(&stranger_token);

    let mut changed = claims.clone();
    changed["sub"] = json!("mallory");
    let hs256_secret = jsonwebtoken::EncodingKey::from_secret(public_key.to_string().as_bytes());
    let other_audience = provider.service_token("http://127.0.0.1:9/other", scopes).await;
    // The provider's clock 2 hours behind: its 1-hour token is born expired.
    provider.set_clock_offset(-7200).await;
    let expired = provider.service_token(&url, scopes).await;
    provider.set_clock_offset(0).await;
    let cases: Vec<(&str, Option<String>, &str)> = vec![
        ("no token", None, ""),
        ("garbage", Some("garbage".into()), "the token is not a JWT"),
        ("an opaque token", Some(opaque.service_token(&url, scopes).await), "the token is not a JWT"),
        ("another key's signature", Some(encoded(&header, &claims, &stranger_signature)), "does not verify"),
        ("changed claims", Some(encoded(&header, &changed, &signature)), "does not verify"),
        ("another issuer (its own keys)", Some(stranger_token.clone()), "the token's signing key is not the issuer's"),
        ("another audience", Some(other_audience), "the token is for another resource"),
        ("expired", Some(expired), "the token has expired"),
        ("alg none", Some(encoded(&json!({"alg": "none", "typ": "at+jwt", "kid": kid}), &claims, "")), "not a JWT"),
        (
            "HS256 with the public key",
            Some(jsonwebtoken::encode(&hs256, &claims, &hs256_secret).unwrap()),
            "the token's algorithm is not accepted",
        ),
    ];
    for (what, token, reason) in &cases {
        let (status, challenge) = answer_to(&url, token.as_deref()).await;
        assert_eq!(status, 401, "{what}: {challenge}");
        if token.is_some() {
            assert!(challenge.contains(r#"error="invalid_token""#), "{what}: {challenge}");
            assert!(challenge.contains(reason), "{what}: {challenge}");
        }
        eprintln!("{what}: 401, {challenge}");
    }
    assert_eq!(answer_to(&url, Some(&good)).await.0, 200, "the server still serves");
    let log = server.log.lock().unwrap().clone();
    for (what, token, _) in &cases {
        if let Some(token) = token {
            assert!(!log.contains(token.as_str()), "{what}: the token is in the server's log");
        }
    }
    assert!(!log.contains(&good), "the good token is in the server's log");
}

#[tokio::test(flavor = "multi_thread")]
async fn after_the_provider_rotates_its_keys_new_tokens_are_taken_and_old_ones_refused() {
    let provider = OidcProvider::start(TokenFormat::Jwt).await;
    let server = protected_server(&provider, &[]).await;
    let scopes = "notes:read notes:write";
    let old = provider.service_token(&server.url, scopes).await;
    assert_eq!(answer_to(&server.url, Some(&old)).await.0, 200);
    // The same issuer, new keys: the unknown kid fetches its key set again.
    let provider = provider.restart_with_keys("key-2").await;
    let rotated = provider.service_token(&server.url, scopes).await;
    assert_eq!(answer_to(&server.url, Some(&rotated)).await.0, 200, "a token of the new key");
    let (status, challenge) = answer_to(&server.url, Some(&old)).await;
    assert_eq!(status, 401, "{challenge}");
    assert!(challenge.contains("the token's signing key is not the issuer's"), "{challenge}");
}

/// An agent of `client` at `url`, signing in as itself.
fn agent(url: &str, client: PreRegistered, store: Arc<MemoryStore>) -> (Client, OAuthClient) {
    let oauth = OAuthClient::client_credentials(url, client, store).unwrap();
    let http = HttpConfig::new(url).with_auth(Arc::new(oauth.clone()));
    (Client::new(ClientOptions::new("agent", "1"), connect(http).unwrap()), oauth)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_signs_in_as_itself_with_a_secret_or_a_private_key() {
    let (pem, jwk) = es256_client_key();
    let keyed = json!({"client_id": "agent-jwt", "token_endpoint_auth_method": "private_key_jwt",
        "jwks": {"keys": [jwk]}, "grant_types": ["client_credentials"], "response_types": [], "redirect_uris": []});
    let provider = OidcProvider::start_with_clients(TokenFormat::Jwt, vec![keyed]).await;
    let server = protected_server(&provider, &[]).await;
    let url = server.url.clone();
    let o = RequestOptions::default();

    let by_secret = PreRegistered::new(SERVICE_CLIENT.0).with_client_secret(SERVICE_CLIENT.1);
    let key = ClientKey::from_pem(&pem, SigningAlgorithm::Es256).unwrap();
    let by_key = PreRegistered::new("agent-jwt").with_private_key(key);
    for client in [by_secret, by_key] {
        let store = Arc::new(MemoryStore::default());
        let (agent, _) = agent(&url, client, store.clone());
        // The 401 names notes:read: the token is for that, and this endpoint.
        let echoed = agent.call_tool("echo", json!({"text": "hi"}), &o).await.unwrap();
        assert!(matches!(&echoed.content[0], ContentBlock::Text(t) if t.text == "hi"), "{echoed:?}");
        let first = stored(&store, &url);
        assert_eq!((first.scope.as_deref(), first.resource.as_deref()), (Some("notes:read"), Some(url.as_str())));
        assert!(first.refresh_token.is_none(), "client credentials come without a refresh token");
        // set_note's 403 names notes:write: the agent signs in again for both.
        let saved = agent.call_tool("set_note", json!({"name": "agent", "text": "x"}), &o).await.unwrap();
        assert!(matches!(&saved.content[0], ContentBlock::Text(t) if t.text.ends_with("saved")), "{saved:?}");
        let second = stored(&store, &url);
        assert_eq!(second.scope.as_deref(), Some("notes:read notes:write"));
    }
    assert_eq!(provider.count("/grants/client_credentials").await, 4);
    assert_eq!(provider.count("/prompts/login").await, 0, "nobody signed in in a browser");

    // A wrong secret: the provider refuses the client; the secret is shown nowhere.
    let wrong = PreRegistered::new(SERVICE_CLIENT.0).with_client_secret("wrong-secret-4242");
    let (agent, oauth) = agent(&url, wrong, Arc::new(MemoryStore::default()));
    let refused = agent.call_tool("echo", json!({"text": "hi"}), &o).await.unwrap_err();
    let problem = oauth.last_problem().expect("the sign-in failed");
    assert!(matches!(problem, SignInError::ClientRejected { metadata_document: false, .. }), "{problem:?}");
    for text in [problem.to_string(), refused.to_string(), format!("{problem:?}"), format!("{oauth:?}")] {
        assert!(!text.contains("wrong-secret-4242"), "{text}");
    }
}

/// A `tools/call` of `ask_name` with `extra` params, as `token`'s holder;
/// the JSON-RPC answer.
async fn ask_name_as(url: &str, token: &str, extra: Value) -> Value {
    let mut params =
        json!({"name": "ask_name", "arguments": {}, "_meta": test_support::request_meta(json!({"elicitation": {}}))});
    params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "ask_name")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_state_sealed_for_one_user_is_refused_to_another() {
    let provider = OidcProvider::start(TokenFormat::Jwt).await;
    let server = protected_server(&provider, &[]).await;
    let url = server.url.clone();
    let mut tokens = Vec::new();
    for user in ["alice", "bob"] {
        let state = temp_dir(&format!("state-{user}"));
        let browser = Arc::new(Browser::new(&state).as_account(user));
        let store = Arc::new(MemoryStore::default());
        let client = signed_in_client(&url, browser, store.clone());
        client.call_tool("echo", json!({"text": "hi"}), &RequestOptions::default()).await.unwrap();
        tokens.push(stored(&store, &url).access_token);
    }
    let (alice, bob) = (&tokens[0], &tokens[1]);
    assert_eq!(parts(alice).1["sub"], "alice");
    assert_eq!(parts(bob).1["sub"], "bob");

    let asked = ask_name_as(&url, alice, json!({})).await;
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].clone();
    let answer = |name: &str| {
        json!({
            "requestState": state,
            "inputResponses": {"name": {"action": "accept", "content": {"name": name}}}
        })
    };

    let replayed = ask_name_as(&url, bob, answer("Mallory")).await;
    assert!(replayed["result"].is_null(), "bob completed alice's call: {replayed}");
    let message = replayed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("another caller"), "{replayed}");

    let completed = ask_name_as(&url, alice, answer("Alice")).await;
    assert_eq!(completed["result"]["content"][0]["text"], "Hello, Alice!", "{completed}");
}

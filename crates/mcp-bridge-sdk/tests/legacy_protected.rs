//! A protected dual-era endpoint (`embed::http::serve_http`): the handlers
//! of a 2025-11-25 session see its caller, as a 2026-07-28 request's
//! handlers do: the subject that started the session and the scopes of
//! the token its latest request carried (a step-up shows at once).

use std::collections::HashMap;

use mcp_bridge_protocol::types::{CallToolResult, Implementation, Tool};
use mcp_bridge_sdk::server::http::HttpOptions;
use mcp_bridge_sdk::server::legacy::embed::http::serve_http;
use mcp_bridge_sdk::server::protect::{Caller, ProtectedResource, Protection, Refusal, TokenValidator};
use mcp_bridge_sdk::{BoxFuture, Reply, RequestContext, Server};
use serde_json::{Value, json};

/// The endpoint's body limit: far above the tests' messages.
const BODY_LIMIT: usize = 4096;

/// Tokens and whom they speak for.
struct Table(HashMap<&'static str, Caller>);

impl TokenValidator for Table {
    fn validate(&self, token: &str) -> BoxFuture<Result<Caller, Refusal>> {
        let found = self.0.get(token).cloned();
        Box::pin(async move { found.ok_or(Refusal::InvalidToken { description: "the token is not known here" }) })
    }
}

/// A server whose `whoami` answers "SUBJECT: SCOPES" of its caller (or
/// "nobody"), on loopback, protected by `tokens` when given.
async fn served(tokens: Option<Table>) -> String {
    let server = Server::builder(Implementation::new("protected-legacy", "1"))
        .tool(Tool::new("whoami"), |_call, ctx: RequestContext| async move {
            let who = match &ctx.caller {
                Some(caller) => format!("{}: {}", caller.subject.as_deref().unwrap_or("?"), caller.scopes.join(" ")),
                None => "nobody".to_owned(),
            };
            Ok(Reply::Complete(CallToolResult::text(who)))
        })
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let mut http = HttpOptions::default().with_max_body_bytes(BODY_LIMIT);
    if let Some(tokens) = tokens {
        let resource = ProtectedResource::new(&url, "https://auth.example.test");
        http = http.with_protection(Protection::new(resource, tokens));
    }
    tokio::spawn(async move { serve_http(&server, listener, http, Default::default(), std::future::pending()).await });
    url
}

async fn post(url: &str, session: Option<&str>, token: Option<&str>, body: Value) -> reqwest::Response {
    let mut request = test_support::legacy_http_post(url, session, &body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

/// Starts a session with `token`: its id.
async fn initialize(url: &str, token: Option<&str>) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "legacy", "version": "1"}}});
    let response = post(url, None, token, init).await;
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(url, Some(&session), token, initialized).await.status(), 202);
    session
}

/// What `whoami` says in `session` when asked with `token`.
async fn whoami(url: &str, session: &str, token: Option<&str>, id: u64) -> String {
    let call =
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}});
    let messages = test_support::response_messages(post(url, Some(session), token, call).await).await;
    let answer = messages.iter().find(|m| m["id"] == id).unwrap_or_else(|| panic!("no answer: {messages:?}"));
    answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{answer}")).to_owned()
}

#[tokio::test]
async fn a_legacy_sessions_handlers_see_the_caller_of_its_latest_token() {
    let url = served(Some(Table(HashMap::from([
        ("alice-read", Caller::new("alice", ["notes:read"])),
        ("alice-write", Caller::new("alice", ["notes:read", "notes:write"])),
    ]))))
    .await;
    let session = initialize(&url, Some("alice-read")).await;
    assert_eq!(whoami(&url, &session, Some("alice-read"), 1).await, "alice: notes:read");
    // The same subject steps up: the session's next request has the new scopes.
    assert_eq!(whoami(&url, &session, Some("alice-write"), 2).await, "alice: notes:read notes:write");
    assert_eq!(whoami(&url, &session, Some("alice-read"), 3).await, "alice: notes:read", "the latest token counts");
}

/// Tokens without a subject (the client credentials grant) belong to their
/// client: one client's session is unknown to another's token.
#[tokio::test]
async fn a_session_of_a_token_without_subject_is_its_clients() {
    let client = |id: &str| {
        let mut caller = Caller::default();
        caller.client_id = Some(id.into());
        caller.scopes = vec!["notes:read".into()];
        caller
    };
    let url = served(Some(Table(HashMap::from([("bot-a", client("bot-a")), ("bot-b", client("bot-b"))])))).await;
    let session = initialize(&url, Some("bot-a")).await;
    let call =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}});
    assert_eq!(post(&url, Some(&session), Some("bot-b"), call.clone()).await.status(), 404, "another client's token");
    assert_eq!(post(&url, Some(&session), Some("bot-a"), call).await.status(), 200);
}

#[tokio::test]
async fn an_unprotected_endpoints_sessions_have_no_caller() {
    let url = served(None).await;
    let session = initialize(&url, None).await;
    assert_eq!(whoami(&url, &session, None, 1).await, "nobody");
}

/// The kinds of POST the dual-era endpoint tells apart, as `(what, session,
/// protocol version header)`.
const KINDS: [(&str, Option<&str>, Option<&str>); 3] = [
    ("a legacy initialize", None, None),
    ("a legacy session's message", Some("some-session"), Some("2025-11-25")),
    ("a 2026-07-28 request", None, Some("2026-07-28")),
];

/// A POST of `kind` with the headers given, the body `padding` long.
async fn raw_post(
    url: &str,
    (_, session, version): (&str, Option<&str>, Option<&str>),
    headers: &[(&str, &str)],
    padding: usize,
) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "x".repeat(padding), "version": "1"}}});
    let mut request = reqwest::Client::new().post(url).body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    if let Some(version) = version {
        request = request.header("mcp-protocol-version", version);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn every_post_passes_the_same_checks_in_one_order_before_its_body_is_read() {
    let url = served(Some(Table(HashMap::from([("alice", Caller::new("alice", ["notes:read"]))])))).await;
    let (json, token, evil) =
        (("content-type", "application/json"), ("authorization", "Bearer alice"), ("origin", "https://evil.example"));
    let too_big = 2 * BODY_LIMIT;
    for kind in KINDS {
        let what = kind.0;
        // Origin and Host first: not even a good token passes a page of another site.
        assert_eq!(raw_post(&url, kind, &[evil, token, json], 10).await, 403, "{what}: a foreign origin");
        // Then the token: a stranger learns nothing of the body rules.
        assert_eq!(raw_post(&url, kind, &[("content-type", "text/plain")], too_big).await, 401, "{what}: no token");
        assert_eq!(raw_post(&url, kind, &[json], too_big).await, 401, "{what}: no token, a body over the limit");
        // Then the content type, then the body.
        assert_eq!(raw_post(&url, kind, &[token, ("content-type", "text/plain")], 10).await, 415, "{what}: text");
        assert_eq!(raw_post(&url, kind, &[token, json], too_big).await, 413, "{what}: a body over the limit");
    }
}

//! A protected HTTP endpoint (the resource-server side): its metadata
//! (RFC 9728), the challenges of a request without a valid token or
//! without a required scope (RFC 6750), and the caller reaching the
//! handler. The validator here is a table of tokens: the JWT and
//! introspection validators are tested against a real authorization
//! server elsewhere.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use mcp_bridge_protocol::types::{CallToolResult, ContentBlock, Implementation, Tool};
use mcp_bridge_sdk::server::http::HttpOptions;
use mcp_bridge_sdk::server::protect::{Caller, ProtectedResource, Protection, Refusal, ScopeTarget, TokenValidator};
use mcp_bridge_sdk::transport::http::{BearerToken, HttpConfig, connect};
use mcp_bridge_sdk::{BoxFuture, Client, ClientOptions, Error, Reply, RequestContext, RequestOptions, Server};
use serde_json::{Value, json};

mod common;
use common::trace_and_credentials;

/// Tokens and whom they speak for.
struct Table(HashMap<&'static str, Caller>);

impl TokenValidator for Table {
    fn validate(&self, token: &str) -> BoxFuture<Result<Caller, Refusal>> {
        let found = self.0.get(token).cloned();
        Box::pin(async move { found.ok_or(Refusal::InvalidToken { description: "the token is not known here" }) })
    }
}

/// A server whose `whoami` tool answers with the caller's subject and
/// whose `erase` tool needs `write`, served on loopback with `read`
/// required of every request.
async fn protected_server() -> (SocketAddr, String) {
    let (addr, url, _) = protected().await;
    (addr, url)
}

/// [`protected_server`], and the server itself.
async fn protected() -> (SocketAddr, String, Server) {
    let whoami = Tool::new("whoami");
    let server = Server::builder(Implementation::new("protected", "1"))
        .tool(whoami, |_call, ctx: RequestContext| async move {
            let subject = ctx.caller.as_ref().and_then(|c| c.subject.clone()).unwrap_or_else(|| "nobody".into());
            Ok(Reply::Complete(CallToolResult::text(subject)))
        })
        .tool(Tool::new("erase"), |_call, _ctx| async move { Ok(Reply::Complete(CallToolResult::text("erased"))) })
        .tool(Tool::new("trace"), |_call, ctx: RequestContext| async move {
            Ok(Reply::Complete(CallToolResult::text(trace_and_credentials(&ctx))))
        })
        .require_scopes(ScopeTarget::tool("erase"), ["write"])
        .list_only_what_callers_may_use()
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}/mcp");
    let tokens = Table(HashMap::from([
        ("alice-token", Caller::new("alice", ["read", "write"])),
        ("reader-token", Caller::new("rita", ["read"])),
        ("scopeless-token", Caller::new("sam", Vec::<String>::new())),
    ]));
    let resource = ProtectedResource::new(&url, "https://auth.example.test").with_scopes_supported(["read", "write"]);
    let options =
        HttpOptions::default().with_protection(Protection::new(resource, tokens).with_required_scopes(["read"]));
    let served = server.clone();
    tokio::spawn(async move { served.serve_http(listener, options, std::future::pending()).await });
    (addr, url, server)
}

/// A raw `tools/list` POST with these `Authorization` values: the status
/// and the `WWW-Authenticate` value.
async fn post(url: &str, authorization: &[&str]) -> (u16, Option<String>) {
    test_support::modern_post(url, authorization).await
}

#[tokio::test]
async fn the_endpoint_publishes_its_metadata_and_challenges_each_refusal() {
    let (addr, url) = protected_server().await;
    let metadata_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    let metadata: Value = reqwest::get(&metadata_url).await.unwrap().json().await.unwrap();
    assert_eq!(metadata["resource"], url);
    assert_eq!(metadata["authorization_servers"], json!(["https://auth.example.test"]));
    assert_eq!(metadata["scopes_supported"], json!(["read", "write"]));
    assert_eq!(metadata["bearer_methods_supported"], json!(["header"]));

    // A 401 names the endpoint's own scope: what a client signs in for first.
    let pointer = format!(r#"Bearer resource_metadata="{metadata_url}""#);
    assert_eq!(post(&url, &[]).await, (401, Some(format!(r#"{pointer}, scope="read""#))));
    let (status, challenge) = post(&url, &["Bearer not-a-token"]).await;
    assert_eq!(status, 401);
    let challenge = challenge.unwrap();
    assert!(challenge.starts_with(&pointer) && challenge.contains(r#"error="invalid_token""#), "{challenge}");
    assert!(!challenge.contains("not-a-token"), "the challenge never echoes the token");
    let (status, challenge) = post(&url, &["Bearer scopeless-token"]).await;
    assert_eq!(status, 403, "a valid token without the endpoint's scope");
    assert!(challenge.unwrap().contains(r#"error="insufficient_scope", scope="read""#));
    assert_eq!(post(&url, &["Bearer alice-token", "Bearer alice-token"]).await.0, 400);
    assert_eq!(post(&url, &["Basic YTpi"]).await.0, 401, "another scheme is no token");
    assert_eq!(post(&url, &["Bearer alice-token"]).await.0, 200);
}

#[tokio::test]
async fn the_sdk_client_with_a_valid_token_reaches_the_handler_as_its_caller() {
    let (_, url) = protected_server().await;
    let config = HttpConfig::new(&url).with_auth(Arc::new(BearerToken::new("alice-token")));
    let client = Client::new(ClientOptions::new("protected-test", "1"), connect(config).unwrap());
    let o = RequestOptions::default();
    let result = client.call_tool("whoami", json!({}), &o).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "alice"), "{result:?}");

    // Without credentials the client sees the 401 (and, with OAuth, would sign in).
    let anonymous = Client::new(ClientOptions::new("protected-test", "1"), connect(HttpConfig::new(&url)).unwrap());
    let seen = Arc::new(std::sync::Mutex::new(mcp_bridge_sdk::client::Diagnostics::default()));
    let refused = anonymous.call_tool("whoami", json!({}), &o.clone().with_diagnostics(seen.clone())).await;
    assert!(matches!(refused, Err(Error::InvalidResponse { .. })), "{refused:?}");
    assert_eq!(seen.lock().unwrap().http_status, Some(401));
}

#[tokio::test]
async fn a_tool_that_needs_more_scopes_is_a_403_naming_them_all() {
    let (_, url) = protected_server().await;
    let client = |token: &'static str| {
        let config = HttpConfig::new(&url).with_auth(Arc::new(BearerToken::new(token)));
        Client::new(ClientOptions::new("protected-test", "1"), connect(config).unwrap())
    };
    let o = RequestOptions::default();
    let reader = client("reader-token");
    let result = reader.call_tool("whoami", json!({}), &o).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "rita"));
    let seen = Arc::new(std::sync::Mutex::new(mcp_bridge_sdk::client::Diagnostics::default()));
    let refused = reader.call_tool("erase", json!({}), &o.clone().with_diagnostics(seen.clone())).await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(seen.lock().unwrap().http_status, Some(403), "the step-up status");
    let writer = client("alice-token");
    let result = writer.call_tool("erase", json!({}), &o).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "erased"));
}

#[tokio::test]
async fn each_caller_lists_only_what_its_scopes_let_it_use() {
    let (_, url, server) = protected().await;
    let client = |token: &'static str| {
        let config = HttpConfig::new(&url).with_auth(Arc::new(BearerToken::new(token)));
        Client::new(ClientOptions::new("protected-test", "1"), connect(config).unwrap())
    };
    let o = RequestOptions::default();
    let names = |tools: Vec<Tool>| tools.into_iter().map(|t| t.name).collect::<Vec<_>>();
    let (reader, writer) = (client("reader-token"), client("alice-token"));
    assert_eq!(names(reader.list_all_tools(&o).await.unwrap()), ["whoami", "trace"], "erase needs write");
    assert_eq!(names(writer.list_all_tools(&o).await.unwrap()), ["whoami", "erase", "trace"]);

    // Rules set while the server runs apply to lists and calls alike.
    server.set_required_scopes(ScopeTarget::tool("trace"), ["write"]);
    assert_eq!(names(reader.list_all_tools(&o).await.unwrap()), ["whoami"]);
    assert!(reader.call_tool("trace", json!({}), &o).await.is_err(), "a 403");
    server.set_required_scopes(ScopeTarget::tool("trace"), Vec::<String>::new());
    assert_eq!(names(reader.list_all_tools(&o).await.unwrap()), ["whoami", "trace"]);

    // A tool left out of the list stays callable by name.
    server.set_tool_listed("whoami", false).await;
    assert_eq!(names(writer.list_all_tools(&o).await.unwrap()), ["erase", "trace"]);
    let result = writer.call_tool("whoami", json!({}), &o).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "alice"), "{result:?}");
    server.set_tool_listed("whoami", true).await;
    assert_eq!(names(writer.list_all_tools(&o).await.unwrap()), ["whoami", "erase", "trace"]);
}

#[tokio::test]
async fn handlers_see_the_requests_http_headers_but_not_its_credentials() {
    let (_, url) = protected_server().await;
    let config = HttpConfig::new(&url).with_auth(Arc::new(BearerToken::new("alice-token"))).with_headers(vec![
        ("x-trace".into(), "trace-42".into()),
        ("cookie".into(), "session=secret".into()),
        ("dpop".into(), "eyJ.proof".into()),
        ("proxy-authorization".into(), "Basic c2VjcmV0".into()),
    ]);
    let client = Client::new(ClientOptions::new("protected-test", "1"), connect(config).unwrap());
    let result = client.call_tool("trace", json!({}), &RequestOptions::default()).await.unwrap();
    assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "trace-42"), "{result:?}");
}

#[tokio::test]
async fn a_host_that_mounts_the_server_itself_passes_its_headers_certificates_and_caller() {
    use mcp_bridge_protocol::{JsonRpcRequest, Message, RequestId};
    use mcp_bridge_sdk::server::RequestOrigin;
    use mcp_bridge_sdk::server::protect::PeerCertificates;
    let server = Server::builder(Implementation::new("mounted", "1"))
        .tool(Tool::new("origin"), |_call, ctx: RequestContext| async move {
            let who = ctx.caller.as_ref().and_then(|c| c.subject.clone()).unwrap_or_default();
            let certificates = ctx.peer_certificates.as_ref().map_or(0, |p| p.chain().len());
            let seen = format!("{} {who} {certificates}", trace_and_credentials(&ctx));
            Ok(Reply::Complete(CallToolResult::text(seen)))
        })
        .build();
    let mut headers = axum::http::HeaderMap::new();
    headers.insert("x-trace", "mounted".parse().unwrap());
    headers.insert("authorization", "Bearer s3cret".parse().unwrap());
    let origin = RequestOrigin::default()
        .with_http_headers(headers)
        .with_caller(Caller::new("alice", ["read"]))
        .with_peer_certificates(PeerCertificates::new(vec![vec![0x30, 0x03]]));
    let params = json!({"name": "origin", "arguments": {}, "_meta": test_support::request_meta(json!({}))});
    let request = JsonRpcRequest::new(RequestId::Number(1), "tools/call", Some(params));
    let Message::Result(answer) = server.answer_from(request, origin).await else { panic!("no result") };
    assert_eq!(answer.result["content"][0]["text"], "mounted alice 1", "{:?}", answer.result);
}

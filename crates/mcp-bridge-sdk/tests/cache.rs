//! The client's result cache, through the public API: what is served from
//! the cache, for how long, for which credential, and what drops it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::types::{CacheScope, Implementation, Resource, ResourceContents, SubscriptionFilter, Tool};
use mcp_bridge_sdk::BoxFuture;
use mcp_bridge_sdk::client::{CacheMode, CacheOptions, Diagnostics};
use mcp_bridge_sdk::server::http::HttpOptions;
use mcp_bridge_sdk::server::{CacheHints, ChangeEvent};
use mcp_bridge_sdk::transport::http::{AuthProvider, AuthRefusal, HttpConfig};
use mcp_bridge_sdk::{Client, ClientOptions, Error, Reply, RequestOptions, Server, transport};
use serde_json::{Map, json};

fn tool(name: &str) -> Tool {
    serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
}

/// A server whose cacheable results live `ttl_ms` in `scope`, with two
/// tools on pages of one, and a resource that counts its reads.
fn server(ttl_ms: u64, scope: CacheScope, reads: Arc<AtomicUsize>) -> Server {
    let resource: Resource = serde_json::from_value(json!({"uri": "test://counter", "name": "counter"})).unwrap();
    let pong =
        |_call, _ctx| async move { Ok(Reply::Complete(serde_json::from_value(json!({"content": []})).unwrap())) };
    Server::builder(Implementation::new("cached", "1"))
        .cache_hints(CacheHints::default().with_ttl_ms(ttl_ms).with_scope(scope))
        .page_size(1)
        .tool(tool("a"), pong)
        .tool(tool("b"), pong)
        .resource(resource, move |request: mcp_bridge_sdk::server::ResourceRequest, _ctx| {
            let n = reads.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                let contents: ResourceContents =
                    serde_json::from_value(json!({"uri": request.uri, "text": n.to_string()})).unwrap();
                Ok(Reply::Complete(vec![contents]))
            }
        })
        .build()
}

fn cached_client(server: &Server) -> Client {
    let options = ClientOptions::new("c", "1").with_cache(CacheOptions::default().with_enabled(true));
    Client::new(options, transport::memory::connect(server))
}

/// Request options that report whether the result came from the cache.
fn watched(mode: CacheMode) -> (RequestOptions, Arc<Mutex<Diagnostics>>) {
    let diagnostics = Arc::new(Mutex::new(Diagnostics::default()));
    (RequestOptions::default().with_diagnostics(diagnostics.clone()).with_cache_mode(mode), diagnostics)
}

/// The text of `test://counter` and whether it came from the cache.
async fn read_counter(client: &Client, mode: CacheMode) -> (String, bool) {
    let (options, diagnostics) = watched(mode);
    let result = client.read_resource("test://counter", &options).await.unwrap();
    let text = serde_json::to_value(&result.contents[0]).unwrap()["text"].as_str().unwrap().to_owned();
    let from_cache = diagnostics.lock().unwrap().from_cache;
    (text, from_cache)
}

#[tokio::test(start_paused = true)]
async fn fresh_results_are_served_from_the_cache_and_the_modes_choose() {
    let reads = Arc::new(AtomicUsize::new(0));
    let server = server(60_000, CacheScope::Public, reads.clone());
    let client = cached_client(&server);
    assert_eq!(read_counter(&client, CacheMode::Default).await, ("1".into(), false));
    assert_eq!(read_counter(&client, CacheMode::Default).await, ("1".into(), true));
    // Bypass asks the server and leaves the cache as it was.
    assert_eq!(read_counter(&client, CacheMode::Bypass).await, ("2".into(), false));
    assert_eq!(read_counter(&client, CacheMode::Default).await, ("1".into(), true));
    // Refresh asks the server and keeps the new result.
    assert_eq!(read_counter(&client, CacheMode::Refresh).await, ("3".into(), false));
    assert_eq!(read_counter(&client, CacheMode::Default).await, ("3".into(), true));
    client.invalidate_cache();
    assert_eq!(read_counter(&client, CacheMode::Default).await, ("4".into(), false));
    assert_eq!(reads.load(Ordering::SeqCst), 4);
    // Discovery is cached too; the _meta of a request is not part of its key.
    let (o, d) = watched(CacheMode::Default);
    client.discover(&o).await.unwrap();
    let traced = o.clone().with_meta(Map::from_iter([("traceparent".into(), json!("00-1-2-01"))]));
    client.discover(&traced).await.unwrap();
    assert!(d.lock().unwrap().from_cache);
}

#[tokio::test(start_paused = true)]
async fn nothing_is_cached_by_default_or_without_a_positive_ttl() {
    let reads = Arc::new(AtomicUsize::new(0));
    let lasting = server(60_000, CacheScope::Public, reads.clone());
    let plain = Client::new(ClientOptions::new("c", "1"), transport::memory::connect(&lasting));
    let (o, d) = watched(CacheMode::Default);
    plain.read_resource("test://counter", &o).await.unwrap();
    plain.read_resource("test://counter", &o).await.unwrap();
    assert!(!d.lock().unwrap().from_cache);
    let stale = server(0, CacheScope::Public, reads.clone());
    let client = cached_client(&stale);
    assert!(!read_counter(&client, CacheMode::Default).await.1);
    assert!(!read_counter(&client, CacheMode::Default).await.1);
    assert_eq!(reads.load(Ordering::SeqCst), 4);
}

#[tokio::test(start_paused = true)]
async fn a_result_expires_after_its_ttl() {
    let reads = Arc::new(AtomicUsize::new(0));
    let client = cached_client(&server(100, CacheScope::Public, reads));
    assert_eq!(read_counter(&client, CacheMode::Default).await, ("1".into(), false));
    assert_eq!(read_counter(&client, CacheMode::Default).await, ("1".into(), true));
    tokio::time::advance(Duration::from_millis(150)).await;
    assert_eq!(read_counter(&client, CacheMode::Default).await, ("2".into(), false));
}

#[tokio::test(start_paused = true)]
async fn requests_with_request_state_or_input_responses_skip_the_cache() {
    let reads = Arc::new(AtomicUsize::new(0));
    let client = cached_client(&server(60_000, CacheScope::Public, reads.clone()));
    assert!(!read_counter(&client, CacheMode::Default).await.1);
    for (key, value) in [("inputResponses", json!({})), ("requestState", json!("not-sealed"))] {
        let (o, d) = watched(CacheMode::Default);
        let params = Map::from_iter([("uri".into(), json!("test://counter")), (key.into(), value)]);
        // Whatever the server makes of it, the answer is not the cached one.
        let _ = client.request_raw("resources/read", params, &o).await;
        assert!(!d.lock().unwrap().from_cache, "{key}");
    }
    assert!(reads.load(Ordering::SeqCst) >= 2);
}

#[tokio::test(start_paused = true)]
async fn an_invalid_cursor_drops_the_pages_and_a_list_change_drops_the_list() {
    let server = server(60_000, CacheScope::Public, Arc::default());
    let client = cached_client(&server);
    let (o, d) = watched(CacheMode::Default);
    let names = |tools: Vec<Tool>| tools.into_iter().map(|t| t.name).collect::<Vec<_>>();
    assert_eq!(names(client.list_all_tools(&o).await.unwrap()), ["a", "b"]);
    assert!(!d.lock().unwrap().from_cache);
    // A new tool is not seen while the list is fresh in the cache...
    server
        .add_tool(tool("c"), |_call, _ctx| async move { Err(mcp_bridge_sdk::HandlerError::internal("unused")) })
        .await;
    assert_eq!(names(client.list_all_tools(&o).await.unwrap()), ["a", "b"]);
    assert!(d.lock().unwrap().from_cache);
    // ...until a cursor is refused: the pages of that list go.
    let refused = client.list_tools(Some("not-a-cursor"), &o).await.unwrap_err();
    assert!(matches!(&refused, Error::Rpc { error } if error.code == -32602), "{refused:?}");
    *d.lock().unwrap() = Diagnostics::default();
    assert_eq!(names(client.list_all_tools(&o).await.unwrap()), ["a", "b", "c"]);
    assert!(!d.lock().unwrap().from_cache);
    assert_eq!(client.list_all_tools(&o).await.unwrap().len(), 3);
    assert!(d.lock().unwrap().from_cache);

    // A list change on a listen stream drops the list before the caller hears of it.
    let (acknowledged, heard) = (Arc::new(tokio::sync::Notify::new()), Arc::new(tokio::sync::Notify::new()));
    let (on_ack, notify) = (acknowledged.clone(), heard.clone());
    let listen_options = RequestOptions::default().with_on_notification(Arc::new(move |n| {
        if n.method == "notifications/subscriptions/acknowledged" {
            on_ack.notify_one();
        } else {
            notify.notify_one();
        }
    }));
    let listener = client.clone();
    let filter = SubscriptionFilter {
        tools_list_changed: Some(true),
        resource_subscriptions: Some(vec!["test://counter".into()]),
        ..Default::default()
    };
    tokio::spawn(async move { listener.listen(filter, &listen_options).await });
    acknowledged.notified().await;
    assert!(server.remove_tool("c").await);
    heard.notified().await;
    *d.lock().unwrap() = Diagnostics::default();
    assert_eq!(names(client.list_all_tools(&o).await.unwrap()), ["a", "b"]);
    assert!(!d.lock().unwrap().from_cache);
    // A resource update drops the cached read of that resource.
    assert!(!read_counter(&client, CacheMode::Default).await.1);
    assert!(read_counter(&client, CacheMode::Default).await.1);
    server.publish(ChangeEvent::ResourceUpdated { uri: "test://counter".into() }).await;
    heard.notified().await;
    assert!(!read_counter(&client, CacheMode::Default).await.1);
}

/// A provider whose token the test switches.
#[derive(Debug)]
struct SwitchableToken(Mutex<String>);

impl AuthProvider for SwitchableToken {
    fn authorization(&self) -> BoxFuture<Result<Option<String>, mcp_bridge_sdk::BoxError>> {
        let value = format!("Bearer {}", self.0.lock().unwrap());
        Box::pin(async move { Ok(Some(value)) })
    }

    fn refused(&self, _refusal: AuthRefusal) -> BoxFuture<bool> {
        Box::pin(async { false })
    }
}

async fn http_client(scope: CacheScope, reads: Arc<AtomicUsize>, token: Arc<SwitchableToken>) -> Client {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = server(60_000, scope, reads);
    tokio::spawn(async move { server.serve_http(listener, HttpOptions::default(), std::future::pending()).await });
    let mut config = HttpConfig::new(format!("http://{addr}/mcp"));
    config.auth = Some(token);
    let options = ClientOptions::new("c", "1").with_cache(CacheOptions::default().with_enabled(true));
    Client::new(options, transport::http::connect(config).unwrap())
}

#[tokio::test]
async fn private_results_belong_to_the_credential_that_fetched_them() {
    let token = Arc::new(SwitchableToken(Mutex::new("alice-token".into())));
    let reads = Arc::new(AtomicUsize::new(0));
    let client = http_client(CacheScope::Private, reads.clone(), token.clone()).await;
    assert_eq!(read_counter(&client, CacheMode::Default).await, ("1".into(), false));
    assert_eq!(read_counter(&client, CacheMode::Default).await, ("1".into(), true));
    *token.0.lock().unwrap() = "bob-token".into();
    assert_eq!(read_counter(&client, CacheMode::Default).await, ("2".into(), false));
    // Alice's result was dropped when the credential changed.
    *token.0.lock().unwrap() = "alice-token".into();
    assert_eq!(read_counter(&client, CacheMode::Default).await, ("3".into(), false));

    // A public result is served whatever the credential.
    let public = http_client(CacheScope::Public, Arc::default(), token.clone()).await;
    assert!(!read_counter(&public, CacheMode::Default).await.1);
    *token.0.lock().unwrap() = "carol-token".into();
    assert!(read_counter(&public, CacheMode::Default).await.1);
}

//! The client against a 2025-11-25 server over Streamable HTTP with
//! sessions, built with the TypeScript SDK 1.x (`tests/ts/legacy_http_server.mjs`):
//! the `server/discover` probe is refused (HTTP 400), the client starts a
//! session with `initialize` and carries its id and version on every POST;
//! the server's elicitation comes on a call's stream and the answer is
//! POSTed; a list change comes on the session's GET stream; closing the
//! client DELETEs the session. Streams the server closes early are resumed
//! with `Last-Event-ID`, and a session the server forgot is started again.

use std::sync::Arc;
use std::time::Duration;

use mcp_bridge_protocol::types::{ContentBlock, ElicitAction, ElicitResult};
use mcp_bridge_sdk::client::{Era, Hook, InputHooks};
use mcp_bridge_sdk::transport::http::{HttpConfig, connect};
use mcp_bridge_sdk::{Client, ClientOptions, RequestOptions};
use serde_json::{Value, json};
use test_support::ts_legacy_http_server;
use tokio::sync::mpsc;

fn client(url: &str, notifications: mpsc::UnboundedSender<String>) -> Client {
    let mut options = ClientOptions::new("legacy-http-test", "1.0.0");
    options.capabilities = serde_json::from_value(json!({"elicitation": {"form": {}}})).unwrap();
    let mut hooks = InputHooks::default();
    let form: Hook<_, _> = Arc::new(|_params| {
        Box::pin(async {
            Ok(ElicitResult {
                action: ElicitAction::Accept,
                content: Some(serde_json::from_value(json!({"name": "Grace"})).unwrap()),
                meta: None,
                extra: Default::default(),
            })
        })
    });
    hooks.elicit_form = Some(form);
    options.hooks = hooks;
    options.on_notification = Some(Arc::new(move |n: &mcp_bridge_protocol::JsonRpcNotification| {
        let _ = notifications.send(n.method.clone());
    }));
    Client::new(options, connect(HttpConfig::new(url)).unwrap())
}

fn text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect()
}

async fn call(client: &Client, name: &str, arguments: Value) -> String {
    text(&client.call_tool(name, arguments, &RequestOptions::default()).await.unwrap().content)
}

#[tokio::test]
async fn a_session_is_started_used_and_ended() {
    let (_server, url) = ts_legacy_http_server().await;
    let (to_test, mut seen) = mpsc::unbounded_channel();
    let first = client(&url, to_test);
    assert_eq!(call(&first, "echo", json!({"text": "hello"})).await, "hello");
    assert!(first.spoken().is_some_and(|s| s.is_legacy()), "{:?}", first.spoken());
    assert_eq!(first.spoken().map(|s| s.protocol_version().to_owned()).as_deref(), Some("2025-11-25"));

    // The server's request comes on the call's stream; the answer is POSTed in the session.
    assert_eq!(call(&first, "ask", json!({})).await, "accept: Grace");

    // A list change comes on the session's GET stream.
    assert_eq!(call(&first, "grow", json!({})).await, "grown 1");
    let changed = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(method) = seen.recv().await {
            if method == "notifications/tools/list_changed" {
                return true;
            }
        }
        false
    });
    assert!(changed.await.unwrap_or(false), "no list change on the GET stream");
    assert_eq!(call(&first, "sessions", json!({})).await, "1");

    // Closing DELETEs the session: a second client finds only its own.
    first.close().await;
    let second = client(&url, mpsc::unbounded_channel().0);
    assert_eq!(call(&second, "sessions", json!({})).await, "1");
    second.close().await;
}

async fn wait_for(seen: &mut mpsc::UnboundedReceiver<String>, wanted: &str) -> bool {
    let found = async {
        while let Some(method) = seen.recv().await {
            if method == wanted {
                return true;
            }
        }
        false
    };
    tokio::time::timeout(Duration::from_secs(10), found).await.unwrap_or(false)
}

#[tokio::test]
async fn a_stream_closed_before_its_answer_is_resumed_with_the_last_event_id() {
    let (_server, url) = ts_legacy_http_server().await;
    let (to_test, _seen) = mpsc::unbounded_channel();
    let client = client(&url, to_test);
    // The server closes the call's stream, then answers: the answer is
    // only in its event store, replayed on the GET that resumes the stream.
    assert_eq!(call(&client, "poll", json!({})).await, "answered after the poll");
    assert_eq!(call(&client, "echo", json!({"text": "after"})).await, "after");
    client.close().await;
}

#[tokio::test]
async fn a_closed_get_stream_is_resumed_and_what_it_missed_replayed() {
    let (_server, url) = ts_legacy_http_server().await;
    let (to_test, mut seen) = mpsc::unbounded_channel();
    let client = client(&url, to_test);
    // A first event on the GET stream gives the client an id to resume from
    // (this server sends no priming event on its GET stream).
    assert_eq!(call(&client, "grow", json!({})).await, "grown 1");
    assert!(wait_for(&mut seen, "notifications/tools/list_changed").await, "no change on the GET stream");
    // The list changes while the GET stream is closed.
    assert_eq!(call(&client, "drop_get", json!({})).await, "GET stream closed");
    assert!(wait_for(&mut seen, "notifications/tools/list_changed").await, "the change was not replayed");
    // The resumed stream goes on carrying what comes next.
    assert_eq!(call(&client, "grow", json!({})).await, "grown 3");
    assert!(wait_for(&mut seen, "notifications/tools/list_changed").await, "no change on the resumed stream");
    client.close().await;
}

#[tokio::test]
async fn a_session_the_server_forgot_is_started_again_and_the_request_sent_once_more() {
    let (_server, url) = ts_legacy_http_server().await;
    let (to_test, mut seen) = mpsc::unbounded_channel();
    let client = client(&url, to_test);
    assert_eq!(call(&client, "forget", json!({})).await, "forgotten");
    // 404 for the old session: a new one, and the call goes through in it.
    assert_eq!(call(&client, "sessions", json!({})).await, "1");
    assert_eq!(call(&client, "ask", json!({})).await, "accept: Grace", "the new session's input round");
    // The new session has its GET stream too.
    assert_eq!(call(&client, "grow", json!({})).await, "grown 1");
    assert!(wait_for(&mut seen, "notifications/tools/list_changed").await, "no GET stream in the new session");
    client.close().await;
}

#[tokio::test]
async fn a_modern_only_client_gets_a_clear_error() {
    let (_server, url) = ts_legacy_http_server().await;
    let mut options = ClientOptions::new("modern-only", "1.0.0");
    options.era = Era::Modern;
    let client = Client::new(options, connect(HttpConfig::new(&url)).unwrap());
    let error = client.call_tool("echo", json!({"text": "x"}), &RequestOptions::default()).await.unwrap_err();
    assert!(error.to_string().contains("no valid session"), "{error}");
}

#[tokio::test]
async fn a_listen_stream_carries_the_list_changes_of_the_get_stream() {
    let (_server, url) = ts_legacy_http_server().await;
    let client = client(&url, mpsc::unbounded_channel().0);
    let (events, mut seen) = mpsc::unbounded_channel();
    let cancel = tokio_util::sync::CancellationToken::new();
    let options = RequestOptions::default().with_cancel(cancel.clone()).with_on_notification(Arc::new(
        move |n: &mcp_bridge_protocol::JsonRpcNotification| {
            let _ = events.send(n.method.clone());
        },
    ));
    let filter =
        mcp_bridge_protocol::types::SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    let stream = tokio::spawn({
        let client = client.clone();
        async move { client.listen(filter, &options).await }
    });
    assert!(wait_for(&mut seen, "notifications/subscriptions/acknowledged").await);
    assert_eq!(call(&client, "grow", json!({})).await, "grown 1");
    assert!(wait_for(&mut seen, "notifications/tools/list_changed").await, "the change is the stream's event");
    cancel.cancel();
    assert!(matches!(stream.await.unwrap(), Err(mcp_bridge_sdk::Error::Cancelled { .. })));
    client.close().await;
}

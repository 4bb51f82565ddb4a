//! `listen_with_recovery` against the example server as a child process
//! that dies: the stream is opened again on the restarted child and its
//! events arrive; without restarts the retries run out.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::types::SubscriptionFilter;
use mcp_bridge_sdk::client::ListenRecovery;
use mcp_bridge_sdk::transport::stdio::{StdioCommand, spawn};
use mcp_bridge_sdk::{Client, ClientOptions, Error, RequestOptions};
use serde_json::json;

const SERVER: &str = env!("CARGO_BIN_EXE_mcp-example-server");

fn kill(client: &Client) {
    let pid = client.process().unwrap().id();
    let status = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    assert!(status.success());
}

async fn wait_for(events: &Events, method: &str, count: usize) {
    for _ in 0..1000 {
        if events.lock().unwrap().iter().filter(|m| *m == method).count() >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{count} × {method} never came: {:?}", events.lock().unwrap());
}

/// The methods of the notifications a stream delivered.
type Events = Arc<Mutex<Vec<String>>>;
/// The task running `listen_with_recovery`.
type Listening = tokio::task::JoinHandle<Result<mcp_bridge_protocol::types::SubscriptionsListenResult, Error>>;

fn listening(client: &Client, recovery: ListenRecovery) -> (Events, Listening) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let options =
        RequestOptions::default().with_on_notification(Arc::new(move |n| seen.lock().unwrap().push(n.method.clone())));
    let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    let listener = client.clone();
    let task = tokio::spawn(async move { listener.listen_with_recovery(filter, &recovery, &options).await });
    (events, task)
}

#[tokio::test]
async fn a_lost_stream_is_opened_again_on_the_restarted_server() {
    let client =
        Client::new(ClientOptions::new("recovery", "1"), spawn(StdioCommand::new(SERVER).max_restarts(1)).unwrap());
    let recovery = ListenRecovery::default().with_max_retries(3).with_delay(Duration::from_millis(50));
    let (events, listening) = listening(&client, recovery);
    wait_for(&events, "notifications/subscriptions/acknowledged", 1).await;
    kill(&client);
    wait_for(&events, "notifications/subscriptions/acknowledged", 2).await;
    assert_eq!(client.process().unwrap().restarts(), 1);
    let o = RequestOptions::default();
    client.call_tool("toggle_bonus", json!({}), &o).await.unwrap();
    wait_for(&events, "notifications/tools/list_changed", 1).await;
    client.call_tool("end_streams", json!({}), &o).await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(10), listening).await.unwrap().unwrap();
    assert!(ended.is_ok(), "a graceful end is the result: {ended:?}");
    client.close().await;
}

#[tokio::test]
async fn without_a_server_to_come_back_the_retries_run_out() {
    let client = Client::new(ClientOptions::new("recovery", "1"), spawn(StdioCommand::new(SERVER)).unwrap());
    let recovery = ListenRecovery::default().with_max_retries(2).with_delay(Duration::from_millis(20));
    let (events, listening) = listening(&client, recovery);
    wait_for(&events, "notifications/subscriptions/acknowledged", 1).await;
    kill(&client);
    let ended = tokio::time::timeout(Duration::from_secs(10), listening).await.unwrap().unwrap();
    assert!(matches!(ended, Err(Error::Closed)), "{ended:?}");
}

/// Two listen streams of one 2025-11-25 session want one resource: the
/// end of the first leaves the second's updates coming (the session's
/// subscription is unsubscribed after the last stream only).
#[tokio::test]
async fn the_end_of_one_legacy_listen_stream_keeps_another_streams_resource_updates() {
    let mut options = ClientOptions::new("two-listeners", "1");
    options.era = mcp_bridge_sdk::client::Era::Legacy;
    let client = Client::new(options, spawn(StdioCommand::new(SERVER)).unwrap());
    let o = RequestOptions::default();
    client.call_tool("set_note", json!({"name": "shared", "text": "v0"}), &o).await.unwrap();
    let stream = |client: &Client| {
        let events: Events = Arc::default();
        let seen = events.clone();
        let cancel = tokio_util::sync::CancellationToken::new();
        let options = RequestOptions::default()
            .with_cancel(cancel.clone())
            .with_on_notification(Arc::new(move |n| seen.lock().unwrap().push(n.method.clone())));
        let filter =
            SubscriptionFilter { resource_subscriptions: Some(vec!["note://shared".into()]), ..Default::default() };
        let listener = client.clone();
        let task = tokio::spawn(async move { listener.listen(filter, &options).await });
        (events, cancel, task)
    };
    let (first, end_first, first_task) = stream(&client);
    let (second, _end_second, _second_task) = stream(&client);
    wait_for(&first, "notifications/subscriptions/acknowledged", 1).await;
    wait_for(&second, "notifications/subscriptions/acknowledged", 1).await;
    client.call_tool("set_note", json!({"name": "shared", "text": "v1"}), &o).await.unwrap();
    wait_for(&first, "notifications/resources/updated", 1).await;
    wait_for(&second, "notifications/resources/updated", 1).await;

    end_first.cancel();
    let _ = first_task.await;
    client.call_tool("set_note", json!({"name": "shared", "text": "v2"}), &o).await.unwrap();
    wait_for(&second, "notifications/resources/updated", 2).await;
    client.close().await;
}

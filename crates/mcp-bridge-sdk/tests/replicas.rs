//! Replicas of one server in one process: the in-process change bus and a
//! shared state key ring, through the public API (the Redis bus and real
//! processes behind HAProxy are in mcp-example-server's tests).

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::types::{
    CallToolResult, ContentBlock, Implementation, InputRequests, SubscriptionFilter, Tool,
};
use mcp_bridge_sdk::client::{GapCause, ListenGap, ListenRecovery};
use mcp_bridge_sdk::server::{ChangeEvent, InProcessBus, StateKey, StateKeys};
use mcp_bridge_sdk::{Client, ClientOptions, Error, Reply, RequestOptions, Server, transport};
use serde_json::{Map, Value, json};

fn tools_changes() -> SubscriptionFilter {
    SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() }
}

/// A replica with a tool that asks for a word, then echoes it with the
/// replica's name: the answer says which replica finished the round.
fn replica(name: &str, keys: StateKeys, bus: &InProcessBus) -> Server {
    let tool: Tool = serde_json::from_value(json!({"name": "echo_word", "inputSchema": {"type": "object"}})).unwrap();
    let replica = name.to_owned();
    Server::builder(Implementation::new("notes", "1"))
        .state_keys(keys)
        .change_bus(bus.member())
        .tool(tool, move |call, _ctx| {
            let replica = replica.clone();
            async move {
                if let Some(answer) = call.input_responses.get("word") {
                    let word = serde_json::to_value(answer).unwrap()["content"]["word"].clone();
                    let text = format!("{replica}: {word} after {}", call.state.unwrap_or_default());
                    return Ok(Reply::Complete(CallToolResult::text(text)));
                }
                let requests: InputRequests = serde_json::from_value(json!({"word": {
                    "method": "elicitation/create",
                    "params": {"message": "Word?", "requestedSchema": {"type": "object", "properties": {"word": {"type": "string"}}}}
                }}))
                .unwrap();
                Ok(Reply::InputRequired { requests, state: Some(json!(format!("asked on {replica}"))) })
            }
        })
        .build()
}

fn keys(id: &str, byte: u8) -> StateKeys {
    StateKeys::single(StateKey::new(id, [byte; 32]).unwrap())
}

fn client(server: &Server) -> Client {
    let mut options = ClientOptions::new("c", "1");
    options.capabilities = serde_json::from_value(json!({"elicitation": {}})).unwrap();
    Client::new(options, transport::memory::connect(server))
}

/// The first round on `first`, answered on `second`.
async fn round_across(first: &Server, second: &Server) -> Result<Value, Error> {
    let asked = client(first)
        .request_raw(
            "tools/call",
            Map::from_iter([("name".into(), json!("echo_word"))]),
            &RequestOptions::default().with_allow_input_required(true),
        )
        .await?;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let retry = Map::from_iter([
        ("name".into(), json!("echo_word")),
        ("requestState".into(), asked["requestState"].clone()),
        ("inputResponses".into(), json!({"word": {"action": "accept", "content": {"word": "kiwi"}}})),
    ]);
    client(second).request_raw("tools/call", retry, &RequestOptions::default()).await
}

#[tokio::test]
async fn a_round_started_on_one_replica_is_finished_on_another_with_the_same_keys() {
    let bus = InProcessBus::new();
    let (a, b) = (replica("a", keys("k1", 1), &bus), replica("b", keys("k1", 1), &bus));
    let done = round_across(&a, &b).await.unwrap();
    let text = serde_json::from_value::<CallToolResult>(done).unwrap();
    assert!(
        matches!(&text.content[0], ContentBlock::Text(t) if t.text == r#"b: "kiwi" after "asked on a""#),
        "{text:?}"
    );
}

#[tokio::test]
async fn a_replica_with_another_key_ring_says_so() {
    let bus = InProcessBus::new();
    let (a, stranger) = (replica("a", keys("k1", 1), &bus), replica("x", keys("k9", 1), &bus));
    let refused = round_across(&a, &stranger).await;
    let Err(Error::Rpc { error }) = refused else { panic!("{refused:?}") };
    assert_eq!(error.code, -32602);
    assert!(error.message.contains(r#"sealed with key "k1", which this server does not hold"#), "{}", error.message);
    let forger = replica("f", keys("k1", 2), &bus);
    let Err(Error::Rpc { error }) = round_across(&a, &forger).await else { panic!("the forger accepted it") };
    assert!(error.message.contains("signature does not verify"), "{}", error.message);
}

#[tokio::test]
async fn an_event_published_on_one_replica_reaches_the_streams_of_every_replica() {
    let bus = InProcessBus::new();
    let (a, b, c) =
        (replica("a", keys("k", 1), &bus), replica("b", keys("k", 1), &bus), replica("c", keys("k", 1), &bus));
    let heard: Arc<Mutex<Vec<&str>>> = Arc::default();
    let mut streams = Vec::new();
    for (name, server) in [("a", &a), ("b", &b)] {
        let heard = heard.clone();
        let options = RequestOptions::default().with_on_notification(Arc::new(move |n| {
            if n.method == "notifications/tools/list_changed" {
                heard.lock().unwrap().push(name);
            }
        }));
        let listener = client(server);
        streams.push(tokio::spawn(async move { listener.listen(tools_changes(), &options).await }));
    }
    common::until("both streams to open", || a.open_subscriptions() == 1 && b.open_subscriptions() == 1).await;
    c.publish(ChangeEvent::ToolsListChanged).await;
    common::until("both streams to hear c's change", || heard.lock().unwrap().len() == 2).await;
    a.publish(ChangeEvent::ToolsListChanged).await;
    common::until("both streams to hear a's change", || heard.lock().unwrap().len() == 4).await;
    let mut heard = heard.lock().unwrap().clone();
    heard.sort();
    assert_eq!(heard, ["a", "a", "b", "b"], "each stream heard each change once");
    drop(streams);
}

#[tokio::test]
async fn a_bus_that_lost_events_ends_the_streams_and_recovery_reports_a_gap() {
    let bus = InProcessBus::new();
    let (a, b) = (replica("a", keys("k", 1), &bus), replica("b", keys("k", 1), &bus));
    let gaps: Arc<Mutex<Vec<ListenGap>>> = Arc::default();
    let seen = gaps.clone();
    let recovery = ListenRecovery::default()
        .with_delay(Duration::from_millis(10))
        .with_on_gap(Arc::new(move |gap| seen.lock().unwrap().push(*gap)));
    let listener = client(&a);
    let changes = Arc::new(Mutex::new(0));
    let counted = changes.clone();
    let options = RequestOptions::default().with_on_notification(Arc::new(move |n| {
        if n.method == "notifications/tools/list_changed" {
            *counted.lock().unwrap() += 1;
        }
    }));
    let listening =
        tokio::spawn(async move { listener.listen_with_recovery(tools_changes(), &recovery, &options).await });
    common::until("the stream to open", || a.open_subscriptions() == 1).await;
    bus.interrupt();
    common::until("a gap to be reported", || !gaps.lock().unwrap().is_empty()).await;
    assert_eq!(gaps.lock().unwrap()[0].cause, GapCause::EventsLost);
    common::until("the stream to open again", || a.open_subscriptions() == 1).await;
    b.publish(ChangeEvent::ToolsListChanged).await;
    common::until("the new stream to hear b's change", || *changes.lock().unwrap() == 1).await;
    listening.abort();
}

#[tokio::test]
async fn the_events_lost_error_is_a_clear_error_for_a_plain_listen() {
    let bus = InProcessBus::new();
    let a = replica("a", keys("k", 1), &bus);
    let stream = common::listening(client(&a), tools_changes()).await;
    bus.interrupt();
    let ended = stream.await.unwrap();
    let Err(error) = ended else { panic!("{ended:?}") };
    assert!(error.is_events_lost(), "{error}");
    assert!(error.to_string().contains("open a new stream and list again"), "{error}");
}

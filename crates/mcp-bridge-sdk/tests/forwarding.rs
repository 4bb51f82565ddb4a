//! A server that forwards (`ServerBuilder::forward`): every request goes to
//! one handler, under the server's own rules: the results made 2026-07-28
//! results, input rounds sealed and opened, a listen stream's messages
//! named as the client's.

mod common;

use std::sync::Arc;
use std::time::Duration;

use mcp_bridge_protocol::types::{
    ClientCapabilities, ContentBlock, ElicitResult, Implementation, InputRequests, SubscriptionFilter,
};
use mcp_bridge_sdk::client::{Era, InputHooks};
use mcp_bridge_sdk::server::{Forwarded, Reply};
use mcp_bridge_sdk::transport::memory;
use mcp_bridge_sdk::{Client, ClientOptions, Error, HandlerError, RequestOptions, Server};
use serde_json::{Map, Value, json};

/// A client of `server` pinned to 2026-07-28 that answers a form with the
/// name "Ada".
fn client_of(server: &Server) -> Client {
    let mut options = ClientOptions::new("outer", "1").with_era(Era::Modern);
    options.capabilities = ClientCapabilities::builder().form_elicitation().build();
    options.hooks = InputHooks::new().on_form(|_| async {
        Ok::<_, std::convert::Infallible>(ElicitResult::accept(Map::from_iter([("name".to_owned(), json!("Ada"))])))
    });
    Client::new(options, memory::connect(server))
}

/// Forwards to `behind` as is, but asks the client's name itself first
/// on `tools/call` of "greet" (its own round, with its own state).
fn forwarding(behind: Client) -> Server {
    Server::builder(Implementation::new("front", "1"))
        .forward(move |request: Forwarded, _ctx| {
            let behind = behind.clone();
            async move {
                if request.params.get("name") == Some(&json!("greet")) {
                    return Ok(greet(&request));
                }
                if let Some(stream) = request.stream {
                    let options = RequestOptions::default().with_inline_notifications(true).with_on_notification(
                        Arc::new(move |n| {
                            let _ = stream.send(n);
                        }),
                    );
                    let filter = serde_json::from_value(request.params["notifications"].clone()).unwrap_or_default();
                    let ended =
                        behind.listen(filter, &options).await.map_err(|e| HandlerError::internal(e.to_string()))?;
                    return Ok(Reply::Complete(serde_json::to_value(ended).unwrap_or_default()));
                }
                let value = behind
                    .request_raw(&request.method, request.params, &RequestOptions::default())
                    .await
                    .map_err(|e| HandlerError::internal(e.to_string()))?;
                Ok(Reply::Complete(value))
            }
        })
        .build()
}

fn greet(request: &Forwarded) -> Reply<Value> {
    let name = request.input_responses.get("name").map(|answer| json!(answer)["content"]["name"].clone());
    match (name, &request.state) {
        (Some(name), Some(state)) => {
            Reply::Complete(json!({"content": [{"type": "text", "text": format!("{} {name}", state["greeting"])}]}))
        }
        _ => {
            let ask = json!({"name": {"method": "elicitation/create", "params": {"mode": "form", "message": "Name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}});
            let requests: InputRequests = serde_json::from_value(ask).unwrap_or_default();
            Reply::InputRequired { requests, state: Some(json!({"greeting": "Hello"})) }
        }
    }
}

#[tokio::test]
async fn a_forwarding_server_answers_with_the_server_behind_it_under_its_own_rules() {
    let behind = common::ping_server();
    let front = forwarding(Client::new(ClientOptions::new("front", "1"), memory::connect(&behind)));
    let client = client_of(&front);
    let o = RequestOptions::default();

    let discovered = client.discover(&o).await.unwrap();
    assert_eq!(discovered.supported_versions, [mcp_bridge_protocol::PROTOCOL_VERSION]);
    let pong = client.call_tool("ping", json!({}), &o).await.unwrap();
    assert!(matches!(&pong.content[0], ContentBlock::Text(t) if t.text == "pong"), "{pong:?}");
    // The raw result is a 2026-07-28 one: its type and cache hints are set.
    let listed = client.request_raw("tools/list", Map::new(), &o).await.unwrap();
    assert_eq!((listed["resultType"].clone(), listed["ttlMs"].clone()), (json!("complete"), json!(0)), "{listed}");

    // The handler's own round: its state sealed, then given back verified with the answer.
    let greeted = client.call_tool("greet", json!({}), &o).await.unwrap();
    assert!(matches!(&greeted.content[0], ContentBlock::Text(t) if t.text == "\"Hello\" \"Ada\""), "{greeted:?}");
    let mut forged = Map::new();
    forged.insert("name".into(), json!("greet"));
    forged.insert("requestState".into(), json!("not-sealed-here"));
    let refused = client.request_raw("tools/call", forged, &o.clone().with_allow_input_required(true)).await;
    assert!(matches!(&refused, Err(Error::Rpc { .. })), "{refused:?}");
}

#[tokio::test]
async fn a_forwarded_listen_stream_is_named_as_the_clients_own() {
    let behind = common::ping_server();
    let front = forwarding(Client::new(ClientOptions::new("front", "1"), memory::connect(&behind)));
    let client = client_of(&front);
    let (events, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let stop = tokio_util::sync::CancellationToken::new();
    let options = RequestOptions::default()
        .with_cancel(stop.clone())
        .with_on_notification(Arc::new(move |n| drop(events.send(n.clone()))));
    let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    let listening = tokio::spawn(async move { client.listen(filter, &options).await });
    let ack = tokio::time::timeout(Duration::from_secs(10), heard.recv()).await.unwrap().unwrap();
    assert_eq!(ack.method, "notifications/subscriptions/acknowledged");
    behind.remove_tool("ping").await;
    let changed = tokio::time::timeout(Duration::from_secs(10), heard.recv()).await.unwrap().unwrap();
    assert_eq!(changed.method, "notifications/tools/list_changed");
    // The client's own listen request is the one its events name.
    let ids: Vec<Value> = [&ack, &changed]
        .iter()
        .map(|n| n.params.as_ref().unwrap()["_meta"][mcp_bridge_protocol::meta::SUBSCRIPTION_ID_KEY].clone())
        .collect();
    assert_eq!(ids[0], ids[1]);
    stop.cancel();
    assert!(matches!(listening.await.unwrap(), Err(Error::Cancelled { .. })));
}

#[tokio::test]
async fn a_forwarded_listen_stream_ends_with_its_result_when_the_server_shuts_down() {
    let behind = common::ping_server();
    let front = forwarding(Client::new(ClientOptions::new("front", "1"), memory::connect(&behind)));
    let client = client_of(&front);
    let (events, mut heard) = tokio::sync::mpsc::unbounded_channel();
    let options =
        RequestOptions::default().with_on_notification(Arc::new(move |n| drop(events.send(n.method.clone()))));
    let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    let listening = tokio::spawn(async move { client.listen(filter, &options).await });
    tokio::time::timeout(Duration::from_secs(10), heard.recv()).await.unwrap().unwrap();
    assert_eq!(front.open_subscriptions(), 1);
    front.shutdown_subscriptions();
    let ended = tokio::time::timeout(Duration::from_secs(10), listening).await.unwrap().unwrap();
    assert!(ended.is_ok(), "{ended:?}");
}

//! Typed tools and prompts seen from a client: derived schemas, arguments
//! refused with the path of the mistake, every kind of handler return, and
//! state shared by handlers.
#![cfg(feature = "schemars")]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcp_bridge_protocol::types::{ContentBlock, Prompt, PromptMessage};
use mcp_bridge_sdk::prelude::*;
use mcp_bridge_sdk::server::{Json, NoArguments};
use mcp_bridge_sdk::transport;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct Add {
    /// The first number.
    a: f64,
    b: f64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: f64,
}

#[derive(Deserialize, JsonSchema)]
struct Order {
    items: Vec<Item>,
}

#[derive(Deserialize, JsonSchema)]
struct Item {
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Poem {
    /// What the poem is about.
    topic: String,
    mood: Option<String>,
}

/// A counter shared by the `count` tool's calls.
#[derive(Default)]
struct Counter {
    calls: AtomicU64,
}

fn server() -> Server {
    let counter = Arc::new(Counter::default());
    Server::builder(Implementation::new("typed", "1.0"))
        .typed_tool(Tool::new("add").with_description("Adds two numbers."), |args: Add, _ctx| async move {
            Json(Sum { sum: args.a + args.b })
        })
        .typed_tool(Tool::new("order"), |args: Order, _ctx| async move {
            args.items.into_iter().map(|item| item.name).collect::<Vec<_>>().join(", ")
        })
        .typed_tool(Tool::new("divide"), |args: Add, _ctx| async move {
            if args.b == 0.0 { Err("cannot divide by zero") } else { Ok(format!("{}", args.a / args.b)) }
        })
        .typed_tool_with(&counter, Tool::new("count"), |counter: Arc<Counter>, _: NoArguments, _ctx| async move {
            (counter.calls.fetch_add(1, Ordering::SeqCst) + 1).to_string()
        })
        .typed_tool(Tool::new("whole"), |_: NoArguments, _ctx| async move { CallToolResult::text("as built") })
        .typed_prompt(Prompt::new("poem"), |args: Poem, _ctx| async move {
            vec![PromptMessage::user(format!("A {} poem about {}", args.mood.as_deref().unwrap_or("calm"), args.topic))]
        })
        .build()
}

fn client(server: &Server) -> Client {
    Client::new(ClientOptions::new("typed-test", "1.0"), transport::memory::connect(server))
}

fn object(value: Value) -> serde_json::Map<String, Value> {
    let Value::Object(map) = value else { panic!("not an object: {value}") };
    map
}

fn text(result: &CallToolResult) -> &str {
    match &result.content[0] {
        ContentBlock::Text(t) => &t.text,
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn the_schemas_are_derived_from_the_types() {
    let client = client(&server());
    let tools = client.list_tools(None, &RequestOptions::default()).await.unwrap().tools;
    let add = tools.iter().find(|t| t.name == "add").unwrap();
    let input = Value::Object(add.input_schema.clone());
    assert_eq!(input["type"], "object");
    assert_eq!(input["required"], json!(["a", "b"]));
    assert_eq!(input["properties"]["a"]["description"], "The first number.");
    let output = Value::Object(add.output_schema.clone().expect("Json<Sum> declares an output schema"));
    assert_eq!(output["properties"]["sum"]["type"], "number");
    let count = tools.iter().find(|t| t.name == "count").unwrap();
    assert_eq!(Value::Object(count.input_schema.clone())["type"], "object");
    assert!(count.output_schema.is_none());

    let prompts = client.list_prompts(None, &RequestOptions::default()).await.unwrap().prompts;
    let poem = prompts.iter().find(|p| p.name == "poem").unwrap();
    let arguments = poem.arguments.clone().unwrap_or_default();
    assert_eq!(
        arguments.iter().map(|a| (a.name.as_str(), a.required)).collect::<Vec<_>>(),
        [("topic", Some(true)), ("mood", None)]
    );
    assert_eq!(arguments[0].description.as_deref(), Some("What the poem is about."));
}

#[tokio::test]
async fn each_kind_of_return_becomes_its_result() {
    let client = client(&server());
    let options = RequestOptions::default();
    let sum = client.call_tool("add", json!({"a": 2, "b": 3.5}), &options).await.unwrap();
    assert_eq!(sum.structured_content, Some(json!({"sum": 5.5})));
    assert_eq!(text(&sum), r#"{"sum":5.5}"#);

    let failed = client.call_tool("divide", json!({"a": 1, "b": 0}), &options).await.unwrap();
    assert_eq!(failed.is_error, Some(true), "an Err is a tool error the model reads, not a protocol error");
    assert_eq!(text(&failed), "cannot divide by zero");
    let divided = client.call_tool("divide", json!({"a": 1, "b": 4}), &options).await.unwrap();
    assert_eq!((text(&divided), divided.is_error), ("0.25", None));

    assert_eq!(text(&client.call_tool("whole", json!({}), &options).await.unwrap()), "as built");

    let poem = client.get_prompt("poem", object(json!({"topic": "rain"})), &options).await.unwrap();
    assert_eq!(poem.messages.len(), 1);
    assert!(matches!(&poem.messages[0].content, ContentBlock::Text(t) if t.text == "A calm poem about rain"));
}

#[tokio::test]
async fn bad_arguments_are_invalid_params_naming_where() {
    let client = client(&server());
    let options = RequestOptions::default();
    let error = client.call_tool("add", json!({"a": "two", "b": 1}), &options).await.unwrap_err();
    let refusal = error.rpc_error().expect("a JSON-RPC error");
    assert_eq!(refusal.code, -32602);
    assert!(refusal.message.contains("at /a"), "{}", refusal.message);

    let error = client.call_tool("order", json!({"items": [{"name": "a"}, {"name": 7}]}), &options).await.unwrap_err();
    let refusal = error.rpc_error().expect("a JSON-RPC error");
    assert_eq!(refusal.code, -32602);
    assert!(refusal.message.contains("/items/1/name"), "{}", refusal.message);

    let error = client.get_prompt("poem", object(json!({"mood": "grim"})), &options).await.unwrap_err();
    let refusal = error.rpc_error().expect("a JSON-RPC error");
    assert_eq!(refusal.code, -32602);
    assert!(refusal.message.contains("topic"), "{}", refusal.message);
}

#[tokio::test]
async fn handlers_share_their_state() {
    let server = server();
    let first = client(&server);
    let second = client(&server);
    let options = RequestOptions::default();
    assert_eq!(text(&first.call_tool("count", json!({}), &options).await.unwrap()), "1");
    assert_eq!(text(&second.call_tool("count", json!({}), &options).await.unwrap()), "2");
    assert_eq!(text(&first.call_tool("count", json!({}), &options).await.unwrap()), "3");
}

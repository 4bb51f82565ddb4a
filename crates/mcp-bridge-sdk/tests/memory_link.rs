//! The client and the server of the SDK against each other over the
//! in-memory link, through their public API only. Every test runs on
//! tokio's paused clock: time moves only when every task waits on it.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_bridge_protocol::types::{
    CallToolResult, ClientCapabilities, ContentBlock, ElicitResult, Implementation, InputRequests, InputResponse,
    LoggingLevel, SubscriptionFilter, Tool,
};
use mcp_bridge_protocol::{JsonRpcNotification, error_code};
use mcp_bridge_sdk::client::NotificationCallback;
use mcp_bridge_sdk::limits::ServerLimits;
use mcp_bridge_sdk::server::{ChangeEvent, ServerBuilder, ToolCall};
use mcp_bridge_sdk::{
    Client, ClientOptions, Error, HandlerError, Reply, RequestContext, RequestOptions, Server, transport,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

fn tool(name: &str) -> Tool {
    serde_json::from_value(json!({"name": name, "inputSchema": {"type": "object"}})).unwrap()
}

fn text(t: impl Into<String>) -> Reply<CallToolResult> {
    Reply::Complete(serde_json::from_value(json!({"content": [{"type": "text", "text": t.into()}]})).unwrap())
}

fn first_text(result: &CallToolResult) -> &str {
    match &result.content[0] {
        ContentBlock::Text(t) => &t.text,
        other => panic!("not text: {other:?}"),
    }
}

fn builder() -> ServerBuilder {
    Server::builder(Implementation::new("test-server", "1.2.3")).instructions("be nice")
}

/// A tool that asks for a name with a form elicitation, then greets.
async fn ask_name(call: ToolCall, _ctx: RequestContext) -> Result<Reply<CallToolResult>, HandlerError> {
    if let Some(InputResponse::Elicit(answer)) = call.input_responses.get("name") {
        assert_eq!(call.state, Some(json!({"round": 1})), "the state comes back verified");
        let name = answer.content.as_ref().and_then(|c| c.get("name")).and_then(Value::as_str).unwrap_or("?");
        return Ok(text(format!("Hello, {name}!")));
    }
    let requests: InputRequests = serde_json::from_value(json!({"name": {"method": "elicitation/create", "params": {
        "message": "Name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    }}}))
    .unwrap();
    Ok(Reply::InputRequired { requests, state: Some(json!({"round": 1})) })
}

fn elicit_client(server: &Server, answer: Value) -> Client {
    let mut options = ClientOptions::new("test-client", "0.1");
    options.capabilities = serde_json::from_value(json!({"elicitation": {}})).unwrap();
    options.hooks.elicit_form = Some(Arc::new(move |_params| {
        let answer = answer.clone();
        Box::pin(async move { Ok(serde_json::from_value::<ElicitResult>(answer).unwrap()) })
    }));
    Client::new(options, transport::memory::connect(server))
}

fn plain_client(server: &Server) -> Client {
    Client::new(ClientOptions::new("test-client", "0.1"), transport::memory::connect(server))
}

fn rpc_code(result: Result<impl std::fmt::Debug, Error>) -> i64 {
    match result {
        Err(Error::Rpc { error }) => error.code,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn discover_reports_versions_capabilities_and_server_info() {
    let server = builder().tool(tool("t"), |_c, _x| async { Ok(text("x")) }).build();
    let result = plain_client(&server).discover(&RequestOptions::default()).await.unwrap();
    assert_eq!(result.supported_versions, vec!["2026-07-28"]);
    assert!(result.capabilities.tools.is_some());
    assert!(result.capabilities.prompts.is_none(), "only what it declares");
    assert_eq!(result.meta.unwrap().server_info.unwrap().name, "test-server");
    assert_eq!(result.instructions.as_deref(), Some("be nice"));
    assert!(result.ttl_ms.is_some() && result.cache_scope.is_some());
}

#[tokio::test(start_paused = true)]
async fn undeclared_capabilities_are_not_served() {
    let server = builder().tool(tool("t"), |_c, _x| async { Ok(text("x")) }).build();
    let client = plain_client(&server);
    assert_eq!(rpc_code(client.list_prompts(None, &RequestOptions::default()).await), error_code::METHOD_NOT_FOUND);
    assert_eq!(rpc_code(client.request_raw("no/such", Map::new(), &RequestOptions::default()).await), -32601);
}

#[tokio::test(start_paused = true)]
async fn form_elicitation_round_runs_the_hook_and_retries_with_the_state() {
    let server = builder().tool(tool("ask"), ask_name).build();
    let client = elicit_client(&server, json!({"action": "accept", "content": {"name": "Ada"}}));
    let diagnostics = Arc::new(Mutex::new(Default::default()));
    let options = RequestOptions::default().with_diagnostics(diagnostics.clone());
    let result = client.call_tool("ask", json!({}), &options).await.unwrap();
    assert_eq!(first_text(&result), "Hello, Ada!");
    assert_eq!(diagnostics.lock().unwrap().rounds, 1);
}

#[tokio::test(start_paused = true)]
async fn elicitation_answer_that_breaks_the_schema_fails_the_hook() {
    let server = builder().tool(tool("ask"), ask_name).build();
    let client = elicit_client(&server, json!({"action": "accept", "content": {"name": 5}}));
    let err = client.call_tool("ask", json!({}), &RequestOptions::default()).await.unwrap_err();
    assert!(matches!(&err, Error::HookFailed { key, .. } if key == "name"), "{err:?}");
}

/// A server applies the client's round rules to its own handlers: a round
/// its client would refuse (a URL elicitation that opens no web page) is
/// the handler's internal error, and never goes out.
#[tokio::test(start_paused = true)]
async fn a_server_refuses_a_round_its_client_would_refuse() {
    let server = builder()
        .tool(tool("script"), |_call, _ctx| async {
            let requests: InputRequests = serde_json::from_value(json!({"open": {"method": "elicitation/create",
                "params": {"mode": "url", "message": "m", "url": "javascript:alert(1)", "elicitationId": "e"}}}))
            .unwrap();
            Ok(Reply::InputRequired { requests, state: None })
        })
        .build();
    let mut options = ClientOptions::new("test-client", "0.1");
    options.capabilities = serde_json::from_value(json!({"elicitation": {"url": {}}})).unwrap();
    let client = Client::new(options, transport::memory::connect(&server));
    let refused = client.call_tool("script", json!({}), &RequestOptions::default()).await;
    assert_eq!(rpc_code(refused), error_code::INTERNAL_ERROR, "the server refused it, not the client");
}

#[tokio::test(start_paused = true)]
async fn server_refuses_input_the_client_did_not_declare() {
    let server = builder().tool(tool("ask"), ask_name).build();
    let err = plain_client(&server).call_tool("ask", json!({}), &RequestOptions::default()).await.unwrap_err();
    let Error::Rpc { error } = err else { panic!("{err:?}") };
    assert_eq!(error.code, error_code::MISSING_REQUIRED_CLIENT_CAPABILITY);
    assert_eq!(error.data.unwrap()["requiredCapabilities"], json!({"elicitation": {"form": {}}}));
}

/// The first round's raw result, and the client to retry with.
async fn first_round(server: &Server) -> (Client, Value) {
    let client = elicit_client(server, json!({"action": "accept", "content": {"name": "Ada"}}));
    let options = RequestOptions::default().with_allow_input_required(true);
    let mut params = Map::new();
    params.insert("name".into(), json!("ask"));
    let raw = client.request_raw("tools/call", params, &options).await.unwrap();
    assert_eq!(raw["resultType"], "input_required");
    (client, raw)
}

async fn retry_with_state(client: &Client, name: &str, arguments: Value, state: Value) -> Result<Value, Error> {
    let params = json!({
        "name": name, "arguments": arguments, "requestState": state,
        "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}}
    });
    client.request_raw("tools/call", params.as_object().unwrap().clone(), &RequestOptions::default()).await
}

#[tokio::test(start_paused = true)]
async fn a_typed_request_runs_the_input_rounds_or_hands_them_to_the_caller() {
    use mcp_bridge_protocol::method::ToolsCall;
    use mcp_bridge_protocol::types::{CallToolRequestParams, Outcome};
    let server = builder().tool(tool("ask"), ask_name).build();
    let client = elicit_client(&server, json!({"action": "accept", "content": {"name": "Ada"}}));
    let params = CallToolRequestParams { name: "ask".into(), ..Default::default() };
    let outcome = client.request::<ToolsCall>(params.clone(), &RequestOptions::default()).await.unwrap();
    let Outcome::Complete(result) = outcome else { panic!("the client runs the rounds: {outcome:?}") };
    assert_eq!(first_text(&result), "Hello, Ada!");
    // With allow_input_required the round is the caller's, typed too.
    let options = RequestOptions::default().with_allow_input_required(true);
    let outcome = client.request::<ToolsCall>(params.clone(), &options).await.unwrap();
    let Outcome::InputRequired(needed) = outcome else { panic!("{outcome:?}") };
    assert!(needed.input_requests.as_ref().is_some_and(|r| r.contains_key("name")));
    let answers = serde_json::from_value(json!({"name": {"action": "accept", "content": {"name": "Bo"}}})).unwrap();
    let retry = CallToolRequestParams { input_responses: Some(answers), request_state: needed.request_state, ..params };
    let Outcome::Complete(result) = client.request::<ToolsCall>(retry, &options).await.unwrap() else { panic!() };
    assert_eq!(first_text(&result), "Hello, Bo!");
}

#[tokio::test(start_paused = true)]
async fn tampered_request_state_is_rejected() {
    let server = builder().tool(tool("ask"), ask_name).build();
    let (client, raw) = first_round(&server).await;
    let state = raw["requestState"].as_str().unwrap();
    let good = retry_with_state(&client, "ask", json!({}), json!(state)).await.unwrap();
    assert_eq!(good["content"][0]["text"], "Hello, Ada!");
    let mut tampered = state.to_owned();
    let flip = if tampered.ends_with('A') { "B" } else { "A" };
    tampered.replace_range(tampered.len() - 1.., flip);
    let code = rpc_code(retry_with_state(&client, "ask", json!({}), json!(tampered)).await);
    assert_eq!(code, error_code::INVALID_PARAMS);
}

#[tokio::test(start_paused = true)]
async fn request_state_of_other_arguments_or_another_tool_is_rejected() {
    let server = builder().tool(tool("ask"), ask_name).tool(tool("other"), ask_name).build();
    let (client, raw) = first_round(&server).await;
    let state = raw["requestState"].clone();
    assert_eq!(rpc_code(retry_with_state(&client, "ask", json!({"x": 1}), state.clone()).await), -32602);
    assert_eq!(rpc_code(retry_with_state(&client, "other", json!({}), state).await), -32602);
}

#[tokio::test(start_paused = true)]
async fn expired_request_state_is_rejected() {
    let server = builder().state_ttl(Duration::ZERO).tool(tool("ask"), ask_name).build();
    let (client, raw) = first_round(&server).await;
    assert_eq!(rpc_code(retry_with_state(&client, "ask", json!({}), raw["requestState"].clone()).await), -32602);
}

fn collector() -> (NotificationCallback, Arc<Mutex<Vec<JsonRpcNotification>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    (Arc::new(move |n: &JsonRpcNotification| sink.lock().unwrap().push(n.clone())), seen)
}

#[tokio::test(start_paused = true)]
async fn listen_acknowledges_first_tags_events_and_completes_on_shutdown() {
    let server = builder().tool(tool("t"), |_c, _x| async { Ok(text("x")) }).build();
    let client = plain_client(&server);
    let (on_notification, seen) = collector();
    let options = RequestOptions::default().with_on_notification(on_notification).with_inline_notifications(true);
    let filter: SubscriptionFilter =
        serde_json::from_value(json!({"toolsListChanged": true, "promptsListChanged": true})).unwrap();
    let stream = tokio::spawn({
        let client = client.clone();
        async move { client.listen(filter, &options).await }
    });
    common::until("the stream", || server.open_subscriptions() == 1).await;
    server.publish(ChangeEvent::PromptsListChanged).await; // not offered: never sent
    server.publish(ChangeEvent::ToolsListChanged).await;
    common::until("the event", || seen.lock().unwrap().len() == 2).await;
    server.shutdown_subscriptions();
    let result = stream.await.unwrap().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].method, "notifications/subscriptions/acknowledged");
    let ack = seen[0].params.as_ref().unwrap();
    assert_eq!(ack["notifications"], json!({"toolsListChanged": true}), "only what the server can send");
    let id = ack["_meta"]["io.modelcontextprotocol/subscriptionId"].clone();
    assert_eq!(seen[1].method, "notifications/tools/list_changed");
    assert_eq!(seen[1].params.as_ref().unwrap()["_meta"]["io.modelcontextprotocol/subscriptionId"], id);
    assert_eq!(serde_json::to_value(&result.meta.subscription_id).unwrap(), id);
}

#[tokio::test(start_paused = true)]
async fn event_published_by_a_handler_arrives_before_its_result() {
    let server = builder()
        .tool(tool("change"), |_c, ctx: RequestContext| async move {
            ctx.server().publish(ChangeEvent::ToolsListChanged).await;
            Ok(text("changed"))
        })
        .build();
    let client = plain_client(&server);
    let order = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = order.clone();
    let options = RequestOptions::default()
        .with_on_notification(Arc::new(move |n: &JsonRpcNotification| sink.lock().unwrap().push(n.method.clone())))
        .with_inline_notifications(true)
        .with_cancel(CancellationToken::new());
    let cancel = options.cancel.clone().unwrap();
    let filter: SubscriptionFilter = serde_json::from_value(json!({"toolsListChanged": true})).unwrap();
    let stream = tokio::spawn({
        let client = client.clone();
        async move { client.listen(filter, &options).await }
    });
    common::until("the stream", || server.open_subscriptions() == 1).await;
    client.call_tool("change", json!({}), &RequestOptions::default()).await.unwrap();
    order.lock().unwrap().push("result".into());
    cancel.cancel();
    assert!(matches!(stream.await.unwrap(), Err(Error::Cancelled { .. })));
    let order = order.lock().unwrap().clone();
    assert_eq!(&order[1..], ["notifications/tools/list_changed", "result"]);
    common::until("the stream to close", || server.open_subscriptions() == 0).await;
}

fn logging_server() -> Server {
    builder()
        .tool(tool("log"), |_c, ctx: RequestContext| async move {
            ctx.log(LoggingLevel::Info, Some("test"), json!("hello")).await;
            ctx.log(LoggingLevel::Debug, None, json!("detail")).await;
            ctx.progress(1.0, Some(2.0), Some("half")).await;
            Ok(text("logged"))
        })
        .build()
}

#[tokio::test(start_paused = true)]
async fn log_messages_only_for_requests_that_ask_at_their_level() {
    let server = logging_server();
    let (on_notification, seen) = collector();
    let mut options = ClientOptions::new("c", "1");
    options.on_notification = Some(on_notification);
    let client = Client::new(options, transport::memory::connect(&server));
    client.call_tool("log", json!({}), &RequestOptions::default()).await.unwrap();
    let info = RequestOptions::default().with_log_level(LoggingLevel::Info);
    client.call_tool("log", json!({}), &info).await.unwrap();
    common::until("the log message", || !seen.lock().unwrap().is_empty()).await;
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "no level: none; info: the info message only");
    assert_eq!(seen[0].params.as_ref().unwrap()["data"], "hello");
}

#[tokio::test(start_paused = true)]
async fn progress_reaches_its_request() {
    let server = logging_server();
    let progress = Arc::new(Mutex::new(Vec::new()));
    let sink = progress.clone();
    let options = RequestOptions::default().with_on_progress(Arc::new(
        move |p: &mcp_bridge_protocol::types::ProgressNotificationParams| {
            sink.lock().unwrap().push((p.progress.as_f64(), p.message.clone()))
        },
    ));
    plain_client(&server).call_tool("log", json!({}), &options).await.unwrap();
    assert_eq!(*progress.lock().unwrap(), vec![(Some(1.0), Some("half".to_owned()))]);
}

#[tokio::test(start_paused = true)]
async fn sdk_owned_and_invalid_meta_keys_are_refused_before_sending() {
    let server = builder().tool(tool("t"), |_c, _x| async { Ok(text("x")) }).build();
    let client = plain_client(&server);
    for key in ["io.modelcontextprotocol/protocolVersion", "progressToken", "bad key", "-x"] {
        let mut meta = Map::new();
        meta.insert(key.into(), json!(1));
        let options = RequestOptions::default().with_meta(meta);
        let err = client.call_tool("t", json!({}), &options).await.unwrap_err();
        assert!(matches!(&err, Error::InvalidMeta { key: k, .. } if k == key), "{key}: {err:?}");
    }
    let mut meta = Map::new();
    meta.insert("traceparent".into(), json!("00-abc"));
    meta.insert("io.modelcontextprotocol/someExtension".into(), json!({}));
    assert!(client.call_tool("t", json!({}), &RequestOptions::default().with_meta(meta)).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn unknown_tool_and_bad_arguments_are_invalid_params() {
    let schema_tool: Tool = serde_json::from_value(json!({"name": "typed", "inputSchema": {
        "type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}))
    .unwrap();
    let server = builder().tool(schema_tool, |_c, _x| async { Ok(text("x")) }).build();
    let client = plain_client(&server);
    assert_eq!(rpc_code(client.call_tool("nope", json!({}), &RequestOptions::default()).await), -32602);
    assert_eq!(rpc_code(client.call_tool("typed", json!({"n": "one"}), &RequestOptions::default()).await), -32602);
    assert!(client.call_tool("typed", json!({"n": 1}), &RequestOptions::default()).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_request_over_the_in_flight_limit_is_refused_at_once() {
    let release = CancellationToken::new();
    let gate = release.clone();
    let entered = Arc::new(tokio::sync::Notify::new());
    let entering = entered.clone();
    let limits = ServerLimits::default().with_max_in_flight(1);
    let server = builder()
        .limits(limits)
        .tool(tool("block"), move |_c, _x| {
            let (gate, entering) = (gate.clone(), entering.clone());
            async move {
                entering.notify_one();
                gate.cancelled().await;
                Ok(text("released"))
            }
        })
        .build();
    let client = plain_client(&server);
    let first = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("block", json!({}), &RequestOptions::default()).await }
    });
    entered.notified().await;
    assert_eq!(rpc_code(client.call_tool("block", json!({}), &RequestOptions::default()).await), -32603);
    release.cancel();
    assert_eq!(first_text(&first.await.unwrap().unwrap()), "released");
}

#[tokio::test(start_paused = true)]
async fn a_listen_stream_does_not_take_a_request_slot() {
    let limits = ServerLimits::default().with_max_in_flight(1);
    let server = builder().limits(limits).tool(tool("t"), |_c, _x| async { Ok(text("x")) }).build();
    let client = plain_client(&server);
    let filter: SubscriptionFilter = serde_json::from_value(json!({"toolsListChanged": true})).unwrap();
    let stream = tokio::spawn({
        let (client, filter) = (client.clone(), filter.clone());
        async move { client.listen(filter, &RequestOptions::default()).await }
    });
    common::until("the stream", || server.open_subscriptions() == 1).await;
    assert!(client.call_tool("t", json!({}), &RequestOptions::default()).await.is_ok(), "one stream and one call");
    // Listen streams have a bound of their own.
    assert_eq!(rpc_code(client.listen(filter, &RequestOptions::default()).await), -32603);
    server.shutdown_subscriptions();
    assert!(stream.await.unwrap().is_ok());
}

#[tokio::test(start_paused = true)]
async fn unsupported_version_is_refused_with_the_supported_list() {
    let server = builder().tool(tool("t"), |_c, _x| async { Ok(text("x")) }).build();
    let mut options = ClientOptions::new("old", "1");
    options.protocol_version = "1900-01-01".into();
    let client = Client::new(options, transport::memory::connect(&server));
    let err = client.discover(&RequestOptions::default()).await.unwrap_err();
    let error = err.rpc_error().unwrap();
    assert_eq!(error.code, error_code::UNSUPPORTED_PROTOCOL_VERSION);
    assert_eq!(error.data.as_ref().unwrap()["supported"], json!(["2026-07-28"]));
}

#[tokio::test(start_paused = true)]
async fn structured_content_that_breaks_the_output_schema_is_flagged_not_dropped() {
    let t: Tool = serde_json::from_value(json!({"name": "sum", "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}}))
    .unwrap();
    let server = builder()
        .tool(t, |_c, _x| async {
            Ok(Reply::Complete(
                serde_json::from_value(json!({"content": [], "structuredContent": {"sum": "five"}})).unwrap(),
            ))
        })
        .build();
    let client = plain_client(&server);
    client.list_all_tools(&RequestOptions::default()).await.unwrap();
    let diagnostics = Arc::new(Mutex::new(Default::default()));
    let options = RequestOptions::default().with_diagnostics(diagnostics.clone());
    let result = client.call_tool("sum", json!({}), &options).await.unwrap();
    assert_eq!(result.structured_content, Some(json!({"sum": "five"})));
    assert!(diagnostics.lock().unwrap().structured_content_invalid);
}

#[tokio::test(start_paused = true)]
async fn pages_are_followed_and_a_bad_cursor_is_invalid_params() {
    let mut b = builder().page_size(2);
    for i in 0..5 {
        b = b.tool(tool(&format!("t{i}")), |_c, _x| async { Ok(text("x")) });
    }
    let client = plain_client(&b.build());
    let first = client.list_tools(None, &RequestOptions::default()).await.unwrap();
    assert_eq!(first.tools.len(), 2);
    assert!(first.next_cursor.is_some());
    assert_eq!(client.list_all_tools(&RequestOptions::default()).await.unwrap().len(), 5);
    assert_eq!(rpc_code(client.list_tools(Some("zzz"), &RequestOptions::default()).await), -32602);
}

#[tokio::test(start_paused = true)]
async fn the_client_reads_at_most_its_max_pages_and_takes_at_most_its_max_input_rounds() {
    let mut b = builder().page_size(2);
    for i in 0..5 {
        b = b.tool(tool(&format!("t{i}")), |_c, _x| async { Ok(text("x")) });
    }
    // A tool that asks again at every round.
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = asked.clone();
    b = b.tool(tool("insatiable"), move |_call: ToolCall, _ctx| {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async move {
            let requests: InputRequests =
                serde_json::from_value(json!({"name": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Again?", "requestedSchema": {"type": "object", "properties": {}}}}}))
                .unwrap();
            Ok(Reply::InputRequired { requests, state: None })
        }
    });
    let server = b.build();
    let mut options = ClientOptions::new("c", "1").with_max_pages(2).with_max_input_rounds(3);
    options.capabilities = serde_json::from_value(json!({"elicitation": {}})).unwrap();
    options.hooks.elicit_form = Some(Arc::new(|_params| {
        Box::pin(async {
            Ok(serde_json::from_value::<ElicitResult>(json!({"action": "accept", "content": {}})).unwrap())
        })
    }));
    let client = Client::new(options, transport::memory::connect(&server));
    let o = RequestOptions::default();
    assert_eq!(client.list_all_tools(&o).await.unwrap().len(), 4, "two pages of two");
    let err = client.call_tool("insatiable", json!({}), &o).await.unwrap_err();
    assert!(matches!(err, Error::TooManyRounds { limit: 3, .. }), "{err:?}");
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 4, "the first request and three rounds");
}

#[tokio::test(start_paused = true)]
async fn a_declared_input_kind_without_a_hook_fails_the_request() {
    let server = builder().tool(tool("ask"), ask_name).build();
    let mut options = ClientOptions::new("c", "1");
    options.capabilities = ClientCapabilities { elicitation: Some(Default::default()), ..Default::default() };
    let client = Client::new(options, transport::memory::connect(&server));
    let err = client.call_tool("ask", json!({}), &RequestOptions::default()).await.unwrap_err();
    assert!(matches!(&err, Error::HookFailed { reason, .. } if reason.contains("no form elicitation hook")), "{err:?}");
}

#[tokio::test(start_paused = true)]
async fn a_request_sent_on_behalf_of_another_client_carries_its_info_and_capabilities() {
    let server = builder()
        .tool(tool("who"), |_call, ctx: RequestContext| async move {
            let name = ctx.client_info.map(|i| i.name).unwrap_or_default();
            let elicits = ctx.client_capabilities.elicitation.is_some();
            Ok(text(format!("{name} elicits={elicits}")))
        })
        .build();
    let client = plain_client(&server);
    let own = client.call_tool("who", json!({}), &RequestOptions::default()).await.unwrap();
    assert_eq!(first_text(&own), "test-client elicits=false");
    let identity = mcp_bridge_sdk::client::ClientIdentity::new(
        Implementation::new("vscode", "1.99"),
        serde_json::from_value(json!({"elicitation": {}})).unwrap(),
    );
    let options = RequestOptions::default().with_on_behalf_of(Arc::new(identity));
    let theirs = client.call_tool("who", json!({}), &options).await.unwrap();
    assert_eq!(first_text(&theirs), "vscode elicits=true");
}

#[tokio::test(start_paused = true)]
async fn prompts_and_resources_added_and_removed_at_run_time_are_served_and_announced() {
    let server = builder().offer_prompts().offer_resources().build();
    let client = plain_client(&server);
    let o = RequestOptions::default();
    let offers = client.discover(&o).await.unwrap().capabilities;
    assert!(offers.prompts.is_some() && offers.resources.is_some(), "offered before any is added");
    assert!(client.list_all_prompts(&o).await.unwrap().is_empty());

    let (on_notification, seen) = collector();
    let options = RequestOptions::default().with_on_notification(on_notification).with_inline_notifications(true);
    let filter: SubscriptionFilter =
        serde_json::from_value(json!({"promptsListChanged": true, "resourcesListChanged": true})).unwrap();
    let _stream = tokio::spawn({
        let client = client.clone();
        async move { client.listen(filter, &options).await }
    });
    common::until("the stream", || server.open_subscriptions() == 1).await;

    let prompt = serde_json::from_value(json!({"name": "hello"})).unwrap();
    server
        .add_prompt(prompt, |_request, _ctx| async {
            let result = json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]});
            Ok(Reply::Complete(serde_json::from_value(result).unwrap()))
        })
        .await;
    let resource = serde_json::from_value(json!({"uri": "test://a", "name": "a"})).unwrap();
    server
        .add_resource(resource, |request, _ctx| async move {
            let contents = json!([{"uri": request.uri, "text": "contents of a"}]);
            Ok(Reply::Complete(serde_json::from_value(contents).unwrap()))
        })
        .await;
    let methods = || seen.lock().unwrap().iter().map(|n| n.method.clone()).collect::<Vec<_>>();
    common::until("both changes", || methods().len() == 3).await;
    assert_eq!(
        methods()[1..],
        ["notifications/prompts/list_changed", "notifications/resources/list_changed"].map(String::from)
    );
    let got = client.get_prompt("hello", Map::new(), &o).await.unwrap();
    assert_eq!(serde_json::to_value(&got.messages[0].content).unwrap()["text"], "hi");
    let read = client.read_resource("test://a", &o).await.unwrap();
    assert_eq!(serde_json::to_value(&read.contents[0]).unwrap()["text"], "contents of a");

    assert!(server.remove_prompt("hello").await);
    assert!(server.remove_resource("test://a").await);
    assert!(!server.remove_resource("test://a").await, "nothing left to remove");
    common::until("the removals", || methods().len() == 5).await;
    assert!(client.list_all_prompts(&o).await.unwrap().is_empty());
    assert!(client.list_all_resources(&o).await.unwrap().is_empty());
    assert_eq!(rpc_code(client.get_prompt("hello", Map::new(), &o).await), error_code::INVALID_PARAMS);
}

//! The surface the conformance suite's server scenarios call by name: the
//! `test_*` tools, prompts and `test://` resources of the suite's reference
//! fixture (`examples/servers/typescript/everything-server.ts`), written
//! with our SDK's builder so the suite measures the SDK, not this file.
//!
//! Where the fixture hand-writes protocol behaviour (the `_meta` checks,
//! header validation, sealing `requestState`, capability checks on input
//! requests, listen streams), the SDK does it here; the handlers below only
//! say what each tool, prompt and resource answers.

use mcp_bridge_protocol::types::{
    CallToolResult, Completion, ContentBlock, GetPromptResult, Implementation, InputRequests, InputResponse, Prompt,
    PromptMessage, Resource, ResourceContents, ResourceTemplate, Role, Tool,
};
use mcp_bridge_sdk::server::{ChangeEvent, NoArguments, ResourceRequest, ToolCall};
use mcp_bridge_sdk::{HandlerError, Reply, RequestContext, Server};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// A 1x1 red PNG, the fixture's image.
const TEST_IMAGE_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A minimal WAV file, the fixture's audio.
const TEST_AUDIO_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// Parses one of this file's literal definitions; they are fixed at
/// compile time, so a failure is a bug here, not bad input.
pub(crate) fn literal<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).expect("invariant: the conformance surface's literals are valid")
}

/// A tool called `name` that does what `description` says.
pub(crate) fn tool(name: &str, description: &str) -> Tool {
    Tool::new(name).with_description(description)
}

/// A complete tool result of one text.
pub(crate) fn done(text: impl Into<String>) -> Result<Reply<CallToolResult>, HandlerError> {
    Ok(Reply::Complete(CallToolResult::text(text)))
}

/// Input requests from their JSON form.
pub(crate) fn requests(value: Value) -> Result<InputRequests, HandlerError> {
    serde_json::from_value(value).map_err(|e| HandlerError::internal(e.to_string()))
}

/// A form elicitation with one required field.
pub(crate) fn form(message: &str, field: &str, kind: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
    }})
}

fn sampling(prompt: &str, max_tokens: u32) -> Value {
    json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": max_tokens
    }})
}

pub(crate) fn ask(value: Value, state: Option<Value>) -> Result<Reply<CallToolResult>, HandlerError> {
    Ok(Reply::InputRequired { requests: requests(value)?, state })
}

/// The accepted content of the elicitation answered under `key`.
pub(crate) fn elicited<'a>(call: &'a ToolCall, key: &str) -> Option<&'a serde_json::Map<String, Value>> {
    match call.input_responses.get(key) {
        Some(InputResponse::Elicit(answer)) => answer.content.as_ref(),
        _ => None,
    }
}

pub(crate) fn elicited_text(call: &ToolCall, key: &str, field: &str) -> String {
    elicited(call, key).and_then(|c| c.get(field)).and_then(Value::as_str).unwrap_or("unknown").to_owned()
}

fn sampled_text(call: &ToolCall, key: &str) -> Option<String> {
    match call.input_responses.get(key) {
        Some(InputResponse::CreateMessage(answer)) => answer.content.as_slice().iter().find_map(|block| match block {
            mcp_bridge_protocol::types::SamplingContent::Text(t) => Some(t.text.clone()),
            _ => None,
        }),
        _ => None,
    }
}

fn roots_count(call: &ToolCall, key: &str) -> Option<usize> {
    match call.input_responses.get(key) {
        Some(InputResponse::ListRoots(answer)) => Some(answer.roots.len()),
        _ => None,
    }
}

/// The server the conformance suite's server scenarios run against.
pub fn build_server() -> Server {
    let builder = Server::builder(Implementation::new("mcp-conformance-server", env!("CARGO_PKG_VERSION")));
    let builder = content_tools(builder);
    let builder = input_tools(builder);
    let builder = diagnostic_tools(builder);
    let builder = crate::tasks::task_tools(builder);
    let builder = crate::legacy_tools::legacy_named_tools(builder);
    let builder = prompts(builder);
    resources(builder)
        .completion(|_request, _ctx| async move {
            Ok(Completion { values: Vec::new(), total: Some(0), has_more: Some(false), extra: Default::default() })
        })
        .build()
}

/// Tools that answer one kind of content each.
fn content_tools(builder: mcp_bridge_sdk::server::ServerBuilder) -> mcp_bridge_sdk::server::ServerBuilder {
    builder
        .typed_tool(tool("test_simple_text", "Tests simple text content response"), |_: NoArguments, _ctx| async move {
            "This is a simple text response for testing."
        })
        .typed_tool(tool("test_image_content", "Tests image content response"), |_: NoArguments, _ctx| async move {
            CallToolResult::of(vec![ContentBlock::image(TEST_IMAGE_BASE64, "image/png")])
        })
        .typed_tool(tool("test_audio_content", "Tests audio content response"), |_: NoArguments, _ctx| async move {
            CallToolResult::of(vec![ContentBlock::audio(TEST_AUDIO_BASE64, "audio/wav")])
        })
        .typed_tool(
            tool("test_embedded_resource", "Tests embedded resource content response"),
            |_: NoArguments, _ctx| async move {
                CallToolResult::of(vec![ContentBlock::resource(ResourceContents::text(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                ))])
            },
        )
        .typed_tool(
            tool("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)"),
            |_: NoArguments, _ctx| async move {
                CallToolResult::of(vec![
                    ContentBlock::text("Multiple content types test:"),
                    ContentBlock::image(TEST_IMAGE_BASE64, "image/png"),
                    ContentBlock::resource(ResourceContents::text(
                        "test://mixed-content-resource",
                        "application/json",
                        json!({"test": "data", "value": 123}).to_string(),
                    )),
                ])
            },
        )
        .typed_tool(
            tool("test_tool_with_logging", "Tests tool that emits log messages during execution"),
            |_: NoArguments, ctx: RequestContext| async move {
                for (i, message) in ["Tool execution started", "Tool processing data", "Tool execution completed"]
                    .into_iter()
                    .enumerate()
                {
                    if i > 0 {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                    ctx.log(mcp_bridge_protocol::types::LoggingLevel::Info, None, json!(message)).await;
                }
                "Tool with logging executed successfully"
            },
        )
        .typed_tool(
            tool("test_tool_with_progress", "Tests tool that reports progress notifications"),
            |_: NoArguments, ctx: RequestContext| async move {
                for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                    ctx.progress(step, Some(100.0), Some(&format!("Completed step {step} of 100"))).await;
                }
                match ctx.progress_token() {
                    Some(mcp_bridge_protocol::RequestId::String(s)) => s.clone(),
                    Some(mcp_bridge_protocol::RequestId::Number(n)) => n.to_string(),
                    None => "0".into(),
                }
            },
        )
        .typed_tool(tool("test_error_handling", "Tests error response handling"), |_: NoArguments, _ctx| async move {
            Err::<String, _>("This tool intentionally returns an error for testing")
        })
        .tool(
            literal(json!({
                "name": "json_schema_2020_12_tool",
                "description": "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
                "inputSchema": {
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object",
                    "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
                        "street": {"type": "string"}, "city": {"type": "string"}
                    }}},
                    "properties": {
                        "name": {"type": "string"},
                        "address": {"$ref": "#/$defs/address"},
                        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                        "phone": {"type": "string"},
                        "email": {"type": "string"}
                    },
                    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                    "then": {"required": ["phone"]},
                    "else": {"required": ["email"]},
                    "additionalProperties": false
                }
            })),
            // The suite checks this schema is served as written, so it stays
            // a literal rather than one derived from a type.
            |call: ToolCall, _ctx| async move {
                done(format!("JSON Schema 2020-12 tool called with: {}", Value::Object(call.arguments)))
            },
        )
}

/// Tools that ask the client for input (multi round-trip requests).
fn input_tools(builder: mcp_bridge_sdk::server::ServerBuilder) -> mcp_bridge_sdk::server::ServerBuilder {
    builder
        .tool(
            tool("test_input_required_result_elicitation", "Asks for a name with a form elicitation"),
            |call: ToolCall, _ctx| async move {
                if elicited(&call, "user_name").is_some() {
                    return done(format!("Hello, {}!", elicited_text(&call, "user_name", "name")));
                }
                ask(json!({"user_name": form("What is your name?", "name", "string")}), None)
            },
        )
        .tool(
            tool("test_input_required_result_sampling", "Asks the client's model a question"),
            |call: ToolCall, _ctx| async move {
                if let Some(answer) = sampled_text(&call, "sample_request") {
                    return done(format!("Sampling result: {answer}"));
                }
                ask(json!({"sample_request": sampling("What is the capital of France?", 100)}), None)
            },
        )
        .tool(
            tool("test_input_required_result_list_roots", "Asks the client for its roots"),
            |call: ToolCall, _ctx| async move {
                if let Some(count) = roots_count(&call, "roots_request") {
                    return done(format!("Found {count} root(s)"));
                }
                ask(json!({"roots_request": {"method": "roots/list", "params": {}}}), None)
            },
        )
        .tool(
            tool("test_input_required_result_request_state", "Asks for a confirmation, with requestState"),
            |call: ToolCall, _ctx| async move {
                let confirmed = elicited(&call, "confirm").and_then(|c| c.get("ok")) == Some(&json!(true));
                let state_ok = call.state.as_ref().and_then(|s| s.get("kind")) == Some(&json!("request-state"));
                if confirmed && state_ok {
                    return done("state-ok: requestState validated");
                }
                ask(json!({"confirm": form("Please confirm", "ok", "boolean")}), Some(json!({"kind": "request-state"})))
            },
        )
        .tool(
            tool("test_input_required_result_multiple_inputs", "Asks for a name, a greeting and the roots at once"),
            |call: ToolCall, _ctx| async move {
                let state_ok = call.state.as_ref().and_then(|s| s.get("kind")) == Some(&json!("multiple-inputs"));
                if let (true, Some(_), Some(greeting), Some(roots)) = (
                    state_ok,
                    elicited(&call, "user_name"),
                    sampled_text(&call, "greeting"),
                    roots_count(&call, "client_roots"),
                ) {
                    let name = elicited_text(&call, "user_name", "name");
                    return done(format!("Name: {name}; Greeting: {greeting}; Roots: {roots}"));
                }
                ask(
                    json!({
                        "user_name": form("What is your name?", "name", "string"),
                        "greeting": sampling("Generate a greeting", 50),
                        "client_roots": {"method": "roots/list", "params": {}}
                    }),
                    Some(json!({"kind": "multiple-inputs"})),
                )
            },
        )
        .tool(
            tool("test_input_required_result_multi_round", "Asks for a name, then for a colour"),
            |call: ToolCall, _ctx| async move {
                let round = call.state.as_ref().and_then(|s| s.get("round")).and_then(Value::as_u64);
                match round {
                    Some(1) if elicited(&call, "step1").is_some() => {
                        let name = elicited_text(&call, "step1", "name");
                        ask(
                            json!({"step2": form("Step 2: What is your favorite color?", "color", "string")}),
                            Some(json!({"round": 2, "name": name})),
                        )
                    }
                    Some(2) if elicited(&call, "step2").is_some() => {
                        let name = call.state.as_ref().and_then(|s| s["name"].as_str()).unwrap_or("friend").to_owned();
                        let color = elicited_text(&call, "step2", "color");
                        done(format!("Multi-round complete for {name} who likes {color}"))
                    }
                    _ => ask(
                        json!({"step1": form("Step 1: What is your name?", "name", "string")}),
                        Some(json!({"round": 1})),
                    ),
                }
            },
        )
        .tool(
            tool("test_input_required_result_tampered_state", "Refuses a requestState it did not seal"),
            |call: ToolCall, _ctx| async move {
                // The SDK refuses a tampered requestState before this runs.
                let state_ok = call.state.as_ref().and_then(|s| s.get("kind")) == Some(&json!("tamper-test"));
                if state_ok && elicited(&call, "confirm").is_some() {
                    return done("integrity-ok: state verified");
                }
                ask(json!({"confirm": form("Please confirm", "ok", "boolean")}), Some(json!({"kind": "tamper-test"})))
            },
        )
        .tool(
            tool("test_input_required_result_capabilities", "Asks only for what the client declared"),
            |call: ToolCall, ctx: RequestContext| async move {
                if !call.input_responses.is_empty() {
                    let keys: Vec<&str> = call.input_responses.keys().map(String::as_str).collect();
                    return done(format!("capabilities-ok: received {}", keys.join(",")));
                }
                let mut wanted = serde_json::Map::new();
                if ctx.client_capabilities.elicitation.is_some() {
                    wanted.insert("elicit_input".into(), form("Elicitation input", "value", "string"));
                }
                if ctx.client_capabilities.sampling.is_some() {
                    wanted.insert("sample_input".into(), sampling("Sample request", 50));
                }
                if wanted.is_empty() {
                    return done("No supported capabilities declared");
                }
                ask(Value::Object(wanted), Some(json!({"kind": "capabilities-test"})))
            },
        )
}

/// Tools the stateless-lifecycle scenario uses to probe the server.
fn diagnostic_tools(builder: mcp_bridge_sdk::server::ServerBuilder) -> mcp_bridge_sdk::server::ServerBuilder {
    builder
        .tool(
            tool("test_missing_capability", "Needs the sampling capability"),
            |_call, ctx: RequestContext| async move {
                if ctx.client_capabilities.sampling.is_none() {
                    return Err(HandlerError::missing_capability(json!({"sampling": {}})));
                }
                done("Success")
            },
        )
        .typed_tool(
            tool("test_streaming_elicitation", "Streams progress before its result"),
            |_: NoArguments, ctx: RequestContext| async move {
                ctx.progress(50.0, Some(100.0), None).await;
                "Streaming complete"
            },
        )
        .typed_tool(
            tool("test_logging_tool", "Logs only when the request asked for a log level"),
            |_: NoArguments, ctx: RequestContext| async move {
                ctx.log(
                    mcp_bridge_protocol::types::LoggingLevel::Info,
                    None,
                    json!("Diagnostic trace logging activated"),
                )
                .await;
                "Logging evaluated"
            },
        )
        .tool(
            literal(json!({
                "name": "test_custom_headers",
                "description": "Parameters mirrored into Mcp-Param headers, which the server checks",
                "inputSchema": {"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "priority": {"type": "integer", "x-mcp-header": "Priority"},
                    "verbose": {"type": "boolean", "x-mcp-header": "Verbose"}
                }, "required": ["region"]}
            })),
            |call: ToolCall, _ctx| async move { done(format!("headers-ok: {}", Value::Object(call.arguments))) },
        )
        .typed_tool(
            tool("test_trigger_tool_change", "Announces a tool list change on the listen streams"),
            |_: NoArguments, ctx: RequestContext| async move {
                ctx.server().publish(ChangeEvent::ToolsListChanged).await;
                "Mutation triggered"
            },
        )
        .typed_tool(
            tool("test_trigger_prompt_change", "Announces a prompt list change on the listen streams"),
            |_: NoArguments, ctx: RequestContext| async move {
                ctx.server().publish(ChangeEvent::PromptsListChanged).await;
                "Mutation triggered"
            },
        )
}

// The prompts' arguments. Plain comments: a doc comment on the type would
// become its schema's description.

// The arguments of `test_prompt_with_arguments`.
#[derive(Deserialize, JsonSchema)]
struct TwoArguments {
    /// First test argument
    arg1: String,
    /// Second test argument
    arg2: String,
}

// The arguments of `test_prompt_with_embedded_resource`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ResourceToEmbed {
    /// URI of the resource to embed
    resource_uri: String,
}

fn prompt(name: &str, title: &str, description: &str) -> Prompt {
    Prompt::new(name).with_title(title).with_description(description)
}

fn prompts(builder: mcp_bridge_sdk::server::ServerBuilder) -> mcp_bridge_sdk::server::ServerBuilder {
    builder
        .typed_prompt(
            prompt("test_simple_prompt", "Simple Test Prompt", "A simple prompt without arguments"),
            |_: NoArguments, _ctx| async move { "This is a simple prompt for testing.".to_owned() },
        )
        .typed_prompt(
            prompt("test_prompt_with_arguments", "Prompt With Arguments", "A prompt with required arguments"),
            |args: TwoArguments, _ctx| async move {
                format!("Prompt with arguments: arg1='{}', arg2='{}'", args.arg1, args.arg2)
            },
        )
        .typed_prompt(
            prompt(
                "test_prompt_with_embedded_resource",
                "Prompt With Embedded Resource",
                "A prompt that includes an embedded resource",
            ),
            |args: ResourceToEmbed, _ctx| async move {
                let contents =
                    ResourceContents::text(args.resource_uri, "text/plain", "Embedded resource content for testing.");
                vec![
                    PromptMessage::new(Role::User, ContentBlock::resource(contents)),
                    PromptMessage::user("Please process the embedded resource above."),
                ]
            },
        )
        .typed_prompt(
            prompt("test_prompt_with_image", "Prompt With Image", "A prompt that includes image content"),
            |_: NoArguments, _ctx| async move {
                vec![
                    PromptMessage::new(Role::User, ContentBlock::image(TEST_IMAGE_BASE64, "image/png")),
                    PromptMessage::user("Please analyze the image above."),
                ]
            },
        )
        .typed_prompt(
            Prompt::new("test_input_required_result_prompt")
                .with_description("MRTR: prompt that requires elicitation input"),
            |_: NoArguments, ctx: RequestContext| async move {
                if let Some(InputResponse::Elicit(answer)) = ctx.input_responses().get("user_context") {
                    let context = answer.content.as_ref().and_then(|c| c.get("context")).and_then(Value::as_str);
                    let text = format!("Prompt with context: {}", context.unwrap_or("unknown"));
                    return Ok(Reply::Complete(GetPromptResult::of(vec![PromptMessage::user(text)])));
                }
                let requests = requests(
                    json!({"user_context": form("What context should the prompt use?", "context", "string")}),
                )?;
                Ok::<_, HandlerError>(Reply::InputRequired { requests, state: None })
            },
        )
}

fn contents(value: Value) -> Result<Reply<Vec<ResourceContents>>, HandlerError> {
    serde_json::from_value(value).map(Reply::Complete).map_err(|e| HandlerError::internal(e.to_string()))
}

fn resources(builder: mcp_bridge_sdk::server::ServerBuilder) -> mcp_bridge_sdk::server::ServerBuilder {
    let text_resource = |uri: &'static str, name: &str, title: &str, text: &'static str| {
        (
            literal::<Resource>(json!({"uri": uri, "name": name, "title": title, "mimeType": "text/plain"})),
            move |_request: ResourceRequest, _ctx: RequestContext| async move {
                contents(json!([{"uri": uri, "mimeType": "text/plain", "text": text}]))
            },
        )
    };
    let (static_text, read_static_text) = text_resource(
        "test://static-text",
        "static-text",
        "Static Text Resource",
        "This is the content of the static text resource.",
    );
    let (watched, read_watched) =
        text_resource("test://watched-resource", "watched-resource", "Watched Resource", "Watched resource content");
    let (stateless, read_stateless) = text_resource(
        "test://stateless-static-text",
        "Stateless Static Text",
        "Stateless Static Text",
        "Static text content from the stateless draft path.",
    );
    builder
        .resource(static_text, read_static_text)
        .resource(
            literal::<Resource>(json!({"uri": "test://static-binary", "name": "static-binary",
                "title": "Static Binary Resource", "mimeType": "image/png"})),
            |_request, _ctx| async move {
                contents(json!([{"uri": "test://static-binary", "mimeType": "image/png", "blob": TEST_IMAGE_BASE64}]))
            },
        )
        .resource(watched, read_watched)
        .resource(stateless, read_stateless)
        .resource_template(
            literal::<ResourceTemplate>(json!({"uriTemplate": "test://template/{id}/data", "name": "template",
                "title": "Resource Template", "description": "A resource template with parameter substitution",
                "mimeType": "application/json"})),
            |request: ResourceRequest, _ctx| async move {
                let id = request.variables.get("id").cloned().unwrap_or_default();
                let body = json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                contents(json!([{"uri": request.uri, "mimeType": "application/json", "text": body.to_string()}]))
            },
        )
}

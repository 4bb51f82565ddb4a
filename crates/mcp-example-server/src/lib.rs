//! The example server's features, as a library so tests and the embedded
//! bridge can build the same server in-process.
//!
//! | kind | name | what it shows |
//! |---|---|---|
//! | tool | `echo` | the simplest call |
//! | tool | `add` | structured output with an output schema |
//! | tool | `slow` | progress notifications, log messages and cancellation |
//! | tool | `ask_name` | a form elicitation through an input round |
//! | tool | `summarize` | a sampling request through an input round |
//! | tool | `list_roots` | a roots request through an input round |
//! | tool | `ask_two` | two input requests (a form and roots) in one round |
//! | tool | `ask_twice` | two rounds: a name, then a colour |
//! | tool | `forgetful` | refuses its own state on the retry (-32602) |
//! | tool | `end_streams` | ends every listen stream, as a restarting server would |
//! | tool | `toggle_bonus` | a tool list change, published to listen streams |
//! | tool | `set_note` | a resource update, published to listen streams |
//! | tool | `big` | a result of a chosen size, for benchmarks |
//! | tool | `long_job` | a task (Tasks extension), with a confirmation through `tasks/update` |
//! | tool | `weather` | a tool with a view (MCP Apps), `ui://example/weather` |
//! | prompt | `greet` | arguments, one required |
//! | resource | `example://readme`, `example://logo.png` | text and binary contents |
//! | template | `note://{name}` | resource templates and completion |
//! | skill | `skill://example-tour/SKILL.md` | the Skills extension: a skill and its reference file |

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use mcp_protocol::types::{
    CallToolResult, Completion, CompletionReference, GetPromptResult, InputRequest, InputRequests, InputResponse,
    LoggingLevel, Prompt, Resource, ResourceContents, ResourceTemplate, Tool,
};
use mcp_sdk::limits::ServerLimits;
use mcp_sdk::server::{ChangeEvent, PromptRequest, ResourceRequest, SkillPackage, TaskContext, TaskOptions, ToolCall};
use mcp_sdk::{HandlerError, Reply, RequestContext, Server};
use serde_json::{Value, json};

/// A 1x1 transparent PNG, the binary resource.
const LOGO_PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// The files of the `example-tour` skill.
const TOUR_SKILL_MD: &str = include_str!("../skills/example-tour/SKILL.md");
const TOUR_TOOLS_MD: &str = include_str!("../skills/example-tour/reference/tools.md");

/// The view of `weather` (MCP Apps).
const WEATHER_VIEW: &str = "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Weather</title></head>\
<body><h1>Weather</h1><p id=\"forecast\">Waiting for the tool result…</p></body></html>";

/// Largest result `big` makes: the bridge's line limit.
const MAX_BIG_BYTES: u64 = 64 * 1024 * 1024;

fn tool(value: Value) -> Tool {
    serde_json::from_value(value).expect("invariant: the example's tool definitions are valid")
}

fn input_request(value: Value) -> Result<InputRequest, HandlerError> {
    serde_json::from_value(value).map_err(|e| HandlerError::internal(e.to_string()))
}

fn one_request(key: &str, value: Value) -> Result<InputRequests, HandlerError> {
    Ok(InputRequests::from([(key.to_owned(), input_request(value)?)]))
}

type Notes = Arc<Mutex<BTreeMap<String, String>>>;

fn lock(notes: &Notes) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
    notes.lock().unwrap_or_else(|e| e.into_inner())
}

/// The example server with the default limits.
pub fn build_server() -> Server {
    build_server_with(ServerLimits::default())
}

/// The example server with these connection limits.
pub fn build_server_with(limits: ServerLimits) -> Server {
    let notes: Notes = Arc::new(Mutex::new(BTreeMap::from([
        ("welcome".to_owned(), "Notes live at note://<name>; set_note changes them.".to_owned()),
        ("shopping".to_owned(), "milk, bread".to_owned()),
    ])));
    let notes_for_set = notes.clone();
    let notes_for_read = notes.clone();
    let notes_for_complete = notes;

    Server::builder(mcp_protocol::types::Implementation::new("mcp-example-server", env!("CARGO_PKG_VERSION")))
        .instructions(
            "A demo server: try echo, add, ask_name, and the note://{name} resources. \
             The skill skill://example-tour/SKILL.md gives a tour.",
        )
        .limits(limits)
        .tasks(TaskOptions::default())
        .skill(
            SkillPackage::new(
                "example-tour",
                vec![
                    ("SKILL.md".to_owned(), TOUR_SKILL_MD.as_bytes().to_vec()),
                    ("reference/tools.md".to_owned(), TOUR_TOOLS_MD.as_bytes().to_vec()),
                ],
            )
            .expect("invariant: the example's skill follows the rules"),
        )
        .tool(
            tool(json!({
                "name": "long_job", "description": "Waits a while and reports done; a task for clients that take them.",
                "inputSchema": {"type": "object", "properties": {
                    "seconds": {"type": "number", "minimum": 0, "maximum": 600},
                    "confirm": {"type": "boolean"}
                }}
            })),
            |call: ToolCall, _ctx| async move {
                let seconds = call.arguments.get("seconds").and_then(Value::as_f64).unwrap_or(1.0).clamp(0.0, 600.0);
                let confirm = call.arguments.get("confirm").and_then(Value::as_bool).unwrap_or(false);
                Ok(Reply::task(move |task: TaskContext| long_job(task, seconds, confirm)))
            },
        )
        .tool(
            tool(json!({
                "name": "weather", "description": "Today's forecast, with a view for MCP Apps hosts.",
                "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
                "_meta": {"ui": {"resourceUri": "ui://example/weather"}}
            })),
            |call: ToolCall, _ctx| async move {
                let city = call.arguments.get("city").and_then(Value::as_str).unwrap_or("here").to_owned();
                Ok(Reply::Complete(CallToolResult {
                    structured_content: Some(json!({"city": city, "sky": "sunny", "celsius": 21})),
                    ..CallToolResult::text(format!("Sunny in {city}, 21 °C"))
                }))
            },
        )
        .resource(
            resource(json!({"uri": "ui://example/weather", "name": "weather-view", "mimeType": "text/html;profile=mcp-app"})),
            |request: ResourceRequest, _ctx| async move {
                Ok(Reply::Complete(vec![contents(json!({
                    "uri": request.uri, "mimeType": "text/html;profile=mcp-app", "text": WEATHER_VIEW,
                    "_meta": {"ui": {"prefersBorder": true}}
                }))?]))
            },
        )
        .tool(
            tool(json!({
                "name": "echo", "title": "Echo", "description": "Returns the text it is given.",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                "annotations": {"readOnlyHint": true}
            })),
            |call: ToolCall, _ctx| async move {
                Ok(Reply::Complete(CallToolResult::text(call.arguments.get("text").and_then(Value::as_str).unwrap_or_default())))
            },
        )
        .tool(
            tool(json!({
                "name": "add", "description": "Adds two numbers.",
                "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]},
                "outputSchema": {"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}
            })),
            |call: ToolCall, _ctx| async move {
                let number = |k: &str| call.arguments.get(k).and_then(Value::as_f64).unwrap_or(0.0);
                let sum = number("a") + number("b");
                // Whole sums are written as integers: 5, not 5.0 (exactly
                // representable integers only, below 2^53).
                let sum = if sum.fract() == 0.0 && sum.abs() < 9_007_199_254_740_992.0 { json!(sum as i64) } else { json!(sum) };
                Ok(Reply::Complete(CallToolResult {
                    structured_content: Some(json!({ "sum": sum })),
                    ..CallToolResult::text(sum.to_string())
                }))
            },
        )
        .tool(
            tool(json!({
                "name": "slow", "description": "Counts for a while, reporting progress; cancel it to stop.",
                "inputSchema": {"type": "object", "properties": {
                    "steps": {"type": "integer", "minimum": 1, "maximum": 1000},
                    "step_ms": {"type": "integer", "minimum": 0, "maximum": 60000}
                }}
            })),
            slow,
        )
        .tool(
            tool(json!({
                "name": "ask_name", "description": "Asks the user for their name (a form elicitation), then greets them.",
                "inputSchema": {"type": "object"}
            })),
            ask_name,
        )
        .tool(
            tool(json!({
                "name": "summarize", "description": "Asks the client's model to summarize a text (sampling).",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
            })),
            summarize,
        )
        .tool(
            tool(json!({
                "name": "list_roots", "description": "Asks the client for its roots and lists them.",
                "inputSchema": {"type": "object"}
            })),
            list_roots,
        )
        .tool(
            tool(json!({
                "name": "ask_two", "description": "Asks for a name and for the roots in one round.",
                "inputSchema": {"type": "object"}
            })),
            ask_two,
        )
        .tool(
            tool(json!({
                "name": "ask_twice", "description": "Asks for a name, then for a favourite colour (two rounds).",
                "inputSchema": {"type": "object"}
            })),
            ask_twice,
        )
        .tool(
            tool(json!({
                "name": "forgetful", "description": "Asks for a name, then refuses its own state on the retry.",
                "inputSchema": {"type": "object"}
            })),
            |call: ToolCall, _ctx| async move {
                if call.state.is_some() {
                    return Err(HandlerError::invalid_params("requestState expired"));
                }
                Ok(Reply::InputRequired { requests: one_request("name", name_request())?, state: Some(json!({"n": 1})) })
            },
        )
        .tool(
            tool(json!({
                "name": "end_streams", "description": "Ends every listen stream gracefully, as a server going down would.",
                "inputSchema": {"type": "object"}
            })),
            |_call: ToolCall, ctx: RequestContext| async move {
                ctx.server().shutdown_subscriptions();
                Ok(Reply::Complete(CallToolResult::text("streams ended")))
            },
        )
        .tool(
            tool(json!({
                "name": "toggle_bonus", "description": "Adds the tool `bonus`, or removes it when present.",
                "inputSchema": {"type": "object"}
            })),
            toggle_bonus,
        )
        .tool(
            tool(json!({
                "name": "set_note", "description": "Sets the text of note://<name>.",
                "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[A-Za-z0-9_-]+$"}, "text": {"type": "string"}}, "required": ["name", "text"]}
            })),
            move |call: ToolCall, ctx: RequestContext| {
                let notes = notes_for_set.clone();
                async move {
                    let name = call.arguments.get("name").and_then(Value::as_str).unwrap_or_default().to_owned();
                    let text = call.arguments.get("text").and_then(Value::as_str).unwrap_or_default().to_owned();
                    let is_new = lock(&notes).insert(name.clone(), text).is_none();
                    if is_new {
                        ctx.server().publish(ChangeEvent::ResourcesListChanged).await;
                    }
                    ctx.server().publish(ChangeEvent::ResourceUpdated { uri: format!("note://{name}") }).await;
                    Ok(Reply::Complete(CallToolResult::text(format!("note://{name} saved"))))
                }
            },
        )
        .tool(
            tool(json!({
                "name": "big", "description": "Returns a text of the given size in bytes (at most 64 MiB).",
                "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer", "minimum": 0, "maximum": MAX_BIG_BYTES}}, "required": ["bytes"]}
            })),
            |call: ToolCall, _ctx| async move {
                let bytes = call.arguments.get("bytes").and_then(Value::as_u64).unwrap_or(0).min(MAX_BIG_BYTES);
                let len = usize::try_from(bytes).map_err(|_| HandlerError::invalid_params("bytes is too large"))?;
                Ok(Reply::Complete(CallToolResult::text("x".repeat(len))))
            },
        )
        .prompt(
            serde_json::from_value::<Prompt>(json!({
                "name": "greet", "title": "Greeting", "description": "A greeting for someone.",
                "arguments": [
                    {"name": "name", "description": "Who to greet", "required": true},
                    {"name": "style", "description": "formal or casual"}
                ]
            }))
            .expect("invariant: the example's prompt is valid"),
            |request: PromptRequest, _ctx| async move {
                let name = request.arguments.get("name").and_then(Value::as_str).unwrap_or("friend");
                let text = match request.arguments.get("style").and_then(Value::as_str) {
                    Some("formal") => format!("Please write a formal greeting for {name}."),
                    _ => format!("Please write a friendly, casual hello for {name}."),
                };
                let result: GetPromptResult = serde_json::from_value(json!({
                    "resultType": "complete",
                    "description": "A greeting",
                    "messages": [{"role": "user", "content": {"type": "text", "text": text}}]
                }))
                .map_err(|e| HandlerError::internal(e.to_string()))?;
                Ok(Reply::Complete(result))
            },
        )
        .resource(
            resource(json!({"uri": "example://readme", "name": "readme", "title": "README", "mimeType": "text/markdown"})),
            |request: ResourceRequest, _ctx| async move {
                Ok(Reply::Complete(vec![contents(json!({
                    "uri": request.uri, "mimeType": "text/markdown",
                    "text": "# mcp-example-server\n\nA demo server of the mcp-bridge project."
                }))?]))
            },
        )
        .resource(
            resource(json!({"uri": "example://logo.png", "name": "logo", "mimeType": "image/png", "size": LOGO_PNG.len()})),
            |request: ResourceRequest, _ctx| async move {
                let blob = base64::engine::general_purpose::STANDARD.encode(LOGO_PNG);
                Ok(Reply::Complete(vec![contents(json!({"uri": request.uri, "mimeType": "image/png", "blob": blob}))?]))
            },
        )
        .resource_template(
            serde_json::from_value::<ResourceTemplate>(json!({
                "uriTemplate": "note://{name}", "name": "note", "description": "A note; set_note changes it.",
                "mimeType": "text/plain"
            }))
            .expect("invariant: the example's template is valid"),
            move |request: ResourceRequest, _ctx| {
                let notes = notes_for_read.clone();
                async move {
                    let name = request.variables.get("name").cloned().unwrap_or_default();
                    let text = lock(&notes)
                        .get(&name)
                        .cloned()
                        .ok_or_else(|| HandlerError::resource_not_found(&request.uri))?;
                    Ok(Reply::Complete(vec![contents(json!({"uri": request.uri, "mimeType": "text/plain", "text": text}))?]))
                }
            },
        )
        .completion(move |request, _ctx| {
            let notes = notes_for_complete.clone();
            async move {
                let typed = request.argument.value.to_lowercase();
                let candidates: Vec<String> = match (&request.reference, request.argument.name.as_str()) {
                    (CompletionReference::Prompt(p), "style") if p.name == "greet" => {
                        vec!["casual".into(), "formal".into()]
                    }
                    (CompletionReference::ResourceTemplate(t), "name") if t.uri == "note://{name}" => {
                        lock(&notes).keys().cloned().collect()
                    }
                    _ => Vec::new(),
                };
                let values: Vec<String> = candidates.into_iter().filter(|c| c.starts_with(&typed)).collect();
                Ok(Completion { total: Some(values.len() as u64), values, has_more: Some(false), extra: Default::default() })
            }
        })
        .build()
}

fn resource(value: Value) -> Resource {
    serde_json::from_value(value).expect("invariant: the example's resources are valid")
}

fn contents(value: Value) -> Result<ResourceContents, HandlerError> {
    serde_json::from_value(value).map_err(|e| HandlerError::internal(e.to_string()))
}

async fn slow(call: ToolCall, ctx: RequestContext) -> Result<Reply<CallToolResult>, HandlerError> {
    let steps = call.arguments.get("steps").and_then(Value::as_u64).unwrap_or(5);
    let step = Duration::from_millis(call.arguments.get("step_ms").and_then(Value::as_u64).unwrap_or(200));
    for i in 1..=steps {
        tokio::select! {
            _ = tokio::time::sleep(step) => {}
            _ = ctx.cancelled() => return Err(HandlerError::internal("cancelled")),
        }
        ctx.progress(i as f64, Some(steps as f64), Some(&format!("step {i} of {steps}"))).await;
        ctx.log(LoggingLevel::Info, Some("slow"), json!(format!("step {i} of {steps} done"))).await;
    }
    Ok(Reply::Complete(CallToolResult::text(format!("counted to {steps}"))))
}

/// The work of `long_job`: a confirmation first when asked for, then the wait.
async fn long_job(task: TaskContext, seconds: f64, confirm: bool) -> Result<CallToolResult, HandlerError> {
    if confirm {
        let question = json!({"method": "elicitation/create", "params": {
            "message": format!("Run a job of {seconds} s?"),
            "requestedSchema": {"type": "object", "properties": {"run": {"type": "boolean"}}, "required": ["run"]}
        }});
        let answers = task.input(one_request("confirm", question)?).await?;
        let run = matches!(answers.get("confirm"), Some(InputResponse::Elicit(a))
            if a.content.as_ref().and_then(|c| c.get("run")) == Some(&json!(true)));
        if !run {
            return Ok(CallToolResult::text("job not run"));
        }
    }
    task.set_status_message(format!("working for {seconds} s")).await;
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    Ok(CallToolResult::text(format!("job done after {seconds} s")))
}

/// The form elicitation of a name.
fn name_request() -> Value {
    json!({"method": "elicitation/create", "params": {
        "mode": "form",
        "message": "What is your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]}
    }})
}

fn elicited(call: &ToolCall, key: &str, field: &str) -> Option<String> {
    match call.input_responses.get(key) {
        Some(InputResponse::Elicit(answer)) => answer.content.as_ref()?.get(field)?.as_str().map(str::to_owned),
        _ => None,
    }
}

async fn ask_two(call: ToolCall, _ctx: RequestContext) -> Result<Reply<CallToolResult>, HandlerError> {
    if let (Some(name), Some(InputResponse::ListRoots(roots))) =
        (elicited(&call, "name", "name"), call.input_responses.get("roots"))
    {
        return Ok(Reply::Complete(CallToolResult::text(format!("{name} works in {} root(s)", roots.roots.len()))));
    }
    let mut requests = one_request("name", name_request())?;
    requests.insert("roots".into(), input_request(json!({"method": "roots/list"}))?);
    Ok(Reply::InputRequired { requests, state: None })
}

async fn ask_twice(call: ToolCall, _ctx: RequestContext) -> Result<Reply<CallToolResult>, HandlerError> {
    if let Some(colour) = elicited(&call, "colour", "colour") {
        let name = call.state.as_ref().and_then(|s| s["name"].as_str()).unwrap_or("?").to_owned();
        return Ok(Reply::Complete(CallToolResult::text(format!("{name} likes {colour}"))));
    }
    if let Some(name) = elicited(&call, "name", "name") {
        let colour = json!({"method": "elicitation/create", "params": {
            "message": "Favourite colour?",
            "requestedSchema": {"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}
        }});
        return Ok(Reply::InputRequired {
            requests: one_request("colour", colour)?,
            state: Some(json!({"name": name})),
        });
    }
    Ok(Reply::InputRequired { requests: one_request("name", name_request())?, state: None })
}

async fn ask_name(call: ToolCall, _ctx: RequestContext) -> Result<Reply<CallToolResult>, HandlerError> {
    match call.input_responses.get("name") {
        Some(InputResponse::Elicit(answer)) => {
            let name = answer.content.as_ref().and_then(|c| c.get("name")).and_then(Value::as_str);
            Ok(Reply::Complete(CallToolResult::text(match (answer.action, name) {
                (mcp_protocol::types::ElicitAction::Accept, Some(name)) => format!("Hello, {name}!"),
                _ => "No name given.".to_owned(),
            })))
        }
        _ => Ok(Reply::InputRequired {
            requests: one_request(
                "name",
                json!({"method": "elicitation/create", "params": {
                    "mode": "form",
                    "message": "What is your name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]}
                }}),
            )?,
            state: Some(json!({ "asked": "name" })),
        }),
    }
}

async fn summarize(call: ToolCall, _ctx: RequestContext) -> Result<Reply<CallToolResult>, HandlerError> {
    if let Some(InputResponse::CreateMessage(answer)) = call.input_responses.get("summary") {
        let text: Vec<&str> = answer
            .content
            .as_slice()
            .iter()
            .filter_map(|b| {
                if let mcp_protocol::types::SamplingContent::Text(t) = b { Some(t.text.as_str()) } else { None }
            })
            .collect();
        return Ok(Reply::Complete(CallToolResult::text(format!("Summary by {}: {}", answer.model, text.join(" ")))));
    }
    let text = call.arguments.get("text").and_then(Value::as_str).unwrap_or_default();
    Ok(Reply::InputRequired {
        requests: one_request(
            "summary",
            json!({"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": format!("Summarize in one sentence: {text}")}}],
                "maxTokens": 200
            }}),
        )?,
        state: None,
    })
}

async fn list_roots(call: ToolCall, _ctx: RequestContext) -> Result<Reply<CallToolResult>, HandlerError> {
    if let Some(InputResponse::ListRoots(answer)) = call.input_responses.get("roots") {
        let uris: Vec<&str> = answer.roots.iter().map(|r| r.uri.as_str()).collect();
        return Ok(Reply::Complete(CallToolResult::text(format!("roots: {}", uris.join(", ")))));
    }
    Ok(Reply::InputRequired { requests: one_request("roots", json!({"method": "roots/list"}))?, state: None })
}

async fn toggle_bonus(_call: ToolCall, ctx: RequestContext) -> Result<Reply<CallToolResult>, HandlerError> {
    let server = ctx.server();
    if server.remove_tool("bonus").await {
        return Ok(Reply::Complete(CallToolResult::text("bonus removed")));
    }
    server
        .add_tool(
            tool(json!({"name": "bonus", "description": "A tool that comes and goes.", "inputSchema": {"type": "object"}})),
            |_call: ToolCall, _ctx| async move { Ok(Reply::Complete(CallToolResult::text("bonus!"))) },
        )
        .await;
    Ok(Reply::Complete(CallToolResult::text("bonus added")))
}

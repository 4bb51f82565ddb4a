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
use mcp_bridge_protocol::method::{ElicitationCreate, Method, RootsList, SamplingCreateMessage};
use mcp_bridge_protocol::types::{
    CallToolResult, Completion, CompletionReference, GetPromptResult, InputRequest, InputRequests, InputResponse,
    LoggingLevel, Prompt, PromptMessage, Resource, ResourceContents, ResourceTemplate, Tool, ToolAnnotations,
};
use mcp_bridge_sdk::limits::ServerLimits;
use mcp_bridge_sdk::server::{
    ChangeEvent, ResourceRequest, ServerBuilder, SkillPackage, TaskContext, TaskOptions, ToolCall, schema_for,
};
use mcp_bridge_sdk::{HandlerError, Reply, RequestContext, Server};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

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

/// The scope every request needs on a protected endpoint.
pub const NOTES_READ: &str = "notes:read";

/// The scope `set_note` needs on a protected endpoint, besides
/// [`NOTES_READ`].
pub const NOTES_WRITE: &str = "notes:write";

/// Largest result `big` makes: the bridge's line limit.
const MAX_BIG_BYTES: u64 = 64 * 1024 * 1024;

/// `value` as the JSON object it is written as.
fn json_object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
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
    example_builder(limits).build()
}

/// The example server's registrations and limits, for a caller that adds
/// settings (state keys and a change bus for replicas) before building.
pub fn example_builder(limits: ServerLimits) -> ServerBuilder {
    let notes: Notes = Arc::new(Mutex::new(BTreeMap::from([
        ("welcome".to_owned(), "Notes live at note://<name>; set_note changes them.".to_owned()),
        ("shopping".to_owned(), "milk, bread".to_owned()),
    ])));
    let notes_for_read = notes.clone();
    let notes_for_complete = notes.clone();

    Server::builder(mcp_bridge_protocol::types::Implementation::new("mcp-example-server", env!("CARGO_PKG_VERSION")))
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
        .typed_tool(
            Tool::new("long_job")
                .with_description("Waits a while and reports done; a task for clients that take them."),
            |args: LongJob, _ctx| async move {
                let seconds = args.seconds.unwrap_or(1.0).clamp(0.0, 600.0);
                let confirm = args.confirm.unwrap_or(false);
                Reply::task(move |task: TaskContext| long_job(task, seconds, confirm))
            },
        )
        .typed_tool(
            Tool::new("weather")
                .with_description("Today's forecast, with a view for MCP Apps hosts.")
                .with_meta(json_object(json!({"ui": {"resourceUri": "ui://example/weather"}}))),
            |args: Weather, _ctx| async move {
                let city = args.city.unwrap_or_else(|| "here".to_owned());
                CallToolResult {
                    structured_content: Some(json!({"city": city, "sky": "sunny", "celsius": 21})),
                    ..CallToolResult::text(format!("Sunny in {city}, 21 °C"))
                }
            },
        )
        .resource(
            resource(
                json!({"uri": "ui://example/weather", "name": "weather-view", "mimeType": "text/html;profile=mcp-app"}),
            ),
            |request: ResourceRequest, _ctx| async move {
                Ok(Reply::Complete(vec![contents(json!({
                    "uri": request.uri, "mimeType": "text/html;profile=mcp-app", "text": WEATHER_VIEW,
                    "_meta": {"ui": {"prefersBorder": true}}
                }))?]))
            },
        )
        .typed_tool(
            Tool::new("echo")
                .with_title("Echo")
                .with_description("Returns the text it is given.")
                .with_annotations(ToolAnnotations { read_only_hint: Some(true), ..ToolAnnotations::default() }),
            |args: Echo, _ctx| async move { args.text },
        )
        .typed_tool(
            // The sum alone is the text (`5`), so the output schema is given
            // here; `Json(Sum { .. })` would make the text `{"sum":5}`.
            Tool::new("add").with_description("Adds two numbers.").with_output_schema(schema_for::<Sum>()),
            |args: Add, _ctx| async move {
                let sum = whole_if_exact(args.a + args.b);
                CallToolResult {
                    structured_content: Some(json!({ "sum": sum })),
                    ..CallToolResult::text(sum.to_string())
                }
            },
        )
        .typed_tool(
            Tool::new("slow").with_description("Counts for a while, reporting progress; cancel it to stop."),
            slow,
        )
        .tool(
            Tool::new("ask_name")
                .with_description("Asks the user for their name (a form elicitation), then greets them."),
            ask_name,
        )
        .typed_tool(
            Tool::new("summarize").with_description("Asks the client's model to summarize a text (sampling)."),
            summarize,
        )
        .tool(Tool::new("list_roots").with_description("Asks the client for its roots and lists them."), list_roots)
        .tool(Tool::new("ask_two").with_description("Asks for a name and for the roots in one round."), ask_two)
        .tool(
            Tool::new("ask_twice").with_description("Asks for a name, then for a favourite colour (two rounds)."),
            ask_twice,
        )
        .tool(
            Tool::new("forgetful").with_description("Asks for a name, then refuses its own state on the retry."),
            |call: ToolCall, _ctx| async move {
                if call.state.is_some() {
                    return Err(HandlerError::invalid_params("requestState expired"));
                }
                Ok(Reply::InputRequired {
                    requests: one_request("name", name_request())?,
                    state: Some(json!({"n": 1})),
                })
            },
        )
        .tool(
            Tool::new("end_streams")
                .with_description("Ends every listen stream gracefully, as a server going down would."),
            |_call: ToolCall, ctx: RequestContext| async move {
                ctx.server().shutdown_subscriptions();
                Ok(Reply::Complete(CallToolResult::text("streams ended")))
            },
        )
        .tool(
            Tool::new("toggle_bonus").with_description("Adds the tool `bonus`, or removes it when present."),
            toggle_bonus,
        )
        .typed_tool_with(&notes, Tool::new("set_note").with_description("Sets the text of note://<name>."), set_note)
        // Asked of its callers when the endpoint is protected (--auth-issuer).
        .require_scopes(mcp_bridge_sdk::server::protect::ScopeTarget::tool("set_note"), [NOTES_WRITE])
        .typed_tool(
            Tool::new("big").with_description("Returns a text of the given size in bytes (at most 64 MiB)."),
            |args: Big, _ctx| async move {
                let len = usize::try_from(args.bytes.min(MAX_BIG_BYTES)).map_err(|_| "bytes is too large")?;
                Ok::<_, &str>("x".repeat(len))
            },
        )
        .typed_prompt(
            Prompt::new("greet").with_title("Greeting").with_description("A greeting for someone."),
            |args: Greet, _ctx| async move {
                let text = match args.style.as_deref() {
                    Some("formal") => format!("Please write a formal greeting for {}.", args.name),
                    _ => format!("Please write a friendly, casual hello for {}.", args.name),
                };
                GetPromptResult::of(vec![PromptMessage::user(text)]).with_description("A greeting")
            },
        )
        .resource(
            resource(
                json!({"uri": "example://readme", "name": "readme", "title": "README", "mimeType": "text/markdown"}),
            ),
            |request: ResourceRequest, _ctx| async move {
                Ok(Reply::Complete(vec![contents(json!({
                    "uri": request.uri, "mimeType": "text/markdown",
                    "text": "# mcp-example-server\n\nA demo server of the mcp-bridge project."
                }))?]))
            },
        )
        .resource(
            resource(
                json!({"uri": "example://logo.png", "name": "logo", "mimeType": "image/png", "size": LOGO_PNG.len()}),
            ),
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
                    Ok(Reply::Complete(vec![contents(
                        json!({"uri": request.uri, "mimeType": "text/plain", "text": text}),
                    )?]))
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
                Ok(Completion {
                    total: Some(values.len() as u64),
                    values,
                    has_more: Some(false),
                    extra: Default::default(),
                })
            }
        })
}

fn resource(value: Value) -> Resource {
    serde_json::from_value(value).expect("invariant: the example's resources are valid")
}

fn contents(value: Value) -> Result<ResourceContents, HandlerError> {
    serde_json::from_value(value).map_err(|e| HandlerError::internal(e.to_string()))
}

// The typed tools' arguments and results. Their comments are not doc
// comments: a doc comment on the type would become its schema's
// description, which the model reads.

// The arguments of `echo`.
#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

// The arguments of `add`.
#[derive(Deserialize, JsonSchema)]
struct Add {
    a: f64,
    b: f64,
}

// The result of `add`.
#[derive(JsonSchema)]
#[allow(dead_code)] // only its schema is used
struct Sum {
    sum: f64,
}

/// `value`, written as an integer when it is a whole number: 5, not 5.0.
fn whole_if_exact(value: f64) -> serde_json::Number {
    // Exactly representable integers only (below 2^53).
    if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 {
        serde_json::Number::from(value as i64)
    } else {
        // NaN and infinities have no JSON form: a sum of JSON numbers is neither.
        serde_json::Number::from_f64(value).unwrap_or_else(|| serde_json::Number::from(0))
    }
}

// The arguments of `slow`.
#[derive(Deserialize, JsonSchema)]
struct Slow {
    /// How many steps to count (default 5).
    #[schemars(range(min = 1, max = 1000))]
    steps: Option<u64>,
    /// How long each step takes in milliseconds (default 200).
    #[schemars(range(max = 60000))]
    step_ms: Option<u64>,
}

// The arguments of `summarize`.
#[derive(Deserialize, JsonSchema)]
struct Summarize {
    text: String,
}

// The arguments of `set_note`.
#[derive(Deserialize, JsonSchema)]
struct SetNote {
    #[schemars(regex(pattern = "^[A-Za-z0-9_-]+$"))]
    name: String,
    text: String,
}

// The arguments of `big`.
#[derive(Deserialize, JsonSchema)]
struct Big {
    #[schemars(range(max = MAX_BIG_BYTES))]
    bytes: u64,
}

// The arguments of `long_job`.
#[derive(Deserialize, JsonSchema)]
struct LongJob {
    /// How long the job takes, in seconds (default 1).
    #[schemars(range(min = 0, max = 600))]
    seconds: Option<f64>,
    /// Whether to ask for a confirmation first.
    confirm: Option<bool>,
}

// The arguments of `weather`.
#[derive(Deserialize, JsonSchema)]
struct Weather {
    city: Option<String>,
}

// The arguments of the `greet` prompt.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    /// Who to greet
    name: String,
    /// formal or casual
    style: Option<String>,
}

async fn slow(args: Slow, ctx: RequestContext) -> Result<String, HandlerError> {
    let steps = args.steps.unwrap_or(5);
    let step = Duration::from_millis(args.step_ms.unwrap_or(200));
    for i in 1..=steps {
        tokio::select! {
            _ = tokio::time::sleep(step) => {}
            _ = ctx.cancelled() => return Err(HandlerError::internal("cancelled")),
        }
        ctx.progress(i as f64, Some(steps as f64), Some(&format!("step {i} of {steps}"))).await;
        ctx.log(LoggingLevel::Info, Some("slow"), json!(format!("step {i} of {steps} done"))).await;
    }
    Ok(format!("counted to {steps}"))
}

async fn set_note(notes: Notes, args: SetNote, ctx: RequestContext) -> String {
    let name = args.name;
    let is_new = lock(&notes).insert(name.clone(), args.text).is_none();
    if is_new {
        ctx.server().publish(ChangeEvent::ResourcesListChanged).await;
    }
    ctx.server().publish(ChangeEvent::ResourceUpdated { uri: format!("note://{name}") }).await;
    format!("note://{name} saved")
}

/// The work of `long_job`: a confirmation first when asked for, then the wait.
async fn long_job(task: TaskContext, seconds: f64, confirm: bool) -> Result<CallToolResult, HandlerError> {
    if confirm {
        let question = json!({"method": ElicitationCreate::NAME, "params": {
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
    json!({"method": ElicitationCreate::NAME, "params": {
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
    requests.insert("roots".into(), input_request(json!({"method": RootsList::NAME}))?);
    Ok(Reply::InputRequired { requests, state: None })
}

async fn ask_twice(call: ToolCall, _ctx: RequestContext) -> Result<Reply<CallToolResult>, HandlerError> {
    if let Some(colour) = elicited(&call, "colour", "colour") {
        let name = call.state.as_ref().and_then(|s| s["name"].as_str()).unwrap_or("?").to_owned();
        return Ok(Reply::Complete(CallToolResult::text(format!("{name} likes {colour}"))));
    }
    if let Some(name) = elicited(&call, "name", "name") {
        let colour = json!({"method": ElicitationCreate::NAME, "params": {
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
                (mcp_bridge_protocol::types::ElicitAction::Accept, Some(name)) => format!("Hello, {name}!"),
                _ => "No name given.".to_owned(),
            })))
        }
        _ => Ok(Reply::InputRequired {
            requests: one_request(
                "name",
                json!({"method": ElicitationCreate::NAME, "params": {
                    "mode": "form",
                    "message": "What is your name?",
                    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]}
                }}),
            )?,
            state: Some(json!({ "asked": "name" })),
        }),
    }
}

async fn summarize(args: Summarize, ctx: RequestContext) -> Result<Reply<CallToolResult>, HandlerError> {
    if let Some(InputResponse::CreateMessage(answer)) = ctx.input_responses().get("summary") {
        let text: Vec<&str> = answer
            .content
            .as_slice()
            .iter()
            .filter_map(|b| {
                if let mcp_bridge_protocol::types::SamplingContent::Text(t) = b { Some(t.text.as_str()) } else { None }
            })
            .collect();
        return Ok(Reply::Complete(CallToolResult::text(format!("Summary by {}: {}", answer.model, text.join(" ")))));
    }
    let text = args.text;
    Ok(Reply::InputRequired {
        requests: one_request(
            "summary",
            json!({"method": SamplingCreateMessage::NAME, "params": {
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
    Ok(Reply::InputRequired { requests: one_request("roots", json!({"method": RootsList::NAME}))?, state: None })
}

async fn toggle_bonus(_call: ToolCall, ctx: RequestContext) -> Result<Reply<CallToolResult>, HandlerError> {
    let server = ctx.server();
    if server.remove_tool("bonus").await {
        return Ok(Reply::Complete(CallToolResult::text("bonus removed")));
    }
    server
        .add_tool(
            Tool::new("bonus").with_description("A tool that comes and goes."),
            |_call: ToolCall, _ctx| async move { Ok(Reply::Complete(CallToolResult::text("bonus!"))) },
        )
        .await;
    Ok(Reply::Complete(CallToolResult::text("bonus added")))
}

//! The Tasks extension fixtures the suite's `tasks-*` scenarios call by
//! name (SEP-2663): a sync tool, task tools that sleep, fail, panic, ask
//! for input once or twice at a time, and one that asks through the
//! multi round-trip flow before it becomes a task.

use std::time::Duration;

use mcp_bridge_protocol::types::{CallToolResult, InputResponse, InputResponses};
use mcp_bridge_sdk::server::{ServerBuilder, TaskOptions, TaskSupport, ToolCall};
use mcp_bridge_sdk::{HandlerError, Reply};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::everything::{ask, elicited, elicited_text, form, requests, tool};

// The arguments of `greet`.
#[derive(Deserialize, JsonSchema)]
struct Greet {
    name: Option<String>,
}

// The arguments of `slow_compute`.
#[derive(Deserialize, JsonSchema)]
struct SlowCompute {
    seconds: Option<f64>,
    label: Option<String>,
}

/// The `field` of the form answered under `key`.
fn answered(responses: &InputResponses, key: &str, field: &str) -> String {
    match responses.get(key) {
        Some(InputResponse::Elicit(answer)) => answer.content.as_ref().and_then(|c| c.get(field)),
        _ => None,
    }
    .and_then(Value::as_str)
    .unwrap_or("unknown")
    .to_owned()
}

/// Offers the extension and registers the task fixtures.
pub(crate) fn task_tools(builder: ServerBuilder) -> ServerBuilder {
    let options = TaskOptions::default().with_poll_interval(Duration::from_millis(200));
    builder
        .tasks(options)
        .typed_tool(tool("greet", "Greets someone, at once"), |args: Greet, _ctx| async move {
            format!("Hello, {}!", args.name.as_deref().unwrap_or("World"))
        })
        .typed_tool(
            tool("slow_compute", "Sleeps for `seconds`, then answers; a task when the client can take one"),
            |args: SlowCompute, _ctx| async move {
                let seconds = args.seconds.unwrap_or(1.0).clamp(0.0, 600.0);
                let label = args.label.unwrap_or_else(|| "compute".to_owned());
                Reply::task(move |_task| async move {
                    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                    Ok::<_, HandlerError>(CallToolResult::text(format!("{label}: done after {seconds} s")))
                })
            },
        )
        .task_tool(
            tool("failing_job", "Reports a tool error after a second; only as a task"),
            TaskSupport::Required,
            |_call, _ctx| async move {
                Ok(Reply::task(|_task| async move {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Ok::<_, HandlerError>(CallToolResult::error("the job failed"))
                }))
            },
        )
        .tool(tool("protocol_error_job", "Fails with a protocol error"), |_call, _ctx| async move {
            Ok(Reply::task(|_task| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Err::<CallToolResult, _>(HandlerError::internal("the job's worker crashed"))
            }))
        })
        .tool(tool("confirm_delete", "Asks for a confirmation, then deletes"), |_call, _ctx| async move {
            Ok(Reply::task(|task| async move {
                let asked = requests(json!({"confirm": form("Delete the file?", "confirm", "boolean")}))?;
                let answers = task.input(asked).await?;
                let confirmed = matches!(answers.get("confirm"), Some(InputResponse::Elicit(a))
                    if a.content.as_ref().and_then(|c| c.get("confirm")) == Some(&json!(true)));
                Ok::<_, HandlerError>(CallToolResult::text(if confirmed { "deleted" } else { "kept" }))
            }))
        })
        .tool(tool("multi_input", "Asks two questions at once"), |_call, _ctx| async move {
            Ok(Reply::task(|task| async move {
                let asked = requests(json!({
                    "first_name": form("Your first name?", "name", "string"),
                    "last_name": form("Your last name?", "name", "string"),
                }))?;
                let answers = task.input(asked).await?;
                Ok::<_, HandlerError>(CallToolResult::text(format!(
                    "{} {}",
                    answered(&answers, "first_name", "name"),
                    answered(&answers, "last_name", "name")
                )))
            }))
        })
        .task_tool(
            tool("test_tool_with_task", "Asks for a name, then greets as a task"),
            TaskSupport::Required,
            |call: ToolCall, _ctx| async move {
                if elicited(&call, "user_name").is_none() {
                    return ask(json!({"user_name": form("What is your name?", "name", "string")}), None);
                }
                let name = elicited_text(&call, "user_name", "name");
                Ok(Reply::task(move |_task| async move {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    Ok::<_, HandlerError>(CallToolResult::text(format!("Hello, {name}!")))
                }))
            },
        )
}

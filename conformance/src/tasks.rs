//! The Tasks extension fixtures the suite's `tasks-*` scenarios call by
//! name (SEP-2663): a sync tool, task tools that sleep, fail, panic, ask
//! for input once or twice at a time, and one that asks through the
//! multi round-trip flow before it becomes a task.

use std::time::Duration;

use mcp_protocol::types::{CallToolResult, InputResponse, InputResponses};
use mcp_sdk::server::{ServerBuilder, TaskOptions, TaskSupport, ToolCall};
use mcp_sdk::{HandlerError, Reply};
use serde_json::{Value, json};

use crate::everything::{ask, elicited, elicited_text, form, literal, requests};

fn tool(name: &str, description: &str, properties: Value) -> mcp_protocol::types::Tool {
    literal(json!({"name": name, "description": description,
        "inputSchema": {"type": "object", "properties": properties}}))
}

fn result(value: Value) -> Result<CallToolResult, HandlerError> {
    serde_json::from_value(value).map_err(|e| HandlerError::internal(e.to_string()))
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
    let options = TaskOptions { poll_interval: Duration::from_millis(200), ..TaskOptions::default() };
    builder
        .tasks(options)
        .tool(
            tool("greet", "Greets someone, at once", json!({"name": {"type": "string"}})),
            |call: ToolCall, _ctx| async move {
                let name = call.arguments.get("name").and_then(Value::as_str).unwrap_or("World").to_owned();
                Ok(Reply::Complete(CallToolResult::text(format!("Hello, {name}!"))))
            },
        )
        .tool(
            tool(
                "slow_compute",
                "Sleeps for `seconds`, then answers; a task when the client can take one",
                json!({"seconds": {"type": "number"}, "label": {"type": "string"}}),
            ),
            |call: ToolCall, _ctx| async move {
                let seconds = call.arguments.get("seconds").and_then(Value::as_f64).unwrap_or(1.0).clamp(0.0, 600.0);
                let label = call.arguments.get("label").and_then(Value::as_str).unwrap_or("compute").to_owned();
                Ok(Reply::task(move |_task| async move {
                    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                    Ok::<_, HandlerError>(CallToolResult::text(format!("{label}: done after {seconds} s")))
                }))
            },
        )
        .task_tool(
            tool("failing_job", "Reports a tool error after a second; only as a task", json!({})),
            TaskSupport::Required,
            |_call, _ctx| async move {
                Ok(Reply::task(|_task| async move {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    result(json!({"content": [{"type": "text", "text": "the job failed"}], "isError": true}))
                }))
            },
        )
        .tool(tool("protocol_error_job", "Fails with a protocol error", json!({})), |_call, _ctx| async move {
            Ok(Reply::task(|_task| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Err::<CallToolResult, _>(HandlerError::internal("the job's worker crashed"))
            }))
        })
        .tool(tool("confirm_delete", "Asks for a confirmation, then deletes", json!({})), |_call, _ctx| async move {
            Ok(Reply::task(|task| async move {
                let asked = requests(json!({"confirm": form("Delete the file?", "confirm", "boolean")}))?;
                let answers = task.input(asked).await?;
                let confirmed = matches!(answers.get("confirm"), Some(InputResponse::Elicit(a))
                    if a.content.as_ref().and_then(|c| c.get("confirm")) == Some(&json!(true)));
                Ok::<_, HandlerError>(CallToolResult::text(if confirmed { "deleted" } else { "kept" }))
            }))
        })
        .tool(tool("multi_input", "Asks two questions at once", json!({})), |_call, _ctx| async move {
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
            tool("test_tool_with_task", "Asks for a name, then greets as a task", json!({})),
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

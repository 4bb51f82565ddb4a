//! The tools the 2025-11-25 server scenarios call by name (`test_sampling`,
//! `test_elicitation`, `test_elicitation_sep1034_defaults`,
//! `test_elicitation_sep1330_enums`), written as 2026-07-28 tools with
//! input rounds like every other tool here: a legacy client sees real
//! `sampling/createMessage` and `elicitation/create` requests because the
//! dual-era endpoint's bridge turns the rounds into them, not because these
//! tools know about the old protocol.

use mcp_bridge_protocol::types::{InputResponse, InputResponses};
use mcp_bridge_sdk::RequestContext;
use mcp_bridge_sdk::server::{NoArguments, ServerBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::everything::{ask, done, tool};

// The arguments of `test_sampling`.
#[derive(Deserialize, JsonSchema)]
struct Sampling {
    prompt: String,
}

// The arguments of `test_elicitation`.
#[derive(Deserialize, JsonSchema)]
struct Elicitation {
    message: String,
}

fn elicitation(message: &str, properties: Value, required: Value) -> Value {
    json!({"method": "elicitation/create", "params": {
        "message": message,
        "requestedSchema": {"type": "object", "properties": properties, "required": required}
    }})
}

/// `action=<action>, content=<content as JSON>` of the elicitation answered
/// under `key`, or `None` before it was asked.
fn elicitation_outcome(responses: &InputResponses, key: &str) -> Option<String> {
    match responses.get(key) {
        Some(InputResponse::Elicit(answer)) => {
            let action = serde_json::to_value(answer.action).ok()?;
            let content = serde_json::to_string(&answer.content.clone().unwrap_or_default()).ok()?;
            Some(format!("action={}, content={content}", action.as_str().unwrap_or("unknown")))
        }
        _ => None,
    }
}

/// Adds the four tools.
pub(crate) fn legacy_named_tools(builder: ServerBuilder) -> ServerBuilder {
    builder
        .typed_tool(
            tool("test_sampling", "Asks the client's model to answer a prompt"),
            |args: Sampling, ctx: RequestContext| async move {
                if let Some(InputResponse::CreateMessage(answer)) = ctx.input_responses().get("completion") {
                    let reply = answer.content.as_slice().iter().find_map(|block| match block {
                        mcp_bridge_protocol::types::SamplingContent::Text(t) => Some(t.text.clone()),
                        _ => None,
                    });
                    return done(format!("LLM response: {}", reply.as_deref().unwrap_or("No response")));
                }
                let prompt = args.prompt;
                ask(
                    json!({"completion": {"method": "sampling/createMessage", "params": {
                        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                        "maxTokens": 100
                    }}}),
                    None,
                )
            },
        )
        .typed_tool(
            tool("test_elicitation", "Asks the user for a response to a message"),
            |args: Elicitation, ctx: RequestContext| async move {
                if let Some(outcome) = elicitation_outcome(ctx.input_responses(), "response") {
                    return done(format!("User response: {outcome}"));
                }
                let properties = json!({
                    "username": {"type": "string", "description": "The user's response"},
                    "email": {"type": "string", "description": "The user's email address"}
                });
                let required = json!(["username", "email"]);
                ask(json!({"response": elicitation(&args.message, properties, required)}), None)
            },
        )
        .typed_tool(
            tool("test_elicitation_sep1034_defaults", "A form whose fields all have defaults"),
            |_: NoArguments, ctx: RequestContext| async move {
                if let Some(outcome) = elicitation_outcome(ctx.input_responses(), "form") {
                    return done(format!("Elicitation completed: {outcome}"));
                }
                let properties = json!({
                    "name": {"type": "string", "description": "Name", "default": "John Doe"},
                    "age": {"type": "integer", "description": "Age", "default": 30},
                    "score": {"type": "number", "description": "Score", "default": 95.5},
                    "status": {"type": "string", "description": "Status", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "description": "Verified", "default": true}
                });
                let message = "Please review the fields, each filled with its default";
                ask(json!({"form": elicitation(message, properties, json!([]))}), None)
            },
        )
        .typed_tool(
            tool("test_elicitation_sep1330_enums", "A form with every kind of enum field"),
            |_: NoArguments, ctx: RequestContext| async move {
                if let Some(outcome) = elicitation_outcome(ctx.input_responses(), "form") {
                    return done(format!("Elicitation completed: {outcome}"));
                }
                let titled = |prefix: &str| {
                    json!([
                        {"const": "value1", "title": format!("{prefix} 1")},
                        {"const": "value2", "title": format!("{prefix} 2")},
                        {"const": "value3", "title": format!("{prefix} 3")}
                    ])
                };
                let properties = json!({
                    "untitledSingle": {"type": "string", "description": "One option", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "description": "One option, with titles", "oneOf": titled("Option")},
                    "legacyEnum": {"type": "string", "description": "One option (enumNames)", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "description": "Several options", "minItems": 1, "maxItems": 3, "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "description": "Several options, with titles", "minItems": 1, "maxItems": 3, "items": {"anyOf": titled("Choice")}}
                });
                ask(json!({"form": elicitation("Please choose from the enum fields", properties, json!([]))}), None)
            },
        )
}

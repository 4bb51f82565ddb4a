//! The client's half of multi round-trip requests: each input request is
//! checked (known kind, declared capability, valid params), answered by its
//! hook, and the answer checked before it goes back (2026-07-28, MRTR,
//! Elicitation, Sampling, Roots).

use mcp_bridge_protocol::types::{
    ClientCapabilities, ElicitAction, ElicitRequestParams, InputRequest, InputRequests, InputResponse, InputResponses,
    SamplingContent, SamplingMessage,
};
use serde_json::Value;

use super::options::InputHooks;
use crate::error::Error;

/// Answers every input request of one round.
pub(crate) async fn answer_round(
    requests: InputRequests,
    caps: &ClientCapabilities,
    hooks: &InputHooks,
) -> Result<InputResponses, Error> {
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let response = answer_one(&key, request, caps, hooks).await?;
        responses.insert(key, response);
    }
    Ok(responses)
}

fn undeclared(key: &str, capability: &'static str) -> Error {
    Error::UndeclaredInputRequest { key: key.to_owned(), capability }
}

fn hook_failed(key: &str, reason: impl Into<String>) -> Error {
    Error::HookFailed { key: key.to_owned(), reason: reason.into() }
}

pub(crate) async fn answer_one(
    key: &str,
    request: InputRequest,
    caps: &ClientCapabilities,
    hooks: &InputHooks,
) -> Result<InputResponse, Error> {
    match request {
        InputRequest::Elicit(call) => match call.params {
            ElicitRequestParams::Form(params) => {
                if !caps.elicitation.as_ref().is_some_and(|e| e.supports_form()) {
                    return Err(undeclared(key, "elicitation.form"));
                }
                let hook = hooks.elicit_form.as_ref().ok_or_else(|| hook_failed(key, "no form elicitation hook"))?;
                let schema = serde_json::to_value(&params.requested_schema)
                    .map_err(|e| Error::InvalidInputRequest { key: key.to_owned(), reason: e.to_string() })?;
                let result = hook(params).await.map_err(|e| hook_failed(key, e))?;
                if result.action == ElicitAction::Accept {
                    check_elicitation_content(key, &schema, result.content.as_ref())?;
                }
                Ok(InputResponse::Elicit(result))
            }
            ElicitRequestParams::Url(params) => {
                if !caps.elicitation.as_ref().is_some_and(|e| e.supports_url()) {
                    return Err(undeclared(key, "elicitation.url"));
                }
                if !is_absolute_url(&params.url) {
                    return Err(Error::InvalidInputRequest {
                        key: key.to_owned(),
                        reason: "url is not an absolute URL".into(),
                    });
                }
                let hook = hooks.elicit_url.as_ref().ok_or_else(|| hook_failed(key, "no URL elicitation hook"))?;
                Ok(InputResponse::Elicit(hook(params).await.map_err(|e| hook_failed(key, e))?))
            }
        },
        InputRequest::CreateMessage(call) => {
            let Some(sampling) = &caps.sampling else { return Err(undeclared(key, "sampling")) };
            if (call.params.tools.is_some() || call.params.tool_choice.is_some()) && sampling.tools.is_none() {
                return Err(undeclared(key, "sampling.tools"));
            }
            check_sampling_messages(&call.params.messages)
                .map_err(|reason| Error::InvalidInputRequest { key: key.to_owned(), reason })?;
            let hook = hooks.sample.as_ref().ok_or_else(|| hook_failed(key, "no sampling hook"))?;
            Ok(InputResponse::CreateMessage(Box::new(hook(call.params).await.map_err(|e| hook_failed(key, e))?)))
        }
        InputRequest::ListRoots(_) => {
            if caps.roots.is_none() {
                return Err(undeclared(key, "roots"));
            }
            let hook = hooks.list_roots.as_ref().ok_or_else(|| hook_failed(key, "no roots hook"))?;
            let roots = hook(()).await.map_err(|e| hook_failed(key, e))?;
            if let Some(bad) = roots.iter().find(|r| !r.uri.starts_with("file://")) {
                return Err(hook_failed(key, format!("root {:?} is not a file:// URI", bad.uri)));
            }
            Ok(InputResponse::ListRoots(mcp_bridge_protocol::types::ListRootsResult {
                roots,
                meta: None,
                extra: Default::default(),
            }))
        }
        InputRequest::Invalid { reason, .. } => Err(Error::InvalidInputRequest { key: key.to_owned(), reason }),
        InputRequest::Unknown(v) => Err(Error::InvalidInputRequest {
            key: key.to_owned(),
            reason: format!("unknown method {:?}", v.get("method").and_then(Value::as_str).unwrap_or("")),
        }),
    }
}

/// Checks accepted form content against the requested schema.
///
/// # Errors
/// [`Error::InvalidInputRequest`] when the schema does not compile,
/// [`Error::HookFailed`] when the content does not match it.
pub fn check_elicitation_content(
    key: &str,
    schema: &Value,
    content: Option<&serde_json::Map<String, Value>>,
) -> Result<(), Error> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| Error::InvalidInputRequest { key: key.to_owned(), reason: format!("requestedSchema: {e}") })?;
    let instance = Value::Object(content.cloned().unwrap_or_default());
    match validator.iter_errors(&instance).next() {
        Some(error) => Err(hook_failed(key, format!("answer does not match requestedSchema: {error}"))),
        None => Ok(()),
    }
}

/// A URL with a scheme and an authority (`scheme://host...`), no spaces.
pub fn is_absolute_url(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else { return false };
    let scheme_ok = scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    scheme_ok && !host.is_empty() && !url.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The tool-use rules of sampling messages (2026-07-28, Sampling): a
/// message with tool results holds only tool results, from the user, each
/// answering a tool use of the assistant message just before it.
///
/// # Errors
/// The rule a message breaks, in words.
pub fn check_sampling_messages(messages: &[SamplingMessage]) -> Result<(), String> {
    use mcp_bridge_protocol::types::Role;
    for (i, message) in messages.iter().enumerate() {
        let blocks = message.content.as_slice();
        let results: Vec<&str> = blocks
            .iter()
            .filter_map(|b| if let SamplingContent::ToolResult(r) = b { Some(r.tool_use_id.as_str()) } else { None })
            .collect();
        if results.is_empty() {
            continue;
        }
        if results.len() != blocks.len() {
            return Err(format!("message {i} mixes tool results with other content"));
        }
        if message.role != Role::User {
            return Err(format!("message {i} has tool results but is not from the user"));
        }
        let uses: Vec<&str> = i
            .checked_sub(1)
            .and_then(|p| messages.get(p))
            .filter(|prev| prev.role == Role::Assistant)
            .map(|prev| {
                prev.content
                    .as_slice()
                    .iter()
                    .filter_map(|b| if let SamplingContent::ToolUse(u) = b { Some(u.id.as_str()) } else { None })
                    .collect()
            })
            .unwrap_or_default();
        if let Some(orphan) = results.iter().find(|id| !uses.contains(id)) {
            return Err(format!("message {i} answers tool use {orphan:?} that the previous assistant message lacks"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn absolute_urls_are_told_from_others() {
        assert!(is_absolute_url("https://example.com/x?y=1"));
        assert!(!is_absolute_url("/relative"));
        assert!(!is_absolute_url("https://"));
        assert!(!is_absolute_url("https://exa mple.com"));
        assert!(!is_absolute_url("1http://x"));
    }

    #[test]
    fn tool_results_must_answer_the_previous_tool_uses() {
        let msgs = |v: Value| -> Vec<SamplingMessage> { serde_json::from_value(v).unwrap() };
        let good = msgs(json!([
            {"role":"user","content":{"type":"text","text":"weather?"}},
            {"role":"assistant","content":[{"type":"tool_use","id":"a","name":"w","input":{}}]},
            {"role":"user","content":[{"type":"tool_result","toolUseId":"a","content":[]}]}
        ]));
        assert!(check_sampling_messages(&good).is_ok());
        let orphan = msgs(json!([
            {"role":"user","content":[{"type":"tool_result","toolUseId":"a","content":[]}]}
        ]));
        assert!(check_sampling_messages(&orphan).is_err());
        let mixed = msgs(json!([
            {"role":"assistant","content":[{"type":"tool_use","id":"a","name":"w","input":{}}]},
            {"role":"user","content":[{"type":"tool_result","toolUseId":"a","content":[]},{"type":"text","text":"x"}]}
        ]));
        assert!(check_sampling_messages(&mixed).is_err());
    }
}

//! The client's half of multi round-trip requests: each input request is
//! checked by the protocol crate's rules ([`mcp_bridge_protocol::rounds`]),
//! answered by its hook, and the answer checked before it goes back (2026-07-28, MRTR,
//! Elicitation, Sampling, Roots).

use mcp_bridge_protocol::rounds::{AnswerError, check_request, check_roots, check_round};
#[cfg(feature = "validation")]
use mcp_bridge_protocol::types::ElicitAction;
/// The tool-use rules of sampling messages, from the protocol crate.
pub use mcp_bridge_protocol::types::check_sampling_messages;
use mcp_bridge_protocol::types::{
    ClientCapabilities, ElicitRequestParams, InputRequest, InputRequests, InputResponse, InputResponses,
    ListRootsResult,
};
#[cfg(feature = "validation")]
use serde_json::Value;

use super::options::InputHooks;
use crate::error::Error;

/// Answers every input request of one round, after checking the whole
/// round before any hook is asked ([`check_round`]: declared kinds, valid
/// params, at most 16 requests).
pub(crate) async fn answer_round(
    requests: InputRequests,
    caps: &ClientCapabilities,
    hooks: &InputHooks,
) -> Result<InputResponses, Error> {
    check_round(&requests, caps)?;
    answer_checked_round(requests, hooks).await
}

/// Answers a round already checked ([`mcp_bridge_protocol::rounds::Rounds`]
/// checks the rounds of a request's loop).
pub(crate) async fn answer_checked_round(requests: InputRequests, hooks: &InputHooks) -> Result<InputResponses, Error> {
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let response = ask_hook(&key, request, hooks).await?;
        responses.insert(key, response);
    }
    Ok(responses)
}

/// Answers one input request (a 2025-11-25 server's own request), after
/// the same checks as a round's.
pub(crate) async fn answer_one(
    key: &str,
    request: InputRequest,
    caps: &ClientCapabilities,
    hooks: &InputHooks,
) -> Result<InputResponse, Error> {
    check_request(key, &request, caps)?;
    ask_hook(key, request, hooks).await
}

fn hook_failed(key: &str, reason: impl Into<String>) -> Error {
    Error::HookFailed { key: key.to_owned(), reason: reason.into() }
}

/// Asks the hook of a checked request's kind, then checks its answer.
async fn ask_hook(key: &str, request: InputRequest, hooks: &InputHooks) -> Result<InputResponse, Error> {
    let response = match request {
        InputRequest::Elicit(call) => match call.params {
            ElicitRequestParams::Form(params) => {
                let hook = hooks.elicit_form.as_ref().ok_or_else(|| hook_failed(key, "no form elicitation hook"))?;
                #[cfg(feature = "validation")]
                let schema = serde_json::to_value(&params.requested_schema)
                    .map_err(|e| Error::InvalidInputRequest { key: key.to_owned(), reason: e.to_string() })?;
                let result = hook(params).await.map_err(|e| hook_failed(key, e.to_string()))?;
                #[cfg(feature = "validation")]
                if result.action == ElicitAction::Accept {
                    check_elicitation_content(key, &schema, result.content.as_ref())?;
                }
                InputResponse::Elicit(result)
            }
            ElicitRequestParams::Url(params) => {
                let hook = hooks.elicit_url.as_ref().ok_or_else(|| hook_failed(key, "no URL elicitation hook"))?;
                InputResponse::Elicit(hook(params).await.map_err(|e| hook_failed(key, e.to_string()))?)
            }
        },
        InputRequest::CreateMessage(call) => {
            let hook = hooks.sample.as_ref().ok_or_else(|| hook_failed(key, "no sampling hook"))?;
            InputResponse::CreateMessage(Box::new(
                hook(call.params).await.map_err(|e| hook_failed(key, e.to_string()))?,
            ))
        }
        InputRequest::ListRoots(_) => {
            let hook = hooks.list_roots.as_ref().ok_or_else(|| hook_failed(key, "no roots hook"))?;
            let roots = hook(()).await.map_err(|e| hook_failed(key, e.to_string()))?;
            check_roots(&roots).map_err(|e| hook_failed(key, e.to_string()))?;
            InputResponse::ListRoots(ListRootsResult { roots, meta: None, extra: Default::default() })
        }
        // check_request refused these.
        InputRequest::Invalid { .. } | InputRequest::Unknown(_) => {
            return Err(Error::InvalidInputRequest {
                key: key.to_owned(),
                reason: AnswerError::NotAnswerable.to_string(),
            });
        }
    };
    Ok(response)
}

/// Checks accepted form content against the requested schema.
///
/// # Errors
/// [`Error::InvalidInputRequest`] when the schema does not compile,
/// [`Error::HookFailed`] when the content does not match it.
#[cfg(feature = "validation")]
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

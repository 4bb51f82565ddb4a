//! The upstream's input requests (multi round-trip, seed milestone M2),
//! without I/O: the checks before the client sees a round, and the checks of
//! the client's answers before they go back. The front end sends the
//! requests and waits for the answers.

use mcp_bridge_protocol::method::{ElicitationCreate, Method};
use mcp_bridge_protocol::types::{
    ClientCapabilities, CreateMessageResult, ElicitAction, ElicitRequestParams, ElicitResult, InputRequest,
    InputRequests, InputResponse, ListRootsResult,
};
use mcp_bridge_sdk::client::input::{check_elicitation_content, check_elicitation_url, check_sampling_messages};
use serde_json::{Value, json};

use crate::translate::Cause;

/// Input requests of one round the bridge passes on; more is refused, so a
/// server cannot flood the user with dialogs.
pub const MAX_INPUT_REQUESTS_PER_ROUND: usize = 16;

/// Rounds of one request before the bridge gives up.
pub const MAX_ROUNDS: usize = mcp_bridge_sdk::limits::MAX_INPUT_ROUNDS;

/// A round that cannot go to the client: the cause, and the detail that
/// names the key of the input request at fault.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundRefused {
    /// The error-table cause.
    pub cause: Cause,
    /// `data.detail`: the key and what is wrong.
    pub detail: Value,
}

fn refuse(cause: Cause, key: &str, reason: &str) -> RoundRefused {
    RoundRefused { cause, detail: json!({ "key": key, "reason": reason }) }
}

/// The capabilities the upstream sees: the client's own elicitation,
/// sampling and roots, since the bridge passes those requests on.
pub fn upstream_capabilities(client: &ClientCapabilities) -> ClientCapabilities {
    ClientCapabilities {
        elicitation: client.elicitation.clone(),
        sampling: client.sampling.clone(),
        roots: client.roots.clone(),
        ..ClientCapabilities::default()
    }
}

/// Checks a round before the client sees any of it: at most
/// [`MAX_INPUT_REQUESTS_PER_ROUND`] requests, each of a known kind, that the
/// client declared, with valid params.
///
/// # Errors
/// [`RoundRefused`] naming the first input request at fault.
pub fn check_round(requests: &InputRequests, client: &ClientCapabilities) -> Result<(), RoundRefused> {
    if requests.len() > MAX_INPUT_REQUESTS_PER_ROUND {
        return Err(RoundRefused {
            cause: Cause::TooManyInputRequests,
            detail: json!({ "count": requests.len(), "limit": MAX_INPUT_REQUESTS_PER_ROUND }),
        });
    }
    for (key, request) in requests {
        if let Some(missing) = request.missing_capability(client) {
            return Err(refuse(
                Cause::UndeclaredInputRequest,
                key,
                &format!("the client has no {}", missing.description()),
            ));
        }
        match request {
            InputRequest::Elicit(call) => {
                if let ElicitRequestParams::Url(params) = &call.params
                    && let Err(refused) = check_elicitation_url(&params.url)
                {
                    return Err(refuse(Cause::InvalidInputRequest, key, &refused.to_string()));
                }
            }
            InputRequest::CreateMessage(call) => {
                check_sampling_messages(&call.params.messages)
                    .map_err(|r| refuse(Cause::InvalidInputRequest, key, &r.to_string()))?;
            }
            InputRequest::ListRoots(_) => {}
            InputRequest::Invalid { .. } => {
                return Err(refuse(Cause::InvalidInputRequest, key, "the params do not fit the method"));
            }
            InputRequest::Unknown(_) => return Err(refuse(Cause::InvalidInputRequest, key, "unknown method")),
        }
    }
    Ok(())
}

/// The URL elicitation that asks the client to let the user sign in: the
/// sign-in's URL and what the user is told.
///
/// # Errors
/// The request cannot be built (it always can for a checked URL).
pub fn url_consent_request(prompt: &crate::signin::Prompt) -> Result<InputRequest, serde_json::Error> {
    serde_json::from_value(serde_json::json!({"method": ElicitationCreate::NAME, "params": {
        "mode": "url",
        "message": prompt.message,
        "url": prompt.url,
        "elicitationId": format!("sign-in-{}", std::process::id()),
    }}))
}

/// The method and params of an input request, as the client's request.
pub fn client_request(request: &InputRequest) -> (String, Option<Value>) {
    let value = serde_json::to_value(request).unwrap_or(Value::Null);
    let method = value.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
    (method, value.get("params").cloned())
}

/// Checks the client's answer to one input request and turns it into the
/// input response for the upstream.
///
/// # Errors
/// The [`AnswerError`] of what is wrong with the answer.
pub fn check_answer(key: &str, request: &InputRequest, answer: Value) -> Result<InputResponse, AnswerError> {
    let parse_error = |e: serde_json::Error| AnswerError::DoesNotFit(e.to_string());
    match request {
        InputRequest::Elicit(call) => {
            let result: ElicitResult = serde_json::from_value(answer).map_err(parse_error)?;
            if let (ElicitRequestParams::Form(form), ElicitAction::Accept) = (&call.params, result.action) {
                let schema = serde_json::to_value(&form.requested_schema).map_err(parse_error)?;
                check_elicitation_content(key, &schema, result.content.as_ref())
                    .map_err(|e| AnswerError::Content(e.to_string()))?;
            }
            Ok(InputResponse::Elicit(result))
        }
        InputRequest::CreateMessage(_) => {
            let result: CreateMessageResult = serde_json::from_value(answer).map_err(parse_error)?;
            Ok(InputResponse::CreateMessage(Box::new(result)))
        }
        InputRequest::ListRoots(_) => {
            let result: ListRootsResult = serde_json::from_value(answer).map_err(parse_error)?;
            if result.roots.iter().any(|r| !r.uri.starts_with("file://")) {
                return Err(AnswerError::RootNotAFile);
            }
            Ok(InputResponse::ListRoots(result))
        }
        InputRequest::Invalid { .. } | InputRequest::Unknown(_) => Err(AnswerError::NotPassedOn),
    }
}

/// What is wrong with a client's answer to an input request, in words
/// that never quote its values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// It is not a result of the request's method.
    #[error("the answer does not fit the method: {0}")]
    DoesNotFit(String),
    /// Accepted form content that does not match the requested schema.
    #[error("{0}")]
    Content(String),
    /// A root that is not a `file://` URI.
    #[error("every root must be a file:// URI")]
    RootNotAFile,
    /// The request is none the bridge passes on to the client.
    #[error("not an input request the bridge passes on")]
    NotPassedOn,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requests(v: Value) -> InputRequests {
        serde_json::from_value(v).unwrap()
    }

    fn caps(v: Value) -> ClientCapabilities {
        serde_json::from_value(v).unwrap()
    }

    const FORM: &str = r#"{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}"#;

    #[test]
    fn a_round_needs_declared_kinds_and_names_the_key_at_fault() {
        let form: Value = serde_json::from_str(FORM).unwrap();
        let round = requests(json!({"a": form, "b": {"method": "roots/list"}}));
        assert!(check_round(&round, &caps(json!({"elicitation": {}, "roots": {}}))).is_ok());
        let refused = check_round(&round, &caps(json!({"elicitation": {}}))).unwrap_err();
        assert_eq!((refused.cause, refused.detail["key"].clone()), (Cause::UndeclaredInputRequest, json!("b")));
        let url = requests(
            json!({"u": {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x.example/a"}}}),
        );
        assert_eq!(
            check_round(&url, &caps(json!({"elicitation": {}}))).unwrap_err().cause,
            Cause::UndeclaredInputRequest
        );
        assert!(check_round(&url, &caps(json!({"elicitation": {"url": {}}}))).is_ok());
        let tools = requests(
            json!({"s": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5, "tools": []}}}),
        );
        assert_eq!(
            check_round(&tools, &caps(json!({"sampling": {}}))).unwrap_err().cause,
            Cause::UndeclaredInputRequest
        );
        assert!(check_round(&tools, &caps(json!({"sampling": {"tools": {}}}))).is_ok());
    }

    #[test]
    fn unknown_invalid_and_too_many_requests_are_refused() {
        let bad = requests(json!({"x": {"method": "tasks/get"}, "y": {"method": "elicitation/create", "params": {}}}));
        let refused = check_round(&bad, &caps(json!({"elicitation": {}}))).unwrap_err();
        assert_eq!((refused.cause, refused.detail["key"].clone()), (Cause::InvalidInputRequest, json!("x")));
        let many: serde_json::Map<String, Value> =
            (0..17).map(|i| (format!("k{i}"), json!({"method": "roots/list"}))).collect();
        let refused = check_round(&requests(Value::Object(many)), &caps(json!({"roots": {}}))).unwrap_err();
        assert_eq!(refused.cause, Cause::TooManyInputRequests);
    }

    #[test]
    fn answers_are_checked_by_kind() {
        let form: InputRequest = serde_json::from_str(FORM).unwrap();
        assert!(check_answer("a", &form, json!({"action": "accept", "content": {"name": "Ada"}})).is_ok());
        assert!(check_answer("a", &form, json!({"action": "accept", "content": {"name": 5}})).is_err());
        assert!(check_answer("a", &form, json!({"action": "decline"})).is_ok());
        assert!(check_answer("a", &form, json!({"nothing": true})).is_err());
        let roots: InputRequest = serde_json::from_value(json!({"method": "roots/list"})).unwrap();
        assert!(check_answer("r", &roots, json!({"roots": [{"uri": "file:///w"}]})).is_ok());
        assert!(check_answer("r", &roots, json!({"roots": [{"uri": "https://w"}]})).is_err());
        let (method, params) = client_request(&form);
        assert_eq!(method, "elicitation/create");
        assert_eq!(params.unwrap()["message"], "Name?");
    }
}

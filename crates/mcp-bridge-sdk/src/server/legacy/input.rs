//! The upstream's input requests (multi round-trip, seed milestone M2): the
//! rules are the protocol crate's ([`mcp_bridge_protocol::rounds`]), the
//! same the SDK's client applies; here, what the bridge adds: the errors
//! its client sees for a refused round, the client's JSON answers read and
//! checked, and the requests it builds of its own.

use mcp_bridge_protocol::ErrorObject;
use mcp_bridge_protocol::rounds::{AnswerError, RoundRefusal, parse_answer};
use mcp_bridge_protocol::types::{ClientCapabilities, InputRequest, InputResponse};
use serde_json::{Value, json};

use crate::server::legacy::translate::{Cause, error_for};

/// The capabilities the upstream sees: the client's own elicitation,
/// sampling and roots, since the bridge passes those requests on.
pub(crate) fn upstream_capabilities(client: &ClientCapabilities) -> ClientCapabilities {
    ClientCapabilities {
        elicitation: client.elicitation.clone(),
        sampling: client.sampling.clone(),
        roots: client.roots.clone(),
        ..ClientCapabilities::default()
    }
}

/// The error the client gets for a round the rules refuse: its cause, and
/// `data.detail` naming the input request at fault and what is wrong (or
/// the count and the limit).
pub(crate) fn round_refused(refusal: &RoundRefusal) -> ErrorObject {
    let (cause, detail) = match refusal {
        RoundRefusal::TooManyRequests { count, limit } => {
            (Cause::TooManyInputRequests, json!({ "count": count, "limit": limit }))
        }
        RoundRefusal::Undeclared { key, capability } => (
            Cause::UndeclaredInputRequest,
            json!({ "key": key, "reason": format!("the client has no {}", capability.description()) }),
        ),
        RoundRefusal::Invalid { key, reason } => (Cause::InvalidInputRequest, json!({ "key": key, "reason": reason })),
        other => (Cause::InvalidInputRequest, json!({ "key": other.key(), "reason": other.to_string() })),
    };
    error_for(cause, Some(detail))
}

/// The method and params of an input request, as the client's request.
pub fn client_request(request: &InputRequest) -> (String, Option<Value>) {
    let value = serde_json::to_value(request).unwrap_or(Value::Null);
    let method = value.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
    (method, value.get("params").cloned())
}

/// Reads the client's answer to one input request as the input response
/// for the upstream, with the protocol's rules ([`parse_answer`]) and
/// accepted form content checked against the requested schema.
///
/// # Errors
/// The [`AnswerError`] of what is wrong with the answer.
pub fn check_answer(key: &str, request: &InputRequest, answer: Value) -> Result<InputResponse, AnswerError> {
    let response = parse_answer(request, answer)?;
    // Without `validation` the answer's shape is checked, not its content
    // against the form's schema (as the SDK's client does).
    #[cfg(feature = "validation")]
    if let (InputRequest::Elicit(call), InputResponse::Elicit(result)) = (request, &response)
        && let (
            mcp_bridge_protocol::types::ElicitRequestParams::Form(form),
            mcp_bridge_protocol::types::ElicitAction::Accept,
        ) = (&call.params, result.action)
    {
        let schema =
            serde_json::to_value(&form.requested_schema).map_err(|e| AnswerError::DoesNotFit(e.to_string()))?;
        crate::client::input::check_elicitation_content(key, &schema, result.content.as_ref())
            .map_err(|e| AnswerError::Content(e.to_string()))?;
    }
    #[cfg(not(feature = "validation"))]
    let _ = key;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use mcp_bridge_protocol::rounds::check_round;
    use mcp_bridge_protocol::types::InputRequests;

    use super::*;

    fn requests(v: Value) -> InputRequests {
        serde_json::from_value(v).unwrap()
    }

    fn caps(v: Value) -> ClientCapabilities {
        serde_json::from_value(v).unwrap()
    }

    const FORM: &str = r#"{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}"#;

    #[test]
    fn a_refused_round_names_its_cause_and_the_key_at_fault() {
        let round = requests(json!({"b": {"method": "roots/list"}}));
        let refused = round_refused(&check_round(&round, &caps(json!({"elicitation": {}}))).unwrap_err());
        let data = refused.data.unwrap();
        assert_eq!(data["cause"], "undeclared_input_request", "{data}");
        assert_eq!(data["detail"]["key"], "b");
        let many: serde_json::Map<String, Value> =
            (0..17).map(|i| (format!("k{i}"), json!({"method": "roots/list"}))).collect();
        let refused = check_round(&requests(Value::Object(many)), &caps(json!({"roots": {}}))).unwrap_err();
        let data = round_refused(&refused).data.unwrap();
        assert_eq!(
            (data["cause"].clone(), data["detail"]["count"].clone()),
            (json!("too_many_input_requests"), json!(17))
        );
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

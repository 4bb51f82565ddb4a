//! Multi round-trip requests (2026-07-28, MRTR): a server that needs input
//! answers with an [`InputRequiredResult`]; the client answers each input
//! request and retries with `inputResponses` and the unchanged `requestState`.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{ClientCapabilities, CreateMessageResult, ElicitRequestParams, ElicitResult, ListRootsResult, ResultType};
use crate::meta::ResultMeta;
use crate::method::{ElicitationCreate, Method, MethodCall, RootsList, SamplingCreateMessage};
use crate::tag::from_value;

/// One thing a server asks the client for, read by its `method`.
///
/// A known method whose params do not fit is kept as [`InputRequest::Invalid`]
/// rather than failing the whole result, so a caller can name the key of the
/// bad request and still see the others.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `elicitation/create`.
    Elicit(MethodCall<ElicitationCreate>),
    /// `sampling/createMessage`.
    CreateMessage(MethodCall<SamplingCreateMessage>),
    /// `roots/list`.
    ListRoots(MethodCall<RootsList>),
    /// A known method with params that do not fit its schema.
    Invalid {
        /// The request as it came.
        raw: Value,
        /// Why it does not fit, from the parser.
        reason: String,
    },
    /// A method this crate does not know, kept whole.
    Unknown(Value),
}

impl InputRequest {
    /// The method name, when the request has one.
    pub fn method(&self) -> Option<&str> {
        match self {
            InputRequest::Elicit(_) => Some(ElicitationCreate::NAME),
            InputRequest::CreateMessage(_) => Some(SamplingCreateMessage::NAME),
            InputRequest::ListRoots(_) => Some(RootsList::NAME),
            InputRequest::Invalid { raw: v, .. } | InputRequest::Unknown(v) => v.get("method").and_then(Value::as_str),
        }
    }

    /// The client capability this request needs; `None` for a request of
    /// an unknown kind or with invalid params.
    pub fn needed_capability(&self) -> Option<InputCapability> {
        Some(match self {
            InputRequest::Elicit(call) => match &call.params {
                ElicitRequestParams::Form(_) => InputCapability::FormElicitation,
                ElicitRequestParams::Url(_) => InputCapability::UrlElicitation,
            },
            InputRequest::CreateMessage(call) if call.params.tools.is_some() || call.params.tool_choice.is_some() => {
                InputCapability::SamplingTools
            }
            InputRequest::CreateMessage(_) => InputCapability::Sampling,
            InputRequest::ListRoots(_) => InputCapability::Roots,
            InputRequest::Invalid { .. } | InputRequest::Unknown(_) => return None,
        })
    }

    /// The capability this request needs that `client` did not declare:
    /// the rule servers, clients and bridges all apply before an input
    /// request reaches a user. `None` when it is declared, or the kind is
    /// unknown (a separate refusal).
    pub fn missing_capability(&self, client: &ClientCapabilities) -> Option<InputCapability> {
        self.needed_capability().filter(|needed| !needed.declared_by(client))
    }
}

/// A client capability an input request needs (2026-07-28, MRTR:
/// "servers MUST NOT send input requests of a kind the client did not
/// declare").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InputCapability {
    /// `elicitation.form` (or a bare `elicitation`).
    FormElicitation,
    /// `elicitation.url`.
    UrlElicitation,
    /// `sampling`.
    Sampling,
    /// `sampling.tools`: sampling with tools or a tool choice.
    SamplingTools,
    /// `roots`.
    Roots,
}

impl InputCapability {
    /// Its path in the capabilities object: `elicitation.form`,
    /// `elicitation.url`, `sampling`, `sampling.tools` or `roots`.
    pub fn path(self) -> &'static str {
        match self {
            InputCapability::FormElicitation => "elicitation.form",
            InputCapability::UrlElicitation => "elicitation.url",
            InputCapability::Sampling => "sampling",
            InputCapability::SamplingTools => "sampling.tools",
            InputCapability::Roots => "roots",
        }
    }

    /// In words, for messages: `form elicitation`, `sampling with tools`.
    pub fn description(self) -> &'static str {
        match self {
            InputCapability::FormElicitation => "form elicitation",
            InputCapability::UrlElicitation => "URL elicitation",
            InputCapability::Sampling => "sampling",
            InputCapability::SamplingTools => "sampling with tools",
            InputCapability::Roots => "roots",
        }
    }

    /// The capabilities object that declares it (the `requiredCapabilities`
    /// of a -32021 error): `{"elicitation": {"form": {}}}`.
    pub fn declaration(self) -> Value {
        let (outer, inner) = match self.path().split_once('.') {
            Some((outer, inner)) => (outer, Some(inner)),
            None => (self.path(), None),
        };
        let body = inner.map_or_else(Map::new, |inner| Map::from_iter([(inner.to_owned(), Value::Object(Map::new()))]));
        Value::Object(Map::from_iter([(outer.to_owned(), Value::Object(body))]))
    }

    /// Whether `client` declares it.
    pub fn declared_by(self, client: &ClientCapabilities) -> bool {
        match self {
            InputCapability::FormElicitation => client.elicitation.as_ref().is_some_and(|e| e.supports_form()),
            InputCapability::UrlElicitation => client.elicitation.as_ref().is_some_and(|e| e.supports_url()),
            InputCapability::Sampling => client.sampling.is_some(),
            InputCapability::SamplingTools => client.sampling.as_ref().is_some_and(|s| s.tools.is_some()),
            InputCapability::Roots => client.roots.is_some(),
        }
    }
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            InputRequest::Elicit(c) => c.serialize(s),
            InputRequest::CreateMessage(c) => c.serialize(s),
            InputRequest::ListRoots(c) => c.serialize(s),
            InputRequest::Invalid { raw, .. } | InputRequest::Unknown(raw) => raw.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        fn typed<M: Method>(v: Value, wrap: fn(MethodCall<M>) -> InputRequest) -> InputRequest {
            match serde_json::from_value(v.clone()) {
                Ok(call) => wrap(call),
                Err(e) => InputRequest::Invalid { raw: v, reason: e.to_string() },
            }
        }
        let v = Value::deserialize(d)?;
        Ok(match v.get("method").and_then(Value::as_str) {
            Some(ElicitationCreate::NAME) => typed(v, InputRequest::Elicit),
            Some(SamplingCreateMessage::NAME) => typed(v, InputRequest::CreateMessage),
            Some(RootsList::NAME) => typed(v, InputRequest::ListRoots),
            _ => InputRequest::Unknown(v),
        })
    }
}

/// Input requests by the key the server chose (`InputRequests`).
pub type InputRequests = BTreeMap<String, InputRequest>;

/// The client's answer to one input request (`InputResponse`). The schema
/// has no discriminator; the member that only one kind has decides
/// (`action`, `roots`, `model`), and anything else is kept whole.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum InputResponse {
    /// Answer to an elicitation.
    Elicit(ElicitResult),
    /// Answer to a sampling request.
    CreateMessage(Box<CreateMessageResult>),
    /// Answer to a roots request.
    ListRoots(ListRootsResult),
    /// An answer of no known kind.
    Unknown(Value),
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(if v.get("action").is_some() {
            InputResponse::Elicit(from_value(v)?)
        } else if v.get("roots").is_some() {
            InputResponse::ListRoots(from_value(v)?)
        } else if v.get("model").is_some() {
            InputResponse::CreateMessage(from_value(v)?)
        } else {
            InputResponse::Unknown(v)
        })
    }
}

/// Answers by the key of the input request they answer (`InputResponses`).
pub type InputResponses = BTreeMap<String, InputResponse>;

/// The server needs input before it can finish (`InputRequiredResult`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// `input_required`.
    pub result_type: ResultType,
    /// What the server asks for, by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state to send back unchanged with the answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
    /// Members not modelled here.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The result of a method that may ask for input first: read by
/// `resultType`, `input_required` or anything else.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Outcome<R> {
    /// The final result.
    Complete(R),
    /// The server needs input; retry with the answers.
    InputRequired(Box<InputRequiredResult>),
}

impl<'de, R: serde::de::DeserializeOwned> Deserialize<'de> for Outcome<R> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if crate::rounds::asks_for_input(&v) {
            from_value(v).map(Outcome::InputRequired)
        } else {
            from_value(v).map(Outcome::Complete)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bad_params_of_a_known_method_are_kept_as_invalid() {
        let v = json!({"method":"elicitation/create","params":{"message":"x"}});
        let r: InputRequest = serde_json::from_value(v.clone()).unwrap();
        assert!(matches!(&r, InputRequest::Invalid { reason, .. } if reason.contains("requestedSchema")));
        assert_eq!(r.method(), Some("elicitation/create"));
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
    }

    #[test]
    fn unknown_method_is_kept() {
        let v = json!({"method":"tasks/get","params":{}});
        let r: InputRequest = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(r, InputRequest::Unknown(v));
    }

    #[test]
    fn roots_request_without_params_is_valid() {
        let r: InputRequest = serde_json::from_value(json!({"method":"roots/list"})).unwrap();
        assert!(matches!(r, InputRequest::ListRoots(ref c) if c.params.is_none()));
        assert_eq!(serde_json::to_value(&r).unwrap(), json!({"method":"roots/list"}));
    }

    #[test]
    fn outcome_is_read_by_result_type() {
        let done: Outcome<super::super::CallToolResult> =
            serde_json::from_value(json!({"resultType":"complete","content":[]})).unwrap();
        assert!(matches!(done, Outcome::Complete(_)));
        let more: Outcome<super::super::CallToolResult> =
            serde_json::from_value(json!({"resultType":"input_required","requestState":"s"})).unwrap();
        assert!(matches!(more, Outcome::InputRequired(r) if r.request_state.as_deref() == Some("s")));
    }

    #[test]
    fn input_responses_are_told_apart_by_their_members() {
        let v = json!({
            "a": {"action":"accept","content":{"x":1}},
            "b": {"roots":[{"uri":"file:///tmp"}]},
            "c": {"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"},
            "d": {"other":true}
        });
        let r: InputResponses = serde_json::from_value(v.clone()).unwrap();
        assert!(matches!(r["a"], InputResponse::Elicit(_)));
        assert!(matches!(r["b"], InputResponse::ListRoots(_)));
        assert!(matches!(r["c"], InputResponse::CreateMessage(_)));
        assert!(matches!(r["d"], InputResponse::Unknown(_)));
        assert_eq!(serde_json::to_value(&r).unwrap(), v);
    }

    #[test]
    fn each_input_request_needs_its_declared_capability() {
        let requests: InputRequests = serde_json::from_value(json!({
            "form": {"method": "elicitation/create", "params": {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}},
            "url": {"method": "elicitation/create", "params": {"mode": "url", "message": "?", "url": "https://x.example", "elicitationId": "e"}},
            "plain": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}},
            "tools": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5, "tools": []}},
            "roots": {"method": "roots/list"},
            "odd": {"method": "nobody/knows"}
        }))
        .unwrap();
        let none = ClientCapabilities::default();
        let missing = |caps: &ClientCapabilities| -> Vec<(&str, Option<&str>)> {
            requests.iter().map(|(k, r)| (k.as_str(), r.missing_capability(caps).map(InputCapability::path))).collect()
        };
        assert_eq!(
            missing(&none),
            [
                ("form", Some("elicitation.form")),
                ("odd", None),
                ("plain", Some("sampling")),
                ("roots", Some("roots")),
                ("tools", Some("sampling.tools")),
                ("url", Some("elicitation.url")),
            ]
        );
        let plain_sampling: ClientCapabilities =
            serde_json::from_value(json!({"sampling": {}, "elicitation": {}, "roots": {}})).unwrap();
        assert_eq!(
            missing(&plain_sampling).into_iter().filter(|(_, m)| m.is_some()).collect::<Vec<_>>(),
            [("tools", Some("sampling.tools")), ("url", Some("elicitation.url"))],
            "a bare elicitation means form only"
        );
        assert_eq!(InputCapability::SamplingTools.declaration(), json!({"sampling": {"tools": {}}}));
        assert_eq!(InputCapability::Roots.declaration(), json!({"roots": {}}));
    }
}

//! Multi round-trip requests (2026-07-28, MRTR) without I/O: the rules a
//! client, or a bridge acting as one, applies between sending a request and
//! handing on its final result. A server may answer `input_required` with
//! input requests (elicitation, sampling, roots) and an opaque
//! `requestState`; the client answers them and sends the request again
//! with `inputResponses` and the state, at most [`MAX_ROUNDS`] times.
//!
//! [`Rounds`] is the loop's state: the caller sends [`Rounds::params`],
//! feeds the result to [`Rounds::on_result`], and either has the final
//! result or a checked round to ask, whose answers go to
//! [`Rounds::answered`]. The SDK's client (answers from its hooks) and the
//! bridge (answers from its own client) both drive it, so both check a
//! round and its answers by the same rules: [`check_round`] before anyone
//! is asked, [`parse_answer`] for each answer.

use serde_json::{Map, Value};

use crate::types::{ClientCapabilities, Root};
use crate::types::{
    CreateMessageResult, ElicitRequestParams, ElicitResult, InputCapability, InputRequest, InputRequests,
    InputRequiredResult, InputResponse, InputResponses, ListRootsResult, ResultType, check_sampling_messages,
};

/// Rounds of one request before the client gives up: a server that keeps
/// asking would otherwise hold its user in dialogs forever. 10 is more than
/// any real flow needs (a sign-in, a confirmation, a choice).
pub const MAX_ROUNDS: usize = 10;

/// Input requests one round may hold; more is refused before any reaches
/// the user, so a server cannot flood them with dialogs.
pub const MAX_INPUT_REQUESTS_PER_ROUND: usize = 16;

/// The member of the params that carries a round's answers.
pub const INPUT_RESPONSES: &str = "inputResponses";
/// The member of the params that carries the server's opaque state back.
pub const REQUEST_STATE: &str = "requestState";

/// The state of one request's round loop.
#[derive(Debug, Clone)]
pub struct Rounds {
    params: Map<String, Value>,
    round: usize,
    max_rounds: usize,
    /// The state of the round being asked, sent back with its answers.
    asked_state: Option<String>,
    /// Whether the params now carry a `requestState`.
    carries_state: bool,
}

/// What a result means for the loop.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The final result, to hand on.
    Done(Value),
    /// A checked round: ask these, then give the answers to
    /// [`Rounds::answered`] and send [`Rounds::params`] again.
    Ask(InputRequests),
}

/// Why a request's round loop ends without a final result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoundError {
    /// The server asked for input more times than the limit allows.
    #[error("the server asked for input more than {limit} rounds")]
    TooManyRounds {
        /// The round limit.
        limit: usize,
    },
    /// An `input_required` result that is not one.
    #[error("the input_required result is not valid: {reason}")]
    InvalidResult {
        /// What is wrong with it.
        reason: String,
    },
    /// The round breaks a rule ([`check_round`]).
    #[error(transparent)]
    Refused(#[from] RoundRefusal),
}

/// A round refused before anyone is asked, naming the input request at
/// fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RoundRefusal {
    /// More than [`MAX_INPUT_REQUESTS_PER_ROUND`] input requests.
    #[error("{count} input requests in one round, over the limit of {limit}")]
    TooManyRequests {
        /// How many the round holds.
        count: usize,
        /// The limit.
        limit: usize,
    },
    /// An input request of a kind the client did not declare.
    #[error("input request {key:?} needs the undeclared client capability {}", capability.path())]
    Undeclared {
        /// The key of the input request.
        key: String,
        /// The capability it needs.
        capability: InputCapability,
    },
    /// An input request of an unknown kind, or whose params break a rule.
    #[error("input request {key:?} is not valid: {reason}")]
    Invalid {
        /// The key of the input request.
        key: String,
        /// What is wrong.
        reason: String,
    },
}

impl RoundRefusal {
    /// The key of the input request at fault, when one is.
    pub fn key(&self) -> Option<&str> {
        match self {
            RoundRefusal::TooManyRequests { .. } => None,
            RoundRefusal::Undeclared { key, .. } | RoundRefusal::Invalid { key, .. } => Some(key),
        }
    }
}

impl Rounds {
    /// The loop of a request whose first params are `params`, giving up
    /// after `max_rounds` rounds (a client's setting; [`MAX_ROUNDS`] is the
    /// usual one).
    pub fn new(params: Map<String, Value>, max_rounds: usize) -> Self {
        Rounds { params, round: 0, max_rounds, asked_state: None, carries_state: false }
    }

    /// The params to send now: the first ones, then with the last round's
    /// answers and state.
    pub fn params(&self) -> &Map<String, Value> {
        &self.params
    }

    /// Rounds answered so far.
    pub fn round(&self) -> usize {
        self.round
    }

    /// Whether the params now carry the server's `requestState`: an
    /// invalid-params error to them may mean the state expired.
    pub fn carries_state(&self) -> bool {
        self.carries_state
    }

    /// Reads the result of sending [`Rounds::params`]: the final result, or
    /// a round checked against what `client` declared.
    ///
    /// # Errors
    /// [`RoundError`]: too many rounds, a malformed `input_required`
    /// result, or a round [`check_round`] refuses.
    pub fn on_result(&mut self, result: Value, client: &ClientCapabilities) -> Result<Step, RoundError> {
        if !asks_for_input(&result) {
            return Ok(Step::Done(result));
        }
        if self.round == self.max_rounds {
            return Err(RoundError::TooManyRounds { limit: self.max_rounds });
        }
        let needed: InputRequiredResult =
            serde_json::from_value(result).map_err(|e| RoundError::InvalidResult { reason: e.to_string() })?;
        let requests = needed.input_requests.unwrap_or_default();
        check_round(&requests, client)?;
        self.asked_state = needed.request_state;
        Ok(Step::Ask(requests))
    }

    /// The answers to the round [`Rounds::on_result`] asked: the params of
    /// the next attempt carry them and the round's state, and nothing of
    /// an earlier round.
    pub fn answered(&mut self, answers: InputResponses) {
        self.round += 1;
        self.params.remove(INPUT_RESPONSES);
        self.params.remove(REQUEST_STATE);
        if !answers.is_empty() {
            self.params.insert(INPUT_RESPONSES.into(), serde_json::to_value(&answers).unwrap_or(Value::Null));
        }
        self.carries_state = self.asked_state.is_some();
        if let Some(state) = self.asked_state.take() {
            self.params.insert(REQUEST_STATE.into(), Value::String(state));
        }
    }
}

/// Whether a result asks for input (`resultType: "input_required"`).
pub fn asks_for_input(result: &Value) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some(ResultType::InputRequired.as_str())
}

/// Checks a round before anyone is asked: at most
/// [`MAX_INPUT_REQUESTS_PER_ROUND`] requests, each of a known kind that the
/// client declared, with valid params (a URL elicitation opens a web page
/// only; sampling messages follow the tool-use rules).
///
/// # Errors
/// The [`RoundRefusal`] of the first input request at fault.
pub fn check_round(requests: &InputRequests, client: &ClientCapabilities) -> Result<(), RoundRefusal> {
    if requests.len() > MAX_INPUT_REQUESTS_PER_ROUND {
        return Err(RoundRefusal::TooManyRequests { count: requests.len(), limit: MAX_INPUT_REQUESTS_PER_ROUND });
    }
    for (key, request) in requests {
        check_request(key, request, client)?;
    }
    Ok(())
}

/// Checks one input request (of a round, or a 2025-11-25 server's own
/// request): of a known kind that the client declared, with valid params.
///
/// # Errors
/// The [`RoundRefusal`] naming `key`.
pub fn check_request(key: &str, request: &InputRequest, client: &ClientCapabilities) -> Result<(), RoundRefusal> {
    let invalid = |reason: String| RoundRefusal::Invalid { key: key.to_owned(), reason };
    if let Some(capability) = request.missing_capability(client) {
        return Err(RoundRefusal::Undeclared { key: key.to_owned(), capability });
    }
    match request {
        InputRequest::Elicit(call) => {
            if let ElicitRequestParams::Url(params) = &call.params {
                check_elicitation_url(&params.url).map_err(|e| invalid(e.to_string()))?;
            }
            Ok(())
        }
        InputRequest::CreateMessage(call) => {
            check_sampling_messages(&call.params.messages).map_err(|e| invalid(e.to_string()))
        }
        InputRequest::ListRoots(_) => Ok(()),
        // Neither quotes the server's values (a parse error would).
        InputRequest::Invalid { .. } => Err(invalid("the params do not fit the method".into())),
        InputRequest::Unknown(_) => Err(invalid("unknown method".into())),
    }
}

/// The URL of a URL elicitation that is not shown to the user: only an
/// absolute `http://` or `https://` URL is (a `javascript:`, `file:`,
/// `data:` or `vscode:` one could run code or open something local).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the url is not an absolute http:// or https:// URL: a URL elicitation may only open a web page")]
pub struct NotAWebUrl;

/// Checks the URL a URL elicitation asks the user to open.
///
/// # Errors
/// [`NotAWebUrl`] unless it is an absolute `http://` or `https://` URL.
pub fn check_elicitation_url(url: &str) -> Result<(), NotAWebUrl> {
    let scheme = url.split_once("://").map(|(scheme, _)| scheme.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("http" | "https") if is_absolute_url(url) => Ok(()),
        _ => Err(NotAWebUrl),
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

/// What is wrong with an answer to an input request, in words that never
/// quote its values.
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
    /// The request is of no kind a client answers.
    #[error("not an input request a client answers")]
    NotAnswerable,
}

/// The answer to `request` read as its kind's result (an elicitation's,
/// a sampling request's, a roots request's), with the rules a result of
/// that kind follows that need no schema: every root is a `file://` URI.
/// Form content against the requested schema is the caller's check (it
/// needs a JSON Schema validator).
///
/// # Errors
/// The [`AnswerError`] of what is wrong.
pub fn parse_answer(request: &InputRequest, answer: Value) -> Result<InputResponse, AnswerError> {
    let does_not_fit = |e: serde_json::Error| AnswerError::DoesNotFit(e.to_string());
    let response = match request {
        InputRequest::Elicit(_) => {
            InputResponse::Elicit(serde_json::from_value::<ElicitResult>(answer).map_err(does_not_fit)?)
        }
        InputRequest::CreateMessage(_) => InputResponse::CreateMessage(Box::new(
            serde_json::from_value::<CreateMessageResult>(answer).map_err(does_not_fit)?,
        )),
        InputRequest::ListRoots(_) => {
            InputResponse::ListRoots(serde_json::from_value::<ListRootsResult>(answer).map_err(does_not_fit)?)
        }
        InputRequest::Invalid { .. } | InputRequest::Unknown(_) => return Err(AnswerError::NotAnswerable),
    };
    check_answer_kind(request, &response)?;
    Ok(response)
}

/// The rules of an answer that need no schema: it is of the request's
/// kind, and every root is a `file://` URI.
///
/// # Errors
/// The [`AnswerError`] of what is wrong.
pub fn check_answer_kind(request: &InputRequest, response: &InputResponse) -> Result<(), AnswerError> {
    match (request, response) {
        (InputRequest::Elicit(_), InputResponse::Elicit(_))
        | (InputRequest::CreateMessage(_), InputResponse::CreateMessage(_)) => Ok(()),
        (InputRequest::ListRoots(_), InputResponse::ListRoots(result)) => check_roots(&result.roots),
        (InputRequest::Invalid { .. } | InputRequest::Unknown(_), _) => Err(AnswerError::NotAnswerable),
        _ => Err(AnswerError::DoesNotFit("an answer of another kind".into())),
    }
}

/// Every root a client gives is a `file://` URI (2026-07-28, Roots).
///
/// # Errors
/// [`AnswerError::RootNotAFile`] for any other.
pub fn check_roots(roots: &[Root]) -> Result<(), AnswerError> {
    match roots.iter().any(|r| !r.uri.starts_with("file://")) {
        true => Err(AnswerError::RootNotAFile),
        false => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn caps(v: Value) -> ClientCapabilities {
        serde_json::from_value(v).unwrap()
    }

    fn requests(v: Value) -> InputRequests {
        serde_json::from_value(v).unwrap()
    }

    fn asking(state: Option<&str>) -> Value {
        let mut result = json!({"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list"}}});
        if let Some(state) = state {
            result["requestState"] = json!(state);
        }
        result
    }

    fn roots_answer() -> InputResponses {
        InputResponses::from([("r".to_owned(), parse_answer(&roots_request(), json!({"roots": []})).unwrap())])
    }

    fn roots_request() -> InputRequest {
        serde_json::from_value(json!({"method": "roots/list"})).unwrap()
    }

    const FORM: &str = r#"{"method":"elicitation/create","params":{"message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}"#;

    #[test]
    fn a_round_needs_declared_kinds_and_names_the_key_at_fault() {
        let form: Value = serde_json::from_str(FORM).unwrap();
        let round = requests(json!({"a": form, "b": {"method": "roots/list"}}));
        assert!(check_round(&round, &caps(json!({"elicitation": {}, "roots": {}}))).is_ok());
        let refused = check_round(&round, &caps(json!({"elicitation": {}}))).unwrap_err();
        assert_eq!(refused, RoundRefusal::Undeclared { key: "b".into(), capability: InputCapability::Roots });
        let url = requests(
            json!({"u": {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "https://x.example/a"}}}),
        );
        assert!(matches!(check_round(&url, &caps(json!({"elicitation": {}}))), Err(RoundRefusal::Undeclared { .. })));
        assert!(check_round(&url, &caps(json!({"elicitation": {"url": {}}}))).is_ok());
        let script = requests(
            json!({"u": {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": "javascript:alert(1)"}}}),
        );
        let refused = check_round(&script, &caps(json!({"elicitation": {"url": {}}}))).unwrap_err();
        assert_eq!(refused.key(), Some("u"));
        assert!(matches!(refused, RoundRefusal::Invalid { .. }));
        let tools = requests(
            json!({"s": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5, "tools": []}}}),
        );
        assert!(matches!(check_round(&tools, &caps(json!({"sampling": {}}))), Err(RoundRefusal::Undeclared { .. })));
        assert!(check_round(&tools, &caps(json!({"sampling": {"tools": {}}}))).is_ok());
    }

    #[test]
    fn unknown_invalid_and_too_many_requests_are_refused() {
        let bad = requests(json!({"x": {"method": "tasks/get"}, "y": {"method": "elicitation/create", "params": {}}}));
        let refused = check_round(&bad, &caps(json!({"elicitation": {}}))).unwrap_err();
        assert_eq!(refused.key(), Some("x"));
        assert!(refused.to_string().ends_with("unknown method"), "{refused}");
        let many: Map<String, Value> = (0..17).map(|i| (format!("k{i}"), json!({"method": "roots/list"}))).collect();
        let refused = check_round(&requests(Value::Object(many)), &caps(json!({"roots": {}}))).unwrap_err();
        assert_eq!(refused, RoundRefusal::TooManyRequests { count: 17, limit: MAX_INPUT_REQUESTS_PER_ROUND });
    }

    #[test]
    fn answers_are_read_by_the_request_kind() {
        let form: InputRequest = serde_json::from_str(FORM).unwrap();
        assert!(parse_answer(&form, json!({"action": "decline"})).is_ok());
        assert!(matches!(parse_answer(&form, json!({"nothing": true})), Err(AnswerError::DoesNotFit(_))));
        let roots = roots_request();
        assert!(parse_answer(&roots, json!({"roots": [{"uri": "file:///w"}]})).is_ok());
        let refused = parse_answer(&roots, json!({"roots": [{"uri": "https://secret.example/w"}]})).unwrap_err();
        assert_eq!(refused, AnswerError::RootNotAFile);
        assert!(!refused.to_string().contains("secret"), "the answer's values are never quoted");
        let elicited = parse_answer(&form, json!({"action": "decline"})).unwrap();
        assert!(matches!(check_answer_kind(&roots, &elicited), Err(AnswerError::DoesNotFit(_))));
        let unknown: InputRequest = serde_json::from_value(json!({"method": "tasks/get"})).unwrap();
        assert_eq!(parse_answer(&unknown, json!({})), Err(AnswerError::NotAnswerable));
    }

    #[test]
    fn absolute_urls_are_told_from_others() {
        assert!(is_absolute_url("https://example.com/x?y=1"));
        assert!(!is_absolute_url("/relative"));
        assert!(!is_absolute_url("https://"));
        assert!(!is_absolute_url("https://exa mple.com"));
        assert!(!is_absolute_url("1http://x"));
    }

    #[test]
    fn a_url_elicitation_opens_web_pages_only() {
        for good in ["https://example.com/x?y=1", "HTTP://127.0.0.1:8080/cb"] {
            assert_eq!(check_elicitation_url(good), Ok(()), "{good}");
        }
        for bad in [
            "javascript:alert(1)",
            "javascript://example.com/%0aalert(1)",
            "file:///etc/passwd",
            "file://localhost/etc/passwd",
            "data:text/html,<script>alert(1)</script>",
            "vscode://evil.extension/run",
            "https:///nohost",
            "/relative",
        ] {
            assert_eq!(check_elicitation_url(bad), Err(NotAWebUrl), "{bad}");
        }
    }

    #[test]
    fn a_final_result_ends_the_loop_at_once() {
        let mut rounds = Rounds::new(Map::new(), MAX_ROUNDS);
        let done = rounds.on_result(json!({"content": []}), &ClientCapabilities::default()).unwrap();
        assert_eq!(done, Step::Done(json!({"content": []})));
        assert_eq!(rounds.round(), 0);
    }

    #[test]
    fn a_malformed_input_required_result_is_an_error() {
        let mut rounds = Rounds::new(Map::new(), MAX_ROUNDS);
        let bad = json!({"resultType": "input_required", "inputRequests": 5});
        assert!(matches!(rounds.on_result(bad, &caps(json!({"roots": {}}))), Err(RoundError::InvalidResult { .. })));
    }

    proptest! {
        /// Whatever the server's sequence of states, the loop asks at most
        /// `max` rounds, each attempt carries exactly the last round's
        /// answers and state, and the caller's own params are untouched.
        #[test]
        fn rounds_carry_the_last_answers_and_state_only(
            max in 0usize..6,
            states in proptest::collection::vec(proptest::option::of("[a-z]{1,8}"), 0..10),
            keep in "[a-z]{1,8}",
        ) {
            let client = caps(json!({"roots": {}}));
            let first = Map::from_iter([("name".to_owned(), json!(keep.clone()))]);
            let mut rounds = Rounds::new(first, max);
            let mut attempts = 1;
            let mut outcome = None;
            for state in &states {
                match rounds.on_result(asking(state.as_deref()), &client) {
                    Ok(Step::Ask(asked)) => prop_assert_eq!(asked.len(), 1),
                    other => { outcome = Some(other); break; }
                }
                rounds.answered(roots_answer());
                attempts += 1;
                let params = rounds.params();
                prop_assert_eq!(&params["name"], &json!(keep.clone()));
                let sent_state = state.as_ref().map(|s| json!(s));
                prop_assert_eq!(params.get("requestState"), sent_state.as_ref());
                prop_assert_eq!(rounds.carries_state(), state.is_some());
                prop_assert_eq!(params["inputResponses"]["r"]["roots"].clone(), json!([]));
            }
            prop_assert!(attempts <= max + 1);
            match outcome {
                Some(Err(RoundError::TooManyRounds { limit })) => {
                    prop_assert_eq!(limit, max);
                    prop_assert_eq!(rounds.round(), max);
                }
                Some(other) => prop_assert!(false, "unexpected {:?}", other),
                None => prop_assert!(states.len() <= max),
            }
        }
    }
}

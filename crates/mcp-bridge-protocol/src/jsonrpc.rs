//! JSON-RPC 2.0 messages: decoding a line into a classified [`Message`], and
//! the envelope types that are written back.
//!
//! Decoding checks, in order, and stops at the first failure:
//!
//! ```text
//!  bytes ─▶ UTF-8 ─▶ depth (raw bytes) ─▶ JSON value ─▶ shape: which members,
//!                                                       of which types
//!          parse_error   too_deep        parse_error    invalid_request_shape
//! ```
//!
//! The shape check is one classification by which members are present
//! (`method`, `id`, `result`, `error`), never an attempt at variants in turn,
//! so its error names the exact rule that failed ([`ShapeRule`]).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::RequestId;
use crate::error_code;

/// The `"jsonrpc": "2.0"` member: a unit value that only reads and writes `"2.0"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct JsonRpcVersion;

impl Serialize for JsonRpcVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("2.0")
    }
}

impl<'de> Deserialize<'de> for JsonRpcVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = String::deserialize(d)?;
        if v == "2.0" { Ok(JsonRpcVersion) } else { Err(serde::de::Error::custom("jsonrpc must be \"2.0\"")) }
    }
}

/// A request: it has a `method` and an `id`, and expects one response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id the response will carry.
    pub id: RequestId,
    /// The method name, such as `tools/call`.
    pub method: String,
    /// The params object, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// Members JSON-RPC does not define, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl JsonRpcRequest {
    /// A request with no extra members.
    pub fn new(id: RequestId, method: impl Into<String>, params: Option<Value>) -> Self {
        JsonRpcRequest { jsonrpc: JsonRpcVersion, id, method: method.into(), params, extra: Map::new() }
    }
}

/// A notification: a `method` without an `id`; nothing answers it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcNotification {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The notification name, such as `notifications/progress`.
    pub method: String,
    /// The params object, when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// Members JSON-RPC does not define, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl JsonRpcNotification {
    /// A notification with no extra members.
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        JsonRpcNotification { jsonrpc: JsonRpcVersion, method: method.into(), params, extra: Map::new() }
    }

    /// The request this notification cancels: `Some` only for a
    /// `notifications/cancelled` naming a valid id (2025-11-25 lets it name
    /// none).
    pub fn cancelled_request(&self) -> Option<RequestId> {
        use crate::method::{Method, NotificationsCancelled};
        if self.method != NotificationsCancelled::NAME {
            return None;
        }
        crate::types::CancelledNotificationParams::deserialize(self.params.as_ref()?).ok()?.request_id
    }
}

/// A successful response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResultResponse {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request this answers.
    pub id: RequestId,
    /// The result object.
    pub result: Value,
    /// Members JSON-RPC does not define, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl JsonRpcResultResponse {
    /// A response with no extra members.
    pub fn new(id: RequestId, result: Value) -> Self {
        JsonRpcResultResponse { jsonrpc: JsonRpcVersion, id, result, extra: Map::new() }
    }
}

/// An error response. Its `id` is absent when the request's id could not be
/// read (a parse error, for example).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcErrorResponse {
    /// Always `"2.0"`.
    pub jsonrpc: JsonRpcVersion,
    /// The id of the request this answers, when known. An unknown id is left
    /// out, as both MCP schemas define it; a `null` id is accepted on input
    /// (JSON-RPC 2.0 section 5 writes one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<RequestId>,
    /// What went wrong.
    pub error: ErrorObject,
    /// Members JSON-RPC does not define, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl JsonRpcErrorResponse {
    /// An error response with no extra members.
    pub fn new(id: Option<RequestId>, error: ErrorObject) -> Self {
        JsonRpcErrorResponse { jsonrpc: JsonRpcVersion, id, error, extra: Map::new() }
    }
}

/// The `error` member of an error response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// One of [`crate::error_code`], or an application code.
    pub code: i64,
    /// A short description for humans.
    pub message: String,
    /// Structured detail; `null` is kept apart from absent.
    #[serde(default, deserialize_with = "crate::serde_util::present", skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Members JSON-RPC does not define, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ErrorObject {
    /// An error without data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None, extra: Map::new() }
    }

    /// The same error with `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

/// Any one JSON-RPC 2.0 message, classified.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Message {
    /// A request, which expects a response.
    Request(JsonRpcRequest),
    /// A notification.
    Notification(JsonRpcNotification),
    /// A successful response.
    Result(JsonRpcResultResponse),
    /// An error response.
    Error(JsonRpcErrorResponse),
}

impl Message {
    /// The message as one line of JSON with its `\n`, ready for a stdio peer.
    pub fn to_line(&self) -> Vec<u8> {
        encode_line(self)
    }
}

/// Serializes a message as one line ending in `\n`. Compact JSON never
/// contains a raw newline, so the result is always exactly one frame.
pub fn encode_line<T: Serialize + ?Sized>(message: &T) -> Vec<u8> {
    let mut out = Vec::new();
    append_line(&mut out, message);
    out
}

/// Appends a message as one line (JSON text and `\n`) to `out`, so that
/// several lines can go out in one write.
pub fn append_line<T: Serialize + ?Sized>(out: &mut Vec<u8>, message: &T) {
    // Serializing a type made of serde_json values and derived structs with
    // string keys cannot fail.
    serde_json::to_writer(&mut *out, message).expect("invariant: JSON-RPC messages always serialize");
    out.push(b'\n');
}

/// Appends a message as one line, exactly as [`append_line`] does, with
/// the result of a response written by [`crate::json_writer`]: a large text
/// result is re-encoded several times faster than by serde_json.
pub fn append_message_line(out: &mut Vec<u8>, message: &Message) {
    match message {
        Message::Result(response) if response.extra.is_empty() => {
            out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
            match &response.id {
                RequestId::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
                RequestId::String(s) => crate::json_writer::write_str(out, s),
            }
            out.extend_from_slice(b",\"result\":");
            crate::json_writer::write_value(out, &response.result);
            out.extend_from_slice(b"}\n");
        }
        other => append_line(out, other),
    }
}

/// A message as one JSON text without a line end, for transports that
/// frame messages themselves (a WebSocket text message).
pub fn encode_text<T: Serialize + ?Sized>(message: &T) -> String {
    // As in encode_line: these types always serialize.
    serde_json::to_string(message).expect("invariant: JSON-RPC messages always serialize")
}

/// Why a line is not a JSON-RPC 2.0 message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The bytes are not UTF-8.
    #[error("message is not valid UTF-8 (invalid byte at offset {valid_up_to})")]
    InvalidUtf8 {
        /// Offset of the first byte that is not part of valid UTF-8.
        valid_up_to: usize,
    },
    /// The bytes are not JSON.
    #[error("message is not valid JSON ({reason} at line {line} column {column})")]
    InvalidJson {
        /// Line of the error, from 1.
        line: usize,
        /// Column of the error, from 1.
        column: usize,
        /// The parser's description, which never quotes the input.
        reason: String,
    },
    /// Objects and arrays nest deeper than the limit.
    #[error("message nests deeper than {limit} levels")]
    TooDeep {
        /// The limit that was exceeded.
        limit: usize,
    },
    /// Valid JSON that is not a JSON-RPC 2.0 message.
    #[error("not a JSON-RPC 2.0 message: {rule}")]
    InvalidShape {
        /// The rule the message broke.
        rule: ShapeRule,
        /// The message's id, when it had a valid one.
        id: Option<RequestId>,
    },
}

/// The rules of the JSON-RPC 2.0 message shape, one per way to break them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeRule {
    /// The message is not a JSON object (MCP has no batches).
    #[error("the message is not an object")]
    NotAnObject,
    /// `jsonrpc` is missing or not `"2.0"`.
    #[error("jsonrpc must be \"2.0\"")]
    Version,
    /// `method` is not a string.
    #[error("method must be a string")]
    MethodType,
    /// `params` is present and not an object.
    #[error("params must be an object")]
    ParamsType,
    /// A request's `id` is `null`, fractional, a boolean or a container.
    #[error("a request id must be an integer or a string")]
    RequestIdType,
    /// A response's `id` is missing, `null` or of the wrong type.
    #[error("a response id must be an integer or a string")]
    ResponseIdType,
    /// A message with a `method` also has `result` or `error`.
    #[error("a request must not have result or error")]
    RequestWithOutcome,
    /// A response has both `result` and `error`, or neither.
    #[error("a response must have exactly one of result and error")]
    ResponseOutcome,
    /// `error` is not an object with an integer `code` and a string `message`.
    #[error("error must be an object with an integer code and a string message")]
    ErrorObject,
}

impl DecodeError {
    /// The JSON-RPC code that answers this error.
    pub fn code(&self) -> i64 {
        match self {
            DecodeError::InvalidUtf8 { .. } | DecodeError::InvalidJson { .. } => error_code::PARSE_ERROR,
            DecodeError::TooDeep { .. } | DecodeError::InvalidShape { .. } => error_code::INVALID_REQUEST,
        }
    }

    /// The short cause name used in `error.data.cause`.
    pub fn cause(&self) -> &'static str {
        match self {
            DecodeError::InvalidUtf8 { .. } | DecodeError::InvalidJson { .. } => "parse_error",
            DecodeError::TooDeep { .. } => "too_deep",
            DecodeError::InvalidShape { .. } => "invalid_request_shape",
        }
    }

    /// The id to answer this error with: the id of a message whose shape
    /// was wrong, or the id found in the edges of `line` when it could not
    /// be parsed at all.
    pub fn reply_id(&self, line: &[u8]) -> Option<RequestId> {
        match self {
            DecodeError::InvalidShape { id, .. } => id.clone(),
            _ => crate::recover::recover_id(line),
        }
    }

    /// The error object that answers this error: code, a fixed message, and
    /// `data` with the cause and the detail. Nothing of the input is quoted.
    pub fn to_error_object(&self) -> ErrorObject {
        let (message, detail) = match self {
            DecodeError::InvalidUtf8 { .. } | DecodeError::InvalidJson { .. } => {
                ("Parse error", Value::String(self.to_string()))
            }
            DecodeError::TooDeep { limit } => ("Invalid request: message nests too deep", Value::from(*limit)),
            DecodeError::InvalidShape { rule, .. } => {
                ("Invalid request: not a JSON-RPC 2.0 message", Value::String(rule.to_string()))
            }
        };
        ErrorObject::new(self.code(), message).with_data(serde_json::json!({ "cause": self.cause(), "detail": detail }))
    }
}

/// Decodes one line into a classified message.
///
/// `max_depth` is the nesting limit ([`crate::depth::CLIENT_MAX_DEPTH`] for a
/// client's messages, [`crate::depth::UPSTREAM_MAX_DEPTH`] for a server's);
/// it is checked before a value is built, and bounds the parser's recursion.
///
/// # Errors
/// [`DecodeError`], naming the first check that failed. The caller can recover
/// the id of an unparseable line with [`crate::recover::recover_id`].
pub fn decode_message(line: &[u8], max_depth: usize) -> Result<Message, DecodeError> {
    let text = std::str::from_utf8(line).map_err(|e| DecodeError::InvalidUtf8 { valid_up_to: e.valid_up_to() })?;
    crate::depth::check_depth(line, max_depth).map_err(|e| DecodeError::TooDeep { limit: e.limit })?;
    let mut de = serde_json::Deserializer::from_str(text);
    // Depth is already bounded by `check_depth`, which is also what keeps
    // the recursion of this parser and of the value's drop shallow.
    de.disable_recursion_limit();
    let value = Value::deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| DecodeError::InvalidJson { line: e.line(), column: e.column(), reason: json_reason(&e) })?;
    classify(value)
}

/// The parser's own words without its position suffix.
fn json_reason(e: &serde_json::Error) -> String {
    let full = e.to_string();
    match full.rfind(" at line ") {
        Some(at) => full[..at].to_owned(),
        None => full,
    }
}

/// Classifies a parsed value as a JSON-RPC 2.0 message.
///
/// # Errors
/// [`DecodeError::InvalidShape`] with the rule that failed and, where it was
/// valid, the message's id.
pub fn classify(value: Value) -> Result<Message, DecodeError> {
    let Value::Object(mut obj) = value else {
        return Err(DecodeError::InvalidShape { rule: ShapeRule::NotAnObject, id: None });
    };
    let id_value = obj.remove("id");
    let id = id_value.as_ref().and_then(|v| RequestId::try_from_value(v).ok());
    let fail = |rule| Err(DecodeError::InvalidShape { rule, id: id.clone() });

    if obj.remove("jsonrpc").as_ref().and_then(Value::as_str) != Some("2.0") {
        return fail(ShapeRule::Version);
    }
    let result = obj.remove("result");
    let error = obj.remove("error");

    if let Some(method) = obj.remove("method") {
        let Value::String(method) = method else { return fail(ShapeRule::MethodType) };
        if result.is_some() || error.is_some() {
            return fail(ShapeRule::RequestWithOutcome);
        }
        let params = obj.remove("params");
        if params.as_ref().is_some_and(|p| !p.is_object()) {
            return fail(ShapeRule::ParamsType);
        }
        return match (id_value, id.clone()) {
            (None, _) => {
                Ok(Message::Notification(JsonRpcNotification { jsonrpc: JsonRpcVersion, method, params, extra: obj }))
            }
            (Some(_), Some(id)) => {
                Ok(Message::Request(JsonRpcRequest { jsonrpc: JsonRpcVersion, id, method, params, extra: obj }))
            }
            (Some(_), None) => fail(ShapeRule::RequestIdType),
        };
    }

    match (result, error) {
        (Some(result), None) => match id {
            Some(id) => Ok(Message::Result(JsonRpcResultResponse { jsonrpc: JsonRpcVersion, id, result, extra: obj })),
            None => fail(ShapeRule::ResponseIdType),
        },
        (None, Some(error)) => {
            // An error response may have a null id (or none); any other
            // non-id value breaks the rule.
            if id.is_none() && id_value.as_ref().is_some_and(|v| !v.is_null()) {
                return fail(ShapeRule::ResponseIdType);
            }
            let error: ErrorObject = match serde_json::from_value(error) {
                Ok(e) => e,
                Err(_) => return fail(ShapeRule::ErrorObject),
            };
            Ok(Message::Error(JsonRpcErrorResponse { jsonrpc: JsonRpcVersion, id, error, extra: obj }))
        }
        _ => fail(ShapeRule::ResponseOutcome),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cancellation_names_its_request_when_it_names_a_valid_one() {
        let cancelled = |params: Value| JsonRpcNotification::new("notifications/cancelled", Some(params));
        assert_eq!(cancelled(serde_json::json!({"requestId": 4})).cancelled_request(), Some(4.into()));
        assert_eq!(
            cancelled(serde_json::json!({"requestId": "a", "reason": "x"})).cancelled_request(),
            Some("a".into())
        );
        assert_eq!(cancelled(serde_json::json!({"requestId": null})).cancelled_request(), None);
        assert_eq!(cancelled(serde_json::json!({"requestId": true})).cancelled_request(), None);
        assert_eq!(cancelled(serde_json::json!({})).cancelled_request(), None);
        assert_eq!(JsonRpcNotification::new("notifications/cancelled", None).cancelled_request(), None);
        let other = JsonRpcNotification::new("notifications/progress", Some(serde_json::json!({"requestId": 4})));
        assert_eq!(other.cancelled_request(), None);
    }

    use super::*;
    use serde_json::json;

    fn decode(v: Value) -> Result<Message, DecodeError> {
        decode_message(v.to_string().as_bytes(), 64)
    }

    #[test]
    fn message_lines_are_the_same_with_the_fast_result_writer() {
        let text: String = (0u8..0x80).map(char::from).collect();
        let mut with_extra = JsonRpcResultResponse::new(RequestId::Number(9), json!({}));
        with_extra.extra.insert("x".into(), json!(1));
        let messages = [
            Message::Result(JsonRpcResultResponse::new(RequestId::Number(-7), json!({"content": [{"text": text}]}))),
            Message::Result(JsonRpcResultResponse::new(RequestId::String("b-\"1".into()), json!({"n": 1.5}))),
            Message::Result(with_extra),
            Message::Notification(JsonRpcNotification::new("notifications/progress", Some(json!({"p": 1})))),
        ];
        for message in &messages {
            let mut fast = Vec::new();
            append_message_line(&mut fast, message);
            assert_eq!(String::from_utf8(fast).unwrap(), String::from_utf8(encode_line(message)).unwrap());
        }
    }

    fn shape(v: Value) -> ShapeRule {
        match decode(v) {
            Err(DecodeError::InvalidShape { rule, .. }) => rule,
            other => panic!("expected a shape error, got {other:?}"),
        }
    }

    #[test]
    fn request_notification_and_responses_are_classified() {
        assert!(matches!(
            decode(json!({"jsonrpc":"2.0","id":1,"method":"ping"})),
            Ok(Message::Request(r)) if r.id == 1.into() && r.params.is_none()
        ));
        assert!(matches!(
            decode(json!({"jsonrpc":"2.0","method":"notifications/initialized","params":{}})),
            Ok(Message::Notification(n)) if n.method == "notifications/initialized"
        ));
        assert!(matches!(
            decode(json!({"jsonrpc":"2.0","id":"b-1","result":{}})),
            Ok(Message::Result(r)) if r.id == "b-1".into()
        ));
        assert!(matches!(
            decode(json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x","data":null}})),
            Ok(Message::Error(e)) if e.id.is_none() && e.error.data == Some(Value::Null)
        ));
    }

    #[test]
    fn every_shape_rule_is_reported() {
        assert_eq!(shape(json!([1])), ShapeRule::NotAnObject);
        assert_eq!(shape(json!({"id":1,"method":"x"})), ShapeRule::Version);
        assert_eq!(shape(json!({"jsonrpc":"1.0","id":1,"method":"x"})), ShapeRule::Version);
        assert_eq!(shape(json!({"jsonrpc":"2.0","id":1,"method":5})), ShapeRule::MethodType);
        assert_eq!(shape(json!({"jsonrpc":"2.0","id":1,"method":"x","params":[1]})), ShapeRule::ParamsType);
        for bad in [json!(null), json!(1.5), json!(true), json!({})] {
            assert_eq!(shape(json!({"jsonrpc":"2.0","id":bad,"method":"x"})), ShapeRule::RequestIdType);
        }
        assert_eq!(shape(json!({"jsonrpc":"2.0","id":1,"method":"x","result":{}})), ShapeRule::RequestWithOutcome);
        assert_eq!(shape(json!({"jsonrpc":"2.0","id":null,"result":{}})), ShapeRule::ResponseIdType);
        assert_eq!(shape(json!({"jsonrpc":"2.0","result":{}})), ShapeRule::ResponseIdType);
        assert_eq!(
            shape(json!({"jsonrpc":"2.0","id":true,"error":{"code":1,"message":"m"}})),
            ShapeRule::ResponseIdType
        );
        assert_eq!(shape(json!({"jsonrpc":"2.0","id":1})), ShapeRule::ResponseOutcome);
        assert_eq!(shape(json!({"jsonrpc":"2.0","id":1,"result":{},"error":{}})), ShapeRule::ResponseOutcome);
        assert_eq!(shape(json!({"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}})), ShapeRule::ErrorObject);
    }

    #[test]
    fn shape_error_keeps_a_valid_id() {
        let err = decode(json!({"jsonrpc":"2.0","id":"q","method":"x","params":3})).unwrap_err();
        assert_eq!(err, DecodeError::InvalidShape { rule: ShapeRule::ParamsType, id: Some("q".into()) });
        assert_eq!(err.code(), error_code::INVALID_REQUEST);
        assert_eq!(err.to_error_object().data.unwrap()["cause"], "invalid_request_shape");
    }

    #[test]
    fn invalid_utf8_is_a_parse_error() {
        let err = decode_message(b"{\"a\":\"\xff\"}", 64).unwrap_err();
        assert_eq!(err, DecodeError::InvalidUtf8 { valid_up_to: 6 });
        assert_eq!((err.code(), err.cause()), (error_code::PARSE_ERROR, "parse_error"));
    }

    #[test]
    fn invalid_json_is_a_parse_error_that_quotes_nothing() {
        let err = decode_message(b"{\"secret-token-abc\": }", 64).unwrap_err();
        assert!(matches!(err, DecodeError::InvalidJson { line: 1, .. }));
        let text = serde_json::to_string(&err.to_error_object()).unwrap();
        assert!(!text.contains("secret-token-abc"), "{text}");
        assert!(decode_message(b"{} {}", 64).is_err(), "trailing data");
    }

    #[test]
    fn reply_id_comes_from_the_shape_or_the_line_edges() {
        let line = br#"{"jsonrpc":"2.0","id":17,"method":"x","params":{"a":[}}"#;
        let err = decode_message(line, 64).unwrap_err();
        assert!(matches!(err, DecodeError::InvalidJson { .. }));
        assert_eq!(err.reply_id(line), Some(17.into()));
        let line = br#"{"jsonrpc":"2.0","id":"s","method":7}"#;
        assert_eq!(decode_message(line, 64).unwrap_err().reply_id(line), Some("s".into()));
    }

    #[test]
    fn too_deep_is_rejected_before_parsing() {
        let line = "[".repeat(100_000);
        let err = decode_message(line.as_bytes(), 64).unwrap_err();
        assert_eq!(err, DecodeError::TooDeep { limit: 64 });
        assert_eq!(err.to_error_object().data.unwrap()["detail"], 64);
    }

    #[test]
    fn depth_between_serde_default_and_upstream_limit_parses() {
        let inner = "[".repeat(190) + &"]".repeat(190);
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"x":{inner}}}}}"#);
        assert!(matches!(decode_message(line.as_bytes(), 200), Ok(Message::Result(_))));
    }

    #[test]
    fn unknown_members_survive_a_round_trip() {
        let v = json!({"jsonrpc":"2.0","id":3,"method":"m","params":{"a":1},"x-extra":[1]});
        let m = decode(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(&m).unwrap(), v);
        let line = m.to_line();
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(decode_message(&line[..line.len() - 1], 64).unwrap(), m);
    }
}

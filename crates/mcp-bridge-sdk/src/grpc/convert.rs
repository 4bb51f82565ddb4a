//! Between MCP's JSON (the params and results of JSON-RPC, as the client
//! and the server of this crate speak them) and the messages of Google's
//! proto, both ways: the client sends requests and reads responses, the
//! service reads requests and sends responses. No I/O here.
//!
//! What the proto has no field for is not dropped: a JSON member without a
//! field travels in the `metadata` Struct (the proto's `_meta`) under
//! [`MEMBERS_KEY`] and comes back as a member on the other side. What the
//! proto cannot express at all (an elicitation schema of another shape, a
//! cursor) is an [`Unmappable`] error.

mod content;
mod input;
mod items;
mod requests;
mod schema;

use base64::Engine;
use serde_json::{Map, Value};

use super::json::{from_struct, to_struct};
use super::proto;

pub use requests::{RpcRequest, RpcResponse};

/// The `metadata` key under which JSON members the proto has no field for
/// travel.
pub const MEMBERS_KEY: &str = "dev.mcp-bridge/members";

/// Something the proto cannot carry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unmappable(pub String);

/// The members of a JSON object not taken yet.
pub(crate) struct Members(Map<String, Value>);

impl Members {
    /// The members of `value` (none when it is not an object).
    pub(crate) fn of(value: Value) -> Self {
        match value {
            Value::Object(map) => Members(map),
            _ => Members(Map::new()),
        }
    }

    pub(crate) fn take(&mut self, key: &str) -> Option<Value> {
        self.0.remove(key)
    }

    /// A string member; empty when absent (proto3's default).
    pub(crate) fn string(&mut self, key: &str) -> String {
        self.opt_string(key).unwrap_or_default()
    }

    pub(crate) fn opt_string(&mut self, key: &str) -> Option<String> {
        match self.0.remove(key) {
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                // Not a string: kept as it is, among the other members.
                self.0.insert(key.to_owned(), other);
                None
            }
            None => None,
        }
    }

    pub(crate) fn object(&mut self, key: &str) -> Option<Map<String, Value>> {
        match self.0.remove(key) {
            Some(Value::Object(map)) => Some(map),
            Some(other) => {
                self.0.insert(key.to_owned(), other);
                None
            }
            None => None,
        }
    }

    pub(crate) fn array(&mut self, key: &str) -> Vec<Value> {
        match self.0.remove(key) {
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.0.insert(key.to_owned(), other);
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    pub(crate) fn strings(&mut self, key: &str) -> Vec<String> {
        self.array(key).into_iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()
    }

    pub(crate) fn bool(&mut self, key: &str) -> Option<bool> {
        self.0.remove(key).and_then(|v| v.as_bool())
    }

    pub(crate) fn f64(&mut self, key: &str) -> Option<f64> {
        self.0.remove(key).and_then(|v| v.as_f64())
    }

    /// `_meta` and the members left, as the proto's `metadata`.
    pub(crate) fn into_metadata(mut self) -> Option<prost_types::Struct> {
        let meta = self.object("_meta").unwrap_or_default();
        metadata(meta, self.0)
    }
}

/// The proto's `metadata` of `_meta` and the members without a field.
pub(crate) fn metadata(mut meta: Map<String, Value>, rest: Map<String, Value>) -> Option<prost_types::Struct> {
    if !rest.is_empty() {
        meta.insert(MEMBERS_KEY.into(), Value::Object(rest));
    }
    (!meta.is_empty()).then(|| to_struct(&meta))
}

/// A JSON object being built from a proto message.
#[derive(Default)]
pub(crate) struct Object(Map<String, Value>);

impl Object {
    pub(crate) fn set(&mut self, key: &str, value: impl Into<Value>) -> &mut Self {
        self.0.insert(key.to_owned(), value.into());
        self
    }

    /// Sets `key` to `value` unless it is empty (proto3 has no absent strings).
    pub(crate) fn text(&mut self, key: &str, value: String) -> &mut Self {
        if !value.is_empty() {
            self.0.insert(key.to_owned(), Value::String(value));
        }
        self
    }

    pub(crate) fn some(&mut self, key: &str, value: Option<impl Into<Value>>) -> &mut Self {
        if let Some(value) = value {
            self.0.insert(key.to_owned(), value.into());
        }
        self
    }

    /// Sets `key` to `items` unless there are none.
    pub(crate) fn list(&mut self, key: &str, items: Vec<Value>) -> &mut Self {
        if !items.is_empty() {
            self.0.insert(key.to_owned(), Value::Array(items));
        }
        self
    }

    /// Puts back `_meta` and the members that travelled in `metadata`.
    pub(crate) fn metadata(&mut self, metadata: Option<prost_types::Struct>) -> &mut Self {
        let (meta, members) = unpack(metadata);
        for (key, value) in members {
            self.0.entry(key).or_insert(value);
        }
        if !meta.is_empty() {
            self.0.insert("_meta".into(), Value::Object(meta));
        }
        self
    }

    pub(crate) fn build(&mut self) -> Value {
        Value::Object(std::mem::take(&mut self.0))
    }
}

/// `_meta` and the members of a `metadata` Struct.
pub(crate) fn unpack(metadata: Option<prost_types::Struct>) -> (Map<String, Value>, Map<String, Value>) {
    let mut meta = metadata.map(from_struct).unwrap_or_default();
    let members = match meta.remove(MEMBERS_KEY) {
        Some(Value::Object(members)) => members,
        _ => Map::new(),
    };
    (meta, members)
}

/// Base64 text (MCP's `data` and `blob`) as bytes.
pub(crate) fn decode_base64(what: &str, text: &str) -> Result<Vec<u8>, Unmappable> {
    base64::engine::general_purpose::STANDARD.decode(text).map_err(|e| Unmappable(format!("{what} is not base64: {e}")))
}

/// Bytes as MCP's base64 text.
pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The role of a message or an audience.
pub(crate) fn role_to_proto(role: &str) -> i32 {
    match role {
        "user" => proto::Role::User as i32,
        "assistant" => proto::Role::Assistant as i32,
        _ => proto::Role::Unknown as i32,
    }
}

pub(crate) fn role_from_proto(role: i32) -> Option<&'static str> {
    match proto::Role::try_from(role) {
        Ok(proto::Role::User) => Some("user"),
        Ok(proto::Role::Assistant) => Some("assistant"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn result_trip(method: &str, result: Value) -> Value {
        RpcResponse::from_json(method, result).unwrap().into_json().unwrap()
    }

    fn request_trip(method: &str, params: Value) -> Value {
        let Value::Object(params) = params else { panic!("params are an object") };
        let (back, params) = RpcRequest::from_json(method, params).unwrap().into_json().unwrap();
        assert_eq!(back, method);
        Value::Object(params)
    }

    #[test]
    fn a_tool_list_survives_the_proto_with_its_unknown_members() {
        let result = json!({
            "resultType": "complete",
            "tools": [{
                "name": "add", "title": "Add", "description": "Adds",
                "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
                "outputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
                "icons": [{"src": "https://x/i.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "dark"}],
                "execution": {"taskSupport": "optional"},
                "_meta": {"vendor/key": 1}
            }],
            "ttlMs": 60000,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
        });
        assert_eq!(result_trip("tools/list", result.clone()), result);
    }

    #[test]
    fn tool_results_of_every_content_kind_survive_the_proto() {
        let result = json!({
            "resultType": "complete",
            "content": [
                {"type": "text", "text": "hi", "annotations": {"audience": ["user"], "priority": 0.5}},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
                {"type": "audio", "data": "aGVsbG8=", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a", "name": "a", "mimeType": "text/plain", "size": 3},
                {"type": "resource", "resource": {"uri": "file:///b", "mimeType": "text/plain", "text": "b"}},
                {"type": "resource", "resource": {"uri": "file:///c", "blob": "AAE="}}
            ],
            "structuredContent": {"sum": 42},
            "isError": true
        });
        assert_eq!(result_trip("tools/call", result.clone()), result);
    }

    #[test]
    fn an_input_round_survives_the_proto_both_ways() {
        let asked = json!({
            "resultType": "input_required",
            "inputRequests": {
                "name": {"method": "elicitation/create", "params": {"mode": "form", "message": "Who?", "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "title": "Name", "minLength": 1, "format": "email", "default": "a@b.c"},
                        "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
                        "ratio": {"type": "number", "minimum": 0.5, "default": 1.5},
                        "ok": {"type": "boolean", "default": true},
                        "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 1, "maxItems": 2, "default": ["a"]}
                    },
                    "required": ["name"]
                }}},
                "login": {"method": "elicitation/create", "params": {"mode": "url", "message": "Sign in", "url": "https://x/login", "elicitationId": "e1"}},
                "roots": {"method": "roots/list"}
            },
            "requestState": "sealed"
        });
        assert_eq!(result_trip("tools/call", asked.clone()), asked);

        let retry = json!({
            "name": "ask", "arguments": {"n": 1},
            "inputResponses": {
                "name": {"action": "accept", "content": {"name": "Ada", "age": 36}},
                "roots": {"roots": [{"uri": "file:///w", "name": "w"}]},
                "sampled": {"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "m", "stopReason": "endTurn"}
            },
            "requestState": "sealed",
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
        });
        assert_eq!(request_trip("tools/call", retry.clone()), retry);
    }

    #[test]
    fn prompts_resources_and_completions_survive_the_proto() {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
        for (method, params) in [
            ("prompts/get", json!({"name": "greet", "arguments": {"name": "Ada"}, "_meta": meta})),
            ("resources/read", json!({"uri": "note://a", "_meta": meta})),
            (
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "n", "value": "A"},
                                           "context": {"arguments": {"style": "formal"}}, "_meta": meta}),
            ),
            (
                "completion/complete",
                json!({"ref": {"type": "ref/resource", "uri": "note://{n}"}, "argument": {"name": "n", "value": ""}, "_meta": meta}),
            ),
        ] {
            assert_eq!(request_trip(method, params.clone()), params, "{method}");
        }
        for (method, result) in [
            (
                "prompts/list",
                json!({"resultType": "complete", "prompts": [{"name": "greet", "arguments": [{"name": "name", "required": true}, {"name": "style"}]}]}),
            ),
            (
                "prompts/get",
                json!({"resultType": "complete", "description": "d", "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}),
            ),
            (
                "resources/list",
                json!({"resultType": "complete", "resources": [{"uri": "note://a", "name": "a", "annotations": {"lastModified": "2026-01-01T00:00:00Z"}}]}),
            ),
            (
                "resources/templates/list",
                json!({"resultType": "complete", "resourceTemplates": [{"uriTemplate": "note://{n}", "name": "n"}]}),
            ),
            (
                "resources/read",
                json!({"resultType": "complete", "contents": [{"uri": "note://a", "text": "x"}], "ttlMs": 0, "cacheScope": "private"}),
            ),
            (
                "completion/complete",
                json!({"resultType": "complete", "completion": {"values": ["Ada"], "total": 1, "hasMore": true}}),
            ),
        ] {
            assert_eq!(result_trip(method, result.clone()), result, "{method}");
        }
    }

    #[test]
    fn what_the_proto_cannot_carry_is_refused_by_name() {
        let refused = |method: &str, params: Value| match params {
            Value::Object(p) => RpcRequest::from_json(method, p).unwrap_err().0,
            _ => unreachable!(),
        };
        assert!(refused("tools/list", json!({"cursor": "2"})).contains("cursor"));
        assert!(refused("subscriptions/listen", json!({})).contains("no RPC"));
        assert!(refused("tasks/get", json!({})).contains("no RPC"));
        let odd_form = json!({"resultType": "input_required", "inputRequests": {"x": {"method": "elicitation/create",
            "params": {"message": "?", "requestedSchema": {"type": "object", "properties": {"o": {"type": "object"}}}}}}});
        let error = RpcResponse::from_json("tools/call", odd_form).unwrap_err();
        assert!(error.0.contains("\"object\""), "{error}");
        let bad_image = json!({"content": [{"type": "image", "data": "%%%", "mimeType": "image/png"}]});
        assert!(RpcResponse::from_json("tools/call", bad_image).unwrap_err().0.contains("base64"));
    }
}

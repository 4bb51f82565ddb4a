//! [`shape_result`](super::shape_result) on a result as it came on the
//! wire: the top-level members are read, the few the rules change are
//! rewritten, and every other member's text is passed on as it came, so a
//! large result is never built into a tree nor escaped again. Whatever
//! needs more than the top level (an input round, structured content
//! without text, a remote server's icons) is left to the tree. A rule added
//! to `shape_result` belongs here too: the proptest below compares the two.

use std::borrow::Cow;

use mcp_bridge_protocol::meta::SERVER_INFO_KEY;
use mcp_bridge_protocol::method::{Method, ToolsCall};
use mcp_bridge_protocol::types::ResultType;
use mcp_bridge_protocol::{LineParts, RawResult, RequestId, SplicedLine};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{DROPPED_RESULT_KEYS, Origin};

/// A content block, read for its type alone.
#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
}

/// The line of the response to the client's request `id` with the
/// upstream's complete `result` shaped for a 2025-11-25 client, its member
/// values taken from where they were read; the result back when it needs
/// the tree: it is not an object, asks for input, has structured content
/// and no text, or comes from a remote server.
pub(crate) fn response_line(
    method: &str,
    raw: RawResult,
    origin: Origin,
    id: &RequestId,
) -> Result<SplicedLine, RawResult> {
    match parts(method, &raw, origin, id) {
        Some(parts) => parts.finish(raw),
        None => Err(raw),
    }
}

/// A member value at least this long is written from the source; a
/// shorter one is copied, so a result of many small members is not as
/// many pieces to write.
const SPLICED_VALUE: usize = 4 * 1024;

/// Room for the response's envelope around the result: its `jsonrpc`,
/// `id` and `result` keys with an id of ordinary length.
const ENVELOPE: usize = 64;

/// The parts of [`response_line`], or `None` for the tree.
fn parts(method: &str, raw: &RawResult, origin: Origin, id: &RequestId) -> Option<LineParts> {
    if origin == Origin::Remote {
        return None;
    }
    let members = raw.members()?;
    let member = |name: &str| members.iter().find(|(key, _)| key == name).map(|(_, value)| *value);
    if let Some(kind) = member("resultType") {
        let kind: Cow<'_, str> = serde_json::from_str(kind).ok()?;
        if kind == ResultType::InputRequired.as_str() {
            return None;
        }
    }
    let tool_call = method == ToolsCall::NAME;
    let content = member("content").filter(|c| c.starts_with('['));
    if tool_call && member("structuredContent").is_some() && !has_text(content)? {
        return None;
    }

    // The own bytes are the result's, less the members written from the
    // source, and the envelope.
    let mut line = LineParts::with_capacity(raw.result().len().min(SPLICED_VALUE) + ENVELOPE);
    line.push_own(b"{\"jsonrpc\":\"2.0\",\"id\":");
    line.push_own(&serde_json::to_vec(id).ok()?);
    line.push_own(b",\"result\":{");
    let mut first = true;
    let mut push_key = |line: &mut LineParts, key: &str| {
        let mut bytes = Vec::with_capacity(key.len() + 4);
        if !std::mem::take(&mut first) {
            bytes.push(b',');
        }
        mcp_bridge_protocol::json_writer::write_str(&mut bytes, key);
        bytes.push(b':');
        line.push_own(&bytes);
    };
    for &(ref key, text) in &members {
        match key.as_str() {
            key if DROPPED_RESULT_KEYS.contains(&key) => {}
            "_meta" => {
                if let Some(meta) = shaped_meta(text)? {
                    push_key(&mut line, key);
                    line.push_own(meta.as_bytes());
                }
            }
            "nextCursor" if !text.starts_with('"') => {}
            "content" if tool_call && content.is_none() => {
                push_key(&mut line, key);
                line.push_own(b"[]");
            }
            _ => {
                push_key(&mut line, key);
                if text.len() < SPLICED_VALUE {
                    line.push_own(text.as_bytes());
                } else {
                    line.push_source(raw.span_of(text)?);
                }
            }
        }
    }
    if tool_call && member("content").is_none() {
        push_key(&mut line, "content");
        line.push_own(b"[]");
    }
    line.push_own(b"}}\n");
    Some(line)
}

/// Whether a `content` array has a text block; `None` when a block is not
/// an object (the tree decides).
fn has_text(content: Option<&str>) -> Option<bool> {
    let Some(content) = content else { return Some(false) };
    let blocks: Vec<&RawValue> = serde_json::from_str(content).ok()?;
    let mut any = false;
    for block in blocks {
        // A struct also reads from an array: only an object is a block here.
        if !block.get().starts_with('{') {
            return None;
        }
        let block: Block<'_> = serde_json::from_str(block.get()).ok()?;
        any |= block.kind.as_deref() == Some("text");
    }
    Some(any)
}

/// `_meta` without the server info: its text, or `None` (the member goes)
/// when nothing is left; the outer `None` when it could not be read.
fn shaped_meta(meta: &str) -> Option<Option<String>> {
    let mut meta: Value = serde_json::from_str(meta).ok()?;
    let Some(entries) = meta.as_object_mut() else { return Some(Some(meta.to_string())) };
    entries.remove(SERVER_INFO_KEY);
    Some((!entries.is_empty()).then(|| meta.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::legacy::translate::shape_result;
    use proptest::prelude::*;
    use serde_json::json;

    /// The result the client gets through the tree.
    fn by_tree(method: &str, result: &Value) -> Value {
        shape_result(method, result.clone(), Origin::Local)
    }

    /// The result the client gets through the raw line, or `None` when it
    /// is left to the tree.
    fn by_line(method: &str, result: &Value) -> Option<Value> {
        let line = json!({"jsonrpc": "2.0", "id": 3, "result": result}).to_string();
        let raw = RawResult::parse(line.into_bytes(), 64).expect("a result response");
        let spliced = response_line(method, raw, Origin::Local, &RequestId::String("c-1".into())).ok()?;
        let mut shaped = Vec::new();
        spliced.append_to(&mut shaped);
        assert!(shaped.ends_with(b"\n"));
        let response: Value = serde_json::from_slice(&shaped).expect("the line is JSON");
        assert_eq!(response["id"], "c-1");
        assert_eq!(response["jsonrpc"], "2.0");
        Some(response["result"].clone())
    }

    #[test]
    fn each_rule_fires_on_the_line_as_on_the_tree() {
        let cases = [
            // The 2026-07-28 members and the server info go.
            (
                "tools/call",
                json!({"content": [{"type": "text", "text": "hi"}], "resultType": "complete", "ttlMs": 5,
                       "cacheScope": "user", "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s"}}}),
                json!({"content": [{"type": "text", "text": "hi"}]}),
            ),
            // Other _meta entries stay.
            (
                "tools/call",
                json!({"content": [], "_meta": {"io.modelcontextprotocol/serverInfo": {}, "x": 1}}),
                json!({"content": [], "_meta": {"x": 1}}),
            ),
            // A cursor that is not a string goes; a string stays.
            ("tools/list", json!({"tools": [], "nextCursor": null}), json!({"tools": []})),
            ("tools/list", json!({"tools": [], "nextCursor": "n"}), json!({"tools": [], "nextCursor": "n"})),
            // A tool result always has content.
            ("tools/call", json!({"isError": true}), json!({"isError": true, "content": []})),
            ("tools/call", json!({"content": 5}), json!({"content": []})),
            // Structured content beside text passes as it is.
            (
                "tools/call",
                json!({"content": [{"type": "text", "text": "{}"}], "structuredContent": {"a": 1}}),
                json!({"content": [{"type": "text", "text": "{}"}], "structuredContent": {"a": 1}}),
            ),
        ];
        for (method, result, expected) in cases {
            assert_eq!(by_tree(method, &result), expected, "{method} {result}");
            assert_eq!(by_line(method, &result), Some(expected.clone()), "{method} {result}");
        }
    }

    #[test]
    fn what_needs_more_than_the_top_level_is_left_to_the_tree() {
        let input = json!({"resultType": "input_required", "inputRequests": {}});
        assert_eq!(by_line("tools/call", &input), None);
        let structured_only = json!({"content": [], "structuredContent": {"a": 1}});
        assert_eq!(by_line("tools/call", &structured_only), None);
        let odd_block = json!({"content": [7], "structuredContent": {"a": 1}});
        assert_eq!(by_line("tools/call", &odd_block), None);
        let array_block = json!({"content": [["text"]], "structuredContent": {"a": 1}});
        assert_eq!(by_line("tools/call", &array_block), None, "an array is no text block");
        assert_eq!(by_line("tools/call", &json!([1])), None);
        let line = br#"{"jsonrpc":"2.0","id":1,"result":{"icons":[{"src":"https://x"}]}}"#.to_vec();
        let raw = RawResult::parse(line, 64).expect("a result");
        assert!(response_line("tools/list", raw, Origin::Remote, &RequestId::Number(1)).is_err());
    }

    fn member_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<i64>().prop_map(Value::from),
            "[a-z\"\\\\é]{0,6}".prop_map(Value::String),
            Just(json!([{"type": "text", "text": "t"}])),
            Just(json!([{"type": "image", "data": "d"}])),
            Just(json!({"io.modelcontextprotocol/serverInfo": {"name": "s"}})),
            Just(json!({"k": [1, {"type": "text"}]})),
            Just(json!([["text"]])),
            Just(json!("x".repeat(SPLICED_VALUE))),
            Just(json!("complete")),
        ]
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("content".to_owned()),
            Just("structuredContent".to_owned()),
            Just("isError".to_owned()),
            Just("resultType".to_owned()),
            Just("ttlMs".to_owned()),
            Just("cacheScope".to_owned()),
            Just("_meta".to_owned()),
            Just("nextCursor".to_owned()),
            Just("tools".to_owned()),
            "[a-z\"é]{1,4}",
        ]
    }

    proptest! {
        /// Whatever the line path shapes, it shapes as the tree does.
        #[test]
        fn the_line_agrees_with_the_tree(
            members in prop::collection::vec((key(), member_value()), 0..6),
            method in prop_oneof![Just("tools/call"), Just("tools/list"), Just("resources/read")],
        ) {
            let result = Value::Object(members.into_iter().collect());
            if let Some(by_line) = by_line(method, &result) {
                prop_assert_eq!(by_line, by_tree(method, &result));
            }
        }
    }
}

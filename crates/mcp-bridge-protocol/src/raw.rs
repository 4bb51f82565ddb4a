//! A result response kept as the bytes it came in. The envelope is read
//! (the id) and the result checked against JSON's grammar, but no tree is
//! built: a relay that changes nothing inside a result writes those bytes
//! back out, and one that changes a top-level member rewrites only that
//! member. JSON's grammar allows what a tree of this crate cannot hold (a
//! lone surrogate escape, a number past `f64`): such a result is relayed
//! as it came, and [`RawResult::to_value`] says it cannot be read.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::RequestId;

/// A JSON-RPC result response as it came: its line, its id, and where its
/// result lies in the line.
#[derive(Debug, Clone)]
pub struct RawResult {
    line: String,
    id: RequestId,
    result: std::ops::Range<usize>,
}

/// The envelope of a result response, borrowed from its line. A member
/// JSON-RPC does not define makes it something else (kept by
/// [`decode_message`](crate::decode_message)).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope<'a> {
    jsonrpc: &'a str,
    id: Value,
    #[serde(borrow)]
    result: &'a RawValue,
}

impl RawResult {
    /// Reads `line` as a result response nested at most `max_depth` deep.
    ///
    /// # Errors
    /// The line back when it is anything else (a request, a notification,
    /// an error response, a response with members JSON-RPC does not define,
    /// or no JSON at all): [`decode_message`](crate::decode_message) tells
    /// which.
    pub fn parse(line: Vec<u8>, max_depth: usize) -> Result<RawResult, Vec<u8>> {
        if crate::depth::check_depth(&line, max_depth).is_err() {
            return Err(line);
        }
        let line = match String::from_utf8(line) {
            Ok(line) => line,
            Err(e) => return Err(e.into_bytes()),
        };
        let parts = {
            let mut de = serde_json::Deserializer::from_str(&line);
            // `check_depth` bounds the nesting, as in `decode_message`.
            de.disable_recursion_limit();
            Envelope::deserialize(&mut de).ok().filter(|_| de.end().is_ok()).and_then(|envelope| {
                let id = RequestId::try_from_value(&envelope.id).ok().filter(|_| envelope.jsonrpc == "2.0")?;
                let text = envelope.result.get();
                let start = (text.as_ptr() as usize).checked_sub(line.as_ptr() as usize)?;
                Some((id, start..start + text.len()))
            })
        };
        match parts {
            Some((id, result)) => Ok(RawResult { line, id, result }),
            None => Err(line.into_bytes()),
        }
    }

    /// The id of the request it answers.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The result as JSON text, exactly as it came.
    pub fn result(&self) -> &str {
        &self.line[self.result.clone()]
    }

    /// Where `text`, a piece of this response's own text (a member's value
    /// from [`RawResult::members`]), lies in its line.
    pub fn span_of(&self, text: &str) -> Option<std::ops::Range<usize>> {
        let start = (text.as_ptr() as usize).checked_sub(self.line.as_ptr() as usize)?;
        let end = start.checked_add(text.len())?;
        (end <= self.line.len()).then_some(start..end)
    }

    /// The result as a tree.
    ///
    /// # Errors
    /// When the result is JSON a tree cannot hold: a lone surrogate
    /// escape, a number out of `f64`'s range.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(self.result());
        // Depth checked in `parse`.
        de.disable_recursion_limit();
        Value::deserialize(&mut de)
    }

    /// The text of the member `name` of the result object, as it came
    /// (its last value when it came twice).
    pub fn member(&self, name: &str) -> Option<&str> {
        self.members()?.into_iter().find(|(key, _)| key == name).map(|(_, value)| value)
    }

    /// The members of the result object in the order they came, each value
    /// as its JSON text; `None` when the result is not an object. A key
    /// that came twice is kept once, with its last value, as in a tree.
    ///
    /// The result was checked against JSON's grammar when it was read, so
    /// its members are found by its structure alone (strings skipped with
    /// `memchr`, brackets counted), not parsed a second time: a large
    /// member costs a scan, not a parse.
    pub fn members(&self) -> Option<Vec<(String, &str)>> {
        let mut members = object_members(self.result())?;
        let mut seen = std::collections::HashSet::new();
        // The last of a repeated key wins: walk back, keep the first seen.
        members.reverse();
        members.retain(|(key, _)| seen.insert(key.clone()));
        members.reverse();
        Some(members)
    }
}

/// A line made of bytes of its own and spans of a [`RawResult`]'s line:
/// a response whose large parts are written from where they were read,
/// never copied. Made with [`LineParts`]; its maker ends it with the
/// newline.
#[derive(Debug)]
pub struct SplicedLine {
    source: RawResult,
    parts: LineParts,
}

/// Parts of an ordinary line: own bytes around a few members written from
/// the source (each spliced member is a part, and the own bytes between).
const PARTS_EXPECTED: usize = 8;

/// The parts of a [`SplicedLine`] before it has its source: bytes of its
/// own and spans of the source's line (from [`RawResult::span_of`]).
#[derive(Debug, Default)]
pub struct LineParts {
    own: Vec<u8>,
    parts: Vec<Part>,
}

/// A part of a [`SplicedLine`]: a range of its own bytes or of its source.
#[derive(Debug, Clone)]
enum Part {
    Own(std::ops::Range<usize>),
    Source(std::ops::Range<usize>),
}

impl LineParts {
    /// Parts whose own bytes fit in `own` without growing: a line made
    /// from a result's members takes one allocation, not one per doubling.
    pub fn with_capacity(own: usize) -> Self {
        LineParts { own: Vec::with_capacity(own), parts: Vec::with_capacity(PARTS_EXPECTED) }
    }

    /// Appends bytes of its own.
    pub fn push_own(&mut self, bytes: &[u8]) {
        let start = self.own.len();
        self.own.extend_from_slice(bytes);
        match self.parts.last_mut() {
            Some(Part::Own(range)) if range.end == start => range.end = self.own.len(),
            _ => self.parts.push(Part::Own(start..self.own.len())),
        }
    }

    /// Appends a span of the source's line.
    pub fn push_source(&mut self, span: std::ops::Range<usize>) {
        self.parts.push(Part::Source(span));
    }

    /// The line of these parts over `source`; the source back when a span
    /// lies outside its line.
    pub fn finish(self, source: RawResult) -> Result<SplicedLine, RawResult> {
        let within = |span: &std::ops::Range<usize>| span.start <= span.end && span.end <= source.line.len();
        if self.parts.iter().all(|part| !matches!(part, Part::Source(span) if !within(span))) {
            Ok(SplicedLine { source, parts: self })
        } else {
            Err(source)
        }
    }
}

impl SplicedLine {
    /// The line's pieces in order.
    pub fn slices(&self) -> Vec<&[u8]> {
        let line = self.source.line.as_bytes();
        self.parts
            .parts
            .iter()
            .map(|part| match part {
                Part::Own(range) => &self.parts.own[range.clone()],
                Part::Source(range) => &line[range.clone()],
            })
            .collect()
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.parts
            .parts
            .iter()
            .map(|part| match part {
                Part::Own(range) | Part::Source(range) => range.len(),
            })
            .sum()
    }

    /// Whether it has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The buffer its source line was read into, emptied, for a reader to
    /// fill again (see [`LineFramer::adopt`](crate::LineFramer::adopt));
    /// with no more room than its line took, rounded up to a power of two,
    /// so that a buffer once grown for a huge line is not lent on at that
    /// size to every long line after it.
    pub fn into_buffer(self) -> Vec<u8> {
        let mut buffer = self.source.line.into_bytes();
        buffer.shrink_to(buffer.len().checked_next_power_of_two().unwrap_or(usize::MAX));
        buffer.clear();
        buffer
    }

    /// Appends the whole line to `out`.
    pub fn append_to(&self, out: &mut Vec<u8>) {
        out.reserve(self.len());
        for slice in self.slices() {
            out.extend_from_slice(slice);
        }
    }
}

/// The members of the object `text` (JSON, already checked) with their
/// values as text, in the order they came; `None` when it is not an object.
fn object_members(text: &str) -> Option<Vec<(String, &str)>> {
    let bytes = text.as_bytes();
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    let mut members = Vec::new();
    at = skip_space(bytes, at + 1);
    if bytes.get(at) == Some(&b'}') {
        return Some(members);
    }
    loop {
        let key_end = string_end(bytes, at)?;
        // Keys are short; one with escapes is read as JSON.
        let key: String = serde_json::from_str(&text[at..key_end]).ok()?;
        at = skip_space(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let start = skip_space(bytes, at + 1);
        let end = value_end(bytes, start)?;
        members.push((key, &text[start..end]));
        at = skip_space(bytes, end);
        match bytes.get(at)? {
            b',' => at = skip_space(bytes, at + 1),
            b'}' => return Some(members),
            _ => return None,
        }
    }
}

/// The first byte at or after `at` that is not JSON's white space.
fn skip_space(bytes: &[u8], at: usize) -> usize {
    at + bytes.get(at..).map_or(0, |rest| rest.iter().take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')).count())
}

/// Just past the string whose quote is at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut at = at + 1;
    loop {
        let found = at + memchr::memchr2(b'"', b'\\', bytes.get(at..)?)?;
        if bytes[found] == b'"' {
            return Some(found + 1);
        }
        at = found + 2;
    }
}

/// Just past the value that starts at `at`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let (mut at, mut depth) = (at, 0usize);
            loop {
                match bytes.get(at)? {
                    b'"' => {
                        at = string_end(bytes, at)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(at + 1);
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
        }
        // A number, true, false or null: up to what ends it.
        _ => Some(
            at + bytes[at..]
                .iter()
                .take_while(|b| !matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                .count(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Message, decode_message};
    use proptest::prelude::*;
    use serde_json::json;

    fn parse(v: &Value) -> Result<RawResult, Vec<u8>> {
        RawResult::parse(v.to_string().into_bytes(), 64)
    }

    #[test]
    fn a_result_response_keeps_its_result_text_and_id() {
        let line = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\"b"}], "x" : 1 }}"#;
        let raw = RawResult::parse(line.to_vec(), 64).expect("a result");
        assert_eq!(raw.id(), &RequestId::Number(7));
        assert_eq!(raw.result(), r#"{"content":[{"type":"text","text":"a\"b"}], "x" : 1 }"#);
        let members = raw.members().expect("an object");
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["content", "x"]);
        assert_eq!(members[1].1, "1");
    }

    #[test]
    fn anything_but_a_plain_result_response_is_handed_back_whole() {
        for other in [
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "no"}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}, "extra": true}),
            json!({"jsonrpc": "1.0", "id": 1, "result": {}}),
            json!({"jsonrpc": "2.0", "id": null, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 1.5, "result": {}}),
            json!([1, 2]),
        ] {
            let back = parse(&other).expect_err("not a plain result");
            assert_eq!(back, other.to_string().into_bytes());
        }
        assert!(RawResult::parse(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}} x".to_vec(), 64).is_err());
        assert!(RawResult::parse(vec![b'{', 0xff, b'}'], 64).is_err());
        let deep = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}1{}}}", "[".repeat(70), "]".repeat(70));
        assert!(RawResult::parse(deep.into_bytes(), 64).is_err());
    }

    #[test]
    fn a_spliced_line_takes_its_large_parts_from_the_source() {
        let raw = RawResult::parse(br#"{"jsonrpc":"2.0","id":1,"result":{"a":"long text","b":2}}"#.to_vec(), 64)
            .expect("a result");
        let members = raw.members().expect("an object");
        let spans: Vec<_> = members.iter().map(|(_, v)| raw.span_of(v).expect("in the line")).collect();
        assert!(raw.span_of("elsewhere").is_none());
        let mut outside = LineParts::default();
        outside.push_source(0..10_000);
        assert!(outside.finish(raw.clone()).is_err(), "a span outside the line is refused");
        let mut parts = LineParts::default();
        parts.push_own(b"{\"x\":");
        parts.push_source(spans[0].clone());
        parts.push_own(b",");
        parts.push_own(b"\"y\":");
        parts.push_source(spans[1].clone());
        parts.push_own(b"}");
        let line = parts.finish(raw.clone()).expect("spans of the source");
        assert_eq!(line.slices().len(), 5, "adjacent own bytes are one slice");
        let mut out = Vec::new();
        line.append_to(&mut out);
        assert_eq!(out, br#"{"x":"long text","y":2}"#);
        assert_eq!(line.len(), out.len());
        let source_at = line.slices()[1].as_ptr() as usize;
        let buffer = line.into_buffer();
        assert!(buffer.is_empty() && buffer.capacity() < 128, "no more room than its line took: {}", buffer.capacity());
        let start = buffer.as_ptr() as usize;
        assert!((start..start + buffer.capacity()).contains(&source_at), "its source's buffer, for the next line");
    }

    #[test]
    fn a_spliced_lines_buffer_comes_back_with_the_room_its_line_took() {
        let mut line = Vec::with_capacity(1 << 20);
        line.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"result":{"a":"text"}}"#);
        let raw = RawResult::parse(line, 64).expect("a result");
        let mut parts = LineParts::default();
        parts.push_own(b"{}");
        let buffer = parts.finish(raw).expect("no spans").into_buffer();
        assert!(buffer.is_empty());
        assert_eq!(buffer.capacity(), 64, "the line's 47 bytes, rounded up to a power of two");
    }

    #[test]
    fn json_a_tree_cannot_hold_is_relayed_but_not_read() {
        for result in [r#""\ud800""#, "1e400", r#"{"a":[-1e999]}"#] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#);
            assert!(decode_message(line.as_bytes(), 64).is_err(), "{result}");
            let raw = RawResult::parse(line.into_bytes(), 64).expect("JSON's grammar allows it");
            assert_eq!(raw.result(), result);
            assert!(raw.to_value().is_err(), "{result}");
        }
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value_as_a_tree_does() {
        let raw = RawResult::parse(br#"{"jsonrpc":"2.0","id":1,"result":{"a":1,"b":2,"a":3}}"#.to_vec(), 64)
            .expect("a result");
        let members: Vec<(String, String)> =
            raw.members().expect("object").into_iter().map(|(k, v)| (k, v.to_owned())).collect();
        assert_eq!(members, [("b".to_owned(), "2".to_owned()), ("a".to_owned(), "3".to_owned())]);
        assert_eq!(raw.to_value().ok(), Some(json!({"a": 3, "b": 2})));
        assert_eq!(raw.member("a"), Some("3"));
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            ".{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::btree_map(".{0,6}", inner, 0..5).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever `decode_message` reads as a result response, the raw
        /// reading agrees with: the same id, the same result.
        #[test]
        fn the_raw_reading_agrees_with_the_decoder(result in json_value(), id in any::<i64>()) {
            let line = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
            let raw = RawResult::parse(line.clone().into_bytes(), 64).expect("a result response");
            let Ok(Message::Result(decoded)) = decode_message(line.as_bytes(), 64) else {
                panic!("the decoder reads a result");
            };
            prop_assert_eq!(raw.id(), &decoded.id);
            prop_assert_eq!(raw.to_value().ok(), Some(decoded.result));
        }

        /// The members found by structure are the tree's, each value's
        /// text reading back as its value, with and without white space.
        #[test]
        fn the_members_found_by_structure_are_the_trees(
            members in prop::collection::vec(("[a-c\\\\\"]{0,3}", json_value()), 0..6),
            pretty in any::<bool>(),
        ) {
            // Built as text: a key may come twice (the last one counts).
            let mut text = String::from("{");
            for (n, (key, value)) in members.iter().enumerate() {
                let value = if pretty { serde_json::to_string_pretty(value).unwrap() } else { value.to_string() };
                let separator = if n == 0 { "" } else if pretty { " ,\n " } else { "," };
                text += &format!("{separator}{} : {value}", Value::from(key.as_str()));
            }
            text += if pretty { "\n}" } else { "}" };
            let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{text}}}"#);
            let raw = RawResult::parse(line.into_bytes(), 64).expect("a result response");
            let tree = raw.to_value().expect("a tree");
            let found = raw.members().expect("an object");
            let tree = tree.as_object().expect("an object");
            prop_assert_eq!(found.len(), tree.len());
            for (key, value) in found {
                prop_assert_eq!(Some(&serde_json::from_str::<Value>(value).expect("JSON")), tree.get(&key));
            }
            prop_assert_eq!(raw.member("none"), None);
        }

        /// Any bytes at all: the raw reading never panics, and what it
        /// accepts the decoder reads as a result response with that id, or
        /// rejects as a tree would (then `to_value` fails too).
        #[test]
        fn any_line_is_read_or_handed_back(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
            match RawResult::parse(bytes.clone(), 64) {
                Ok(raw) => match decode_message(&bytes, 64) {
                    Ok(Message::Result(r)) => {
                        prop_assert_eq!(&r.id, raw.id());
                        prop_assert_eq!(raw.to_value().ok(), Some(r.result));
                    }
                    other => prop_assert!(raw.to_value().is_err(), "{other:?}"),
                },
                Err(back) => prop_assert_eq!(back, bytes),
            }
        }
    }
}

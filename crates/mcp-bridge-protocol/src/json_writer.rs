//! A JSON writer for `serde_json::Value` whose strings are escaped eight
//! bytes at a time. It writes exactly what `serde_json` writes; it exists
//! because serde_json escapes byte by byte, which made re-encoding a large
//! text result most of the bridge's cost of relaying it.

use serde_json::Value;

const HEX: &[u8; 16] = b"0123456789abcdef";
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Appends `value` as compact JSON, byte for byte as `serde_json::to_writer`.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // Writing a number to a Vec cannot fail.
        Value::Number(number) => serde_json::to_writer(&mut *out, number).expect("invariant: numbers serialize"),
        Value::String(text) => write_str(out, text),
        Value::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            out.push(b'{');
            for (index, (key, item)) in members.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write_value(out, item);
            }
            out.push(b'}');
        }
    }
}

/// Whether any of the eight bytes of `word` is a control character, `"`
/// or `\`: the bytes JSON strings escape.
fn needs_escape(word: u64) -> bool {
    let below_space = word.wrapping_sub(ONES * 0x20) & !word;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x;
    (below_space | has_zero(quote) | has_zero(backslash)) & HIGHS != 0
}

/// Appends `text` as a JSON string.
pub fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut clean_from = 0;
    let mut at = 0;
    while at < bytes.len() {
        if let Some(chunk) = bytes.get(at..at + 8) {
            let word =
                u64::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7]]);
            if !needs_escape(word) {
                at += 8;
                continue;
            }
        }
        let end = (at + 8).min(bytes.len());
        for index in at..end {
            let byte = bytes[index];
            let escape: &[u8] = match byte {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0x08 => b"\\b",
                0x0c => b"\\f",
                0x00..=0x1f => &[b'\\', b'u', b'0', b'0', HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]],
                _ => continue,
            };
            out.extend_from_slice(&bytes[clean_from..index]);
            out.extend_from_slice(escape);
            clean_from = index + 1;
        }
        at = end;
    }
    out.extend_from_slice(&bytes[clean_from..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn written(value: &Value) -> String {
        let mut out = Vec::new();
        write_value(&mut out, value);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_escape_and_every_kind_of_value() {
        let text: String = (0u8..=0x7f).map(char::from).chain("é😀\u{2028}".chars()).collect();
        let value = json!({"b": [true, false, null, 1, -2, 1.5, 1e300, u64::MAX], "a": text, "": {}, "e": []});
        assert_eq!(written(&value), serde_json::to_string(&value).unwrap());
    }

    fn any_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x7f]{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::btree_map(any::<String>(), inner, 0..8)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn writes_what_serde_json_writes(value in any_value()) {
            prop_assert_eq!(written(&value), serde_json::to_string(&value).unwrap());
        }
    }
}

//! `x-mcp-header` (2026-07-28, Streamable HTTP: Custom Headers): tool
//! parameters a server wants mirrored into `Mcp-Param-{Name}` headers. The
//! annotations are read from `tools/list` results; a tool with an invalid
//! annotation is removed from the list (with a warning), as the
//! specification requires of HTTP clients.

use base64::Engine;
use serde_json::{Map, Value};

/// Why a tool's `x-mcp-header` annotations, or the header values of a
/// call, break the rules; the text says which rule, for a warning or a
/// -32020 `HeaderMismatch` message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HeaderError(String);

impl From<String> for HeaderError {
    fn from(reason: String) -> Self {
        HeaderError(reason)
    }
}

impl From<&str> for HeaderError {
    fn from(reason: &str) -> Self {
        HeaderError(reason.to_owned())
    }
}

/// A header value as the 2026-07-28 HTTP transport sends it: plain
/// printable ASCII as is, anything else (non-ASCII, control characters,
/// edge whitespace, or a value that would read as the sentinel) as
/// `=?base64?{Base64 of UTF-8}?=`.
pub fn encode_header_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim() == value
        && !value.starts_with("=?base64?");
    if plain {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(value.as_bytes()))
    }
}

/// The largest integer JavaScript represents exactly; annotated integers
/// must stay within ±this.
const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// One annotated parameter: the header's name part and the chain of
/// `properties` keys that reaches the parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// `{Name}` of `Mcp-Param-{Name}`.
    pub name: String,
    /// The property path from the arguments' root.
    pub path: Vec<String>,
}

fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn count_annotations(value: &Value) -> usize {
    match value {
        Value::Object(map) => {
            usize::from(map.contains_key("x-mcp-header")) + map.values().map(count_annotations).sum::<usize>()
        }
        Value::Array(items) => items.iter().map(count_annotations).sum(),
        _ => 0,
    }
}

fn walk(schema: &Map<String, Value>, path: &mut Vec<String>, found: &mut Vec<HeaderParam>) -> Result<(), HeaderError> {
    if let Some(name) = schema.get("x-mcp-header") {
        let name = name.as_str().ok_or("an x-mcp-header value is not a string")?;
        if !is_token(name) {
            return Err(HeaderError(format!("x-mcp-header {name:?} is not an HTTP token")));
        }
        if !matches!(schema.get("type").and_then(Value::as_str), Some("string" | "integer" | "boolean")) {
            return Err(HeaderError(format!(
                "x-mcp-header {name:?} is on a parameter that is not a string, integer or boolean"
            )));
        }
        if found.iter().any(|p| p.name.eq_ignore_ascii_case(name)) {
            return Err(HeaderError(format!("x-mcp-header {name:?} is used twice")));
        }
        found.push(HeaderParam { name: name.to_owned(), path: path.clone() });
    }
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (key, child) in properties {
            if let Value::Object(child) = child {
                path.push(key.clone());
                walk(child, path, found)?;
                path.pop();
            }
        }
    }
    Ok(())
}

/// The annotated parameters of a tool's input schema.
///
/// # Errors
/// Why the annotations make the tool invalid.
pub fn header_params(input_schema: &Value) -> Result<Vec<HeaderParam>, HeaderError> {
    let Value::Object(root) = input_schema else { return Ok(Vec::new()) };
    let mut found = Vec::new();
    walk(root, &mut Vec::new(), &mut found)?;
    if found.len() != count_annotations(input_schema) {
        return Err("an x-mcp-header is not reachable through properties alone".into());
    }
    Ok(found)
}

/// The header values of a call's arguments; an absent value gives no header.
///
/// # Errors
/// A value that cannot be mirrored (an integer outside JavaScript's safe
/// range, or a value of another type than its annotation allows).
pub fn header_values(params: &[HeaderParam], arguments: Option<&Value>) -> Result<Vec<(String, String)>, HeaderError> {
    let mut headers = Vec::new();
    for param in params {
        let mut value = arguments;
        for key in &param.path {
            value = value.and_then(|v| v.get(key));
        }
        let text = match value {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => encode_header_value(s),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) if i.abs() <= MAX_SAFE_INTEGER => i.to_string(),
                _ => {
                    return Err(HeaderError(format!(
                        "the value of {} is not an integer in JavaScript's safe range",
                        param.name
                    )));
                }
            },
            Some(_) => return Err(HeaderError(format!("the value of {} cannot go into a header", param.name))),
        };
        headers.push((format!("Mcp-Param-{}", param.name), text));
    }
    Ok(headers)
}

/// A received header value with the `=?base64?…?=` sentinel decoded
/// (strict Base64: canonical padding, standard alphabet, UTF-8). A value
/// without both ends of the sentinel is literal.
///
/// # Errors
/// The sentinel holds no valid Base64 of UTF-8 text.
pub fn decode_header_value(raw: &str) -> Result<String, HeaderError> {
    match raw.strip_prefix("=?base64?").and_then(|r| r.strip_suffix("?=")) {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(|| HeaderError::from("holds invalid Base64")),
        None => Ok(raw.to_owned()),
    }
}

/// Whether a decoded header value says the same as the argument's value.
fn same_value(header: &str, value: &Value) -> bool {
    match value {
        Value::String(s) => header == s,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) => header.parse::<f64>().ok().zip(n.as_f64()).is_some_and(|(h, b)| h == b),
        _ => false,
    }
}

/// Checks the `Mcp-Param-*` headers a server received against the call's
/// arguments: each annotated value present in the body needs its header
/// with the same value, and an absent one no header. `header` looks a
/// header up by name (case-insensitively).
///
/// # Errors
/// What disagrees, in words for a -32020 `HeaderMismatch`.
pub fn check_header_values<'a>(
    params: &[HeaderParam],
    arguments: Option<&Value>,
    header: impl Fn(&str) -> Option<&'a str>,
) -> Result<(), HeaderError> {
    for param in params {
        let mut value = arguments;
        for key in &param.path {
            value = value.and_then(|v| v.get(key));
        }
        let name = format!("Mcp-Param-{}", param.name);
        match (header(&name), value.filter(|v| !v.is_null())) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(HeaderError(format!("the {name} header is required: the body has its value")));
            }
            (Some(_), None) => return Err(HeaderError(format!("the {name} header has no value in the body"))),
            (Some(raw), Some(value)) => {
                let decoded = decode_header_value(raw).map_err(|e| HeaderError(format!("the {name} header {e}")))?;
                if !same_value(&decoded, value) {
                    return Err(HeaderError(format!(
                        "{name} header value {decoded:?} does not match body value {value}"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The member of a request's params that `Mcp-Name` mirrors: the tool or
/// prompt name, the resource URI, or the task id (Tasks extension).
pub fn name_member(method: &str) -> Option<&'static str> {
    crate::methods::spec(method).and_then(|m| m.name_member)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_are_found_along_properties() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "config": {"type": "object", "properties": {"mode": {"type": "boolean", "x-mcp-header": "Mode"}}},
            "query": {"type": "string"}
        }});
        let params = header_params(&schema).unwrap();
        assert_eq!(params.len(), 2);
        assert!(params.contains(&HeaderParam { name: "Mode".into(), path: vec!["config".into(), "mode".into()] }));
    }

    #[test]
    fn invalid_annotations_are_refused_with_a_reason() {
        let cases = [
            json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "Bad Name"}}}),
            json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"}, "b": {"type": "string", "x-mcp-header": "a"}}}),
            json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"properties": {"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}}),
        ];
        for schema in cases {
            assert!(header_params(&schema).is_err(), "{schema}");
        }
    }

    #[test]
    fn received_headers_are_checked_against_the_body() {
        use std::collections::HashMap;
        let params = vec![
            HeaderParam { name: "Region".into(), path: vec!["region".into()] },
            HeaderParam { name: "Limit".into(), path: vec!["limit".into()] },
        ];
        let args = json!({"region": "Hello", "limit": 42});
        let check = |pairs: &[(&str, &str)], args: &Value| {
            let headers: HashMap<String, String> =
                pairs.iter().map(|(k, v)| (k.to_ascii_lowercase(), (*v).to_owned())).collect();
            check_header_values(&params, Some(args), |n| headers.get(&n.to_ascii_lowercase()).map(String::as_str))
        };
        assert_eq!(check(&[("Mcp-Param-Region", "Hello"), ("Mcp-Param-Limit", "42")], &args), Ok(()));
        assert_eq!(check(&[("Mcp-Param-Region", "=?base64?SGVsbG8=?="), ("Mcp-Param-Limit", "42.0")], &args), Ok(()));
        let missing = check(&[("Mcp-Param-Limit", "42")], &args).unwrap_err().to_string();
        assert!(missing.contains("Mcp-Param-Region header is required"), "{missing}");
        for bad in ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "Hullo"] {
            assert!(check(&[("Mcp-Param-Region", bad), ("Mcp-Param-Limit", "42")], &args).is_err(), "{bad}");
        }
        let literal = json!({"region": "=?base64?SGVsbG8=", "limit": 42});
        assert_eq!(check(&[("Mcp-Param-Region", "=?base64?SGVsbG8="), ("Mcp-Param-Limit", "42")], &literal), Ok(()));
        let extra = check(&[("Mcp-Param-Region", "Hello"), ("Mcp-Param-Limit", "42")], &json!({"region": "Hello"}));
        assert!(extra.unwrap_err().to_string().contains("no value in the body"));
    }

    #[test]
    fn values_are_mirrored_or_refused() {
        let params = vec![
            HeaderParam { name: "Region".into(), path: vec!["region".into()] },
            HeaderParam { name: "Limit".into(), path: vec!["limit".into()] },
            HeaderParam { name: "Mode".into(), path: vec!["config".into(), "mode".into()] },
        ];
        let args = json!({"region": "Zürich", "limit": 42, "config": {"mode": true}});
        let headers = header_values(&params, Some(&args)).unwrap();
        assert_eq!(
            headers,
            vec![
                ("Mcp-Param-Region".into(), "=?base64?WsO8cmljaA==?=".into()),
                ("Mcp-Param-Limit".into(), "42".into()),
                ("Mcp-Param-Mode".into(), "true".into()),
            ]
        );
        assert_eq!(header_values(&params, Some(&json!({}))).unwrap(), vec![]);
        assert!(header_values(&params, Some(&json!({"limit": 9_007_199_254_740_993_i64}))).is_err());
    }
}

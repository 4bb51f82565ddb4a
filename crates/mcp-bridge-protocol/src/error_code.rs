//! JSON-RPC error codes of both revisions, by name.
//!
//! The standard codes come from JSON-RPC 2.0 section 5.1; the rest from the
//! MCP schemas (2026-07-28 adds -32020..-32022; 2025-11-25 defines -32042).

/// Invalid JSON, or bytes that are not UTF-8.
pub const PARSE_ERROR: i64 = -32700;
/// Valid JSON that is not a valid request.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not served.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The params are not valid for the method.
pub const INVALID_PARAMS: i64 = -32602;
/// Anything else that went wrong on the answering side.
pub const INTERNAL_ERROR: i64 = -32603;
/// 2026-07-28: HTTP headers disagree with the body, or are missing.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability its `_meta` did not declare.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28: the requested protocol version is not supported.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// 2025-11-25: the request needs the user to open a URL first (URL elicitation).
pub const URL_ELICITATION_REQUIRED: i64 = -32042;

/// The name the schema gives a code, for log lines and diagnostics.
pub fn name_of(code: i64) -> Option<&'static str> {
    Some(match code {
        PARSE_ERROR => "ParseError",
        INVALID_REQUEST => "InvalidRequestError",
        METHOD_NOT_FOUND => "MethodNotFoundError",
        INVALID_PARAMS => "InvalidParamsError",
        INTERNAL_ERROR => "InternalError",
        HEADER_MISMATCH => "HeaderMismatchError",
        MISSING_REQUIRED_CLIENT_CAPABILITY => "MissingRequiredClientCapabilityError",
        UNSUPPORTED_PROTOCOL_VERSION => "UnsupportedProtocolVersionError",
        URL_ELICITATION_REQUIRED => "URLElicitationRequiredError",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code with a `const` in an official schema is named here.
    #[test]
    fn every_schema_error_code_has_a_name() {
        for path in ["2026-07-28", "2025-11-25"] {
            let schema = test_support::Schema::load(path).root().clone();
            for def in schema["$defs"].as_object().unwrap().values() {
                let code = def
                    .pointer("/properties/code/const")
                    .or_else(|| def.pointer("/properties/error/allOf/1/properties/code/const"));
                if let Some(code) = code.and_then(|c| c.as_i64()) {
                    assert!(name_of(code).is_some(), "{code} in {path}");
                }
            }
        }
    }
}

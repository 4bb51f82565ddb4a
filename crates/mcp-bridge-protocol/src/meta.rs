//! `_meta`: the keys MCP reserves, the rules every key must follow
//! (2026-07-28, Base protocol: "`_meta`"), and the typed `_meta` objects of
//! requests, results and notifications.
//!
//! A key is `[prefix/]name`. The prefix is dot-separated labels (letters,
//! digits, hyphens; starting with a letter, ending with a letter or digit);
//! prefixes whose second label is `modelcontextprotocol` or `mcp` are reserved
//! for MCP. The name is empty, or starts and ends alphanumeric with letters,
//! digits, `-`, `_` and `.` inside.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::types::{ClientCapabilities, Implementation, LoggingLevel};
use crate::{ProgressToken, RequestId};

/// The protocol version of one request (required on every 2026-07-28 request).
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// The client's name and version.
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// The client's capabilities for one request.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// The log level a request asks for; absent means no log messages.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// The subscription a listen-stream notification belongs to.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
/// The server's name and version, on results.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// The token for progress notifications of one request (no prefix, by history).
pub const PROGRESS_TOKEN_KEY: &str = "progressToken";

/// The request `_meta` keys an SDK writes itself. A caller's extra `_meta`
/// must not contain them: the SDK's values would be ambiguous otherwise.
pub const SDK_OWNED_REQUEST_KEYS: [&str; 6] = [
    PROTOCOL_VERSION_KEY,
    CLIENT_INFO_KEY,
    CLIENT_CAPABILITIES_KEY,
    LOG_LEVEL_KEY,
    SUBSCRIPTION_ID_KEY,
    PROGRESS_TOKEN_KEY,
];

/// Whether the SDK owns this request `_meta` key.
pub fn is_sdk_owned_request_key(key: &str) -> bool {
    SDK_OWNED_REQUEST_KEYS.contains(&key)
}

/// A `_meta` key that breaks the naming rules, and which rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidMetaKey {
    /// A prefix label is empty, or has a character or an end it must not.
    #[error("a _meta key prefix must be dot-separated labels of letters, digits and hyphens")]
    PrefixLabel,
    /// The name has a character it must not, or starts or ends wrongly.
    #[error("a _meta key name must start and end alphanumeric, with only letters, digits, '-', '_' and '.'")]
    Name,
}

/// Checks a `_meta` key against the naming rules.
///
/// # Errors
/// [`InvalidMetaKey`] naming the part that is wrong.
pub fn validate_key(key: &str) -> Result<(), InvalidMetaKey> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if prefix.is_some_and(|prefix| !prefix.split('.').all(is_valid_label)) {
        return Err(InvalidMetaKey::PrefixLabel);
    }
    if is_valid_name(name) { Ok(()) } else { Err(InvalidMetaKey::Name) }
}

/// Whether a key's prefix is reserved for MCP (its second label is
/// `modelcontextprotocol` or `mcp`).
pub fn is_reserved_key(key: &str) -> bool {
    key.split_once('/')
        .and_then(|(prefix, _)| prefix.split('.').nth(1))
        .is_some_and(|label| label == "modelcontextprotocol" || label == "mcp")
}

fn is_valid_label(label: &str) -> bool {
    let b = label.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphabetic()
                && last.is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
        }
        _ => false,
    }
}

fn is_valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    match (b.first(), b.last()) {
        (None, _) => true,
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        (Some(_), None) => false,
    }
}

/// A free-form `_meta` object (`MetaObject` in the schema).
pub type Meta = Map<String, Value>;

/// The `_meta` of a 2026-07-28 request (`RequestMetaObject`): what the
/// `initialize` handshake used to say once, now said on every request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestMeta {
    /// The protocol version of this request.
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    pub protocol_version: String,
    /// The client's capabilities for this request; empty means none.
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    pub client_capabilities: ClientCapabilities,
    /// The client's name and version.
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default, skip_serializing_if = "Option::is_none")]
    pub client_info: Option<Implementation>,
    /// The log level this request wants messages at; absent means none.
    #[serde(rename = "io.modelcontextprotocol/logLevel", default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LoggingLevel>,
    /// The token for progress notifications.
    #[serde(rename = "progressToken", default, skip_serializing_if = "Option::is_none")]
    pub progress_token: Option<ProgressToken>,
    /// Other keys (trace context, extensions), kept as they came.
    #[serde(flatten)]
    pub extra: Meta,
}

/// This revision and no capabilities: what typed params start with, and
/// what a client that sends them fills in with its own.
impl Default for RequestMeta {
    fn default() -> Self {
        RequestMeta::new(crate::PROTOCOL_VERSION, ClientCapabilities::default())
    }
}

impl RequestMeta {
    /// The `_meta` of a request at `protocol_version` with these capabilities.
    pub fn new(protocol_version: impl Into<String>, client_capabilities: ClientCapabilities) -> Self {
        RequestMeta {
            protocol_version: protocol_version.into(),
            client_capabilities,
            client_info: None,
            log_level: None,
            progress_token: None,
            extra: Meta::new(),
        }
    }
}

/// The `_meta` of a result (`ResultMetaObject`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultMeta {
    /// The server's name and version.
    #[serde(rename = "io.modelcontextprotocol/serverInfo", default, skip_serializing_if = "Option::is_none")]
    pub server_info: Option<Implementation>,
    /// Other keys, kept as they came.
    #[serde(flatten)]
    pub extra: Meta,
}

/// The `_meta` of a notification (`NotificationMetaObject`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationMeta {
    /// The listen stream this notification belongs to.
    #[serde(rename = "io.modelcontextprotocol/subscriptionId", default, skip_serializing_if = "Option::is_none")]
    pub subscription_id: Option<RequestId>,
    /// Other keys, kept as they came.
    #[serde(flatten)]
    pub extra: Meta,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_keys_pass() {
        for key in [
            "progressToken",
            "traceparent",
            "io.modelcontextprotocol/protocolVersion",
            "com.example/my_key.v2",
            "com.example-corp/x",
            "com.example/",
            "",
            "a",
        ] {
            assert_eq!(validate_key(key), Ok(()), "{key}");
        }
    }

    #[test]
    fn invalid_keys_name_the_broken_part() {
        assert_eq!(validate_key("1com.example/x"), Err(InvalidMetaKey::PrefixLabel));
        assert_eq!(validate_key("com..example/x"), Err(InvalidMetaKey::PrefixLabel));
        assert_eq!(validate_key("com.example-/x"), Err(InvalidMetaKey::PrefixLabel));
        assert_eq!(validate_key("/x"), Err(InvalidMetaKey::PrefixLabel));
        assert_eq!(validate_key("com.ex_ample/x"), Err(InvalidMetaKey::PrefixLabel));
        assert_eq!(validate_key("-x"), Err(InvalidMetaKey::Name));
        assert_eq!(validate_key("x_"), Err(InvalidMetaKey::Name));
        assert_eq!(validate_key("com.example/a/b"), Err(InvalidMetaKey::Name));
        assert_eq!(validate_key("has space"), Err(InvalidMetaKey::Name));
        assert_eq!(validate_key("é"), Err(InvalidMetaKey::Name));
    }

    #[test]
    fn reserved_prefixes_are_by_second_label() {
        assert!(is_reserved_key("io.modelcontextprotocol/x"));
        assert!(is_reserved_key("dev.mcp/x"));
        assert!(is_reserved_key("org.modelcontextprotocol.api/x"));
        assert!(is_reserved_key("com.mcp.tools/x"));
        assert!(!is_reserved_key("com.example.mcp/x"));
        assert!(!is_reserved_key("progressToken"));
    }

    #[test]
    fn sdk_owned_keys_are_the_six_the_sdk_writes() {
        for key in SDK_OWNED_REQUEST_KEYS {
            assert!(is_sdk_owned_request_key(key));
            assert_eq!(validate_key(key), Ok(()));
        }
        assert!(!is_sdk_owned_request_key("io.modelcontextprotocol/someExtension"));
        assert!(!is_sdk_owned_request_key("traceparent"));
    }

    #[test]
    fn request_meta_keeps_unknown_keys() {
        let v = serde_json::json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
            "progressToken": 5,
            "traceparent": "00-x"
        });
        let meta: RequestMeta = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(meta.progress_token, Some(5.into()));
        assert_eq!(serde_json::to_value(&meta).unwrap(), v);
    }
}

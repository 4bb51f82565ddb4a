//! The part of revision 2025-11-25 that a server receives from a client of
//! that revision: the class of every method and notification, and the
//! params the server reads itself. No I/O.

use mcp_bridge_protocol::legacy::{InitializeRequestParams, SetLevelRequestParams, SubscribeRequestParams};
use mcp_bridge_protocol::method::{
    Initialize, Initialized, LoggingSetLevel, Method, NotificationsCancelled, Ping, ResourcesSubscribe,
    ResourcesUnsubscribe, RootsListChanged, ServerDiscover,
};
use mcp_bridge_protocol::types::LoggingLevel;
use serde_json::Value;

/// The methods the bridge forwards: the same names in both revisions.
pub const FORWARDED_METHODS: [&str; 8] = mcp_bridge_protocol::method::SHARED_REQUEST_METHODS;

/// What the bridge does with a request, by its method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestClass {
    /// `initialize`: starts the upstream.
    Initialize,
    /// `ping`: answered `{}` by the reader.
    Ping,
    /// `logging/setLevel`: kept by the bridge.
    SetLevel,
    /// `server/discover`: refused (the client is legacy by definition).
    Discover,
    /// `resources/subscribe`.
    Subscribe,
    /// `resources/unsubscribe`.
    Unsubscribe,
    /// One of [`FORWARDED_METHODS`].
    Forward,
    /// Anything else: -32601.
    Unknown,
}

/// The class of a request method.
pub fn classify_request(method: &str) -> RequestClass {
    match method {
        Initialize::NAME => RequestClass::Initialize,
        Ping::NAME => RequestClass::Ping,
        LoggingSetLevel::NAME => RequestClass::SetLevel,
        ServerDiscover::NAME => RequestClass::Discover,
        ResourcesSubscribe::NAME => RequestClass::Subscribe,
        ResourcesUnsubscribe::NAME => RequestClass::Unsubscribe,
        m if FORWARDED_METHODS.contains(&m) => RequestClass::Forward,
        _ => RequestClass::Unknown,
    }
}

/// What the bridge does with a notification, by its method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotificationClass {
    /// `notifications/initialized`.
    Initialized,
    /// `notifications/cancelled`.
    Cancelled,
    /// `notifications/roots/list_changed`.
    RootsListChanged,
    /// Anything else: ignored.
    Other,
}

/// The class of a notification method.
pub fn classify_notification(method: &str) -> NotificationClass {
    match method {
        Initialized::NAME => NotificationClass::Initialized,
        NotificationsCancelled::NAME => NotificationClass::Cancelled,
        RootsListChanged::NAME => NotificationClass::RootsListChanged,
        _ => NotificationClass::Other,
    }
}

/// Why params could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid params of {method}: {reason}")]
pub struct InvalidParams {
    /// The method.
    pub method: &'static str,
    /// The parser's words (never a value of the input).
    pub reason: String,
}

fn parse<T: serde::de::DeserializeOwned>(method: &'static str, params: Option<&Value>) -> Result<T, InvalidParams> {
    let params = params.cloned().unwrap_or(Value::Null);
    serde_json::from_value(params).map_err(|e| InvalidParams { method, reason: e.to_string() })
}

/// The params of `initialize`.
///
/// # Errors
/// [`InvalidParams`] when they do not fit the schema.
pub fn parse_initialize(params: Option<&Value>) -> Result<InitializeRequestParams, InvalidParams> {
    parse(Initialize::NAME, params)
}

/// The level of `logging/setLevel`.
///
/// # Errors
/// [`InvalidParams`] when the level is missing or unknown.
pub fn parse_set_level(params: Option<&Value>) -> Result<LoggingLevel, InvalidParams> {
    parse::<SetLevelRequestParams>(LoggingSetLevel::NAME, params).map(|p| p.level)
}

/// The URI of `resources/subscribe` or `resources/unsubscribe`.
///
/// # Errors
/// [`InvalidParams`] when the URI is missing.
pub fn parse_subscription(method: &'static str, params: Option<&Value>) -> Result<String, InvalidParams> {
    parse::<SubscribeRequestParams>(method, params).map(|p| p.uri)
}

/// Whether a request carries the 2026-07-28 protocol version key in its
/// `_meta`: a modern client that should be told -32601, not "initialize".
pub fn has_modern_meta(params: Option<&Value>) -> bool {
    params.and_then(|p| p.get("_meta")).and_then(|m| m.get(mcp_bridge_protocol::meta::PROTOCOL_VERSION_KEY)).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_method_has_its_class() {
        assert_eq!(classify_request("initialize"), RequestClass::Initialize);
        assert_eq!(classify_request("ping"), RequestClass::Ping);
        assert_eq!(classify_request("logging/setLevel"), RequestClass::SetLevel);
        assert_eq!(classify_request("server/discover"), RequestClass::Discover);
        assert_eq!(classify_request("resources/subscribe"), RequestClass::Subscribe);
        assert_eq!(classify_request("resources/unsubscribe"), RequestClass::Unsubscribe);
        for m in FORWARDED_METHODS {
            assert_eq!(classify_request(m), RequestClass::Forward, "{m}");
        }
        assert_eq!(classify_request("tasks/get"), RequestClass::Unknown);
        assert_eq!(classify_request("subscriptions/listen"), RequestClass::Unknown);
    }

    #[test]
    fn every_notification_has_its_class() {
        assert_eq!(classify_notification("notifications/initialized"), NotificationClass::Initialized);
        assert_eq!(classify_notification("notifications/cancelled"), NotificationClass::Cancelled);
        assert_eq!(classify_notification("notifications/roots/list_changed"), NotificationClass::RootsListChanged);
        assert_eq!(classify_notification("notifications/progress"), NotificationClass::Other);
    }

    #[test]
    fn params_are_parsed_or_refused() {
        let init =
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}});
        assert_eq!(parse_initialize(Some(&init)).unwrap().client_info.name, "c");
        assert!(parse_initialize(Some(&json!({"capabilities": {}}))).is_err());
        assert!(parse_initialize(None).is_err());
        assert_eq!(parse_set_level(Some(&json!({"level": "debug"}))), Ok(LoggingLevel::Debug));
        assert!(parse_set_level(Some(&json!({"level": "loud"}))).is_err());
        assert_eq!(parse_subscription("resources/subscribe", Some(&json!({"uri": "a://b"}))).unwrap(), "a://b");
        assert!(parse_subscription("resources/subscribe", Some(&json!({}))).is_err());
        assert!(has_modern_meta(Some(&json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}))));
        assert!(!has_modern_meta(Some(&json!({"_meta": {}}))));
    }
}

//! Which protocol era the client speaks to its server, and how it finds out:
//! with [`Era::Auto`] the first request is preceded by `server/discover`
//! (or is it); a server that answers it the way a 2025-11-25 server answers
//! an unknown method gets the `initialize` handshake instead, and every
//! request after that in the 2025-11-25 form. The rules are pure; the
//! client runs them.
//!
//! | the probe's answer | verdict |
//! |---|---|
//! | a discover result | 2026-07-28 |
//! | error -32601 (method not found) | 2025-11-25 |
//! | error -32600 (invalid request: "send initialize first") | 2025-11-25 |
//! | error -32602 (invalid params: discover's `_meta` not understood) | 2025-11-25 |
//! | HTTP 400, 404 or 405 without an error of 2026-07-28 (-32020, -32021, -32022) | 2025-11-25 (a session server refusing a POST without a session) |
//! | any other error, a time limit, a lost connection | no verdict: the request fails, the next one probes again |
//!
//! A verdict found is kept in the client's [`super::EraCache`], when it
//! has one; a later client of the same server takes it from there without
//! the probe. A cached verdict proves wrong when the `initialize` of a
//! cached 2025-11-25 server is answered -32601, -32600 or -32022 (the
//! client then probes as for a new server), or when a request to a cached
//! 2026-07-28 server is answered -32601, -32600 or -32602 (that request
//! fails; the verdict is forgotten for the next client).

use mcp_bridge_protocol::error_code;
use mcp_bridge_protocol::legacy::InitializeResult;
use mcp_bridge_protocol::meta::ResultMeta;
use mcp_bridge_protocol::types::DiscoverResult;

use crate::error::Error;

/// The era a client speaks, chosen in [`super::ClientOptions::era`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Era {
    /// Ask `server/discover` first; fall back to 2025-11-25 when the server
    /// does not know it.
    #[default]
    Auto,
    /// Revision 2026-07-28 only: no probe, no fallback.
    Modern,
    /// Revision 2025-11-25 only: the `initialize` handshake first.
    Legacy,
}

/// What a client settled with its server.
#[derive(Debug, Clone, PartialEq)]
pub enum Spoken {
    /// Revision 2026-07-28: every request carries the version, the client's
    /// info and capabilities in `_meta`.
    Modern,
    /// A 2025-11-25 session: the server's `initialize` result.
    Legacy(Box<InitializeResult>),
}

impl Spoken {
    /// The protocol version spoken.
    pub fn protocol_version(&self) -> &str {
        match self {
            Spoken::Modern => mcp_bridge_protocol::PROTOCOL_VERSION,
            Spoken::Legacy(result) => &result.protocol_version,
        }
    }

    /// Whether this is a 2025-11-25 session.
    pub fn is_legacy(&self) -> bool {
        matches!(self, Spoken::Legacy(_))
    }
}

/// Whether the answer to the `server/discover` probe (and its HTTP status,
/// over HTTP) says the server speaks only the 2025-11-25 revision (see the
/// table above).
pub fn probe_says_legacy(answer: &Error, http_status: Option<u16>) -> bool {
    let code = match answer {
        Error::Rpc { error } => Some(error.code),
        _ => None,
    };
    let legacy_code = matches!(answer, Error::Rpc { error } if answer_says_legacy(error));
    let modern_code = matches!(
        code,
        Some(
            error_code::HEADER_MISMATCH
                | error_code::MISSING_REQUIRED_CLIENT_CAPABILITY
                | error_code::UNSUPPORTED_PROTOCOL_VERSION
        )
    );
    let refused_post = matches!(http_status, Some(400 | 404 | 405))
        && matches!(answer, Error::Rpc { .. } | Error::InvalidResponse { .. });
    legacy_code || (refused_post && !modern_code)
}

/// Whether a server's error answer is one a 2025-11-25 server gives a
/// 2026-07-28 request.
pub fn answer_says_legacy(error: &mcp_bridge_protocol::ErrorObject) -> bool {
    matches!(error.code, error_code::METHOD_NOT_FOUND | error_code::INVALID_REQUEST | error_code::INVALID_PARAMS)
}

/// Whether the failure of an `initialize` says the server speaks only
/// 2026-07-28 (it does not know the method, or not the version).
pub fn handshake_says_modern(failure: &Error) -> bool {
    matches!(failure, Error::Rpc { error } if matches!(
        error.code,
        error_code::METHOD_NOT_FOUND | error_code::INVALID_REQUEST | error_code::UNSUPPORTED_PROTOCOL_VERSION
    ))
}

/// The `server/discover` result of a 2025-11-25 server, read from its
/// `initialize` result, so callers of [`super::Client::discover`] see the
/// same shape in both eras.
pub fn discover_of_initialize(result: &InitializeResult) -> DiscoverResult {
    DiscoverResult {
        result_type: Default::default(),
        supported_versions: vec![result.protocol_version.clone()],
        capabilities: result.capabilities.clone(),
        instructions: result.instructions.clone(),
        ttl_ms: None,
        cache_scope: None,
        meta: Some(ResultMeta { server_info: Some(result.server_info.clone()), extra: Default::default() }),
        extra: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use mcp_bridge_protocol::ErrorObject;

    use super::*;

    fn rpc(code: i64) -> Error {
        Error::Rpc { error: ErrorObject::new(code, "no") }
    }

    #[test]
    fn unknown_method_invalid_request_and_invalid_params_mean_a_legacy_server() {
        for code in [error_code::METHOD_NOT_FOUND, error_code::INVALID_REQUEST, error_code::INVALID_PARAMS] {
            assert!(probe_says_legacy(&rpc(code), None), "{code}");
        }
    }

    #[test]
    fn a_refused_post_means_a_legacy_session_server_unless_its_error_is_of_2026() {
        // The TypeScript SDK 1.x: 400 with -32000 "Server not initialized".
        for status in [400, 404, 405] {
            assert!(probe_says_legacy(&rpc(-32000), Some(status)), "{status}");
        }
        let not_json = Error::InvalidResponse { method: "server/discover".into(), reason: "HTTP 405".into() };
        assert!(probe_says_legacy(&not_json, Some(405)));
        assert!(!probe_says_legacy(&rpc(error_code::UNSUPPORTED_PROTOCOL_VERSION), Some(400)));
        assert!(!probe_says_legacy(&rpc(error_code::HEADER_MISMATCH), Some(400)));
        assert!(!probe_says_legacy(&rpc(-32000), Some(500)));
    }

    #[test]
    fn other_failures_give_no_verdict() {
        assert!(!probe_says_legacy(&rpc(error_code::INTERNAL_ERROR), None));
        assert!(!probe_says_legacy(&rpc(error_code::UNSUPPORTED_PROTOCOL_VERSION), None));
        assert!(!probe_says_legacy(&Error::Closed, Some(404)));
        assert!(!probe_says_legacy(&Error::Timeout { method: "server/discover".into(), timeout_ms: 10 }, None));
    }

    #[test]
    fn a_legacy_server_is_discovered_from_its_initialize_result() {
        let result: InitializeResult = serde_json::from_value(serde_json::json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "old", "version": "1.2"},
            "instructions": "be kind"
        }))
        .unwrap();
        let discover = discover_of_initialize(&result);
        assert_eq!(discover.supported_versions, ["2025-06-18"]);
        assert_eq!(discover.instructions.as_deref(), Some("be kind"));
        assert_eq!(discover.meta.and_then(|m| m.server_info).map(|i| i.name), Some("old".to_owned()));
        assert!(discover.capabilities.tools.is_some());
    }
}

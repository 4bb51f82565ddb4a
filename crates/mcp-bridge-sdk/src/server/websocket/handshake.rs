//! The server's side of the WebSocket opening handshake (RFC 6455 section
//! 4.2) on the upgrade head `http_head.rs` read once: what the request must
//! say, and the `101 Switching Protocols` that answers it. Pure: the
//! caller writes the answer or the refusal.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use http::{HeaderMap, StatusCode, header};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

use crate::transport::websocket::SUBPROTOCOL;

/// The only version of the protocol (RFC 6455 section 4.1).
pub(super) const VERSION: &str = "13";

/// Why an upgrade request is refused: its status and a few fixed words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Refusal {
    pub(super) status: StatusCode,
    pub(super) reason: &'static str,
}

const fn refusal(status: StatusCode, reason: &'static str) -> Refusal {
    Refusal { status, reason }
}

/// The comma-separated tokens of every line of a header, trimmed.
fn tokens(headers: &HeaderMap, name: header::HeaderName) -> impl Iterator<Item = &str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .filter(|token| !token.is_empty())
}

/// Whether a header's tokens hold `token` (any case).
fn has_token(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    tokens(headers, name).any(|t| t.eq_ignore_ascii_case(token))
}

/// The answer to an upgrade request with this method and these headers:
/// the `101` with its accept key, and the `mcp` subprotocol when the
/// client offers subprotocols (then it must offer `mcp`).
///
/// # Errors
/// The [`Refusal`] of a request that is no WebSocket upgrade of version 13
/// for `mcp` (a wrong version is 426, which names the version).
pub(super) fn answer(method: &str, version: u8, headers: &HeaderMap) -> Result<String, Refusal> {
    if method != "GET" {
        return Err(refusal(StatusCode::METHOD_NOT_ALLOWED, "a WebSocket upgrade is a GET request"));
    }
    if version < 1 {
        return Err(refusal(StatusCode::HTTP_VERSION_NOT_SUPPORTED, "a WebSocket upgrade needs HTTP/1.1"));
    }
    if !has_token(headers, header::UPGRADE, "websocket") || !has_token(headers, header::CONNECTION, "upgrade") {
        return Err(refusal(StatusCode::BAD_REQUEST, "not a WebSocket upgrade request"));
    }
    if headers.get(header::SEC_WEBSOCKET_VERSION).and_then(|v| v.to_str().ok()).map(str::trim) != Some(VERSION) {
        return Err(refusal(StatusCode::UPGRADE_REQUIRED, "WebSocket version 13 is required"));
    }
    // A nonce of 16 bytes in base64 (section 4.1).
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .filter(|key| B64.decode(key.as_bytes()).is_ok_and(|nonce| nonce.len() == 16))
        .ok_or(refusal(StatusCode::BAD_REQUEST, "the Sec-WebSocket-Key header is missing or not 16 bytes in base64"))?;
    let offered: Vec<&str> = tokens(headers, header::SEC_WEBSOCKET_PROTOCOL).collect();
    let protocol = match offered.is_empty() {
        true => String::new(),
        false if offered.contains(&SUBPROTOCOL) => format!("Sec-WebSocket-Protocol: {SUBPROTOCOL}\r\n"),
        false => return Err(refusal(StatusCode::BAD_REQUEST, "the WebSocket subprotocol mcp is required")),
    };
    Ok(format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n{protocol}\r\n",
        derive_accept_key(key.as_bytes())
    ))
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn upgrade(extra: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("upgrade", "websocket"),
            ("connection", "keep-alive, Upgrade"),
            ("sec-websocket-version", "13"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ]
        .iter()
        .chain(extra)
        {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn an_upgrade_is_answered_with_the_accept_key_of_its_key() {
        // RFC 6455 section 1.3's example key and accept value.
        let accepted = answer("GET", 1, &upgrade(&[])).unwrap();
        assert!(accepted.starts_with("HTTP/1.1 101 Switching Protocols\r\n"));
        assert!(accepted.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
        assert!(!accepted.contains("Sec-WebSocket-Protocol") && accepted.ends_with("\r\n\r\n"));
        let chosen = answer("GET", 1, &upgrade(&[("sec-websocket-protocol", "other, mcp")])).unwrap();
        assert!(chosen.contains("Sec-WebSocket-Protocol: mcp\r\n"));
    }

    #[test]
    fn what_is_no_websocket_upgrade_for_mcp_is_refused() {
        let status = |method, headers: &HeaderMap| answer(method, 1, headers).unwrap_err().status;
        assert_eq!(status("POST", &upgrade(&[])), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(status("GET", &upgrade(&[("upgrade", "h2c")])), StatusCode::BAD_REQUEST);
        assert_eq!(status("GET", &upgrade(&[("connection", "close")])), StatusCode::BAD_REQUEST);
        assert_eq!(status("GET", &upgrade(&[("sec-websocket-version", "8")])), StatusCode::UPGRADE_REQUIRED);
        assert_eq!(status("GET", &upgrade(&[("sec-websocket-protocol", "graphql-ws")])), StatusCode::BAD_REQUEST);
        assert_eq!(status("GET", &upgrade(&[("sec-websocket-key", "c2hvcnQ=")])), StatusCode::BAD_REQUEST);
        let mut keyless = upgrade(&[]);
        keyless.remove("sec-websocket-key");
        assert_eq!(status("GET", &keyless), StatusCode::BAD_REQUEST);
        assert_eq!(answer("GET", 0, &upgrade(&[])).unwrap_err().status, StatusCode::HTTP_VERSION_NOT_SUPPORTED);
    }
}

//! Sealing of `requestState`: the server keeps no state between the rounds
//! of a multi round-trip request, so it hands the client an opaque token and
//! must distrust it when it comes back (2026-07-28, MRTR: "Server
//! Requirements").
//!
//! ```text
//!  token = b64url(payload) "." b64url(HMAC-SHA256(key, b64url(payload)))
//!  payload = {"v":1, "m": method, "d": hex SHA-256 of the salient params,
//!             "x": expiry in ms since the epoch, "s": the handler's state}
//! ```
//!
//! The HMAC gives integrity; the method and digest bind the token to the
//! request it was made for (tool name and arguments, prompt name and
//! arguments, or resource URI); the expiry bounds replay. The state is not
//! encrypted: a handler must not put secrets in it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// How long a sealed state stays valid by default: as long as a client may
/// take to answer one round (a person filling a form), then it is refused.
pub const DEFAULT_STATE_TTL: Duration = Duration::from_secs(3600);

/// Why a `requestState` is refused. Deliberately coarse on the wire; the
/// variants are for logs and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StateError {
    #[error("not a sealed request state")]
    Malformed,
    #[error("signature does not verify")]
    BadSignature,
    #[error("expired")]
    Expired,
    #[error("made for another request")]
    WrongRequest,
}

/// Seals and opens request states with one key.
#[derive(Clone)]
pub(crate) struct StateSealer {
    key: [u8; 32],
    ttl: Duration,
}

impl std::fmt::Debug for StateSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateSealer").field("ttl", &self.ttl).finish_non_exhaustive()
    }
}

impl StateSealer {
    pub(crate) fn new(key: [u8; 32], ttl: Duration) -> Self {
        StateSealer { key, ttl }
    }

    /// A sealer with a fresh random key: states survive only as long as this
    /// process, which is right for a stdio server.
    pub(crate) fn random(ttl: Duration) -> Self {
        let mut key = [0u8; 32];
        // The OS random source failing is not recoverable for a server that
        // must protect its state; an all-zero key would be worse.
        getrandom::fill(&mut key).expect("invariant: the OS random source is available");
        StateSealer::new(key, ttl)
    }

    fn mac(&self) -> HmacSha256 {
        HmacSha256::new_from_slice(&self.key).expect("invariant: HMAC takes a key of any length")
    }

    pub(crate) fn seal(&self, method: &str, digest: &str, state: &Value, now: SystemTime) -> String {
        let expiry = now.checked_add(self.ttl).unwrap_or(now);
        let payload = json!({ "v": 1, "m": method, "d": digest, "x": millis(expiry), "s": state });
        let body = B64.encode(payload.to_string());
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        let tag = B64.encode(mac.finalize().into_bytes());
        format!("{body}.{tag}")
    }

    pub(crate) fn open(&self, token: &str, method: &str, digest: &str, now: SystemTime) -> Result<Value, StateError> {
        let (body, tag) = token.split_once('.').ok_or(StateError::Malformed)?;
        let tag = B64.decode(tag).map_err(|_| StateError::Malformed)?;
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        mac.verify_slice(&tag).map_err(|_| StateError::BadSignature)?;
        let payload: Value =
            B64.decode(body).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).ok_or(StateError::Malformed)?;
        let expiry = payload["x"].as_u64().ok_or(StateError::Malformed)?;
        if u128::from(expiry) <= millis(now) {
            return Err(StateError::Expired);
        }
        if payload["m"] != method || payload["d"] != digest {
            return Err(StateError::WrongRequest);
        }
        Ok(payload["s"].clone())
    }
}

fn millis(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

/// The hex SHA-256 of the params that identify a request, without the parts
/// that change between rounds (`_meta`, `inputResponses`, `requestState`).
/// Keys are sorted at every level, and a top-level `null` or `{}` counts as
/// absent (`"arguments": {}` and no arguments are the same call), so the
/// digest does not depend on how a client spells the same request.
pub(crate) fn params_digest(params: &Map<String, Value>) -> String {
    let mut salient = params.clone();
    for key in ["_meta", "inputResponses", "requestState"] {
        salient.remove(key);
    }
    salient.retain(|_, v| !(v.is_null() || v.as_object().is_some_and(Map::is_empty)));
    let mut hasher = Sha256::new();
    write_canonical(&Value::Object(salient), &mut hasher);
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn write_canonical(value: &Value, out: &mut Sha256) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.update(b"{");
            for key in keys {
                out.update(Value::String(key.clone()).to_string().as_bytes());
                out.update(b":");
                write_canonical(&map[key], out);
                out.update(b",");
            }
            out.update(b"}");
        }
        Value::Array(items) => {
            out.update(b"[");
            for item in items {
                write_canonical(item, out);
                out.update(b",");
            }
            out.update(b"]");
        }
        scalar => out.update(scalar.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealer() -> StateSealer {
        StateSealer::new([7; 32], Duration::from_secs(60))
    }

    #[test]
    fn sealed_state_opens_for_the_same_request() {
        let now = SystemTime::now();
        let token = sealer().seal("tools/call", "abc", &json!({"step": 2}), now);
        assert_eq!(sealer().open(&token, "tools/call", "abc", now), Ok(json!({"step": 2})));
    }

    #[test]
    fn tampered_state_is_refused() {
        let now = SystemTime::now();
        let token = sealer().seal("tools/call", "abc", &json!({"admin": false}), now);
        let (body, tag) = token.split_once('.').unwrap();
        let forged = B64.encode(String::from_utf8(B64.decode(body).unwrap()).unwrap().replace("false", "true"));
        assert_eq!(sealer().open(&format!("{forged}.{tag}"), "tools/call", "abc", now), Err(StateError::BadSignature));
        assert_eq!(sealer().open("garbage", "tools/call", "abc", now), Err(StateError::Malformed));
        let other_key = StateSealer::new([8; 32], Duration::from_secs(60));
        assert_eq!(other_key.open(&token, "tools/call", "abc", now), Err(StateError::BadSignature));
    }

    #[test]
    fn expired_state_is_refused() {
        let now = SystemTime::now();
        let token = sealer().seal("tools/call", "abc", &json!(1), now);
        let later = now + Duration::from_secs(61);
        assert_eq!(sealer().open(&token, "tools/call", "abc", later), Err(StateError::Expired));
    }

    #[test]
    fn state_for_another_request_is_refused() {
        let now = SystemTime::now();
        let token = sealer().seal("tools/call", "abc", &json!(1), now);
        assert_eq!(sealer().open(&token, "prompts/get", "abc", now), Err(StateError::WrongRequest));
        assert_eq!(sealer().open(&token, "tools/call", "abd", now), Err(StateError::WrongRequest));
    }

    #[test]
    fn digest_ignores_round_parts_and_key_order() {
        let a: Map<String, Value> = serde_json::from_value(
            json!({"name":"t","arguments":{"x":1,"y":[1,{"b":2,"a":1}]},"_meta":{"k":1},"requestState":"s"}),
        )
        .unwrap();
        let b: Map<String, Value> =
            serde_json::from_value(json!({"arguments":{"y":[1,{"a":1,"b":2}],"x":1},"name":"t","inputResponses":{}}))
                .unwrap();
        assert_eq!(params_digest(&a), params_digest(&b));
        let c: Map<String, Value> = serde_json::from_value(json!({"name":"t","arguments":{"x":2}})).unwrap();
        assert_ne!(params_digest(&a), params_digest(&c));
        let bare: Map<String, Value> = serde_json::from_value(json!({"name":"t"})).unwrap();
        let empty: Map<String, Value> = serde_json::from_value(json!({"name":"t","arguments":{}})).unwrap();
        assert_eq!(params_digest(&bare), params_digest(&empty));
    }
}

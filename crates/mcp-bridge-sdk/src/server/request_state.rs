//! Sealing of `requestState`: the server keeps no state between the rounds
//! of a multi round-trip request, so it hands the client an opaque token and
//! must distrust it when it comes back (2026-07-28, MRTR: "Server
//! Requirements").
//!
//! ```text
//!  token = b64url(payload) "." b64url(HMAC-SHA256(key, b64url(payload)))
//!  payload = {"v":2, "k": key id, "a": the server's audience,
//!             "m": method, "d": hex SHA-256 of the salient params,
//!             "x": expiry in ms since the epoch, "s": the handler's state}
//! ```
//!
//! The HMAC gives integrity; the key id says which key of the ring
//! ([`StateKeys`]) sealed it, so replicas sharing the ring open each
//! other's states and keys rotate; the audience binds it to one server (two
//! servers sharing a key cannot replay each other's states); the method and
//! digest bind it to the request it was made for (tool name and arguments,
//! prompt name and arguments, or resource URI); the expiry bounds replay.
//! The state is not encrypted: a handler must not put secrets in it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::state_keys::{StateKey, StateKeys};

type HmacSha256 = Hmac<Sha256>;

/// How long a sealed state stays valid by default: as long as a client may
/// take to answer one round (a person filling a form), then it is refused.
pub const DEFAULT_STATE_TTL: Duration = Duration::from_secs(3600);

/// Why a `requestState` is refused: the client is told which (a replica
/// with another key ring must say so, not look like tampering), never more.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum StateError {
    #[error("it is not a sealed request state")]
    Malformed,
    #[error(
        "it was sealed with key {0:?}, which this server does not hold (its state keys differ from the server that sealed it)"
    )]
    UnknownKey(String),
    #[error("its signature does not verify (tampered, or sealed by a server with other state keys)")]
    BadSignature,
    #[error("it was sealed for another server")]
    WrongServer,
    #[error("it has expired")]
    Expired,
    #[error("it was made for another request")]
    WrongRequest,
}

/// Seals and opens request states with a key ring, for one server.
#[derive(Debug, Clone)]
pub(crate) struct StateSealer {
    keys: StateKeys,
    audience: String,
    ttl: Duration,
}

impl StateSealer {
    /// A sealer for the server named `audience`.
    pub(crate) fn new(keys: StateKeys, audience: impl Into<String>, ttl: Duration) -> Self {
        StateSealer { keys, audience: audience.into(), ttl }
    }

    fn mac(key: &StateKey) -> HmacSha256 {
        HmacSha256::new_from_slice(key.secret()).expect("invariant: HMAC takes a key of any length")
    }

    pub(crate) fn seal(&self, method: &str, digest: &str, state: &Value, now: SystemTime) -> String {
        let expiry = now.checked_add(self.ttl).unwrap_or(now);
        let key = self.keys.current();
        let payload = json!({
            "v": 2, "k": key.id(), "a": self.audience, "m": method, "d": digest, "x": millis(expiry), "s": state,
        });
        let body = B64.encode(payload.to_string());
        let mut mac = Self::mac(key);
        mac.update(body.as_bytes());
        let tag = B64.encode(mac.finalize().into_bytes());
        format!("{body}.{tag}")
    }

    pub(crate) fn open(&self, token: &str, method: &str, digest: &str, now: SystemTime) -> Result<Value, StateError> {
        let (body, tag) = token.split_once('.').ok_or(StateError::Malformed)?;
        let tag = B64.decode(tag).map_err(|_| StateError::Malformed)?;
        // Read before it is verified only to pick the key: nothing else of
        // it is trusted until the signature checks.
        let payload: Value =
            B64.decode(body).ok().and_then(|bytes| serde_json::from_slice(&bytes).ok()).ok_or(StateError::Malformed)?;
        let key_id = payload["k"].as_str().ok_or(StateError::Malformed)?;
        let key = self.keys.find(key_id).ok_or_else(|| StateError::UnknownKey(key_id.to_owned()))?;
        let mut mac = Self::mac(key);
        mac.update(body.as_bytes());
        mac.verify_slice(&tag).map_err(|_| StateError::BadSignature)?;
        if payload["a"] != self.audience.as_str() {
            return Err(StateError::WrongServer);
        }
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

    fn ring(id: &str, byte: u8) -> StateKeys {
        StateKeys::single(StateKey::new(id, [byte; 32]).unwrap())
    }

    fn sealer() -> StateSealer {
        StateSealer::new(ring("k1", 7), "notes", Duration::from_secs(60))
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
        let same_id_other_secret = StateSealer::new(ring("k1", 8), "notes", Duration::from_secs(60));
        assert_eq!(same_id_other_secret.open(&token, "tools/call", "abc", now), Err(StateError::BadSignature));
    }

    #[test]
    fn another_ring_or_another_server_is_named_as_such() {
        let now = SystemTime::now();
        let token = sealer().seal("tools/call", "abc", &json!(1), now);
        let other_ring = StateSealer::new(ring("k9", 7), "notes", Duration::from_secs(60));
        assert_eq!(other_ring.open(&token, "tools/call", "abc", now), Err(StateError::UnknownKey("k1".into())));
        let other_server = StateSealer::new(ring("k1", 7), "calendar", Duration::from_secs(60));
        assert_eq!(other_server.open(&token, "tools/call", "abc", now), Err(StateError::WrongServer));
    }

    #[test]
    fn an_older_key_of_the_ring_still_opens_after_a_rotation() {
        let now = SystemTime::now();
        let before = sealer().seal("tools/call", "abc", &json!("round 1"), now);
        let new_key = StateKey::new("k2", [9; 32]).unwrap();
        let rotated = StateKeys::new(new_key, vec![StateKey::new("k1", [7; 32]).unwrap()]).unwrap();
        let after = StateSealer::new(rotated, "notes", Duration::from_secs(60));
        assert_eq!(after.open(&before, "tools/call", "abc", now), Ok(json!("round 1")));
        let sealed_now = after.seal("tools/call", "abc", &json!(2), now);
        assert_eq!(sealer().open(&sealed_now, "tools/call", "abc", now), Err(StateError::UnknownKey("k2".into())));
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

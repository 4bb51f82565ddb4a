//! Sealing of `requestState`: the server keeps no state between the rounds
//! of a multi round-trip request, so it hands the client an opaque token and
//! must distrust it when it comes back (2026-07-28, MRTR: "Server
//! Requirements").
//!
//! ```text
//!  token = b64url(payload) "." b64url(HMAC-SHA256(key, b64url(payload)))
//!  payload = {"v":3, "k": key id, "a": the server's audience,
//!             "m": method, "d": hex SHA-256 of the salient params,
//!             "c": hex SHA-256 of the caller (subject, client id),
//!             "x": expiry in ms since the epoch, "s": the handler's state}
//! ```
//!
//! The HMAC gives integrity; the key id says which key of the ring
//! ([`StateKeys`]) sealed it, so replicas sharing the ring open each
//! other's states and keys rotate; the audience binds it to one server (two
//! servers sharing a key cannot replay each other's states); the method and
//! digest bind it to the request it was made for (tool name and arguments,
//! prompt name and arguments, or resource URI); the caller binds it to who
//! made that request on a protected endpoint (another user presenting it is
//! refused); the expiry bounds replay. An anonymous caller is bound to
//! nothing more: a stateless endpoint without protection cannot tell its
//! clients apart.
//! The state is not encrypted: a handler must not put secrets in it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hmac::{Hmac, Mac};
use mcp_bridge_protocol::rounds::{INPUT_RESPONSES, REQUEST_STATE};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::protect::Caller;
use super::state_keys::{StateKey, StateKeys};

/// The version of the sealed payload; a state of another one is refused.
const FORMAT: u64 = 3;

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
    #[error("it was made for another caller")]
    WrongCaller,
}

/// What a sealed state is bound to: the request it was made for and who
/// made it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Binding<'a> {
    /// The request's method.
    pub(crate) method: &'a str,
    /// [`params_digest`] of its params.
    pub(crate) digest: &'a str,
    /// [`caller_digest`] of who made it.
    pub(crate) caller: &'a str,
}

/// The hex SHA-256 of who a caller is (its subject and client id); empty
/// for an anonymous one.
pub(crate) fn caller_digest(caller: Option<&Caller>) -> String {
    let Some(caller) = caller else { return String::new() };
    let identity = json!([caller.subject, caller.client_id]).to_string();
    hex::encode(Sha256::digest(identity.as_bytes()))
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

    pub(crate) fn seal(&self, to: Binding<'_>, state: &Value, now: SystemTime) -> String {
        let expiry = now.checked_add(self.ttl).unwrap_or(now);
        let key = self.keys.current();
        let payload = json!({
            "v": FORMAT, "k": key.id(), "a": self.audience, "m": to.method, "d": to.digest, "c": to.caller,
            "x": millis(expiry), "s": state,
        });
        let body = B64.encode(payload.to_string());
        let mut mac = Self::mac(key);
        mac.update(body.as_bytes());
        let tag = B64.encode(mac.finalize().into_bytes());
        format!("{body}.{tag}")
    }

    pub(crate) fn open(&self, token: &str, to: Binding<'_>, now: SystemTime) -> Result<Value, StateError> {
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
        if payload["v"] != FORMAT {
            return Err(StateError::Malformed);
        }
        if payload["a"] != self.audience.as_str() {
            return Err(StateError::WrongServer);
        }
        let expiry = payload["x"].as_u64().ok_or(StateError::Malformed)?;
        if u128::from(expiry) <= millis(now) {
            return Err(StateError::Expired);
        }
        if payload["m"] != to.method || payload["d"] != to.digest {
            return Err(StateError::WrongRequest);
        }
        if payload["c"] != to.caller {
            return Err(StateError::WrongCaller);
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
    let salient = params.iter().filter(|(key, value)| {
        !(["_meta", INPUT_RESPONSES, REQUEST_STATE].contains(&key.as_str())
            || value.is_null()
            || value.as_object().is_some_and(Map::is_empty))
    });
    let mut hasher = Sha256::new();
    write_object(salient, &mut hasher);
    hex::encode(hasher.finalize())
}

/// An object's members in the canonical form: sorted by key, each followed
/// by a comma.
fn write_object<'a>(members: impl Iterator<Item = (&'a String, &'a Value)>, out: &mut Sha256) {
    let mut members: Vec<(&String, &Value)> = members.collect();
    members.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.update(b"{");
    for (key, value) in members {
        write_json(key, out);
        out.update(b":");
        write_canonical(value, out);
        out.update(b",");
    }
    out.update(b"}");
}

fn write_canonical(value: &Value, out: &mut Sha256) {
    match value {
        Value::Object(map) => write_object(map.iter(), out),
        Value::Array(items) => {
            out.update(b"[");
            for item in items {
                write_canonical(item, out);
                out.update(b",");
            }
            out.update(b"]");
        }
        scalar => write_json(scalar, out),
    }
}

/// `value` as compact JSON into the hash, without a string in between.
fn write_json<T: serde::Serialize + ?Sized>(value: &T, out: &mut Sha256) {
    // Writing into a hash cannot fail, and a string or a scalar always
    // serializes.
    let _ = serde_json::to_writer(out, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(id: &str, byte: u8) -> StateKeys {
        StateKeys::single(StateKey::new(id, [byte; 32]).unwrap())
    }

    /// The binding of an anonymous request.
    fn at<'a>(method: &'a str, digest: &'a str) -> Binding<'a> {
        Binding { method, digest, caller: "" }
    }

    fn sealer() -> StateSealer {
        StateSealer::new(ring("k1", 7), "notes", Duration::from_secs(60))
    }

    #[test]
    fn sealed_state_opens_for_the_same_request() {
        let now = SystemTime::now();
        let token = sealer().seal(at("tools/call", "abc"), &json!({"step": 2}), now);
        assert_eq!(sealer().open(&token, at("tools/call", "abc"), now), Ok(json!({"step": 2})));
    }

    #[test]
    fn tampered_state_is_refused() {
        let now = SystemTime::now();
        let token = sealer().seal(at("tools/call", "abc"), &json!({"admin": false}), now);
        let (body, tag) = token.split_once('.').unwrap();
        let forged = B64.encode(String::from_utf8(B64.decode(body).unwrap()).unwrap().replace("false", "true"));
        assert_eq!(
            sealer().open(&format!("{forged}.{tag}"), at("tools/call", "abc"), now),
            Err(StateError::BadSignature)
        );
        assert_eq!(sealer().open("garbage", at("tools/call", "abc"), now), Err(StateError::Malformed));
        let same_id_other_secret = StateSealer::new(ring("k1", 8), "notes", Duration::from_secs(60));
        assert_eq!(same_id_other_secret.open(&token, at("tools/call", "abc"), now), Err(StateError::BadSignature));
    }

    #[test]
    fn another_ring_or_another_server_is_named_as_such() {
        let now = SystemTime::now();
        let token = sealer().seal(at("tools/call", "abc"), &json!(1), now);
        let other_ring = StateSealer::new(ring("k9", 7), "notes", Duration::from_secs(60));
        assert_eq!(other_ring.open(&token, at("tools/call", "abc"), now), Err(StateError::UnknownKey("k1".into())));
        let other_server = StateSealer::new(ring("k1", 7), "calendar", Duration::from_secs(60));
        assert_eq!(other_server.open(&token, at("tools/call", "abc"), now), Err(StateError::WrongServer));
    }

    #[test]
    fn an_older_key_of_the_ring_still_opens_after_a_rotation() {
        let now = SystemTime::now();
        let before = sealer().seal(at("tools/call", "abc"), &json!("round 1"), now);
        let new_key = StateKey::new("k2", [9; 32]).unwrap();
        let rotated = StateKeys::new(new_key, vec![StateKey::new("k1", [7; 32]).unwrap()]).unwrap();
        let after = StateSealer::new(rotated, "notes", Duration::from_secs(60));
        assert_eq!(after.open(&before, at("tools/call", "abc"), now), Ok(json!("round 1")));
        let sealed_now = after.seal(at("tools/call", "abc"), &json!(2), now);
        assert_eq!(sealer().open(&sealed_now, at("tools/call", "abc"), now), Err(StateError::UnknownKey("k2".into())));
    }

    #[test]
    fn expired_state_is_refused() {
        let now = SystemTime::now();
        let token = sealer().seal(at("tools/call", "abc"), &json!(1), now);
        let later = now + Duration::from_secs(61);
        assert_eq!(sealer().open(&token, at("tools/call", "abc"), later), Err(StateError::Expired));
    }

    #[test]
    fn state_for_another_request_is_refused() {
        let now = SystemTime::now();
        let token = sealer().seal(at("tools/call", "abc"), &json!(1), now);
        assert_eq!(sealer().open(&token, at("prompts/get", "abc"), now), Err(StateError::WrongRequest));
        assert_eq!(sealer().open(&token, at("tools/call", "abd"), now), Err(StateError::WrongRequest));
    }

    #[test]
    fn state_made_for_one_caller_is_refused_to_another() {
        let now = SystemTime::now();
        let alice = caller_digest(Some(&Caller { client_id: Some("app".into()), ..Caller::new("alice", ["read"]) }));
        let bob = caller_digest(Some(&Caller { client_id: Some("app".into()), ..Caller::new("bob", ["read"]) }));
        let alice_elsewhere =
            caller_digest(Some(&Caller { client_id: Some("other".into()), ..Caller::new("alice", ["read"]) }));
        let for_alice = Binding { caller: &alice, ..at("tools/call", "abc") };
        let token = sealer().seal(for_alice, &json!(1), now);
        assert_eq!(sealer().open(&token, for_alice, now), Ok(json!(1)));
        for other in [&bob, &alice_elsewhere, ""] {
            let presented = Binding { caller: other, ..for_alice };
            assert_eq!(sealer().open(&token, presented, now), Err(StateError::WrongCaller), "{other:?}");
        }
        let anonymous = sealer().seal(at("tools/call", "abc"), &json!(1), now);
        assert_eq!(sealer().open(&anonymous, for_alice, now), Err(StateError::WrongCaller));
        assert_eq!(caller_digest(None), "");
    }

    #[test]
    fn a_state_of_an_older_format_is_refused() {
        let now = SystemTime::now();
        let token = sealer().seal(at("tools/call", "abc"), &json!(1), now);
        let (body, _) = token.split_once('.').unwrap();
        let older = String::from_utf8(B64.decode(body).unwrap()).unwrap().replace("\"v\":3", "\"v\":2");
        let older = B64.encode(older);
        let mut mac = StateSealer::mac(&StateKey::new("k1", [7; 32]).unwrap());
        mac.update(older.as_bytes());
        let resealed = format!("{older}.{}", B64.encode(mac.finalize().into_bytes()));
        assert_eq!(sealer().open(&resealed, at("tools/call", "abc"), now), Err(StateError::Malformed));
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

    #[test]
    fn digest_is_the_sha256_of_the_canonical_form() {
        // Sealed states outlive a restart (replicas share keys): the form
        // must not change. The hex is that of
        // {"arguments":{"x":1,"y":[1,{"a":"é\"\n","b":true,},],"z":null,},"name":"t",}
        let params: Map<String, Value> = serde_json::from_value(
            json!({"name":"t","arguments":{"x":1,"y":[1,{"b":true,"a":"é\"\n"}],"z":null},"_meta":{"k":1}}),
        )
        .unwrap();
        assert_eq!(params_digest(&params), "9954a8bb246f12567dbc0dcacd35d11569a2fb2b490b261ec7ce224966049b1a");
    }
}

//! Request ids and progress tokens: the two scalar unions of the schema
//! (`RequestId`, `ProgressToken`), each an integer or a string.
//!
//! JSON-RPC 2.0 also allows `null` and fractional numbers as ids; MCP does not
//! (2026-07-28, Base protocol: "Requests"), so both are rejected here with a
//! message that says what was found.

use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The id of a JSON-RPC request: an integer or a string, never `null`.
///
/// Integers are kept as `i64`; an integer outside that range is rejected
/// rather than silently turned into a float.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// A numeric id, as most clients send.
    Number(i64),
    /// A string id, as the bridge uses for its own `b-<n>` requests.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(s)
    }
}

impl RequestId {
    /// Reads an id from a JSON value, or says why the value cannot be one.
    ///
    /// # Errors
    /// [`InvalidId`] for `null`, booleans, fractional or out-of-range numbers,
    /// arrays and objects.
    pub fn try_from_value(value: &serde_json::Value) -> Result<Self, InvalidId> {
        use serde_json::Value;
        match value {
            Value::String(s) => Ok(RequestId::String(s.clone())),
            Value::Number(n) => n
                .as_i64()
                .map(RequestId::Number)
                .ok_or(InvalidId { found: if n.is_f64() { "a fractional number" } else { "an integer out of range" } }),
            Value::Null => Err(InvalidId { found: "null" }),
            Value::Bool(_) => Err(InvalidId { found: "a boolean" }),
            Value::Array(_) => Err(InvalidId { found: "an array" }),
            Value::Object(_) => Err(InvalidId { found: "an object" }),
        }
    }

    /// The id as a JSON value.
    pub fn to_value(&self) -> serde_json::Value {
        match self {
            RequestId::Number(n) => serde_json::Value::from(*n),
            RequestId::String(s) => serde_json::Value::from(s.as_str()),
        }
    }
}

/// A value that is not a valid request id, and what it was instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("request id must be an integer or a string, found {found}")]
pub struct InvalidId {
    /// What the value was, in words (`null`, `a boolean`, ...).
    pub found: &'static str,
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => s.serialize_i64(*n),
            RequestId::String(v) => s.serialize_str(v),
        }
    }
}

struct IdVisitor;

impl Visitor<'_> for IdVisitor {
    type Value = RequestId;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer or a string")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
        Ok(RequestId::Number(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
        i64::try_from(v).map(RequestId::Number).map_err(|_| E::custom("request id is an integer out of range"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
        Ok(RequestId::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<RequestId, E> {
        Ok(RequestId::String(v))
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IdVisitor)
    }
}

/// The token a requester puts in `_meta.progressToken` to receive
/// `notifications/progress` for one request. Same shape as [`RequestId`].
pub type ProgressToken = RequestId;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integer_id_round_trips() {
        let id: RequestId = serde_json::from_value(json!(42)).unwrap();
        assert_eq!(id, RequestId::Number(42));
        assert_eq!(serde_json::to_value(&id).unwrap(), json!(42));
    }

    #[test]
    fn string_id_round_trips() {
        let id: RequestId = serde_json::from_value(json!("b-1")).unwrap();
        assert_eq!(id, RequestId::from("b-1"));
        assert_eq!(serde_json::to_value(&id).unwrap(), json!("b-1"));
    }

    #[test]
    fn null_float_bool_and_containers_are_not_ids() {
        for bad in [json!(null), json!(1.5), json!(1.0), json!(true), json!([1]), json!({})] {
            assert!(serde_json::from_value::<RequestId>(bad.clone()).is_err(), "{bad}");
            assert!(RequestId::try_from_value(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn integer_out_of_range_is_not_an_id() {
        let v: serde_json::Value = serde_json::from_str("18446744073709551615").unwrap();
        assert_eq!(RequestId::try_from_value(&v).unwrap_err().found, "an integer out of range");
        assert!(serde_json::from_value::<RequestId>(v).is_err());
    }
}

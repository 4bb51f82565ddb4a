//! Small serde helpers shared by the wire types.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// Reads a field whose `null` means something: a present `null` becomes
/// `Some(Value::Null)`, and only an absent field (with `#[serde(default)]`)
/// becomes `None`.
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

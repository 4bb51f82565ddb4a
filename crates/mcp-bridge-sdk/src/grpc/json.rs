//! JSON values as protobuf `Struct`s (`google.protobuf.Struct`, the
//! proto's `metadata`, arguments, schemas and structured content) and back.
//! No I/O here.
//!
//! A protobuf number is a double: a whole number comes back as a JSON
//! integer (so `3.0` sent is `3` received), one beyond 2^53 loses its last
//! digits, and a JSON number too large for a double is out of range anyway.

use prost_types::value::Kind;
use prost_types::{ListValue, Struct, Value as ProtoValue};
use serde_json::{Map, Number, Value};

/// The largest integer a double holds exactly, plus one: 2^53.
const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0;

/// A JSON object as a `Struct`.
pub fn to_struct(object: &Map<String, Value>) -> Struct {
    Struct { fields: object.iter().map(|(k, v)| (k.clone(), to_proto(v))).collect() }
}

/// A `Struct` as a JSON object.
pub fn from_struct(object: Struct) -> Map<String, Value> {
    object.fields.into_iter().map(|(k, v)| (k, from_proto(v))).collect()
}

/// A JSON value as a protobuf `Value`.
pub fn to_proto(value: &Value) -> ProtoValue {
    let kind = match value {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(items) => Kind::ListValue(ListValue { values: items.iter().map(to_proto).collect() }),
        Value::Object(object) => Kind::StructValue(to_struct(object)),
    };
    ProtoValue { kind: Some(kind) }
}

/// A protobuf `Value` as JSON; a value without a kind, or a number that is
/// not finite (JSON has none), is `null`.
pub fn from_proto(value: ProtoValue) -> Value {
    match value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(b),
        Some(Kind::NumberValue(n)) => number(n),
        Some(Kind::StringValue(s)) => Value::String(s),
        Some(Kind::ListValue(list)) => Value::Array(list.values.into_iter().map(from_proto).collect()),
        Some(Kind::StructValue(object)) => Value::Object(from_struct(object)),
    }
}

fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < EXACT_INTEGERS {
        // Exact: a whole number below 2^53.
        Value::Number(Number::from(n as i64))
    } else {
        Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-(1i64 << 53) + 1..(1i64 << 53)).prop_map(|n| json!(n)),
            // Doubles with a fraction: they stay doubles.
            (-1e12f64..1e12).prop_filter("has a fraction", |f| f.fract() != 0.0).prop_map(|f| json!(f)),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(".{0,6}", inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn json_survives_a_trip_through_protobuf(value in json_value()) {
            prop_assert_eq!(from_proto(to_proto(&value)), value);
        }
    }

    #[test]
    fn whole_doubles_come_back_as_integers_and_what_json_cannot_hold_as_null() {
        assert_eq!(from_proto(to_proto(&json!(3.0))), json!(3));
        let nan = ProtoValue { kind: Some(Kind::NumberValue(f64::NAN)) };
        assert_eq!(from_proto(nan), Value::Null);
        assert_eq!(from_proto(ProtoValue { kind: None }), Value::Null);
        assert_eq!(from_proto(to_proto(&json!(1e300))), json!(1e300));
    }
}

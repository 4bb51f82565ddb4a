//! Constant string members (`"type": "text"`, `"method": "roots/list"`) as
//! unit types, so a struct can carry its own discriminator and still refuse a
//! wrong one when read.

/// Declares a unit type that writes `$value` and reads only `$value`.
macro_rules! const_tag {
    ($(#[$doc:meta])* $name:ident = $value:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name;

        impl $name {
            /// The string this tag stands for.
            pub const VALUE: &'static str = $value;
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                if v == $value {
                    Ok($name)
                } else {
                    Err(serde::de::Error::custom(concat!("expected \"", $value, "\"")))
                }
            }
        }
    };
}

pub(crate) use const_tag;

/// Reads a `T` out of a value already read, turning the error into `E`; the
/// second half of every "read the discriminator, then the variant" decoder.
pub(crate) fn from_value<T: serde::de::DeserializeOwned, E: serde::de::Error>(
    value: serde_json::Value,
) -> Result<T, E> {
    serde_json::from_value(value).map_err(E::custom)
}

//! Chained setters for the options structs, which are `#[non_exhaustive]`
//! so that a new option is not a breaking change: build one with its
//! constructor (or `Default`), then `with_*` each field that differs.

/// `with_<field>` setters: `value` fields take the field's type (or what
/// converts into it), `some` fields are `Option`s set to `Some`. Exported
/// (hidden) for the bridge crate's options, which follow the same rule.
#[doc(hidden)]
#[macro_export]
macro_rules! with_setters {
    ($ty:ty { $($(#[$attr:meta])* $kind:ident $setter:ident => $field:ident: $arg:ty),* $(,)? }) => {
        impl $ty {
            $($crate::with_setters!(@one $(#[$attr])* $kind $setter $field $arg);)*
        }
    };
    (@one $(#[$attr:meta])* value $setter:ident $field:ident $arg:ty) => {
        $(#[$attr])*
        #[doc = concat!("Sets [`", stringify!($field), "`](Self::", stringify!($field), ").")]
        #[must_use]
        pub fn $setter(mut self, $field: $arg) -> Self {
            self.$field = $field.into();
            self
        }
    };
    (@one $(#[$attr:meta])* some $setter:ident $field:ident $arg:ty) => {
        $(#[$attr])*
        #[doc = concat!("Sets [`", stringify!($field), "`](Self::", stringify!($field), ") to `Some`.")]
        #[must_use]
        pub fn $setter(mut self, $field: $arg) -> Self {
            self.$field = Some($field.into());
            self
        }
    };
}

pub(crate) use crate::with_setters;

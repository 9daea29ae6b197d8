//! One table per registry of variants (ops, error kinds, repair and diagnostic kinds): the
//! [`registry!`](crate::registry) macro writes a fieldless enum, its `ALL` list and its stable names
//! from one table, so adding a variant is one line the compiler then follows through every exhaustive
//! `match`. It is exported (hidden) for the translators' kinds; it is not part of the engine's API.
//! This module must not hold anything but the macro.

/// Declares an enum from one table: each unit variant with its docs and its stable name, in the order
/// of the generated list; optionally a `wrapping` section of variants that carry another registry's
/// kind (named by that kind's method of the same name).
///
/// ```
/// statecraft_engine::registry! {
///     /// What the enum is.
///     #[derive(Clone, Copy, Debug, PartialEq)]
///     pub enum Kind {
///         /// One kind.
///         One = "one",
///         /// Another.
///         Two = "two",
///     }
///     impl {
///         /// Every kind, in the table's order.
///         pub const ALL;
///         /// The stable name in JSON.
///         pub fn code;
///     }
/// }
/// assert_eq!(Kind::ALL, [Kind::One, Kind::Two]);
/// assert_eq!(Kind::Two.code(), "two");
/// ```
#[doc(hidden)]
#[macro_export]
macro_rules! registry {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$variant_meta:meta])*
                $variant:ident = $text:literal,
            )*
        }
        $(wrapping {
            $(
                $(#[$wrapped_meta:meta])*
                $wrapped:ident($inner:ty),
            )*
        })?
        impl {
            $(#[$all_meta:meta])*
            $all_vis:vis const $all:ident;
            $(#[$name_meta:meta])*
            $name_vis:vis fn $name_fn:ident;
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $($(
                $(#[$wrapped_meta])*
                $wrapped($inner),
            )*)?
            $(
                $(#[$variant_meta])*
                $variant,
            )*
        }

        impl $name {
            $(#[$all_meta])*
            $all_vis const $all: [$name; [$($text),*].len()] = [$($name::$variant),*];

            $(#[$name_meta])*
            $name_vis fn $name_fn(self) -> &'static str {
                match self {
                    $($($name::$wrapped(inner) => inner.$name_fn(),)*)?
                    $($name::$variant => $text,)*
                }
            }
        }
    };
}

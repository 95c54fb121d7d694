//! How proto types map onto JSON here: the ProtoJSON rules every A2A JSON
//! binding uses (spec §5.5–5.7), as serde helpers and two macros.
//!
//! - A field that is absent or `null` takes its default value, and a field at
//!   its default value is left out on output, except where the proto marks it
//!   REQUIRED: those are always written.
//! - Enums are written as their proto names (`TASK_STATE_COMPLETED`); their
//!   numbers are accepted on input, as ProtoJSON parsers do.
//! - `bytes` are base64 (standard alphabet with padding on output; the
//!   URL-safe alphabet and missing padding are accepted on input).
//! - A `oneof` is one of several keys on the object; more than one set is an
//!   error, naming them.
//! - Unknown fields are ignored (spec §5.7).

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A `google.protobuf.Struct`: a JSON object of arbitrary values, as metadata,
/// extension parameters or JWS headers are on the wire.
pub type Metadata = serde_json::Map<String, Value>;

/// Absent and `null` both mean the field's default (ProtoJSON).
pub(crate) fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// For a `google.protobuf.Value` field: `null` is a value, not an absence, so
/// a present key always gives `Some` (the field also needs `default`).
pub(crate) fn present<'de, D>(deserializer: D) -> Result<Option<Value>, D::Error>
where
    D: Deserializer<'de>,
{
    Value::deserialize(deserializer).map(Some)
}

pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}

pub(crate) fn is_zero(value: &i32) -> bool {
    *value == 0
}

const LENIENT: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const STANDARD_LENIENT: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, LENIENT);
const URL_SAFE_LENIENT: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, LENIENT);

/// Decodes ProtoJSON `bytes`: either base64 alphabet, padded or not.
pub(crate) fn decode_base64(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    STANDARD_LENIENT
        .decode(text)
        .or_else(|_| URL_SAFE_LENIENT.decode(text))
}

/// Encodes `bytes` the way ProtoJSON writes them.
pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `Option<Vec<u8>>` as an optional base64 string.
pub(crate) fn base64_opt<'de, D>(deserializer: D) -> Result<Option<Vec<u8>>, D::Error>
where
    D: Deserializer<'de>,
{
    match Option::<String>::deserialize(deserializer)? {
        None => Ok(None),
        Some(text) => decode_base64(&text)
            .map(Some)
            .map_err(|e| serde::de::Error::custom(format!("not valid base64: {e}"))),
    }
}

/// A proto enum: written as its name, read from its name or number.
/// Generates the enum with `ALL`, `as_str`, `number`, `from_name`,
/// `from_number`, `Display`, `FromStr` and a lenient `Deserialize`.
macro_rules! proto_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $number:literal => $wire:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, schemars::JsonSchema)]
        pub enum $name {
            $( $(#[$vmeta])* #[serde(rename = $wire)] $variant, )+
        }

        impl $name {
            /// Every value, in the proto's order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The proto name, as written on the wire.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire,)+ }
            }

            /// The proto number.
            pub const fn number(self) -> i32 {
                match self { $($name::$variant => $number,)+ }
            }

            /// The value of a proto name (exact spelling).
            pub fn from_name(name: &str) -> Option<Self> {
                match name { $($wire => Some($name::$variant),)+ _ => None }
            }

            /// The value of a proto number.
            pub fn from_number(number: i64) -> Option<Self> {
                match number { $($number => Some($name::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::wire::UnknownEnumValue;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                Self::from_name(text).ok_or_else(|| $crate::wire::UnknownEnumValue {
                    enum_name: stringify!($name),
                    value: text.to_owned(),
                })
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $name;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("one of ", $("`", $wire, "` "),+, "or its number"))
                    }

                    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<$name, E> {
                        $name::from_name(text).ok_or_else(|| {
                            E::invalid_value(serde::de::Unexpected::Str(text), &self)
                        })
                    }

                    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<$name, E> {
                        $name::from_number(n).ok_or_else(|| {
                            E::invalid_value(serde::de::Unexpected::Signed(n), &self)
                        })
                    }

                    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<$name, E> {
                        i64::try_from(n)
                            .ok()
                            .and_then($name::from_number)
                            .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Unsigned(n), &self))
                    }
                }
                deserializer.deserialize_any(Visitor)
            }
        }
    };
}

/// A proto `oneof` that is a whole message (`StreamResponse`,
/// `SecurityScheme`…): a Rust enum written as an object with exactly one of
/// its keys. Reading goes through a struct of options so that unknown keys are
/// ignored and none or several set is an error naming the keys.
macro_rules! proto_oneof {
    (
        $(#[$meta:meta])*
        pub enum $name:ident via $wire:ident {
            $( $(#[$vmeta:meta])* $variant:ident($ty:ty) as $field:ident = $json:literal $(| $alias:literal)?, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $name {
            $( $(#[$vmeta])* $variant($ty), )+
        }

        // The object form on the wire: every key optional, one set. It
        // carries the enum's docs, which become its schema's description.
        $(#[$meta])*
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        pub(crate) struct $wire {
            $(
                $(#[$vmeta])*
                #[serde(rename = $json, $(alias = $alias,)? default)]
                $field: Option<$ty>,
            )+
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let wire = <$wire as serde::Deserialize>::deserialize(deserializer)?;
                Self::try_from(wire).map_err(serde::de::Error::custom)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let mut schema = <$wire as schemars::JsonSchema>::json_schema(generator);
                schema.insert("minProperties".into(), 1.into());
                schema
            }
        }

        impl TryFrom<$wire> for $name {
            type Error = $crate::wire::OneofError;

            fn try_from(wire: $wire) -> Result<Self, Self::Error> {
                let mut set: Vec<&'static str> = Vec::new();
                $( if wire.$field.is_some() { set.push($json); } )+
                if set.len() > 1 {
                    return Err($crate::wire::OneofError::Several(set));
                }
                $( if let Some(value) = wire.$field { return Ok($name::$variant(value)); } )+
                Err($crate::wire::OneofError::None(&[$($json),+]))
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap as _;
                let mut map = serializer.serialize_map(Some(1))?;
                match self {
                    $( $name::$variant(value) => map.serialize_entry($json, value)?, )+
                }
                map.end()
            }
        }
    };
}

pub(crate) use {proto_enum, proto_oneof};

/// A proto enum name this crate does not know (from [`std::str::FromStr`],
/// for query parameters such as `status=TASK_STATE_WORKING`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not a {enum_name} value")]
pub struct UnknownEnumValue {
    /// The enum's Rust name.
    pub enum_name: &'static str,
    /// The text that matched none of its values.
    pub value: String,
}

/// A `oneof` object with none or several of its keys set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OneofError {
    /// No key of the oneof was set; these are the keys it has.
    #[error("expected one of {}", quoted(.0))]
    None(&'static [&'static str]),
    /// More than one key was set; these are the ones that were.
    #[error("only one of {} may be set", quoted(.0))]
    Several(Vec<&'static str>),
}

fn quoted(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

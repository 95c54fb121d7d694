//! Declarative macros that stamp out wire messages and open enums.

/// Declares an open string enum: a transparent newtype over a string with one
/// associated constant per value the specs name. Unknown values are kept as
/// they came, so they survive a round trip.
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$vmeta:meta])* $konst:ident = $value:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        #[serde(transparent)]
        pub struct $name(std::borrow::Cow<'static, str>);

        /// A known value is read without an allocation (it borrows the
        /// constant); any other string is kept as it is.
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $name;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("a string")
                    }
                    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<$name, E> {
                        Ok(match $name::KNOWN.iter().find(|k| k.as_str() == value) {
                            Some(known) => known.clone(),
                            None => $name(std::borrow::Cow::Owned(value.to_owned())),
                        })
                    }
                    fn visit_string<E: serde::de::Error>(self, value: String) -> Result<$name, E> {
                        Ok($name::new(value))
                    }
                }
                deserializer.deserialize_str(Visitor)
            }
        }

        impl $name {
            $( $(#[$vmeta])* pub const $konst: Self = Self(std::borrow::Cow::Borrowed($value)); )+

            /// Every value the specification names, in specification order.
            pub const KNOWN: &'static [Self] = &[$(Self::$konst),+];

            /// A value from any string; unknown values are allowed.
            pub fn new(value: impl Into<String>) -> Self {
                let value: String = value.into();
                match Self::KNOWN.iter().find(|k| k.as_str() == value) {
                    Some(known) => known.clone(),
                    None => Self(std::borrow::Cow::Owned(value)),
                }
            }

            /// The wire string.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Whether the specification names this value.
            pub fn is_known(&self) -> bool {
                Self::KNOWN.iter().any(|k| k.as_str() == self.as_str())
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.as_str())
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl From<&str> for $name {
            fn from(value: &str) -> Self {
                Self::new(value)
            }
        }

        impl From<String> for $name {
            fn from(value: String) -> Self {
                Self::new(value)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        #[cfg(feature = "arbitrary")]
        impl proptest::arbitrary::Arbitrary for $name {
            type Parameters = ();
            type Strategy = proptest::strategy::BoxedStrategy<Self>;
            fn arbitrary_with(_: ()) -> Self::Strategy {
                use proptest::prelude::*;
                prop_oneof![
                    proptest::sample::select(Self::KNOWN.to_vec()),
                    "[a-z_]{1,12}".prop_map(Self::new),
                ]
                .boxed()
            }
        }
    };
}

/// Declares a wire message: a struct with the envelope fields (`type`, `id`,
/// `version`, `ts`) followed by its own fields, each with the default the
/// specification gives (`= expr`), and its [`crate::WireType`] impl.
macro_rules! wire_message {
    (
        $(#[$meta:meta])*
        pub struct $name:ident = $wire:literal {
            $( $(#[$fmeta:meta])* pub $field:ident : $fty:ty = $default:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        #[cfg_attr(feature = "arbitrary", derive(proptest_derive::Arbitrary))]
        pub struct $name {
            #[doc = concat!("Message type, always `", $wire, "`.")]
            #[serde(rename = "type")]
            pub r#type: $crate::envelope::TypeTag<$name>,
            /// Unique message id (a fresh UUID by default).
            #[serde(default = "crate::envelope::new_id")]
            #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::id()"))]
            pub id: String,
            /// Protocol version, `"1.0"` by default; `a2e` is accepted as an alias on input.
            #[serde(default = "crate::envelope::default_version", alias = "a2e")]
            #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::version()"))]
            pub version: String,
            /// Unix epoch seconds when the message was made (now by default).
            #[serde(default = "crate::envelope::now")]
            #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::finite()"))]
            pub ts: f64,
            $( $(#[$fmeta])* pub $field : $fty, )*
        }

        impl $crate::envelope::WireType for $name {
            const TYPE: &'static str = $wire;
        }

        impl Default for $name {
            fn default() -> Self {
                Self {
                    r#type: $crate::envelope::TypeTag::new(),
                    id: $crate::envelope::new_id(),
                    version: $crate::envelope::default_version(),
                    ts: $crate::envelope::now(),
                    $( $field: $default, )*
                }
            }
        }
    };
}

/// Implements [`crate::Response`] for messages that carry `req_id`.
macro_rules! impl_response {
    ($($name:ident),+ $(,)?) => {
        $(
            impl $crate::envelope::Response for $name {
                fn req_id(&self) -> &str {
                    &self.req_id
                }
                fn set_req_id(&mut self, req_id: String) {
                    self.req_id = req_id;
                }
            }
        )+
    };
}

/// Implements [`crate::Request`] for request messages.
macro_rules! impl_request {
    ($($name:ident),+ $(,)?) => {
        $(
            impl $crate::envelope::Request for $name {
                fn id(&self) -> &str {
                    &self.id
                }
            }
        )+
    };
}

/// Calls `$m! { spec: [ … ], extensions: [ … ] }` with every message type:
/// the specifications' in their order, then this implementation's wire
/// extensions ([`crate::extensions`]). The one list of messages, shared by
/// [`crate::Message`], the schemas and the proptest strategies.
macro_rules! for_each_message {
    ($m:ident) => {
        $m! {
            spec: [
                // core
                HandshakeRequest,
                HandshakeResponse,
                Ping,
                Pong,
                Shutdown,
                ErrorMessage,
                InvokeEvent,
                // tools
                ToolListRequest,
                ToolListResponse,
                ToolCallRequest,
                ToolCallResponse,
                ToolEvent,
                // skills
                SkillDiscoverRequest,
                SkillDiscoverResponse,
                SkillCallRequest,
                SkillCallResponse,
                SkillEvent,
                // chains
                ChainRequest,
                ChainEvent,
                ChainResponse,
                // proc
                ProcSpawnRequest,
                ProcSpawnResponse,
                ProcWriteRequest,
                ProcWriteResponse,
                ProcReadEvent,
                ProcKillRequest,
                ProcKillResponse,
                ProcStatusRequest,
                ProcStatusResponse,
            ],
            extensions: [ChainAttach, DagRequest, ChainFork],
        }
    };
}

/// The impls every list-backed JSON object type shares (`Outputs`,
/// `InputMap`): `map[key]` (`null` when absent), `Debug` and `Serialize` as
/// a map, and exactly the JSON Schema of `serde_json::Map`. The type has
/// `get(&str) -> Option<&Value>`, `len()` and `iter()` over `(key, &Value)`.
macro_rules! json_object_impls {
    ($name:ident) => {
        impl std::ops::Index<&str> for $name {
            type Output = serde_json::Value;

            /// The value under `key`, or `null`.
            fn index(&self, key: &str) -> &serde_json::Value {
                static NULL: serde_json::Value = serde_json::Value::Null;
                self.get(key).unwrap_or(&NULL)
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_map().entries(self.iter()).finish()
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeMap;
                let mut map = serializer.serialize_map(Some(self.len()))?;
                for (k, v) in self.iter() {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }

        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for $name {
            // Exactly the schema of the JSON object it is on the wire.
            fn inline_schema() -> bool {
                <serde_json::Map<String, serde_json::Value> as schemars::JsonSchema>::inline_schema(
                )
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                <serde_json::Map<String, serde_json::Value> as schemars::JsonSchema>::schema_name()
            }

            fn schema_id() -> std::borrow::Cow<'static, str> {
                <serde_json::Map<String, serde_json::Value> as schemars::JsonSchema>::schema_id()
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                <serde_json::Map<String, serde_json::Value> as schemars::JsonSchema>::json_schema(
                    generator,
                )
            }
        }
    };
}

//! [`Message`]: every A2E message, and every wire extension of this
//! implementation, dispatched on its `type`.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::chains::*;
use crate::core::*;
use crate::extensions::*;
use crate::proc::*;
use crate::skills::*;
use crate::tools::*;

macro_rules! messages {
    (
        spec: [$( $spec:ident ),+ $(,)?],
        extensions: [$( $ext:ident ),+ $(,)?] $(,)?
    ) => {
        messages!(@all [$( $spec ),+] [$( $ext ),+] [$( $spec, )+ $( $ext ),+]);
    };
    (@all [$( $spec:ident ),+] [$( $ext:ident ),+] [$( $variant:ident ),+]) => {
        /// Any A2E message, or one of this implementation's wire extensions
        /// ([`crate::extensions`]). A message whose `type` this crate does not
        /// know is kept whole as [`Message::Unknown`].
        #[derive(Debug, Clone, PartialEq)]
        #[allow(clippy::large_enum_variant)]
        pub enum Message {
            $(
                #[doc = concat!("`", stringify!($variant), "`.")]
                $variant($variant),
            )+
            /// A message of a type this crate does not know, as it came.
            Unknown(Map<String, Value>),
        }

        impl Message {
            /// Every `type` string the specifications define, in their order.
            pub const TYPES: &'static [&'static str] = &[
                $( <$spec as $crate::envelope::WireType>::TYPE, )+
            ];

            /// The `type` strings of this implementation's wire extensions
            /// ([`crate::extensions`]), decoded as every other message.
            pub const EXTENSION_TYPES: &'static [&'static str] = &[
                $( <$ext as $crate::envelope::WireType>::TYPE, )+
            ];

            /// The `type` on the wire.
            pub fn type_str(&self) -> &str {
                match self {
                    $( Self::$variant(_) => <$variant as $crate::envelope::WireType>::TYPE, )+
                    Self::Unknown(map) => map.get("type").and_then(Value::as_str).unwrap_or(""),
                }
            }

            /// The message's `id`.
            pub fn id(&self) -> &str {
                match self {
                    $( Self::$variant(m) => &m.id, )+
                    Self::Unknown(map) => map.get("id").and_then(Value::as_str).unwrap_or(""),
                }
            }

            /// The message's `version` (`a2e` on input is the same field).
            pub fn version(&self) -> &str {
                match self {
                    $( Self::$variant(m) => &m.version, )+
                    Self::Unknown(map) => map
                        .get("version")
                        .or_else(|| map.get("a2e"))
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                }
            }

            /// Parses a known `type` from raw JSON in one pass; `None` for an
            /// unknown type or any failure (which [`Message::parse_known`]
            /// then explains).
            pub(crate) fn parse_known_fast(wire_type: &str, text: &str) -> Option<Self> {
                $(
                    if wire_type == <$variant as $crate::envelope::WireType>::TYPE {
                        return serde_json::from_str::<$variant>(text).ok().map(Self::$variant);
                    }
                )+
                None
            }

            /// Parses the body of a known `type` from raw JSON, recording the path of a failure.
            /// The path is tracked only on a second parse after a failure: tracking
            /// it slows every parse, and a message that parses needs no path.
            pub(crate) fn parse_known(
                wire_type: &str,
                text: &str,
            ) -> Option<Result<Self, serde_path_to_error::Error<serde_json::Error>>> {
                $(
                    if wire_type == <$variant as $crate::envelope::WireType>::TYPE {
                        if let Ok(message) = serde_json::from_str::<$variant>(text) {
                            return Some(Ok(Self::$variant(message)));
                        }
                        let mut de = serde_json::Deserializer::from_str(text);
                        return Some(
                            serde_path_to_error::deserialize::<_, $variant>(&mut de).map(Self::$variant),
                        );
                    }
                )+
                None
            }
        }

        impl Serialize for Message {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( Self::$variant(m) => m.serialize(serializer), )+
                    Self::Unknown(map) => map.serialize(serializer),
                }
            }
        }

        $(
            impl From<$variant> for Message {
                fn from(message: $variant) -> Self {
                    Self::$variant(message)
                }
            }
        )+
    };
}

for_each_message!(messages);

impl Message {
    /// Compact JSON, without a trailing newline.
    pub fn to_json(&self) -> Vec<u8> {
        // Serializing these types cannot fail: every map key is a string.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// One NDJSON line: compact JSON and `\n`.
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = self.to_json();
        line.push(b'\n');
        line
    }

    /// The `req_id` this message answers, for responses and events.
    pub fn req_id(&self) -> Option<&str> {
        let value = match self {
            Self::HandshakeResponse(m) => &m.req_id,
            Self::Pong(m) => &m.req_id,
            Self::ErrorMessage(m) => &m.req_id,
            Self::InvokeEvent(m) => &m.req_id,
            Self::ToolListResponse(m) => &m.req_id,
            Self::ToolCallResponse(m) => &m.req_id,
            Self::ToolEvent(m) => &m.req_id,
            Self::SkillDiscoverResponse(m) => &m.req_id,
            Self::SkillCallResponse(m) => &m.req_id,
            Self::SkillEvent(m) => &m.req_id,
            Self::ChainEvent(m) => &m.req_id,
            Self::ChainResponse(m) => &m.req_id,
            Self::ProcSpawnResponse(m) => &m.req_id,
            Self::ProcWriteResponse(m) => &m.req_id,
            Self::ProcReadEvent(m) => &m.req_id,
            Self::ProcKillResponse(m) => &m.req_id,
            Self::ProcStatusResponse(m) => &m.req_id,
            Self::Unknown(map) => return map.get("req_id").and_then(Value::as_str),
            _ => return None,
        };
        Some(value)
    }

    /// Whether this is an event (`…/event`): one of possibly many for a request.
    pub fn is_event(&self) -> bool {
        self.type_str().ends_with("event")
    }
}

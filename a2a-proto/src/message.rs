//! Messages, their parts and artifacts (proto `Message`, `Part`, `Role`,
//! `Artifact`; spec §4.1.4–4.1.7).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire::{Metadata, nullable, proto_enum};

proto_enum! {
    /// Who sent a [`Message`] (proto `Role`): `ROLE_USER` or `ROLE_AGENT` on
    /// the wire.
    pub enum Role {
        /// `ROLE_UNSPECIFIED`: the proto default; not valid in a message.
        #[default]
        Unspecified = 0 => "ROLE_UNSPECIFIED",
        /// `ROLE_USER`: from the client to the server.
        User = 1 => "ROLE_USER",
        /// `ROLE_AGENT`: from the server to the client.
        Agent = 2 => "ROLE_AGENT",
    }
}

/// What a [`Part`] holds: the proto's `oneof content`, one of the keys
/// `text`, `raw`, `url` or `data` on the part's object.
#[derive(Debug, Clone, PartialEq)]
pub enum PartContent {
    /// `text`: a string.
    Text(String),
    /// `raw`: bytes, base64 on the wire.
    Raw(Vec<u8>),
    /// `url`: where the file's content is.
    Url(String),
    /// `data`: any JSON value (object, array, string, number, boolean or null).
    Data(Value),
}

/// One piece of a message's or an artifact's content (proto `Part`): an
/// object with one of `text` / `raw` / `url` / `data`, and optional
/// `metadata`, `filename` and `mediaType`. There is no `kind` field in v1.0.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "PartWire")]
pub struct Part {
    /// The content (`text`, `raw`, `url` or `data` on the wire).
    pub content: PartContent,
    /// `metadata`: anything the sender attaches to this part.
    pub metadata: Option<Metadata>,
    /// `filename`: the file's name, e.g. `document.pdf`; empty for none.
    pub filename: String,
    /// `mediaType`: the content's MIME type, e.g. `text/plain`; empty for none.
    pub media_type: String,
}

// A `Part` as its JSON object: the oneof's keys side by side. Its doc
// comment is the schema's description.
/// One piece of a message's or an artifact's content: one of `text`, `raw`
/// (base64), `url`, `data`, with optional `metadata`, `filename` and
/// `mediaType`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct PartWire {
    /// The string content of a text part.
    #[serde(default)]
    text: Option<String>,
    /// The bytes of a file, base64.
    #[serde(default, deserialize_with = "crate::wire::base64_opt")]
    #[schemars(with = "Option<String>")]
    raw: Option<Vec<u8>>,
    /// A URL pointing to the file's content.
    #[serde(default)]
    url: Option<String>,
    /// Structured data: any JSON value, `null` included.
    #[serde(default, deserialize_with = "crate::wire::present")]
    data: Option<Value>,
    /// Metadata of this part.
    #[serde(default)]
    metadata: Option<Metadata>,
    /// The file's name.
    #[serde(default, deserialize_with = "nullable")]
    filename: String,
    /// The content's MIME type.
    #[serde(default, alias = "media_type", deserialize_with = "nullable")]
    media_type: String,
}

impl TryFrom<PartWire> for Part {
    type Error = crate::wire::OneofError;

    fn try_from(wire: PartWire) -> Result<Self, Self::Error> {
        let set: Vec<&'static str> = [
            ("text", wire.text.is_some()),
            ("raw", wire.raw.is_some()),
            ("url", wire.url.is_some()),
            ("data", wire.data.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, is_set)| is_set.then_some(key))
        .collect();
        if set.len() > 1 {
            return Err(crate::wire::OneofError::Several(set));
        }
        let content = match (wire.text, wire.raw, wire.url, wire.data) {
            (Some(text), ..) => PartContent::Text(text),
            (_, Some(raw), ..) => PartContent::Raw(raw),
            (_, _, Some(url), _) => PartContent::Url(url),
            (.., Some(data)) => PartContent::Data(data),
            _ => {
                return Err(crate::wire::OneofError::None(&[
                    "text", "raw", "url", "data",
                ]));
            }
        };
        Ok(Part {
            content,
            metadata: wire.metadata,
            filename: wire.filename,
            media_type: wire.media_type,
        })
    }
}

impl JsonSchema for Part {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Part".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        PartWire::json_schema(generator)
    }
}

impl Serialize for Part {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        match &self.content {
            PartContent::Text(text) => map.serialize_entry("text", text)?,
            PartContent::Raw(raw) => {
                map.serialize_entry("raw", &crate::wire::encode_base64(raw))?;
            }
            PartContent::Url(url) => map.serialize_entry("url", url)?,
            PartContent::Data(data) => map.serialize_entry("data", data)?,
        }
        if let Some(metadata) = &self.metadata {
            map.serialize_entry("metadata", metadata)?;
        }
        if !self.filename.is_empty() {
            map.serialize_entry("filename", &self.filename)?;
        }
        if !self.media_type.is_empty() {
            map.serialize_entry("mediaType", &self.media_type)?;
        }
        map.end()
    }
}

impl Part {
    fn of(content: PartContent) -> Self {
        Part {
            content,
            metadata: None,
            filename: String::new(),
            media_type: String::new(),
        }
    }

    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::of(PartContent::Text(text.into()))
    }

    /// A file part carrying its bytes.
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Self {
        Self::of(PartContent::Raw(bytes.into()))
    }

    /// A file part pointing at a URL.
    pub fn url(url: impl Into<String>) -> Self {
        Self::of(PartContent::Url(url.into()))
    }

    /// A structured-data part.
    pub fn data(data: Value) -> Self {
        Self::of(PartContent::Data(data))
    }

    /// Sets `mediaType`.
    #[must_use]
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = media_type.into();
        self
    }

    /// Sets `filename`.
    #[must_use]
    pub fn with_filename(mut self, filename: impl Into<String>) -> Self {
        self.filename = filename.into();
        self
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(text) => Some(text),
            _ => None,
        }
    }
}

/// One unit of communication between client and agent (proto `Message`).
/// Required on the wire: `messageId`, `role`, `parts` (see
/// [`crate::validate`]); `contextId` and `taskId` tie it to a conversation
/// and a task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// `messageId`: unique id of the message, chosen by its sender.
    #[serde(default, alias = "message_id", deserialize_with = "nullable")]
    pub message_id: String,
    /// `contextId`: the conversation it belongs to; empty for none.
    #[serde(
        default,
        alias = "context_id",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub context_id: String,
    /// `taskId`: the task it belongs to; empty for none.
    #[serde(
        default,
        alias = "task_id",
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub task_id: String,
    /// `role`: who sent it.
    #[serde(default)]
    pub role: Role,
    /// `parts`: the content, at least one part.
    #[serde(default, deserialize_with = "nullable")]
    pub parts: Vec<Part>,
    /// `metadata`: anything the sender attaches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// `extensions`: URIs of the extensions present in or contributing to it.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
    /// `referenceTaskIds`: tasks it refers to for context.
    #[serde(
        default,
        alias = "reference_task_ids",
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A message with an id, a role and parts; everything else empty.
    pub fn new(message_id: impl Into<String>, role: Role, parts: Vec<Part>) -> Self {
        Message {
            message_id: message_id.into(),
            role,
            parts,
            ..Message::default()
        }
    }

    /// A user message of one text part.
    pub fn user_text(message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(message_id, Role::User, vec![Part::text(text)])
    }

    /// An agent message of one text part.
    pub fn agent_text(message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self::new(message_id, Role::Agent, vec![Part::text(text)])
    }
}

/// An output of a task (proto `Artifact`). Required on the wire:
/// `artifactId` (unique within its task) and `parts` (at least one).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// `artifactId`: unique within the task.
    #[serde(default, alias = "artifact_id", deserialize_with = "nullable")]
    pub artifact_id: String,
    /// `name`: a human-readable name; empty for none.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    /// `description`: a human-readable description; empty for none.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub description: String,
    /// `parts`: the content, at least one part.
    #[serde(default, deserialize_with = "nullable")]
    pub parts: Vec<Part>,
    /// `metadata`: anything the agent attaches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    /// `extensions`: URIs of the extensions present in or contributing to it.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extensions: Vec<String>,
}

//! Rich tool results: text, images, audio and embedded resources, the content
//! types of MCP, so a tool's image reaches an MCP client as an image.
//!
//! A rich result travels in a tool's `data` as `{"output": TEXT, "content":
//! [PARTS]}`: `output` is the text parts joined with newlines, `content` (left
//! out when there are none) the other parts in order, each in its MCP JSON form (`{"type": "image", "data":
//! BASE64, "mimeType": …}`). This is also the form in which the host reports
//! what a mounted MCP server's tool returned, so results keep their shape both
//! ways; an MCP client of the host gets the text first, then the parts.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ToolOutput;

/// One part of a rich result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// The image's bytes, base64 (standard alphabet, padded).
        data: String,
        /// Its media type (`image/png`).
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A sound.
    Audio {
        /// The sound's bytes, base64.
        data: String,
        /// Its media type (`audio/wav`).
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource's contents, embedded.
    Resource {
        /// The resource.
        resource: EmbeddedResource,
    },
}

/// The contents of a resource embedded in a result: text or base64 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// Its media type.
    #[serde(rename = "mimeType", default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its text, for a text resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its bytes, base64, for a binary resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl Content {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image part from base64 data.
    pub fn image(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image {
            data: base64.into(),
            mime_type: mime_type.into(),
        }
    }

    /// An audio part from base64 data.
    pub fn audio(base64: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Audio {
            data: base64.into(),
            mime_type: mime_type.into(),
        }
    }

    /// An embedded text resource.
    pub fn resource_text(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Self::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: Some(text.into()),
                blob: None,
            },
        }
    }

    /// An embedded binary resource from base64 data.
    pub fn resource_blob(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        base64: impl Into<String>,
    ) -> Self {
        Self::Resource {
            resource: EmbeddedResource {
                uri: uri.into(),
                mime_type: Some(mime_type.into()),
                text: None,
                blob: Some(base64.into()),
            },
        }
    }
}

/// The parts of a rich result held in `data` (`None` when `data` is no
/// rich result: not an object with a `content` array of parts).
pub fn parts_of(data: &Value) -> Option<(String, Vec<Content>)> {
    let obj = data.as_object()?;
    let parts = obj.get("content")?.as_array()?;
    let parts: Vec<Content> = parts
        .iter()
        .map(|p| serde_json::from_value(p.clone()).ok())
        .collect::<Option<_>>()?;
    let output = obj.get("output").and_then(Value::as_str).unwrap_or("");
    Some((output.to_owned(), parts))
}

impl ToolOutput {
    /// A rich result: the text parts joined as `output` (also the summary's
    /// first line), the other parts, in order, as `content`.
    pub fn rich(parts: Vec<Content>) -> Self {
        let mut texts = Vec::new();
        let mut others = Vec::new();
        for part in parts {
            match part {
                Content::Text { text } => texts.push(text),
                other => others.push(serde_json::to_value(other).unwrap_or(Value::Null)),
            }
        }
        let output = texts.join("\n");
        let summary = output
            .lines()
            .find(|l| !l.trim().is_empty())
            .map(|l| Value::from(l.chars().take(200).collect::<String>()))
            .unwrap_or(Value::Null);
        let mut data = Map::new();
        data.insert("output".into(), Value::from(output));
        if !others.is_empty() {
            data.insert("content".into(), Value::Array(others));
        }
        Self {
            data: Value::Object(data),
            summary,
            ..Self::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parts_keep_the_mcp_form_and_come_back() {
        let out = ToolOutput::rich(vec![
            Content::text("Multiple content types test:"),
            Content::image("iVBO", "image/png"),
            Content::resource_text("test://r", "application/json", r#"{"a":1}"#),
        ]);
        assert_eq!(
            out.data,
            json!({"output": "Multiple content types test:", "content": [
                {"type": "image", "data": "iVBO", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "test://r", "mimeType": "application/json", "text": "{\"a\":1}"}}
            ]})
        );
        assert_eq!(out.summary, json!("Multiple content types test:"));
        let (text, parts) = parts_of(&out.data).unwrap();
        assert_eq!(text, "Multiple content types test:");
        assert_eq!(parts[0], Content::image("iVBO", "image/png"));
        assert!(parts_of(&json!({"content": [{"type": "video"}]})).is_none());
        assert!(parts_of(&json!("text")).is_none());
    }
}

//! Loop events and their mapping onto `skill/event` kinds and payloads.

use a2e_proto::{EventData, EventKind};
use serde_json::{Map, Value};

use crate::types::Usage;

/// Something that happened in the agentic loop. Texts are bounded by
/// [`LoopOptions::max_event_bytes`](crate::LoopOptions::max_event_bytes); no event carries
/// credentials.
#[derive(Debug, Clone, PartialEq)]
pub enum LoopEvent {
    /// A model call begins.
    TurnStarted {
        /// 1-based turn number.
        turn: u32,
        /// The limit.
        max_turns: u32,
    },
    /// Streamed answer text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// The model called a tool.
    ToolCall {
        /// The turn.
        turn: u32,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments as the model wrote them (bounded).
        arguments: String,
    },
    /// A tool call was answered.
    ToolResult {
        /// The turn.
        turn: u32,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Whether the answer is an error (failure, refusal, bad arguments).
        is_error: bool,
        /// Whether the tool was refused (not offered).
        refused: bool,
        /// The answer (bounded).
        content: String,
    },
    /// Tokens of one turn and of all so far.
    Usage {
        /// The turn.
        turn: u32,
        /// This turn's tokens.
        usage: Usage,
        /// All turns' tokens.
        total: Usage,
    },
}

/// The artifact name streamed answer text is sent under.
pub const ANSWER_ARTIFACT: &str = "answer";

impl LoopEvent {
    /// The `skill/event` kind and `data` this event maps to: turns are `progress`, tool
    /// calls and results `log`, text deltas `artifact` chunks (base64 of UTF-8 text,
    /// `text/plain`, name [`ANSWER_ARTIFACT`]), usage `status`.
    pub fn to_skill_event(&self) -> (EventKind, Map<String, Value>) {
        match self {
            LoopEvent::TurnStarted { turn, max_turns } => {
                let pct = i64::from(turn.saturating_sub(1)) * 100 / i64::from((*max_turns).max(1));
                (
                    EventKind::PROGRESS,
                    EventData::progress(pct, format!("turn {turn} of at most {max_turns}")),
                )
            }
            LoopEvent::TextDelta { text } => (
                EventKind::ARTIFACT,
                EventData::artifact(
                    ANSWER_ARTIFACT,
                    "text/plain",
                    &base64(text.as_bytes()),
                    false,
                ),
            ),
            LoopEvent::ToolCall {
                name, arguments, ..
            } => (
                EventKind::LOG,
                EventData::log("info", format!("tool call {name} {arguments}")),
            ),
            LoopEvent::ToolResult {
                name,
                is_error,
                refused,
                content,
                ..
            } => {
                let (level, what) = match (refused, is_error) {
                    (true, _) => ("warn", "refused"),
                    (false, true) => ("warn", "failed"),
                    (false, false) => ("info", "result"),
                };
                (
                    EventKind::LOG,
                    EventData::log(level, format!("tool {what} {name}: {content}")),
                )
            }
            LoopEvent::Usage { turn, usage, total } => (
                EventKind::STATUS,
                EventData::status(format!(
                    "turn {turn}: {} input + {} output tokens ({} in all)",
                    usage.input_tokens,
                    usage.output_tokens,
                    total.total()
                )),
            ),
        }
    }
}

/// Standard base64 with padding (RFC 4648).
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in cases {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn events_map_onto_skill_event_kinds() {
        let (kind, data) = LoopEvent::TurnStarted {
            turn: 2,
            max_turns: 4,
        }
        .to_skill_event();
        assert_eq!(kind, EventKind::PROGRESS);
        assert_eq!(data["pct"], 25);
        let (kind, data) = LoopEvent::TextDelta { text: "hi".into() }.to_skill_event();
        assert_eq!(kind, EventKind::ARTIFACT);
        assert_eq!(data["chunk"], "aGk=");
        assert_eq!(data["mime"], "text/plain");
    }
}

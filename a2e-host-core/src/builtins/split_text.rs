//! `split_text`: a text cut into chunks by paragraph (blank lines), line,
//! sentence or word, then, when `size` is given, consecutive units packed
//! into chunks of at most `size` characters. No file, process or network
//! access.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::ser::{Serialize, SerializeStruct, Serializer};

use super::hints::ToolHints;
use super::tool::{Builtin, Done, Env, Spec};
use crate::error::{HostError, HostResult};
use crate::plugin::CallContext;

/// The unit `split_text` cuts at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum SplitUnit {
    #[default]
    Paragraph,
    Line,
    Sentence,
    Word,
}

/// `split_text`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SplitTextArgs {
    /// The text.
    pub text: String,
    /// Unit to cut at (default paragraph).
    pub by: Option<SplitUnit>,
    /// Pack consecutive units into chunks of at most this many characters.
    pub size: Option<u64>,
}

/// `split_text`'s result.
#[derive(Debug, JsonSchema)]
pub(crate) struct SplitTextOutput {
    /// The chunks, in order
    pub chunks: Vec<String>,
    /// Number of chunks
    pub count: usize,
}

/// Results have always put `count` before `chunks`, while the schema lists
/// `chunks` first; both orders are kept as clients have seen them.
impl Serialize for SplitTextOutput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("SplitTextOutput", 2)?;
        out.serialize_field("count", &self.count)?;
        out.serialize_field("chunks", &self.chunks)?;
        out.end()
    }
}

/// The `split_text` tool.
pub(crate) struct SplitText;

impl Builtin for SplitText {
    const SPEC: Spec = Spec {
        name: "split_text",
        description: "Split a text into chunks by paragraph, line, sentence or word, optionally packed to a size",
        tags: &["text"],
        idempotent: true,
        hints: ToolHints::new("Split text").read_only(),
    };

    type Args = SplitTextArgs;
    type Output = SplitTextOutput;

    async fn run(
        _env: &Env,
        args: SplitTextArgs,
        _ctx: &CallContext,
    ) -> HostResult<Done<SplitTextOutput>> {
        split_text(args).map(Done::new)
    }
}

fn split_text(args: SplitTextArgs) -> HostResult<SplitTextOutput> {
    let by = args.by.unwrap_or_default();
    let parts = units(&args.text, by);
    let chunks = match args.size {
        Some(0) => return Err(HostError::schema(vec!["size: must be at least 1".into()])),
        Some(size) => {
            let sep = match by {
                SplitUnit::Paragraph => "\n\n",
                SplitUnit::Line => "\n",
                SplitUnit::Sentence | SplitUnit::Word => " ",
            };
            pack(parts, usize::try_from(size).unwrap_or(usize::MAX), sep)
        }
        None => parts,
    };
    Ok(SplitTextOutput {
        count: chunks.len(),
        chunks,
    })
}

/// The sentences of `text`: each ends at `.`, `!` or `?` followed by
/// whitespace or the end, trimmed; the rest of the text is one more.
pub(super) fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        current.push(c);
        let ends = matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace());
        if ends {
            let s = current.trim();
            if !s.is_empty() {
                out.push(s.to_owned());
            }
            current.clear();
        }
    }
    let s = current.trim();
    if !s.is_empty() {
        out.push(s.to_owned());
    }
    out
}

fn units(text: &str, by: SplitUnit) -> Vec<String> {
    match by {
        SplitUnit::Line => text
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect(),
        SplitUnit::Sentence => sentences(text),
        SplitUnit::Word => text.split_whitespace().map(str::to_owned).collect(),
        SplitUnit::Paragraph => {
            let mut paras = Vec::new();
            let mut current: Vec<&str> = Vec::new();
            for line in text.lines() {
                if line.trim().is_empty() {
                    if !current.is_empty() {
                        paras.push(current.join("\n"));
                        current.clear();
                    }
                } else {
                    current.push(line.trim_end());
                }
            }
            if !current.is_empty() {
                paras.push(current.join("\n"));
            }
            paras
        }
    }
}

fn pack(units: Vec<String>, size: usize, sep: &str) -> Vec<String> {
    let mut chunks: Vec<String> = Vec::new();
    let mut current = String::new();
    for unit in units {
        let extra = if current.is_empty() {
            0
        } else {
            sep.chars().count()
        };
        if !current.is_empty() && current.chars().count() + extra + unit.chars().count() > size {
            chunks.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push_str(sep);
        }
        current.push_str(&unit);
    }
    if !current.is_empty() {
        chunks.push(current);
    }
    chunks
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn run(args: Value) -> HostResult<Value> {
        let args = crate::plugin::parse_args(args.as_object().unwrap().clone())?;
        Ok(serde_json::to_value(split_text(args)?).unwrap())
    }

    #[test]
    fn splits_by_unit_and_packs_by_size() {
        let text = "One. Two!\nThree?\n\nFour five.\n\n\nSix";
        let out = run(json!({"text": text})).unwrap();
        assert_eq!(
            out["chunks"],
            json!(["One. Two!\nThree?", "Four five.", "Six"])
        );
        let out = run(json!({"text": text, "by": "sentence"})).unwrap();
        assert_eq!(
            out["chunks"],
            json!(["One.", "Two!", "Three?", "Four five.", "Six"])
        );
        let out = run(json!({"text": text, "by": "word", "size": 9})).unwrap();
        assert_eq!(
            out["chunks"],
            json!(["One. Two!", "Three?", "Four", "five. Six"])
        );
        assert!(run(json!({"text": text, "by": "page"})).is_err());
        assert!(run(json!({"text": text, "size": 0})).is_err());
    }

    #[test]
    fn results_put_the_count_first() {
        let out = run(json!({"text": "a\n\nb", "by": "paragraph"})).unwrap();
        assert_eq!(out.to_string(), r#"{"count":2,"chunks":["a","b"]}"#);
    }
}

//! `text_stats`: the words, lines, sentences and characters of a text, and
//! its most frequent words. No file, process or network access.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::hints::ToolHints;
use super::split_text::sentences;
use super::tool::{Builtin, Done, Env, Spec};
use crate::error::HostResult;
use crate::plugin::CallContext;

/// Most frequent words listed at most, whatever `top` asks.
const MAX_TOP: u64 = 100;

/// `text_stats`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TextStatsArgs {
    /// The text.
    pub text: String,
    /// How many frequent words to list (default 5).
    pub top: Option<u64>,
}

/// `text_stats`'s result.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct TextStatsOutput {
    /// Words (whitespace-separated)
    pub words: u64,
    /// Lines
    pub lines: usize,
    /// Sentences
    pub sentences: usize,
    /// Characters
    pub chars: usize,
    /// {word, count}, most frequent first
    pub top_words: Vec<WordCount>,
}

/// How often a word occurs.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct WordCount {
    /// The word, lower-case, without punctuation
    pub word: String,
    /// Its occurrences
    pub count: u64,
}

/// The `text_stats` tool.
pub(crate) struct TextStats;

impl Builtin for TextStats {
    const SPEC: Spec = Spec {
        name: "text_stats",
        description: "Count the words, lines, sentences and characters of a text and list its most frequent words",
        tags: &["text"],
        idempotent: true,
        hints: ToolHints::new("Text statistics").read_only(),
    };

    type Args = TextStatsArgs;
    type Output = TextStatsOutput;

    async fn run(
        _env: &Env,
        args: TextStatsArgs,
        _ctx: &CallContext,
    ) -> HostResult<Done<TextStatsOutput>> {
        Ok(Done::new(text_stats(&args)))
    }
}

fn text_stats(args: &TextStatsArgs) -> TextStatsOutput {
    let text = args.text.as_str();
    let top = args.top.unwrap_or(5).min(MAX_TOP) as usize;
    let mut counts: HashMap<String, u64> = HashMap::new();
    let mut words = 0u64;
    for word in text.split_whitespace() {
        words += 1;
        let w: String = word
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '\'')
            .flat_map(char::to_lowercase)
            .collect();
        if !w.is_empty() {
            *counts.entry(w).or_default() += 1;
        }
    }
    let mut freq: Vec<(String, u64)> = counts.into_iter().collect();
    freq.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    freq.truncate(top);
    TextStatsOutput {
        words,
        lines: text.lines().count(),
        sentences: sentences(text).len(),
        chars: text.chars().count(),
        top_words: freq
            .into_iter()
            .map(|(word, count)| WordCount { word, count })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn counts_words_and_frequencies() {
        let args = TextStatsArgs {
            text: "The cat. The dog, the END!".into(),
            top: Some(2),
        };
        let out = serde_json::to_value(text_stats(&args)).unwrap();
        assert_eq!(out["words"], 6);
        assert_eq!(out["sentences"], 2);
        assert_eq!(
            out["top_words"],
            json!([{"word": "the", "count": 3}, {"word": "cat", "count": 1}])
        );
    }
}

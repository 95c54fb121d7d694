//! Engine settings: output truncation, expansion bounds, delegation depth,
//! the clock.

use std::sync::Arc;

use crate::context::{Clock, SystemClock};
use crate::limits::MAX_AGENT_DEPTH;

/// How the engine bounds what it stores, sends and reports.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Stored `output` of `llm`, `tool`, `agent` and `rest_call` steps is cut
    /// to this many characters (plus `…`). The spec gives ~1,200–1,600;
    /// default 1,600. `data` is extracted from the full text first.
    pub max_output_chars: usize,
    /// The chain state handed to `llm` calls is cut to this many characters
    /// (spec: ~2,000; default 2,000).
    pub chain_context_chars: usize,
    /// Event outputs are cut to this many characters (default 1,200).
    pub event_output_chars: usize,
    /// Bytes one step's templates may produce in all (default 1 MiB).
    pub max_expansion_bytes: usize,
    /// How deep templated values (`args`, `body`, …) may nest (default 32).
    pub max_value_depth: usize,
    /// Agent delegation depth (default 5).
    pub max_agent_depth: usize,
    /// Offset from UTC for `current_date`/`current_time`, in minutes.
    pub utc_offset_minutes: i32,
    /// Where "now" comes from.
    pub clock: Arc<dyn Clock>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_output_chars: 1600,
            chain_context_chars: 2000,
            event_output_chars: 1200,
            max_expansion_bytes: 1 << 20,
            max_value_depth: 32,
            max_agent_depth: MAX_AGENT_DEPTH,
            utc_offset_minutes: 0,
            clock: Arc::new(SystemClock),
        }
    }
}

/// `s` cut to `max` characters, with `…` appended when cut.
pub fn truncate_chars(s: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(s),
        Some((cut, _)) => std::borrow::Cow::Owned(format!("{}…", &s[..cut])),
    }
}

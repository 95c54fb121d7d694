//! Arguments of the three memory tools, named as the Ontheia step parameters.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::types::Metadata;

/// `memory_write`: store a text in a namespace.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
pub struct MemoryWriteArgs {
    /// Target namespace, e.g. `vector.user.<user id>.memory`: dot-separated
    /// segments of letters, digits, `_` and `-`.
    pub namespace: String,
    /// The text to store (size-limited).
    pub content: String,
    /// Optional JSON object stored with the text, usable in a search `filter`.
    #[serde(default)]
    pub metadata: Option<Metadata>,
}

/// `memory_search`: find memories in one or more namespaces.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
pub struct MemorySearchArgs {
    /// What to look for. Absent or blank: the newest memories.
    #[serde(default)]
    pub query: Option<String>,
    /// Namespaces to search (at least one).
    pub namespaces: Vec<String>,
    /// Number of results: default 5, at most 20 (larger values are clamped
    /// to 20; 0 is refused).
    #[serde(default)]
    pub top_k: Option<u64>,
    /// Only memories whose metadata has each of these keys with exactly
    /// this value.
    #[serde(default)]
    pub filter: Option<Metadata>,
}

/// `memory_delete`: remove one memory by id.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
pub struct MemoryDeleteArgs {
    /// The memory's id, as returned by `memory_write` or `memory_search`.
    pub id: String,
    /// Its namespace; when given, the memory must be in it.
    #[serde(default)]
    pub namespace: Option<String>,
}

//! What goes into a store and what comes out of it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A JSON object of metadata stored beside a memory's content.
pub type Metadata = Map<String, Value>;

/// A memory to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    /// Target namespace (validated by the store, see [`crate::validate_namespace`]).
    pub namespace: String,
    /// The text to remember.
    pub content: String,
    /// Free-form metadata, searchable with an exact-match filter.
    pub metadata: Metadata,
}

impl NewMemory {
    /// A memory with no metadata.
    pub fn new(namespace: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            content: content.into(),
            metadata: Metadata::new(),
        }
    }

    /// The same memory with `metadata`.
    pub fn with_metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = metadata;
        self
    }
}

/// A stored memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    /// Its id (a UUID, assigned by the store).
    pub id: String,
    /// Its namespace.
    pub namespace: String,
    /// Its text.
    pub content: String,
    /// Its metadata.
    pub metadata: Metadata,
    /// When it was written, RFC 3339 in UTC with milliseconds.
    pub created_at: String,
    /// Whether a vector is stored with it.
    pub embedded: bool,
}

/// How a hit was ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScoreKind {
    /// Full-text ranking alone (FTS5 BM25); no embeddings were used.
    Bm25,
    /// BM25 and cosine similarity fused by reciprocal rank.
    Hybrid,
    /// No query: the newest memories first.
    Recent,
}

impl ScoreKind {
    /// `bm25`, `hybrid` or `recent`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bm25 => "bm25",
            Self::Hybrid => "hybrid",
            Self::Recent => "recent",
        }
    }
}

/// A hit's score: higher is better, comparable within one search only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// Which ranking produced `value`.
    pub kind: ScoreKind,
    /// The score: the negated BM25 rank for `bm25`, the reciprocal-rank
    /// fusion sum for `hybrid`, 0 for `recent`.
    pub value: f64,
    /// The BM25 score (negated, higher is better) when the text matched.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub bm25: Option<f64>,
    /// The cosine similarity to the query when vectors were compared.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub cosine: Option<f64>,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// The memory's id.
    pub id: String,
    /// Its namespace.
    pub namespace: String,
    /// Its text.
    pub content: String,
    /// Its metadata.
    pub metadata: Metadata,
    /// How well it matched.
    pub score: Score,
    /// When it was written (RFC 3339, UTC).
    pub created_at: String,
}

/// A search over one or more namespaces.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchQuery {
    /// The text to look for; blank means "the newest memories".
    pub query: String,
    /// Namespaces to search (each validated; at least one).
    pub namespaces: Vec<String>,
    /// How many hits at most.
    pub top_k: usize,
    /// Exact-match metadata filter: every key must equal its value (a `null`
    /// value matches an absent key too).
    pub filter: Option<Metadata>,
}

impl SearchQuery {
    /// A search for `query` in `namespaces`, with the default `top_k` and no filter.
    pub fn new<S: Into<String>>(
        query: impl Into<String>,
        namespaces: impl IntoIterator<Item = S>,
    ) -> Self {
        Self {
            query: query.into(),
            namespaces: namespaces.into_iter().map(Into::into).collect(),
            top_k: crate::limits::DEFAULT_TOP_K,
            filter: None,
        }
    }

    /// The same search with another `top_k`.
    pub fn top_k(mut self, top_k: usize) -> Self {
        self.top_k = top_k;
        self
    }

    /// The same search with a metadata filter.
    pub fn filter(mut self, filter: Metadata) -> Self {
        self.filter = Some(filter);
        self
    }
}

/// A namespace and how many memories it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceInfo {
    /// The namespace.
    pub name: String,
    /// How many memories are in it.
    pub count: u64,
}

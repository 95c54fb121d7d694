//! Size limits and `top_k`.

/// `top_k` when a search does not name one.
pub const DEFAULT_TOP_K: usize = 5;
/// The largest `top_k`; larger requests are clamped to it.
pub const MAX_TOP_K: usize = 20;

/// Bounds on what a store accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest content, in bytes of UTF-8 (default 16 KiB).
    pub max_content_bytes: usize,
    /// Largest metadata object, in bytes of its JSON text (default 4 KiB).
    pub max_metadata_bytes: usize,
    /// Largest query, in bytes (default 4 KiB).
    pub max_query_bytes: usize,
    /// Most namespaces in one search (default 16).
    pub max_search_namespaces: usize,
    /// Most keys in a metadata filter (default 16).
    pub max_filter_keys: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_content_bytes: 16 * 1024,
            max_metadata_bytes: 4 * 1024,
            max_query_bytes: 4 * 1024,
            max_search_namespaces: 16,
            max_filter_keys: 16,
        }
    }
}

/// How a requested `top_k` was resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopK {
    /// Used as asked (or the default when none was asked).
    Exact(usize),
    /// Asked for more than [`MAX_TOP_K`]; clamped to it.
    Clamped(usize),
}

impl TopK {
    /// The number of hits to return.
    pub fn get(self) -> usize {
        match self {
            Self::Exact(k) | Self::Clamped(k) => k,
        }
    }
}

/// Resolves a requested `top_k`: absent → [`DEFAULT_TOP_K`]; 0 → `None` (a
/// search for nothing is refused as invalid input, not silently widened);
/// above [`MAX_TOP_K`] → clamped.
///
/// ```
/// use a2e_memory::{resolve_top_k, TopK};
/// assert_eq!(resolve_top_k(None), Some(TopK::Exact(5)));
/// assert_eq!(resolve_top_k(Some(1000)), Some(TopK::Clamped(20)));
/// assert_eq!(resolve_top_k(Some(0)), None);
/// ```
pub fn resolve_top_k(requested: Option<u64>) -> Option<TopK> {
    match requested {
        None => Some(TopK::Exact(DEFAULT_TOP_K)),
        Some(0) => None,
        Some(k) if k > MAX_TOP_K as u64 => Some(TopK::Clamped(MAX_TOP_K)),
        Some(k) => usize::try_from(k).ok().map(TopK::Exact),
    }
}

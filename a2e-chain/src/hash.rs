//! Hashing for the validation's name tables (node ids, tool names, input
//! keys): foldhash's fast hasher, seeded per process so that a request
//! cannot precompute colliding ids (the tables hold names from the request,
//! and an unseeded hasher would let it make validation quadratic).
//!
//! The crate had a folded-multiply hasher of its own here; `cargo xtask bench
//! structures` measured it at best 1.06 × foldhash (linear5 1.00, linear100k
//! 0.87, dag100k 1.06, map100k 1.04, medians of 5 rounds), under the 10 %
//! a structure of its own has to win by, so foldhash took its place.

use std::collections::HashMap;

/// The hasher's state: foldhash's, with a per-process random seed.
pub(crate) type FastState = foldhash::fast::RandomState;

/// A `HashMap` with [`FastState`].
pub(crate) type FastMap<K, V> = HashMap<K, V, FastState>;

/// A new, empty [`FastMap`] with room for `n` entries.
pub(crate) fn map_with_capacity<K, V>(n: usize) -> FastMap<K, V> {
    HashMap::with_capacity_and_hasher(n, FastState::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_find_what_they_hold() {
        let ids: Vec<String> = (0..20_000).map(|i| format!("n{i}")).collect();
        let mut m = map_with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            assert!(m.insert(id.as_str(), i).is_none());
        }
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(m.get(id.as_str()), Some(&i));
        }
        assert_eq!(m.get("n20000"), None);
        assert_eq!(m.get(""), None);
    }
}

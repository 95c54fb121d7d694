//! Hashing for the validation's name tables (node ids, tool names, input
//! keys): foldhash's fast hasher, seeded per process so that a request
//! cannot precompute colliding ids (the tables hold names from the request,
//! and an unseeded hasher would let it make validation quadratic).
//!
//! A hasher of the crate's own would have to beat foldhash by the bar every
//! structure of the crate's own clears against its standard peer (`cargo
//! xtask bench structures`: a best speedup of 1.10 or more); none has, so
//! the tables use foldhash (the figures are in `BENCHMARKS.md`).

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

//! Hashing for the crate's hot maps: foldhash's fast hasher.
//!
//! * [`IdxMap`] for maps keyed by task index or address, which the crate assigns itself
//!   (never chosen by a DAG's author): foldhash with its fixed seed, nothing to draw.
//! * [`StrMap`] for maps keyed by strings from DAGs (task ids, paths, capabilities):
//!   foldhash seeded per process, so that a DAG cannot precompute colliding ids and make
//!   validation or routing quadratic.

use std::collections::HashMap;

/// The hasher state of [`IdxMap`]: foldhash's, with its fixed seed.
pub(crate) type IdxState = foldhash::fast::FixedState;

/// The hasher state of [`StrMap`]: foldhash's, with a per-process random seed.
pub(crate) type StrState = foldhash::fast::RandomState;

/// A map keyed by task index.
pub(crate) type IdxMap<K, V> = HashMap<K, V, IdxState>;

/// A map keyed by strings.
pub(crate) type StrMap<K, V> = HashMap<K, V, StrState>;

/// A new, empty [`StrMap`] with room for `n` entries.
pub(crate) fn str_map_with_capacity<K, V>(n: usize) -> StrMap<K, V> {
    HashMap::with_capacity_and_hasher(n, StrState::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_maps_work_with_dense_keys() {
        let mut m: IdxMap<u32, u32> = IdxMap::default();
        for i in 0..10_000 {
            m.insert(i, i * 2);
        }
        assert!((0..10_000).all(|i| m.get(&i) == Some(&(i * 2))));
        assert_eq!(m.len(), 10_000);
    }

    #[test]
    fn string_maps_find_what_they_hold() {
        let words: Vec<String> = (0..20_000)
            .map(|i| format!("task_{i:06}"))
            .chain((0..40).map(|n| "x".repeat(n)))
            .chain(["a\u{0}", "a", "ab", "ba", "abcd", "abce"].map(str::to_owned))
            .collect();
        let mut m: StrMap<&str, usize> = str_map_with_capacity(words.len());
        for (i, w) in words.iter().enumerate() {
            assert!(m.insert(w.as_str(), i).is_none());
        }
        assert!(
            words
                .iter()
                .enumerate()
                .all(|(i, w)| m.get(w.as_str()) == Some(&i))
        );
        assert_eq!(m.get("task_020000"), None);
    }
}

//! Hashers for the crate's hot maps.
//!
//! * [`IdxHasher`] for maps keyed by task index or address, which the crate assigns itself
//!   (never chosen by a DAG's author): one multiply per word.
//! * [`KeyedState`] for maps keyed by strings from DAGs (task ids, paths, capabilities):
//!   folded multiplies with secret seeds drawn once per process from the OS, the
//!   construction of hashbrown's default hasher. Much cheaper than SipHash on short ids,
//!   and its seeds keep collisions hard to craft.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};
use std::sync::OnceLock;

/// A map keyed by task index.
pub(crate) type IdxMap<K, V> = HashMap<K, V, BuildHasherDefault<IdxHasher>>;

/// A map keyed by strings.
pub(crate) type StrMap<K, V> = HashMap<K, V, KeyedState>;

/// Multiplicative hashing (the Fx scheme): one multiply per word.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdxHasher(u64);

const FX: u64 = 0xf135_7aea_2e62_a9c5;

impl IdxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(FX);
    }
}

impl Hasher for IdxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0_u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0_u8; 8];
            if let Some(dst) = word.get_mut(..rest.len()) {
                dst.copy_from_slice(rest);
            }
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        // hashbrown takes the bucket from the low bits and the tag from the top 7: bring the
        // well-mixed high half down.
        self.0.rotate_left(26)
    }
}

/// Builds [`KeyedHasher`]s with the process's secret seeds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyedState {
    seeds: [u64; 3],
}

impl Default for KeyedState {
    fn default() -> Self {
        static SEEDS: OnceLock<[u64; 3]> = OnceLock::new();
        let seeds = *SEEDS.get_or_init(|| {
            let random = RandomState::new();
            [
                random.hash_one(1_u64),
                random.hash_one(2_u64),
                random.hash_one(3_u64),
            ]
        });
        Self { seeds }
    }
}

impl BuildHasher for KeyedState {
    type Hasher = KeyedHasher;

    fn build_hasher(&self) -> KeyedHasher {
        let [acc, key, fin] = self.seeds;
        KeyedHasher { acc, key, fin }
    }
}

/// Folded-multiply hashing with secret seeds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyedHasher {
    acc: u64,
    key: u64,
    fin: u64,
}

/// The 128-bit product of `x` and `y`, its halves xored.
fn folded_multiply(x: u64, y: u64) -> u64 {
    let full = u128::from(x) * u128::from(y);
    (full as u64) ^ ((full >> 64) as u64)
}

fn word8(bytes: Option<&[u8; 8]>) -> u64 {
    bytes.map_or(0, |b| u64::from_le_bytes(*b))
}

fn word4(bytes: Option<&[u8; 4]>) -> u64 {
    bytes.map_or(0, |b| u64::from(u32::from_le_bytes(*b)))
}

impl KeyedHasher {
    fn mix(&mut self, lo: u64, hi: u64) {
        self.acc = folded_multiply(lo ^ self.acc, hi ^ self.key);
    }
}

impl Hasher for KeyedHasher {
    fn write(&mut self, bytes: &[u8]) {
        let len = bytes.len();
        let (lo, hi) = if len > 16 {
            let mut chunks = bytes.chunks_exact(16);
            for chunk in &mut chunks {
                let (a, b) = chunk.split_at(8);
                self.mix(word8(a.first_chunk()), word8(b.first_chunk()));
            }
            // The last 16 bytes, overlapping what came before.
            let tail = bytes.get(len - 16..).unwrap_or_default();
            let (a, b) = tail.split_at(8);
            (word8(a.first_chunk()), word8(b.first_chunk()))
        } else if len >= 8 {
            (word8(bytes.first_chunk()), word8(bytes.last_chunk()))
        } else if len >= 4 {
            (word4(bytes.first_chunk()), word4(bytes.last_chunk()))
        } else {
            let at = |i: usize| bytes.get(i).copied().map_or(0, u64::from);
            (at(0), at(len / 2) << 8 | at(len.wrapping_sub(1)))
        };
        self.mix(lo ^ ((len as u64) << 56), hi);
    }

    fn write_u8(&mut self, i: u8) {
        self.mix(u64::from(i), 0);
    }

    fn write_u32(&mut self, i: u32) {
        self.mix(u64::from(i), 0);
    }

    fn write_u64(&mut self, i: u64) {
        self.mix(i, 0);
    }

    fn write_usize(&mut self, i: usize) {
        self.mix(i as u64, 0);
    }

    fn finish(&self) -> u64 {
        folded_multiply(self.acc, self.fin)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

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
    fn keyed_hashes_tell_strings_apart() {
        let state = KeyedState::default();
        let words: Vec<String> = (0..20_000)
            .map(|i| format!("task_{i:06}"))
            .chain((0..40).map(|n| "x".repeat(n)))
            .chain(["a\u{0}", "a", "ab", "ba", "abcd", "abce"].map(str::to_owned))
            .collect();
        let hashes: HashSet<u64> = words.iter().map(|w| state.hash_one(w)).collect();
        assert_eq!(hashes.len(), words.len());
        let mut m: StrMap<String, usize> = StrMap::default();
        for (i, w) in words.iter().enumerate() {
            m.insert(w.clone(), i);
        }
        assert!(words.iter().enumerate().all(|(i, w)| m.get(w) == Some(&i)));
    }
}

//! A fast hasher for maps keyed by task indexes, which the crate assigns itself (dense,
//! never chosen by a DAG's author), where SipHash's protection buys nothing.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A map keyed by task index.
pub(crate) type IdxMap<K, V> = HashMap<K, V, BuildHasherDefault<IdxHasher>>;

/// Multiplicative hashing (the Fx scheme): one multiply per word.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdxHasher(u64);

const K: u64 = 0xf135_7aea_2e62_a9c5;

impl IdxHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0 ^ word).wrapping_mul(K);
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
        // hashbrown takes the bucket from the low bits and the tag from the top 7: fold the
        // well-mixed high half down.
        self.0.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_work_with_dense_keys() {
        let mut m: IdxMap<u32, u32> = IdxMap::default();
        for i in 0..10_000 {
            m.insert(i, i * 2);
        }
        assert!((0..10_000).all(|i| m.get(&i) == Some(&(i * 2))));
        assert_eq!(m.len(), 10_000);
    }
}

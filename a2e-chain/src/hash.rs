//! A fast, seeded hasher for the validation's name tables (node ids, tool
//! names, input keys).
//!
//! The standard `RandomState` (SipHash-1-3) costs about as much as the rest
//! of a lookup for the short ids chains use. This one folds eight bytes at a
//! time with a 64 × 64 → 128-bit multiply (the construction of foldhash and
//! wyhash) and starts from a per-process random seed, so that colliding
//! ids cannot be precomputed: the tables hold names from the request, and a
//! hasher without a seed would let a request make validation quadratic.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

/// A `HashMap` with the fast seeded hasher.
pub(crate) type FastMap<K, V> = HashMap<K, V, FastState>;

/// A new, empty [`FastMap`] with room for `n` entries.
pub(crate) fn map_with_capacity<K, V>(n: usize) -> FastMap<K, V> {
    HashMap::with_capacity_and_hasher(n, FastState::new())
}

const K0: u64 = 0x243f_6a88_85a3_08d3;
const K1: u64 = 0x1319_8a2e_0370_7344;
const K2: u64 = 0xa409_3822_299f_31d0;

/// The multiply both halves fold into one word.
#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let full = u128::from(a).wrapping_mul(u128::from(b));
    (full as u64) ^ ((full >> 64) as u64)
}

/// The per-process seed (drawn from the standard library's random keys).
fn process_seed() -> (u64, u64) {
    static SEED: OnceLock<(u64, u64)> = OnceLock::new();
    *SEED.get_or_init(|| {
        let s = std::collections::hash_map::RandomState::new();
        (s.hash_one(K0), s.hash_one(K1))
    })
}

/// Builds [`FastHasher`]s with the process seed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FastState {
    seed: (u64, u64),
}

impl Default for FastState {
    fn default() -> Self {
        Self::new()
    }
}

impl FastState {
    /// The state for one table.
    pub(crate) fn new() -> Self {
        Self {
            seed: process_seed(),
        }
    }
}

impl FastState {
    /// The hash of one word (a short key packed with its length), in one
    /// multiply: what a table of short names uses instead of the streaming
    /// [`Hasher`].
    #[inline]
    pub(crate) fn hash_word(&self, w: u64) -> u64 {
        fold(w ^ self.seed.0, self.seed.1 ^ K2)
    }
}

impl BuildHasher for FastState {
    type Hasher = FastHasher;

    #[inline]
    fn build_hasher(&self) -> FastHasher {
        FastHasher {
            acc: self.seed.0,
            seed: self.seed.1,
        }
    }
}

/// See the module documentation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FastHasher {
    acc: u64,
    seed: u64,
}

/// The first eight bytes of `b`, little-endian (`b` has at least eight).
#[inline]
fn u64_at(b: &[u8]) -> u64 {
    match b.first_chunk::<8>() {
        Some(w) => u64::from_le_bytes(*w),
        None => 0,
    }
}

/// Up to eight bytes as a little-endian word, zero-padded, with fixed-size
/// loads only (overlapping ones for 4 to 8 bytes): no `memcpy` call.
#[inline]
pub(crate) fn load_le(b: &[u8]) -> u64 {
    let n = b.len();
    if n >= 8 {
        return u64_at(b);
    }
    if n >= 4 {
        let lo = b.first_chunk::<4>().map_or(0, |w| u32::from_le_bytes(*w));
        let hi = b.last_chunk::<4>().map_or(0, |w| u32::from_le_bytes(*w));
        // The overlapping bytes are the same in both, so OR keeps them.
        return u64::from(lo) | (u64::from(hi) << (8 * (n - 4)));
    }
    let byte = |i: usize| b.get(i).map_or(0, |&x| u64::from(x));
    byte(0) | (byte(1) << 8) | (byte(2) << 16)
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut acc = self.acc ^ (bytes.len() as u64).wrapping_mul(K2);
        let mut rest = bytes;
        while rest.len() > 16 {
            let (chunk, tail) = rest.split_at(16);
            let (a, b) = chunk.split_at(8);
            acc = fold(u64_at(a) ^ acc, u64_at(b) ^ self.seed);
            rest = tail;
        }
        // The last 16 bytes or fewer, in two words that may overlap (the
        // length is already in `acc`).
        let (a, b) = if rest.len() > 8 {
            (
                u64_at(rest),
                rest.last_chunk::<8>().map_or(0, |w| u64::from_le_bytes(*w)),
            )
        } else {
            (load_le(rest), 0)
        };
        self.acc = fold(a ^ acc, b ^ self.seed ^ K1);
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        // `str` ends its hash with 0xff; the length already went in.
        self.acc = self.acc.rotate_left(8) ^ u64::from(i);
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.acc = fold(self.acc ^ u64::from(i), self.seed ^ K2);
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.acc = fold(self.acc ^ i, self.seed ^ K2);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        fold(self.acc, self.seed ^ K0)
    }
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
        let long = "a rather long node id that spans several words";
        m.insert(long, 1);
        assert_eq!(m.get(long), Some(&1));
        assert_eq!(m.get(&long[..long.len() - 1]), None);
    }

    #[test]
    fn short_loads_match_a_padded_copy() {
        let data = b"0123456789abcdef";
        for n in 0..=8 {
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(&data[..n]);
            assert_eq!(load_le(&data[..n]), u64::from_le_bytes(w), "{n}");
        }
    }

    #[test]
    fn prefixes_and_padding_hash_apart() {
        let s = FastState::new();
        let h = |x: &str| s.hash_one(x);
        assert_ne!(h("a"), h("a\0"));
        assert_ne!(h(""), h("\0"));
        assert_ne!(h("abcdefgh"), h("abcdefgh\0"));
        assert_ne!(h("n1"), h("n2"));
    }
}

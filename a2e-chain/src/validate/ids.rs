//! Node ids by name: a compact open-addressing table built once per
//! validation.
//!
//! Each slot is 16 bytes and holds, besides the node's index and part of the
//! hash, the id itself when it is at most 7 bytes long (its length in the
//! top byte), so a lookup of a short id reads one slot and nothing else;
//! longer ids are checked against one contiguous copy of all the ids. A
//! random DAG looks up several ids per node at random places, so the misses
//! per lookup are what the validation of a large chain costs.
//!
//! The table stays only while `cargo xtask bench structures` shows it
//! beating its peer, a std `HashMap<&str, u32>` with the same hasher
//! (feature `bench-std-ids`), by the bar of that bench (a best speedup of
//! 1.10 or more) on some shape; the figures are in `BENCHMARKS.md`.

use std::hash::BuildHasher;
use std::marker::PhantomData;

use a2e_proto::ChainNode;

use super::{Result, check_id};
use crate::error::ValidationError;
use crate::hash::FastState;

/// How many ids ahead of the one being inserted its slot is prefetched.
const INSERT_AHEAD: usize = 8;

/// No node in this slot.
const EMPTY: u32 = u32::MAX;
/// The top byte of `head` for ids longer than 7 bytes.
const LONG: u64 = 0xff << 56;

#[derive(Clone, Copy)]
struct Slot {
    /// Up to 7 bytes of the id and its length (or `LONG`).
    head: u64,
    /// High bits of the hash.
    tag: u32,
    /// The node's index, or `EMPTY`.
    node: u32,
}

/// Node ids by name, with a shortcut for the node declared just before
/// (chains mostly read their predecessor).
pub(super) struct Ids<'r> {
    /// The ids are copied into `arena`; the lifetime is that of the
    /// request, as in the peer table `cargo xtask bench structures` runs.
    nodes: PhantomData<&'r ChainNode>,
    slots: Vec<Slot>,
    mask: usize,
    state: FastState,
    /// Every id, side by side, in declaration order.
    arena: String,
    /// Where each id ends in `arena`.
    ends: Vec<u32>,
    /// Each id's head (see [`head`]), in declaration order: a read of the
    /// node just before is checked against it with one comparison.
    heads: Vec<u64>,
    /// `input_map` entries over all nodes (counted on the way, so that the
    /// compiled entries are allocated once).
    pub(super) input_entries: usize,
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
fn load_le(b: &[u8]) -> u64 {
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

fn head(name: &str) -> u64 {
    let b = name.as_bytes();
    if b.len() > 7 {
        return (load_le(b) & !LONG) | LONG;
    }
    (load_le(b) & !LONG) | ((b.len() as u64) << 56)
}

impl<'r> Ids<'r> {
    /// Indexes the ids of `nodes` in one pass, refusing empty, reserved and
    /// duplicate ids.
    pub(super) fn build(nodes: &'r [ChainNode]) -> Result<Self> {
        let cap = (nodes.len() + nodes.len() / 2).max(8).next_power_of_two();
        let mut ids = Self {
            nodes: PhantomData,
            slots: vec![
                Slot {
                    head: 0,
                    tag: 0,
                    node: EMPTY,
                };
                cap
            ],
            mask: cap - 1,
            state: FastState::default(),
            arena: String::with_capacity(nodes.len() * 8),
            ends: Vec::with_capacity(nodes.len()),
            heads: Vec::with_capacity(nodes.len()),
            input_entries: 0,
        };
        for (i, node) in nodes.iter().enumerate() {
            let id = node.node_id.as_str();
            ids.input_entries += node.input_map.len();
            // Slots are scattered over a table larger than the caches in a
            // large chain: ask for the one a later id goes to.
            if let Some(ahead) = nodes.get(i + INSERT_AHEAD) {
                let slot = ids.key(&ahead.node_id).1 as usize & ids.mask;
                crate::prefetch::prefetch(ids.slots.get(slot));
            }
            check_id(i, id)?;
            // A long id is compared against the arena, so it goes in first.
            ids.arena.push_str(id);
            ids.ends.push(ids.arena.len() as u32);
            ids.heads.push(head(id));
            if let Some(first) = ids.insert(id, i as u32) {
                return Err(ValidationError::DuplicateId {
                    node_id: node.node_id.clone(),
                    first: first as usize,
                });
            }
        }
        Ok(ids)
    }

    /// `name`'s head (see [`head`]) and hash: a short id hashes as its
    /// head, in one multiply.
    #[inline]
    fn key(&self, name: &str) -> (u64, u64) {
        let head = head(name);
        let hash = if head & LONG == LONG {
            self.state.hash_one(name)
        } else {
            self.state.hash_one(head)
        };
        (head, hash)
    }

    /// Where `name` is, or the empty slot it would go to: the slot's
    /// position and the node found there.
    #[inline]
    fn probe(&self, name: &str, (head, hash): (u64, u64)) -> (usize, Option<u32>) {
        let tag = (hash >> 32) as u32;
        let mut at = hash as usize & self.mask;
        loop {
            let Some(slot) = self.slots.get(at) else {
                return (at, None);
            };
            if slot.node == EMPTY {
                return (at, None);
            }
            if slot.tag == tag
                && slot.head == head
                && (head & LONG != LONG || self.id(slot.node) == Some(name))
            {
                return (at, Some(slot.node));
            }
            at = (at + 1) & self.mask;
        }
    }

    /// Adds `name` as node `node`; the node already named so, if any.
    fn insert(&mut self, name: &str, node: u32) -> Option<u32> {
        let (head, hash) = self.key(name);
        let (at, found) = self.probe(name, (head, hash));
        if found.is_some() {
            return found;
        }
        if let Some(slot) = self.slots.get_mut(at) {
            *slot = Slot {
                head,
                tag: (hash >> 32) as u32,
                node,
            };
        }
        None
    }

    /// The id of node `i`.
    pub(super) fn id(&self, i: u32) -> Option<&str> {
        let start = match i.checked_sub(1) {
            Some(p) => *self.ends.get(p as usize)?,
            None => 0,
        };
        self.arena
            .get(start as usize..*self.ends.get(i as usize)? as usize)
    }

    /// Prefetches the slot where node `me`'s lookup of `name` starts,
    /// unless `name` is node `me - 1`'s (found without the table).
    pub(super) fn prefetch(&self, name: &str, me: u32) {
        if name.is_empty() {
            return;
        }
        let key = self.key(name);
        if me.checked_sub(1).and_then(|p| self.heads.get(p as usize)) == Some(&key.0)
            && key.0 & LONG != LONG
        {
            return;
        }
        crate::prefetch::prefetch(self.slots.get(key.1 as usize & self.mask));
    }

    /// The node named `name`.
    pub(super) fn get(&self, name: &str) -> Option<u32> {
        self.probe(name, self.key(name)).1
    }

    /// The node named `name`, trying node `me - 1` first.
    pub(super) fn get_near(&self, name: &str, me: u32) -> Option<u32> {
        let key = self.key(name);
        if let Some(prev) = me.checked_sub(1) {
            let same = self.heads.get(prev as usize) == Some(&key.0)
                && (key.0 & LONG != LONG || self.id(prev) == Some(name));
            if same {
                return Some(prev);
            }
        }
        self.probe(name, key).1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2e_proto::NodeKind;

    fn nodes(ids: &[&str]) -> Vec<ChainNode> {
        ids.iter()
            .map(|id| ChainNode::new(id, NodeKind::TOOL, "t"))
            .collect()
    }

    #[test]
    fn short_and_long_ids_are_found_exactly() {
        let names = [
            "a",
            "a\0",
            "abcdefg",
            "abcdefgh",
            "abcdefgi",
            "a rather long id",
            "a rather long ie",
        ];
        let ns = nodes(&names);
        let ids = Ids::build(&ns).unwrap();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(ids.get(n), Some(i as u32), "{n:?}");
            assert_eq!(ids.get_near(n, 3), Some(i as u32), "{n:?}");
            assert_eq!(ids.id(i as u32), Some(*n));
        }
        for missing in ["", "b", "abcdefgj", "abcdefghi", "a rather long if", "\0"] {
            assert_eq!(ids.get(missing), None, "{missing:?}");
        }
    }

    #[test]
    fn many_ids_and_duplicates() {
        let names: Vec<String> = (0..5000).map(|i| format!("node-{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let ns = nodes(&refs);
        let ids = Ids::build(&ns).unwrap();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(ids.get(n), Some(i as u32));
        }
        let ns = nodes(&["x", "y", "x"]);
        assert!(matches!(
            Ids::build(&ns),
            Err(ValidationError::DuplicateId { first: 0, .. })
        ));
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
}

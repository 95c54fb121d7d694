//! The ready queue: work waiting for a free slot, earliest-declared node
//! first, as a two-level bitset over the work keys.
//!
//! A binary heap of ready work costs a logarithmic sift with a cache miss
//! per level once many nodes are ready at once (a wide DAG). Here a push
//! sets one bit (and one summary bit), and a pop finds the lowest set bit
//! from a cursor that only moves back when lower work arrives. The summary
//! level (one bit per 64-bit word) keeps a pop after such a move to at most
//! `keys / 4096` summary words: 49 for a 100,000-node chain.
//!
//! The bitset stays only while `cargo xtask bench structures` shows it
//! beating its peer, a std `BinaryHeap` of keys with a queued flag per key
//! (feature `bench-heap-ready`), by the bar of that bench (a best speedup of
//! 1.10 or more) on some shape; the figures are in `BENCHMARKS.md`.

/// Work waiting for a free slot. Ordered by node index, so that among ready
/// work the earliest-declared goes first (and memory is walked in order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Work {
    /// Start this node.
    Node(u32),
    /// Start more items of this map.
    Items(u32),
}

impl Work {
    /// The position in the queue: a node's start before its items.
    fn key(self) -> usize {
        match self {
            Self::Node(i) => 2 * i as usize,
            Self::Items(m) => 2 * m as usize + 1,
        }
    }

    fn from_key(k: usize) -> Self {
        let i = (k / 2) as u32;
        if k.is_multiple_of(2) {
            Self::Node(i)
        } else {
            Self::Items(i)
        }
    }
}

/// See the module documentation.
#[cfg(not(feature = "bench-heap-ready"))]
pub(super) struct Ready {
    /// One bit per key.
    words: Vec<u64>,
    /// One bit per word of `words` that is not zero.
    summary: Vec<u64>,
    /// No summary word before this one has a bit set.
    low: usize,
    /// Keys set.
    len: usize,
}

#[cfg(not(feature = "bench-heap-ready"))]
impl Ready {
    /// A queue for the work of `nodes` nodes, holding `roots`.
    pub(super) fn new(nodes: usize, roots: &[u32]) -> Self {
        let words = (2 * nodes).div_ceil(64).max(1);
        let mut ready = Self {
            words: vec![0; words],
            summary: vec![0; words.div_ceil(64)],
            low: 0,
            len: 0,
        };
        for &r in roots {
            ready.push(Work::Node(r));
        }
        ready
    }

    /// Queues `work` (queuing it twice keeps one entry).
    pub(super) fn push(&mut self, work: Work) {
        let k = work.key();
        let (w, bit) = (k / 64, 1u64 << (k % 64));
        let Some(word) = self.words.get_mut(w) else {
            return;
        };
        if *word & bit != 0 {
            return;
        }
        *word |= bit;
        self.len += 1;
        if let Some(s) = self.summary.get_mut(w / 64) {
            *s |= 1 << (w % 64);
        }
        self.low = self.low.min(w / 64);
    }

    /// Where the earliest queued key is: its word and bit.
    fn first(&mut self) -> Option<(usize, u32)> {
        if self.len == 0 {
            return None;
        }
        while let Some(&s) = self.summary.get(self.low) {
            if s == 0 {
                self.low += 1;
                continue;
            }
            let w = self.low * 64 + s.trailing_zeros() as usize;
            return Some((w, self.words.get(w)?.trailing_zeros()));
        }
        None
    }

    /// The earliest queued work, removed.
    pub(super) fn pop(&mut self) -> Option<Work> {
        let (w, b) = self.first()?;
        let word = self.words.get_mut(w)?;
        *word &= !(1 << b);
        if *word == 0
            && let Some(s) = self.summary.get_mut(w / 64)
        {
            *s &= !(1 << (w % 64));
        }
        self.len -= 1;
        Some(Work::from_key(w * 64 + b as usize))
    }

    /// The earliest queued work, left queued.
    pub(super) fn peek(&mut self) -> Option<Work> {
        self.first()
            .map(|(w, b)| Work::from_key(w * 64 + b as usize))
    }

    /// Drops everything queued.
    pub(super) fn clear(&mut self) {
        if self.len > 0 {
            self.words.fill(0);
            self.summary.fill(0);
            self.len = 0;
        }
        self.low = 0;
    }
}

/// The peer `cargo xtask bench structures` measures the bitset against
/// (`--features bench-heap-ready`): a std `BinaryHeap` of keys, with one
/// flag per key so that work queued twice is kept once.
#[cfg(feature = "bench-heap-ready")]
pub(super) struct Ready {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<usize>>,
    queued: Vec<bool>,
}

#[cfg(feature = "bench-heap-ready")]
impl Ready {
    /// A queue for the work of `nodes` nodes, holding `roots`.
    pub(super) fn new(nodes: usize, roots: &[u32]) -> Self {
        let mut ready = Self {
            heap: std::collections::BinaryHeap::new(),
            queued: vec![false; 2 * nodes],
        };
        for &r in roots {
            ready.push(Work::Node(r));
        }
        ready
    }

    /// Queues `work` (queuing it twice keeps one entry).
    pub(super) fn push(&mut self, work: Work) {
        let k = work.key();
        match self.queued.get_mut(k) {
            Some(q) if !*q => *q = true,
            _ => return,
        }
        self.heap.push(std::cmp::Reverse(k));
    }

    /// The earliest queued work, removed.
    pub(super) fn pop(&mut self) -> Option<Work> {
        let std::cmp::Reverse(k) = self.heap.pop()?;
        if let Some(q) = self.queued.get_mut(k) {
            *q = false;
        }
        Some(Work::from_key(k))
    }

    /// The earliest queued work, left queued.
    pub(super) fn peek(&mut self) -> Option<Work> {
        self.heap.peek().map(|r| Work::from_key(r.0))
    }

    /// Drops everything queued.
    pub(super) fn clear(&mut self) {
        self.heap.clear();
        self.queued.fill(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn nodes_before_their_items_and_in_index_order() {
        let mut r = Ready::new(200, &[7, 3]);
        r.push(Work::Items(3));
        r.push(Work::Node(150));
        r.push(Work::Items(0));
        r.push(Work::Node(3)); // already queued
        assert_eq!(r.peek(), Some(Work::Items(0)));
        let order: Vec<Work> = std::iter::from_fn(|| r.pop()).collect();
        assert_eq!(
            order,
            [
                Work::Items(0),
                Work::Node(3),
                Work::Items(3),
                Work::Node(7),
                Work::Node(150)
            ]
        );
        assert_eq!(r.pop(), None);
        r.push(Work::Node(199));
        r.push(Work::Items(199));
        r.clear();
        assert_eq!(r.pop(), None);
        // Out-of-range work is ignored rather than panicking.
        r.push(Work::Node(10_000));
        assert_eq!(r.pop(), None);
    }

    proptest! {
        /// Any interleaving of pushes and pops matches an ordered set.
        #[test]
        fn behaves_like_an_ordered_set(ops in proptest::collection::vec((any::<bool>(), 0u32..10_000, any::<bool>()), 0..400)) {
            let mut r = Ready::new(5_000, &[]);
            let mut model = BTreeSet::new();
            for (push, key, items) in ops {
                if push {
                    let i = key % 5_000;
                    let w = if items { Work::Items(i) } else { Work::Node(i) };
                    r.push(w);
                    model.insert(w.key());
                } else {
                    let first = model.first().copied().map(Work::from_key);
                    prop_assert_eq!(r.peek(), first);
                    let want = model.pop_first().map(Work::from_key);
                    prop_assert_eq!(r.pop(), want);
                }
            }
            while let Some(k) = model.pop_first() {
                prop_assert_eq!(r.pop(), Some(Work::from_key(k)));
            }
            prop_assert_eq!(r.pop(), None);
        }
    }
}

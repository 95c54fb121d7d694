//! Vector arithmetic and reciprocal rank fusion.

use std::collections::HashMap;
use std::hash::Hash;

/// The `k` of reciprocal rank fusion: a document at rank `r` (from 1) in a
/// list adds `1 / (RRF_K + r)` to its score.
pub const RRF_K: f64 = 60.0;

/// `v` scaled to unit length; `None` for a zero or non-finite vector.
pub(crate) fn normalized(v: &[f32]) -> Option<Vec<f32>> {
    let norm = v
        .iter()
        .map(|x| f64::from(*x) * f64::from(*x))
        .sum::<f64>()
        .sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return None;
    }
    Some(v.iter().map(|x| (f64::from(*x) / norm) as f32).collect())
}

/// Dot product of two vectors of the same length (cosine when both are unit).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Sixteen independent accumulators: the compiler turns the inner loop
    // into vector instructions with several sums in flight.
    let mut acc = [0f32; 16];
    let (ca, ra) = a.as_chunks::<16>();
    let (cb, rb) = b.as_chunks::<16>();
    for (x, y) in ca.iter().zip(cb) {
        for ((s, p), q) in acc.iter_mut().zip(x).zip(y) {
            *s += p * q;
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(p, q)| p * q).sum();
    acc.iter().sum::<f32>() + tail
}

/// Fuses ranked lists (best first) by reciprocal rank: each key's score is the
/// sum over the lists it appears in of `1 / (RRF_K + rank)`. Returns keys
/// with scores, best first; ties keep the order of first appearance.
pub fn reciprocal_rank_fusion<K: Eq + Hash + Clone>(lists: &[Vec<K>]) -> Vec<(K, f64)> {
    let mut scores: HashMap<K, (f64, usize)> = HashMap::new();
    let mut order = 0usize;
    for list in lists {
        for (rank, key) in list.iter().enumerate() {
            let add = 1.0 / (RRF_K + rank as f64 + 1.0);
            let entry = scores.entry(key.clone()).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            entry.0 += add;
        }
    }
    let mut out: Vec<(K, f64, usize)> = scores.into_iter().map(|(k, (s, o))| (k, s, o)).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    out.into_iter().map(|(k, s, _)| (k, s)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_rewards_agreement() {
        let fused = reciprocal_rank_fusion(&[vec!["a", "b", "c"], vec!["c", "b", "d"]]);
        let keys: Vec<_> = fused.iter().map(|(k, _)| *k).collect();
        // c (ranks 3 and 1) edges out b (2 and 2); a and d appear once.
        assert_eq!(keys, ["c", "b", "a", "d"]);
        assert!((fused[0].1 - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-12);
        assert!((fused[1].1 - 2.0 / 62.0).abs() < 1e-12);
        assert!((fused[2].1 - 1.0 / 61.0).abs() < 1e-12);
    }

    #[test]
    fn vectors() {
        let u = normalized(&[3.0, 4.0, 0.0, 0.0, 0.0]).unwrap();
        assert!((dot(&u, &u) - 1.0).abs() < 1e-6);
        assert!((u[0] - 0.6).abs() < 1e-6);
        assert!(normalized(&[0.0, 0.0]).is_none());
        assert!(normalized(&[f32::NAN]).is_none());
        assert_eq!(
            dot(&[1.0, 2.0, 3.0, 4.0, 5.0], &[1.0, 1.0, 1.0, 1.0, 2.0]),
            20.0
        );
    }
}

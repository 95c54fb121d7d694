//! Cycle detection over the dependency graph, naming the cycle's path.
//!
//! The graph checked is the plan's edges plus, for every fallback `f` of a
//! node `n`, an edge from `f` to each dependent of `n` (those wait for `f`
//! when `n` fails).

use crate::graph::{FALLBACK, Plan};

/// The first cycle found, as node ids with the first repeated at the end.
pub(crate) fn find_cycle(plan: &Plan<'_>) -> Option<Vec<String>> {
    let n = plan.nodes.len();
    // Successor lists: plan edges, then the fallback stand-in edges.
    let mut extra: Vec<(u32, u32)> = Vec::new();
    for from in 0..n as u32 {
        let edges = plan.out_edges(from);
        for fb in edges.iter().filter(|e| e.flags & FALLBACK != 0) {
            for dep in edges.iter().filter(|e| e.flags & FALLBACK == 0) {
                extra.push((fb.to, dep.to));
            }
        }
    }
    extra.sort_unstable();
    let mut succ_start = vec![0usize; n + 1];
    let mut succ = Vec::with_capacity(plan.edges.len() + extra.len());
    let mut x = 0;
    for from in 0..n {
        succ.extend(plan.out_edges(from as u32).iter().map(|e| e.to));
        while let Some(&(a, b)) = extra.get(x) {
            if a as usize != from {
                break;
            }
            succ.push(b);
            x += 1;
        }
        if let Some(s) = succ_start.get_mut(from + 1) {
            *s = succ.len();
        }
    }
    let succs = |i: usize| -> &[u32] {
        match (succ_start.get(i), succ_start.get(i + 1)) {
            (Some(&a), Some(&b)) => succ.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    };
    // Kahn: peel off nodes with no remaining predecessors.
    let mut indeg = vec![0u32; n];
    for &t in &succ {
        if let Some(d) = indeg.get_mut(t as usize) {
            *d += 1;
        }
    }
    let mut stack: Vec<usize> = (0..n).filter(|&i| indeg.get(i) == Some(&0)).collect();
    let mut seen = 0;
    while let Some(i) = stack.pop() {
        seen += 1;
        for &t in succs(i) {
            if let Some(d) = indeg.get_mut(t as usize) {
                *d -= 1;
                if *d == 0 {
                    stack.push(t as usize);
                }
            }
        }
    }
    if seen == n {
        return None;
    }
    // Every node left has a predecessor that is left too: walk predecessors
    // from the first one left until a node repeats.
    let mut pred: Vec<Option<u32>> = vec![None; n];
    for from in 0..n {
        if indeg.get(from) == Some(&0) {
            continue;
        }
        for &t in succs(from) {
            if let Some(p @ None) = pred.get_mut(t as usize) {
                *p = Some(from as u32);
            }
        }
    }
    let start = (0..n).find(|&i| indeg.get(i).is_some_and(|d| *d > 0))?;
    let mut on_path = vec![usize::MAX; n];
    let mut walk = Vec::new();
    let mut cur = start;
    loop {
        if let Some(&pos) = on_path.get(cur).filter(|p| **p != usize::MAX) {
            let mut cycle: Vec<usize> = walk.get(pos..)?.to_vec();
            cycle.reverse();
            // Start the path at its earliest-declared node.
            let min = cycle
                .iter()
                .enumerate()
                .min_by_key(|(_, v)| **v)
                .map_or(0, |(k, _)| k);
            cycle.rotate_left(min);
            let first = *cycle.first()?;
            cycle.push(first);
            return Some(
                cycle
                    .into_iter()
                    .filter_map(|i| plan.nodes.get(i).map(|nd| nd.src.node_id.clone()))
                    .collect(),
            );
        }
        if let Some(p) = on_path.get_mut(cur) {
            *p = walk.len();
        }
        walk.push(cur);
        cur = (*pred.get(cur)?)? as usize;
    }
}

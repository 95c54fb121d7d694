//! Topological levels (Kahn) and, when the graph is not acyclic, one cycle per strongly
//! connected component (Kosaraju), as a path of task indexes.

use std::collections::VecDeque;

use super::{Csr, OutEdge};

/// Outgoing edges per task.
type Outs = Csr<OutEdge>;

fn outs_of(outs: &Outs, v: u32) -> impl Iterator<Item = u32> + '_ {
    outs.row(v).iter().map(|e| e.to)
}

/// The depth level of every task (roots are 1), or the cycles found.
pub(super) fn levels(outs: &Outs, in_degree: Vec<u32>) -> Result<Vec<u32>, Vec<Vec<u32>>> {
    let n = in_degree.len();
    let mut queue: VecDeque<u32> = (0..n)
        .filter(|&i| in_degree.get(i) == Some(&0))
        .map(|i| i as u32)
        .collect();
    let mut remaining = in_degree;
    let mut level = vec![1_u32; n];
    let mut done = 0;
    while let Some(u) = queue.pop_front() {
        done += 1;
        let next = level.get(u as usize).copied().unwrap_or(1) + 1;
        for v in outs_of(outs, u) {
            if let Some(l) = level.get_mut(v as usize) {
                *l = (*l).max(next);
            }
            if let Some(r) = remaining.get_mut(v as usize) {
                *r -= 1;
                if *r == 0 {
                    queue.push_back(v);
                }
            }
        }
    }
    if done == n {
        return Ok(level);
    }
    let in_rest: Vec<bool> = remaining.iter().map(|&r| r > 0).collect();
    Err(find_cycles(outs, &in_rest))
}

fn flag(v: &[bool], i: u32) -> bool {
    v.get(i as usize).copied().unwrap_or(false)
}

fn set(v: &mut [bool], i: u32) {
    if let Some(f) = v.get_mut(i as usize) {
        *f = true;
    }
}

/// One cycle per non-trivial strongly connected component among the `in_rest` tasks (those
/// Kahn's algorithm could not order), ordered by their smallest task.
fn find_cycles(outs: &Outs, in_rest: &[bool]) -> Vec<Vec<u32>> {
    let n = in_rest.len();
    let nodes = (0..n as u32).filter(|&v| flag(in_rest, v));

    // Pass 1: finish order.
    let mut visited = vec![false; n];
    let mut finish = Vec::new();
    let mut stack: Vec<(u32, usize)> = Vec::new();
    for start in nodes.clone() {
        if flag(&visited, start) {
            continue;
        }
        set(&mut visited, start);
        stack.push((start, 0));
        while let Some((v, next)) = stack.last_mut() {
            let (v, at) = (*v, *next);
            *next += 1;
            match outs.row(v).get(at).map(|e| e.to) {
                Some(w) => {
                    if flag(in_rest, w) && !flag(&visited, w) {
                        set(&mut visited, w);
                        stack.push((w, 0));
                    }
                }
                None => {
                    finish.push(v);
                    stack.pop();
                }
            }
        }
    }

    // Pass 2: components on the reversed graph.
    let mut rev: Vec<Vec<u32>> = vec![Vec::new(); n];
    for v in nodes {
        for w in outs_of(outs, v) {
            if flag(in_rest, w)
                && let Some(r) = rev.get_mut(w as usize)
            {
                r.push(v);
            }
        }
    }
    let mut component = vec![u32::MAX; n];
    let mut cycles = Vec::new();
    for (c, &root) in finish.iter().rev().enumerate() {
        if component.get(root as usize) != Some(&u32::MAX) {
            continue;
        }
        let c = c as u32;
        let mut members = vec![root];
        if let Some(slot) = component.get_mut(root as usize) {
            *slot = c;
        }
        let mut i = 0;
        while let Some(&v) = members.get(i) {
            i += 1;
            for &u in rev.get(v as usize).map_or(&[][..], Vec::as_slice) {
                if let Some(slot) = component.get_mut(u as usize)
                    && *slot == u32::MAX
                {
                    *slot = c;
                    members.push(u);
                }
            }
        }
        let self_loop = outs_of(outs, root).any(|w| w == root);
        if members.len() > 1 || self_loop {
            let start = members.iter().copied().min().unwrap_or(root);
            cycles.push(shortest_cycle(outs, &component, c, start));
        }
    }
    cycles.sort_by_key(|path| path.first().copied());
    cycles
}

/// The shortest cycle through `start` inside component `c` (breadth-first search).
fn shortest_cycle(outs: &Outs, component: &[u32], c: u32, start: u32) -> Vec<u32> {
    let mut parent = std::collections::HashMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for w in outs_of(outs, v) {
            if w == start {
                // Walk back v, parent(v), …, start; then reverse and close the loop.
                let mut path = vec![v];
                let mut at = v;
                while let Some(&p) = parent.get(&at) {
                    path.push(p);
                    at = p;
                }
                path.reverse();
                path.push(start);
                return path;
            }
            if component.get(w as usize) == Some(&c) && w != start && !parent.contains_key(&w) {
                parent.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    vec![start, start]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, edges: &[(u32, u32)]) -> (Outs, Vec<u32>) {
        let mut indeg = vec![0; n];
        let pairs: Vec<(u32, OutEdge)> = edges
            .iter()
            .map(|&(a, b)| {
                indeg[b as usize] += 1;
                (
                    a,
                    OutEdge {
                        to: b,
                        stream_candidate: false,
                    },
                )
            })
            .collect();
        (Csr::from_pairs(n, &pairs), indeg)
    }

    #[test]
    fn levels_of_a_diamond() {
        let (outs, indeg) = graph(4, &[(0, 1), (0, 2), (1, 3), (2, 3)]);
        assert_eq!(levels(&outs, indeg.clone()).unwrap(), vec![1, 2, 2, 3]);
    }

    #[test]
    fn finds_each_cycle_as_a_path() {
        // 0 → 1 → 2 → 0, 3 → 3, 4 downstream of the first cycle, 5 → 6 → 5
        let (outs, indeg) = graph(7, &[(0, 1), (1, 2), (2, 0), (3, 3), (2, 4), (5, 6), (6, 5)]);
        let cycles = levels(&outs, indeg.clone()).unwrap_err();
        assert_eq!(cycles, vec![vec![0, 1, 2, 0], vec![3, 3], vec![5, 6, 5]]);
    }

    #[test]
    fn picks_the_shortest_cycle_through_the_smallest_task() {
        // 0 → 1 → 2 → 3 → 0 and the shortcut 1 → 0
        let (outs, indeg) = graph(4, &[(0, 1), (1, 2), (2, 3), (3, 0), (1, 0)]);
        assert_eq!(
            levels(&outs, indeg.clone()).unwrap_err(),
            vec![vec![0, 1, 0]]
        );
    }
}

//! Edges: their shape, the steps they name, cycles and the longest path.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::{Checker, kind};
use crate::error::Rule;
use crate::limits::*;

impl Checker {
    /// Edge shapes; returns the well-formed (from, to) pairs.
    pub(super) fn edges(&mut self, edges: &[Value]) -> Vec<(String, String)> {
        let mut pairs = Vec::new();
        for (i, edge) in edges.iter().enumerate() {
            let p = format!("$.edges[{i}]");
            let Some(obj) = edge.as_object() else {
                self.err(
                    &p,
                    Rule::Type,
                    format!("an edge is an object, got {}", kind(edge)),
                );
                continue;
            };
            for key in obj.keys() {
                if !matches!(key.as_str(), "from" | "to" | "map") {
                    self.err(
                        &format!("{p}.{key}"),
                        Rule::UnknownField,
                        "an edge has only `from`, `to` and `map`",
                    );
                }
            }
            let end = |this: &mut Self, key: &str, special: &str| -> Option<String> {
                let ep = format!("{p}.{key}");
                match obj.get(key) {
                    None => {
                        this.err(&ep, Rule::Required, format!("an edge needs `{key}`"));
                        None
                    }
                    Some(Value::String(s)) => {
                        this.length(&ep, s, 1, MAX_ID_CHARS);
                        if s != special && !this.ids.contains_key(s) {
                            this.err(
                                &ep,
                                Rule::UnknownStep,
                                format!("no step `{s}` (nor `{special}`)"),
                            );
                            return None;
                        }
                        Some(s.clone())
                    }
                    Some(other) => {
                        this.err(
                            &ep,
                            Rule::Type,
                            format!("expected a string, got {}", kind(other)),
                        );
                        None
                    }
                }
            };
            let from = end(self, "from", "input");
            let to = end(self, "to", "output");
            if let Some(map) = obj.get("map") {
                let mp = format!("{p}.map");
                match map.as_object() {
                    Some(m) if m.is_empty() => {
                        self.err(&mp, Rule::Items, "`map` must not be empty")
                    }
                    Some(m) => {
                        for (k, v) in m {
                            if k.is_empty() {
                                self.err(&mp, Rule::Length, "a source path is empty");
                            }
                            match v.as_str() {
                                Some("") => self.err(
                                    &format!("{mp}.{k}"),
                                    Rule::Length,
                                    "an input key is empty",
                                ),
                                Some(_) => {}
                                None => self.err(
                                    &format!("{mp}.{k}"),
                                    Rule::Type,
                                    format!("an input key is a string, got {}", kind(v)),
                                ),
                            }
                        }
                    }
                    None => self.err(
                        &mp,
                        Rule::Type,
                        format!("expected an object, got {}", kind(map)),
                    ),
                }
            }
            if let (Some(f), Some(t)) = (from, to) {
                pairs.push((f, t));
            }
        }
        pairs
    }

    /// Acyclic, and the longest path (in steps) at most [`MAX_EDGE_PATH`].
    pub(super) fn graph(&mut self, edges: &[(String, String)]) {
        let mut adj: HashMap<&str, Vec<&str>> = HashMap::new();
        for (f, t) in edges {
            adj.entry(f.as_str()).or_default().push(t.as_str());
        }
        // Iterative DFS with colours; longest path from each node memoised.
        let mut longest: HashMap<&str, usize> = HashMap::new();
        let mut on_stack: HashSet<&str> = HashSet::new();
        let mut reported_cycle = false;
        let mut nodes: Vec<&str> = adj.keys().copied().collect();
        nodes.sort_unstable();
        for &start in &nodes {
            if longest.contains_key(start) {
                continue;
            }
            let mut stack: Vec<(&str, usize)> = vec![(start, 0)];
            on_stack.insert(start);
            while let Some(&mut (node, ref mut next)) = stack.last_mut() {
                let succ = adj.get(node).map(Vec::as_slice).unwrap_or(&[]);
                if let Some(&child) = succ.get(*next) {
                    *next += 1;
                    if on_stack.contains(child) {
                        if !reported_cycle {
                            reported_cycle = true;
                            let mut path: Vec<&str> = stack.iter().map(|(n, _)| *n).collect();
                            if let Some(pos) = path.iter().position(|n| *n == child) {
                                path.drain(..pos);
                            }
                            path.push(child);
                            self.err(
                                "$.edges",
                                Rule::Cycle,
                                format!("edges form a cycle: {}", path.join(" -> ")),
                            );
                        }
                    } else if !longest.contains_key(child) {
                        on_stack.insert(child);
                        stack.push((child, 0));
                    }
                } else {
                    let best = succ
                        .iter()
                        .filter_map(|c| longest.get(c))
                        .max()
                        .copied()
                        .unwrap_or(0);
                    longest.insert(node, best + 1);
                    on_stack.remove(node);
                    stack.pop();
                }
            }
        }
        if let Some(max) = longest.values().max()
            && *max > MAX_EDGE_PATH
            && !reported_cycle
        {
            self.err(
                "$.edges",
                Rule::PathLength,
                format!("the longest edge path has {max} steps, at most {MAX_EDGE_PATH}"),
            );
        }
    }
}

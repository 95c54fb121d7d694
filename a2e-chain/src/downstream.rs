//! What depends on a node: the part of a chain a fork from that node runs
//! again (every other node keeps what an earlier run journaled).

use std::collections::BTreeSet;

use crate::graph::{Plan, Spec};

impl Plan<'_> {
    /// `node` and every node downstream of it — reached through any of its
    /// edges (control, data, a branch's arms, an `on_error` fallback) and
    /// through a map's template — in declaration order; `None` when the
    /// chain has no node `node`. A map's template stands for its map: its
    /// items run only as the map's, so forking from it runs the map again.
    pub fn downstream(&self, node: &str) -> Option<Vec<&str>> {
        let at = self.nodes.iter().position(|n| &*n.id == node)?;
        let start = self
            .nodes
            .iter()
            .position(|n| matches!(&n.spec, Spec::Map(m) if m.template as usize == at))
            .unwrap_or(at);
        let mut seen = BTreeSet::from([start]);
        let mut todo = vec![start];
        while let Some(i) = todo.pop() {
            let edges = u32::try_from(i).map(|i| self.out_edges(i)).unwrap_or(&[]);
            let template = match self.nodes.get(i).map(|n| &n.spec) {
                Some(Spec::Map(m)) => Some(m.template as usize),
                _ => None,
            };
            for next in edges.iter().map(|e| e.to as usize).chain(template) {
                if seen.insert(next) {
                    todo.push(next);
                }
            }
        }
        Some(
            seen.into_iter()
                .filter_map(|i| self.nodes.get(i).map(|n| &*n.id))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use a2e_proto::ChainRequest;

    use crate::{ChainConfig, validate};

    #[test]
    fn downstream_follows_edges_branches_fallbacks_and_maps() {
        let req: ChainRequest = serde_json::from_value(serde_json::json!({
            "type": "chain/req", "id": "r", "entry_node": "a",
            "nodes": [
                {"node_id": "a", "kind": "tool", "name": "t", "next_node": "b"},
                {"node_id": "b", "kind": "tool", "name": "t", "on_error": "fb",
                 "input_map": {"x": "a.output"}},
                {"node_id": "fb", "kind": "tool", "name": "t"},
                {"node_id": "side", "kind": "tool", "name": "t"},
                {"node_id": "m", "kind": "map", "items_path": "b.output", "map_node": "each"},
                {"node_id": "each", "kind": "tool", "name": "t"},
                {"node_id": "late", "kind": "tool", "name": "t", "input_map": {"x": "m.output"}}
            ]
        }))
        .unwrap();
        let plan = validate(&req, &ChainConfig::default()).unwrap();
        assert_eq!(
            plan.downstream("b").unwrap(),
            ["b", "fb", "m", "each", "late"]
        );
        assert_eq!(plan.downstream("each").unwrap(), ["m", "each", "late"]);
        assert_eq!(plan.downstream("side").unwrap(), ["side"]);
        assert_eq!(plan.downstream("a").unwrap().len(), 6);
        assert!(plan.downstream("nope").is_none());
    }
}

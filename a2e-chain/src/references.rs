//! What a validated chain's expressions read: every node named in an
//! `input_map` entry, a branch's `condition` or a map's `items_path`, as the
//! compiler resolved it. For tools that draw or explain a chain; the engine
//! schedules on its own edges (a map also waits for what its template reads).

use crate::context::Root;
use crate::graph::{Plan, Spec, inputs_of};

/// The field of a node that holds an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExprField<'p> {
    /// An `input_map` entry, by its key.
    InputMap(&'p str),
    /// A branch's `condition`.
    Condition,
    /// A map's `items_path`.
    ItemsPath,
}

impl std::fmt::Display for ExprField<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InputMap(key) => write!(f, "input_map.{key}"),
            Self::Condition => f.write_str("condition"),
            Self::ItemsPath => f.write_str("items_path"),
        }
    }
}

/// One node's expression reading another node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reference<'p> {
    /// The node whose expression reads.
    pub node: &'p str,
    /// Where the expression is.
    pub field: ExprField<'p>,
    /// The node read.
    pub target: &'p str,
}

impl<'r> Plan<'r> {
    /// Every node each node's expressions read, in declaration order of the
    /// nodes and then of their fields (`input_map` entries, then `condition`
    /// or `items_path`); a node named twice in one expression is listed once.
    /// `input`, `item`, `index` and a branch's `output` name no node and are
    /// not listed. A map template's reads are its own (the engine makes the
    /// map wait for them too).
    pub fn references(&self) -> Vec<Reference<'_>> {
        let mut out = Vec::new();
        for node in &self.nodes {
            for (key, expr) in inputs_of(&self.inputs, node) {
                self.push_reads(&mut out, &node.id, ExprField::InputMap(key), expr.roots());
            }
            match &node.spec {
                Spec::Branch(b) => {
                    self.push_reads(&mut out, &node.id, ExprField::Condition, b.cond.roots());
                }
                Spec::Map(m) => {
                    self.push_reads(&mut out, &node.id, ExprField::ItemsPath, m.items.roots());
                }
                Spec::Run => {}
            }
        }
        out
    }

    /// Adds the nodes among `roots` that one field of `node` reads, each once.
    fn push_reads<'p>(
        &'p self,
        out: &mut Vec<Reference<'p>>,
        node: &'p str,
        field: ExprField<'p>,
        roots: Vec<Root>,
    ) {
        let start = out.len();
        for root in roots {
            let Root::Node(j) = root else { continue };
            let Some(target) = self.nodes.get(j as usize) else {
                continue;
            };
            let seen = out
                .get(start..)
                .is_some_and(|mine| mine.iter().any(|r| r.target == &*target.id));
            if !seen {
                out.push(Reference {
                    node,
                    field,
                    target: &target.id,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use a2e_proto::ChainRequest;

    use super::{ExprField, Reference};
    use crate::{ChainConfig, validate};

    fn chain(json: &str) -> ChainRequest {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn references_name_the_nodes_each_expression_reads() {
        let req = chain(
            r#"{"type": "chain/req", "entry_node": "a", "nodes": [
              {"node_id": "a", "kind": "tool", "name": "t", "next_node": "b"},
              {"node_id": "b", "kind": "tool", "name": "t",
               "input_map": {"x": "a.output.x", "y": "[a.output.y, a.output.z]", "z": "input.k"}},
              {"node_id": "m", "kind": "map", "items_path": "b.output.items", "map_node": "each"},
              {"node_id": "each", "kind": "tool", "name": "t", "input_map": {"v": "item", "w": "a.output"}},
              {"node_id": "c", "kind": "branch", "condition": "m.output != `null` && output.ok",
               "true_node": "d"},
              {"node_id": "d", "kind": "tool", "name": "t"}
            ]}"#,
        );
        let plan = validate(&req, &ChainConfig::default()).unwrap();
        let refs = plan.references();
        let r = |node, field, target| Reference {
            node,
            field,
            target,
        };
        assert_eq!(
            refs,
            [
                r("b", ExprField::InputMap("x"), "a"),
                r("b", ExprField::InputMap("y"), "a"),
                r("m", ExprField::ItemsPath, "b"),
                r("each", ExprField::InputMap("w"), "a"),
                r("c", ExprField::Condition, "m"),
            ]
        );
        assert_eq!(ExprField::InputMap("x").to_string(), "input_map.x");
    }
}

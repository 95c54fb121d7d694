//! The peer of the id table in `ids.rs`: a std `HashMap` from id to node
//! index, borrowing the request's strings, with no shortcut for the node
//! declared just before. Built only with `--features bench-std-ids`, for
//! `cargo xtask bench structures`.

use a2e_proto::ChainNode;

use super::{Result, check_id};
use crate::error::ValidationError;
use crate::hash::{FastMap, map_with_capacity};

/// Node ids by name.
pub(super) struct Ids<'r> {
    map: FastMap<&'r str, u32>,
    nodes: &'r [ChainNode],
    /// `input_map` entries over all nodes.
    pub(super) input_entries: usize,
}

impl<'r> Ids<'r> {
    /// Indexes the ids of `nodes`, refusing empty, reserved and duplicate
    /// ids.
    pub(super) fn build(nodes: &'r [ChainNode]) -> Result<Self> {
        let mut ids = Self {
            map: map_with_capacity(nodes.len()),
            nodes,
            input_entries: 0,
        };
        for (i, node) in nodes.iter().enumerate() {
            let id = node.node_id.as_str();
            ids.input_entries += node.input_map.len();
            check_id(i, id)?;
            if let Some(&first) = ids.map.get(id) {
                return Err(ValidationError::DuplicateId {
                    node_id: node.node_id.clone(),
                    first: first as usize,
                });
            }
            ids.map.insert(id, i as u32);
        }
        Ok(ids)
    }

    /// The id of node `i`.
    pub(super) fn id(&self, i: u32) -> Option<&str> {
        self.nodes.get(i as usize).map(|n| n.node_id.as_str())
    }

    /// Nothing to prefetch.
    pub(super) fn prefetch(&self, _name: &str, _me: u32) {}

    /// The node named `name`.
    pub(super) fn get(&self, name: &str) -> Option<u32> {
        self.map.get(name).copied()
    }

    /// The node named `name`.
    pub(super) fn get_near(&self, name: &str, _me: u32) -> Option<u32> {
        self.get(name)
    }
}

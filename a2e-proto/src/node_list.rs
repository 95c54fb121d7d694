//! `chain/req`'s `nodes`, each decoded into the list where it lies.
//!
//! serde's derived decoding builds a node on the stack and moves it (a
//! [`ChainNode`] is ~340 bytes) four or five times on its way into the
//! list: for the 1000-node request of `cargo xtask bench transport` those
//! copies were a sixth of its decode. Here each node is pushed first and its
//! fields are decoded into it in place. The rules are the derived
//! `Deserialize`'s for a node given as a JSON object: `node_id` and `kind`
//! are required, a field given twice is an error, unknown fields are
//! ignored, and every other field takes its default.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::chains::ChainNode;

/// Decodes a list of nodes (`#[serde(deserialize_with)]` on `nodes`).
pub(crate) fn nodes<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<ChainNode>, D::Error> {
    deserializer.deserialize_seq(Nodes)
}

/// Nodes reserved ahead: the format's size hint up to this many, or this
/// many when it gives none (JSON does not), the room left over given back
/// at the end. A large list then grows by copying only past this size (for
/// the 1000-node request of `cargo xtask bench transport`, growing from
/// nothing copied ~350 KB of nodes, 7–10 µs of its ~210 µs decode); a small
/// one costs one allocation of ~350 KB that is never touched beyond its
/// nodes, and one copy of those nodes into an allocation of their size.
pub(crate) const MAX_RESERVED: usize = 1024;

struct Nodes;

impl<'de> Visitor<'de> for Nodes {
    type Value = Vec<ChainNode>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<ChainNode>, A::Error> {
        let mut nodes: Vec<ChainNode> =
            Vec::with_capacity(seq.size_hint().unwrap_or(MAX_RESERVED).min(MAX_RESERVED));
        loop {
            nodes.push(ChainNode::blank());
            let Some(slot) = nodes.last_mut() else {
                break;
            };
            if seq.next_element_seed(InPlace(slot))?.is_none() {
                nodes.pop();
                break;
            }
        }
        nodes.shrink_to_fit();
        Ok(nodes)
    }
}

/// A node's fields, by their wire names.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(field_identifier, rename_all = "snake_case")]
pub(crate) enum Field {
    NodeId,
    Kind,
    Name,
    Input,
    InputMap,
    Condition,
    TrueNode,
    FalseNode,
    ItemsPath,
    MapNode,
    NextNode,
    OnError,
    #[serde(other)]
    Other,
}

impl Field {
    /// The wire name ([`FIELDS`] is in the enum's order).
    fn name(self) -> &'static str {
        FIELDS.get(self as usize).copied().unwrap_or_default()
    }

    /// The field named `key` ([`Field::Other`] for any other name).
    pub(crate) fn of(key: &str) -> Self {
        let key: de::value::StrDeserializer<'_, de::value::Error> =
            de::IntoDeserializer::into_deserializer(key);
        Self::deserialize(key).unwrap_or(Self::Other)
    }

    /// Its bit in a set of the fields seen.
    pub(crate) fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// The wire names, in [`Field`]'s order.
const FIELDS: &[&str] = &[
    "node_id",
    "kind",
    "name",
    "input",
    "input_map",
    "condition",
    "true_node",
    "false_node",
    "items_path",
    "map_node",
    "next_node",
    "on_error",
];

/// Decodes one node into the slot it borrows.
struct InPlace<'a>(&'a mut ChainNode);

impl<'de> DeserializeSeed<'de> for InPlace<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_struct("ChainNode", FIELDS, self)
    }
}

impl<'de> Visitor<'de> for InPlace<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("struct ChainNode")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let node = self.0;
        let mut seen = 0u16;
        while let Some(field) = map.next_key::<Field>()? {
            if field == Field::Other {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            if seen & field.bit() != 0 {
                return Err(de::Error::duplicate_field(field.name()));
            }
            seen |= field.bit();
            match field {
                Field::NodeId => node.node_id = map.next_value()?,
                Field::Kind => node.kind = map.next_value()?,
                Field::Name => node.name = map.next_value()?,
                Field::Input => node.input = map.next_value()?,
                Field::InputMap => node.input_map = map.next_value()?,
                Field::Condition => node.condition = map.next_value()?,
                Field::TrueNode => node.true_node = map.next_value()?,
                Field::FalseNode => node.false_node = map.next_value()?,
                Field::ItemsPath => node.items_path = map.next_value()?,
                Field::MapNode => node.map_node = map.next_value()?,
                Field::NextNode => node.next_node = map.next_value()?,
                Field::OnError => node.on_error = map.next_value()?,
                Field::Other => {}
            }
        }
        for required in [Field::NodeId, Field::Kind] {
            if seen & required.bit() == 0 {
                return Err(de::Error::missing_field(required.name()));
            }
        }
        if seen & Field::OnError.bit() == 0 {
            node.on_error = ChainNode::DEFAULT_ON_ERROR.to_owned();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Through the list decoder, and node by node through the derived one.
    fn both(
        nodes: &serde_json::Value,
    ) -> (
        Result<Vec<ChainNode>, String>,
        Result<Vec<ChainNode>, String>,
    ) {
        let text = nodes.to_string();
        let listed = nodes_from(&text);
        let derived = serde_json::from_str::<Vec<ChainNode>>(&text).map_err(|e| e.to_string());
        (listed, derived)
    }

    fn nodes_from(text: &str) -> Result<Vec<ChainNode>, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        nodes(&mut de).map_err(|e| e.to_string())
    }

    #[test]
    fn nodes_decode_as_the_derived_decoder_decodes_them() {
        let nodes = json!([
            {"node_id": "a", "kind": "tool", "name": "echo", "input": {"x": [1, {"y": null}]},
             "input_map": {"t": "input.t", "t": "input.u"}, "unknown": {"deep": [1]}},
            {"kind": "branch", "node_id": "b", "condition": "a.output.ok",
             "true_node": "c", "false_node": "d", "on_error": "skip"},
            {"node_id": "m", "kind": "map", "items_path": "input.items", "map_node": "t",
             "next_node": "z", "on_error": "fallback_node"},
            {"node_id": "p", "kind": "something-new"},
        ]);
        let (listed, derived) = both(&nodes);
        let listed = listed.unwrap();
        assert_eq!(listed, derived.unwrap());
        assert_eq!(listed[3].on_error, "abort");
        assert_eq!(listed[0].input_map["t"], "input.u");
        assert_eq!(nodes_from("[]").unwrap(), Vec::<ChainNode>::new());
    }

    #[test]
    fn the_room_reserved_ahead_is_given_back_and_longer_lists_grow() {
        for n in [0, 3, MAX_RESERVED, MAX_RESERVED + 500] {
            let nodes: Vec<_> = (0..n)
                .map(|i| json!({"node_id": format!("n{i}"), "kind": "tool"}))
                .collect();
            let listed = nodes_from(&serde_json::Value::from(nodes).to_string()).unwrap();
            assert_eq!(listed.len(), n);
            assert_eq!(listed.capacity(), n, "no room left over for {n} nodes");
            assert!(
                listed
                    .iter()
                    .enumerate()
                    .all(|(i, node)| node.node_id == format!("n{i}")),
                "{n} nodes in order"
            );
        }
    }

    #[test]
    fn the_field_names_are_in_the_enums_order() {
        for (at, name) in FIELDS.iter().enumerate() {
            let field: Field = serde_json::from_value(json!(name)).unwrap();
            assert_eq!(field as usize, at, "{name}");
            assert_eq!(field.name(), *name);
        }
        let other: Field = serde_json::from_value(json!("unknown")).unwrap();
        assert!(other == Field::Other && other.name().is_empty());
    }

    #[test]
    fn bad_nodes_fail_with_the_derived_decoders_messages() {
        for bad in [
            json!([{"kind": "tool"}]),
            json!([{"node_id": "a"}]),
            json!([{"node_id": "a", "kind": "tool", "name": "x", "name": "y"}]),
            json!([{"node_id": "a", "kind": "tool", "input": []}]),
            json!(["a"]),
            json!([{"node_id": 1, "kind": "tool"}]),
        ] {
            let (listed, derived) = both(&bad);
            let strip = |e: String| e.split(" at line ").next().unwrap_or_default().to_owned();
            assert_eq!(listed.map_err(strip), derived.map_err(strip), "for {bad}");
        }
        assert!(
            nodes_from("{}")
                .unwrap_err()
                .contains("expected a sequence")
        );
    }
}

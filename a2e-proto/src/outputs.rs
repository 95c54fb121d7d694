//! [`Outputs`]: the `outputs` of a `chain/resp`, node id → output.
//!
//! On the wire it is a JSON object. In memory it is a list of entries in
//! the order they were added: a chain engine adds one per completed node,
//! and a list costs one push per node where a hashed map costs a hash, a
//! probe into a table as large as the chain, and a key string. Ids are
//! shared `Arc<str>`s, so an engine that already holds its node ids shares
//! them instead of copying.
//!
//! Lookups by id scan the list; for many lookups in a large response, take
//! the map with [`Outputs::into_map`].

use std::sync::Arc;

use serde::de::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// node_id → output of every completed node, in order; a JSON object on the
/// wire.
///
/// ```
/// use a2e_proto::Outputs;
/// use serde_json::json;
///
/// let mut outputs = Outputs::new();
/// outputs.push("read", json!({"text": "hi"}));
/// outputs.insert("read", json!({"text": "hello"})); // replaces
/// outputs.push("shout", json!("HELLO"));
/// assert_eq!(outputs["read"]["text"], "hello");
/// assert_eq!(outputs.len(), 2);
/// assert_eq!(
///     serde_json::to_string(&outputs).unwrap(),
///     r#"{"read":{"text":"hello"},"shout":"HELLO"}"#
/// );
/// ```
#[derive(Clone, Default)]
pub struct Outputs {
    entries: Vec<(Arc<str>, Value)>,
}

impl Outputs {
    /// No outputs.
    pub fn new() -> Self {
        Self::default()
    }

    /// No outputs, with room for `n`.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            entries: Vec::with_capacity(n),
        }
    }

    /// Appends `id` → `value`. The caller keeps ids unique (a chain engine's
    /// node ids are); [`insert`](Self::insert) checks.
    pub fn push(&mut self, id: impl Into<Arc<str>>, value: Value) {
        self.entries.push((id.into(), value));
    }

    /// Sets `id` → `value`, replacing (in place) a value already under
    /// `id`; the value replaced, if any.
    pub fn insert(&mut self, id: impl Into<Arc<str>>, value: Value) -> Option<Value> {
        let id = id.into();
        match self.entries.iter_mut().find(|(k, _)| *k == id) {
            Some((_, v)) => Some(std::mem::replace(v, value)),
            None => {
                self.entries.push((id, value));
                None
            }
        }
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The output of node `id`.
    pub fn get(&self, id: &str) -> Option<&Value> {
        self.entries
            .iter()
            .find(|(k, _)| **k == *id)
            .map(|(_, v)| v)
    }

    /// Whether node `id` has an output here.
    pub fn contains_key(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// The entries in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> + '_ {
        self.entries.iter().map(|(k, v)| (&**k, v))
    }

    /// The ids in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.entries.iter().map(|(k, _)| &**k)
    }

    /// The outputs in order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &Value> + '_ {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The outputs as a JSON object (a later duplicate id wins, in the first
    /// one's place).
    pub fn into_map(self) -> Map<String, Value> {
        let mut map = Map::with_capacity(self.entries.len());
        for (k, v) in self.entries {
            map.insert(String::from(&*k), v);
        }
        map
    }

    /// The outputs as a JSON object, leaving these as they are.
    pub fn to_map(&self) -> Map<String, Value> {
        self.clone().into_map()
    }
}

impl From<Map<String, Value>> for Outputs {
    fn from(map: Map<String, Value>) -> Self {
        Self {
            entries: map.into_iter().map(|(k, v)| (Arc::from(k), v)).collect(),
        }
    }
}

impl From<Outputs> for Map<String, Value> {
    fn from(outputs: Outputs) -> Self {
        outputs.into_map()
    }
}

impl<K: Into<String>> FromIterator<(K, Value)> for Outputs {
    /// Collects entries, a later duplicate id replacing the earlier value in
    /// its place (through a map: linear in the entries, however many).
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Self {
        let map: Map<String, Value> = iter.into_iter().map(|(k, v)| (k.into(), v)).collect();
        Self::from(map)
    }
}

impl IntoIterator for Outputs {
    type Item = (Arc<str>, Value);
    type IntoIter = std::vec::IntoIter<(Arc<str>, Value)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl PartialEq for Outputs {
    /// The same entries, in any order (as JSON objects compare).
    fn eq(&self, other: &Self) -> bool {
        if self.len() != other.len() {
            return false;
        }
        let in_order = self
            .entries
            .iter()
            .zip(&other.entries)
            .all(|((a, x), (b, y))| a == b && x == y);
        if in_order {
            return true;
        }
        if self.len() <= 32 {
            return self.iter().all(|(k, v)| other.get(k) == Some(v));
        }
        let theirs: std::collections::HashMap<&str, &Value> = other.iter().collect();
        self.iter().all(|(k, v)| theirs.get(k) == Some(&v))
    }
}

impl PartialEq<Map<String, Value>> for Outputs {
    /// The same entries as the JSON object `map`.
    fn eq(&self, map: &Map<String, Value>) -> bool {
        self.len() == map.len() && self.iter().all(|(k, v)| map.get(k) == Some(v))
    }
}

impl PartialEq<Outputs> for Map<String, Value> {
    fn eq(&self, outputs: &Outputs) -> bool {
        outputs == self
    }
}

impl<'de> Deserialize<'de> for Outputs {
    /// From a JSON object (a later duplicate key wins, as for any object).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::<String, Value>::deserialize(deserializer).map(Self::from)
    }
}

json_object_impls!(Outputs);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_and_writes_like_a_json_object() {
        let wire = r#"{"b":1,"a":{"x":[true]},"b":2}"#;
        let outputs: Outputs = serde_json::from_str(wire).unwrap();
        assert_eq!(outputs.len(), 2);
        assert_eq!(outputs.keys().collect::<Vec<_>>(), ["b", "a"]);
        assert_eq!(outputs["b"], json!(2));
        assert_eq!(outputs["missing"], Value::Null);
        assert_eq!(
            serde_json::to_string(&outputs).unwrap(),
            r#"{"b":2,"a":{"x":[true]}}"#
        );
        let map = json!({"a": {"x": [true]}, "b": 2})
            .as_object()
            .unwrap()
            .clone();
        assert_eq!(outputs, map);
        assert_eq!(map, outputs);
        assert_eq!(outputs.clone().into_map(), map);
        assert!(serde_json::from_str::<Outputs>("[1]").is_err());
    }

    #[test]
    fn equality_ignores_order_and_insert_replaces_in_place() {
        let mut a = Outputs::new();
        a.push("x", json!(1));
        a.push("y", json!(2));
        let b: Outputs = [("y", json!(2)), ("x", json!(0)), ("x", json!(1))]
            .into_iter()
            .collect();
        assert_eq!(b.keys().collect::<Vec<_>>(), ["y", "x"]);
        assert_eq!(a, b);
        assert_eq!(a.insert("x", json!(3)), Some(json!(1)));
        assert_ne!(a, b);
        assert_eq!(a.keys().collect::<Vec<_>>(), ["x", "y"]);
        assert!(a.contains_key("y") && !a.contains_key("z"));
        assert_eq!(a.values().collect::<Vec<_>>(), [&json!(3), &json!(2)]);
        assert_eq!(format!("{a:?}"), r#"{"x": Number(3), "y": Number(2)}"#);
        assert!(Outputs::with_capacity(4).is_empty());
        // Large lists in different orders compare through a table.
        let many: Outputs = (0..100).map(|i| (format!("n{i}"), json!(i))).collect();
        let reversed: Outputs = (0..100)
            .rev()
            .map(|i| (format!("n{i}"), json!(i)))
            .collect();
        assert_eq!(many, reversed);
        let changed: Outputs = (0..100)
            .rev()
            .map(|i| (format!("n{i}"), json!(if i == 7 { -1 } else { i })))
            .collect();
        assert_ne!(many, changed);
    }
}

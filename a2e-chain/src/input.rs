//! [`NodeInput`]: a node's resolved input as the runner receives it.
//!
//! The keys of a node's input are known at validation (its static `input`
//! keys, then its `input_map` keys), so the plan keeps them once, shared by
//! every call of the node and by every node with the same keys. A call then
//! carries only the values. Building a `serde_json::Map` per call would cost
//! a hash table, an entry vector and one string per key; a runner that needs
//! one takes it with [`NodeInput::into_map`], and one that forwards the input
//! to the wire serializes it directly (it serializes as the JSON object).

use std::sync::Arc;
use std::time::Duration;

use a2e_proto::ErrorCode;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::error::NodeError;

/// Keys of a node's input, in order, shared by its calls.
pub(crate) type Keys = Arc<[Box<str>]>;

/// A node's resolved input: static `input` merged with the `input_map`
/// results, a JSON object whose keys come from the plan.
///
/// Reads like a `serde_json` object (`input["path"]`, [`get`](Self::get),
/// [`iter`](Self::iter)), serializes as one, and becomes one with
/// [`into_map`](Self::into_map) or `Value::from`.
///
/// ```
/// use a2e_chain::NodeInput;
/// use serde_json::json;
///
/// let input = NodeInput::from_map(json!({"path": "a.txt", "n": 2}).as_object().unwrap().clone());
/// assert_eq!(input["path"], "a.txt");
/// assert_eq!(input["missing"], serde_json::Value::Null);
/// assert_eq!(input.get("n").and_then(|v| v.as_i64()), Some(2));
/// assert_eq!(serde_json::to_value(&input).unwrap(), json!({"path": "a.txt", "n": 2}));
/// assert_eq!(serde_json::Value::from(input), json!({"path": "a.txt", "n": 2}));
/// ```
#[derive(Clone, Default)]
pub struct NodeInput {
    keys: Keys,
    values: Vec<Value>,
}

impl NodeInput {
    /// An input with `keys` (shared) and `values`, one per key.
    pub(crate) fn new(keys: Keys, values: Vec<Value>) -> Self {
        debug_assert_eq!(keys.len(), values.len());
        Self { keys, values }
    }

    /// An input holding the entries of `map` (for tests and hosts that make
    /// calls of their own).
    pub fn from_map(map: Map<String, Value>) -> Self {
        let (keys, values): (Vec<Box<str>>, Vec<Value>) = map
            .into_iter()
            .map(|(k, v)| (k.into_boxed_str(), v))
            .unzip();
        Self {
            keys: keys.into(),
            values,
        }
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        let at = self.keys.iter().position(|k| **k == *key)?;
        self.values.get(at)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.keys.iter().any(|k| **k == *key)
    }

    /// The entries in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &Value)> + '_ {
        self.keys.iter().map(|k| &**k).zip(&self.values)
    }

    /// The keys in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.keys.iter().map(|k| &**k)
    }

    /// The values in key order.
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// The input as a JSON object (this allocates the map and its keys).
    pub fn into_map(self) -> Map<String, Value> {
        let mut map = Map::with_capacity(self.values.len());
        for (k, v) in self.keys.iter().zip(self.values) {
            map.insert(String::from(&**k), v);
        }
        map
    }

    /// The input as `Value::Object`.
    pub fn into_value(self) -> Value {
        Value::Object(self.into_map())
    }

    /// The input as a JSON object, leaving this one as it is.
    pub fn to_map(&self) -> Map<String, Value> {
        self.clone().into_map()
    }
}

impl std::ops::Index<&str> for NodeInput {
    type Output = Value;

    /// The value under `key`, or `null` (as `serde_json` indexes objects).
    fn index(&self, key: &str) -> &Value {
        static NULL: Value = Value::Null;
        self.get(key).unwrap_or(&NULL)
    }
}

impl From<NodeInput> for Value {
    fn from(input: NodeInput) -> Self {
        input.into_value()
    }
}

impl From<NodeInput> for Map<String, Value> {
    fn from(input: NodeInput) -> Self {
        input.into_map()
    }
}

impl From<Map<String, Value>> for NodeInput {
    fn from(map: Map<String, Value>) -> Self {
        Self::from_map(map)
    }
}

impl PartialEq for NodeInput {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl PartialEq<Value> for NodeInput {
    /// Equal to a JSON object with the same entries.
    fn eq(&self, other: &Value) -> bool {
        match other {
            Value::Object(map) => {
                map.len() == self.len() && self.iter().all(|(k, v)| map.get(k) == Some(v))
            }
            _ => false,
        }
    }
}

impl std::fmt::Debug for NodeInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl std::fmt::Display for NodeInput {
    /// The input as compact JSON.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match serde_json::to_string(self) {
            Ok(s) => f.write_str(&s),
            Err(_) => Err(std::fmt::Error),
        }
    }
}

impl Serialize for NodeInput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The node's own timeout from its resolved input (`timeout`, seconds;
/// 0 or absent: none).
pub(crate) fn node_timeout(input: &NodeInput) -> Result<Option<Duration>, NodeError> {
    match input.get("timeout") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(0.0) => Ok(None),
            // Past the maximum (or past what a Duration holds): the maximum.
            Some(t) if t > 0.0 && t.is_finite() => Ok(Some(crate::config::clamp_timeout(
                Duration::try_from_secs_f64(t).unwrap_or(Duration::MAX),
            ))),
            _ => Err(bad_timeout()),
        },
        Some(_) => Err(bad_timeout()),
    }
}

fn bad_timeout() -> NodeError {
    NodeError::new(
        ErrorCode::SCHEMA_VIOLATION,
        "input.timeout: expected a number of seconds >= 0",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(v: Value) -> NodeInput {
        match v {
            Value::Object(m) => NodeInput::from_map(m),
            _ => NodeInput::default(),
        }
    }

    #[test]
    fn reads_like_an_object_and_keeps_key_order() {
        let i = input(json!({"z": 1, "a": [true], "m": null}));
        assert_eq!(i.len(), 3);
        assert!(!i.is_empty());
        assert_eq!(i.keys().collect::<Vec<_>>(), ["z", "a", "m"]);
        assert_eq!(i["a"], json!([true]));
        assert_eq!(i.get("m"), Some(&Value::Null));
        assert_eq!(i.get("nope"), None);
        assert!(i.contains_key("z") && !i.contains_key("Z"));
        assert_eq!(i.to_string(), r#"{"z":1,"a":[true],"m":null}"#);
        assert_eq!(
            format!("{i:?}"),
            r#"{"z": Number(1), "a": Array [Bool(true)], "m": Null}"#
        );
        let map = i.clone().into_map();
        assert_eq!(map.keys().collect::<Vec<_>>(), ["z", "a", "m"]);
        assert_eq!(i, json!({"a": [true], "m": null, "z": 1}));
        assert_ne!(i, json!({"a": [true], "z": 1}));
        assert_ne!(i, json!([1]));
        assert!(NodeInput::default().is_empty());
        assert_eq!(Value::from(NodeInput::default()), json!({}));
    }

    #[test]
    fn shared_keys_carry_values_per_call() {
        let keys: Keys = vec!["a".into(), "b".into()].into();
        let one = NodeInput::new(keys.clone(), vec![json!(1), json!(2)]);
        let two = NodeInput::new(keys, vec![json!(3), json!(4)]);
        assert_eq!(serde_json::to_value(&one).unwrap(), json!({"a": 1, "b": 2}));
        assert_eq!(two.into_value(), json!({"a": 3, "b": 4}));
        assert_ne!(one, input(json!({"a": 1, "b": 3})));
        assert_eq!(one, input(json!({"b": 2, "a": 1})));
    }
}

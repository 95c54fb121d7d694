//! [`InputMap`]: a chain node's `input_map`, input field → JMESPath
//! expression.
//!
//! On the wire it is a JSON object. In memory it is a list of entries in
//! their order: a node maps a handful of fields, and for a handful a list
//! costs one allocation, where a hashed map (`serde_json::Map`) costs two,
//! a seeded hash of every key and three times the size in the node. In a
//! 1000-node `chain/req` that is a fifth of the time to decode it.
//!
//! Lookups by key scan the list, so does [`InputMap::insert`]: a map with
//! very many fields is better built at once with `collect` (or decoded),
//! which goes through a hashed map.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

/// Entries up to which duplicate keys are found by comparing each with
/// each (past it, through a hashed map: linear however many there are).
const SCAN_LIMIT: usize = 16;

/// Input field → expression (a JSON string, as the wire gives it), in
/// order; a JSON object on the wire.
///
/// ```
/// use a2e_proto::InputMap;
/// use serde_json::json;
///
/// let mut map: InputMap = serde_json::from_value(json!({"text": "read.output"})).unwrap();
/// map.insert("n".into(), json!("input.n"));
/// map.insert("text".into(), json!("read.output.text")); // replaces
/// assert_eq!(map["text"], "read.output.text");
/// assert_eq!(map.len(), 2);
/// assert_eq!(
///     serde_json::to_string(&map).unwrap(),
///     r#"{"text":"read.output.text","n":"input.n"}"#
/// );
/// ```
#[derive(Clone, Default)]
pub struct InputMap {
    entries: Vec<(String, Value)>,
}

impl InputMap {
    /// No entries.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` → `value`, replacing (in place) a value already under
    /// `key`; the value replaced, if any.
    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => Some(std::mem::replace(v, value)),
            None => {
                self.entries.push((key, value));
                None
            }
        }
    }

    /// Removes `key`; its value, if it had one.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(at).1)
    }

    /// Entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether `key` has a value here.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The entries in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.entries.iter())
    }

    /// The keys in order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &String> + '_ {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The values in order.
    pub fn values(&self) -> impl ExactSizeIterator<Item = &Value> + '_ {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The entries as a JSON object.
    pub fn into_map(self) -> Map<String, Value> {
        self.entries.into_iter().collect()
    }

    /// Entries collected as they came, duplicates made unique: a later
    /// value wins, in the first one's place (as for a JSON object).
    fn dedup(entries: Vec<(String, Value)>) -> Self {
        if entries.len() > SCAN_LIMIT {
            return Self::from(entries.into_iter().collect::<Map<String, Value>>());
        }
        let unique = entries
            .iter()
            .enumerate()
            .all(|(i, (k, _))| entries.iter().take(i).all(|(earlier, _)| earlier != k));
        if unique {
            // The common case keeps the list it was given.
            return Self { entries };
        }
        let mut map = Self::new();
        for (k, v) in entries {
            map.insert(k, v);
        }
        map
    }
}

impl From<Map<String, Value>> for InputMap {
    fn from(map: Map<String, Value>) -> Self {
        Self {
            entries: map.into_iter().collect(),
        }
    }
}

impl From<InputMap> for Map<String, Value> {
    fn from(map: InputMap) -> Self {
        map.into_map()
    }
}

impl<K: Into<String>> FromIterator<(K, Value)> for InputMap {
    /// Collects entries, a later duplicate key replacing the earlier value
    /// in its place.
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Self {
        Self::dedup(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

impl IntoIterator for InputMap {
    type Item = (String, Value);
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        IntoIter(self.entries.into_iter())
    }
}

impl<'a> IntoIterator for &'a InputMap {
    type Item = (&'a String, &'a Value);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        Iter(self.entries.iter())
    }
}

/// The entries of an [`InputMap`], in order, taken from it. Its own type
/// (not the list's), so that how the map holds its entries stays its own.
#[derive(Debug)]
pub struct IntoIter(std::vec::IntoIter<(String, Value)>);

impl Iterator for IntoIter {
    type Item = (String, Value);

    fn next(&mut self) -> Option<(String, Value)> {
        self.0.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for IntoIter {
    fn next_back(&mut self) -> Option<(String, Value)> {
        self.0.next_back()
    }
}

impl ExactSizeIterator for IntoIter {}
impl std::iter::FusedIterator for IntoIter {}

/// The entries of an [`InputMap`], in order, borrowed.
#[derive(Debug, Clone)]
pub struct Iter<'a>(std::slice::Iter<'a, (String, Value)>);

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a String, &'a Value);

    fn next(&mut self) -> Option<(&'a String, &'a Value)> {
        self.0.next().map(|(k, v)| (k, v))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(k, v)| (k, v))
    }
}

impl ExactSizeIterator for Iter<'_> {}
impl std::iter::FusedIterator for Iter<'_> {}

impl PartialEq for InputMap {
    /// The same entries, in any order (as JSON objects compare).
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl<'de> Deserialize<'de> for InputMap {
    /// From a JSON object (a later duplicate key wins, as for any object).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;

        impl<'de> Visitor<'de> for Entries {
            type Value = InputMap;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<InputMap, A::Error> {
                // Room for what the format announces, bounded: a hostile
                // size hint does not reserve memory.
                let mut entries = Vec::with_capacity(access.size_hint().unwrap_or(1).min(64));
                while let Some(entry) = access.next_entry::<String, Value>()? {
                    entries.push(entry);
                }
                Ok(InputMap::dedup(entries))
            }
        }

        deserializer.deserialize_map(Entries)
    }
}

json_object_impls!(InputMap);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn its_iterators_give_the_entries_in_order_from_both_ends() {
        let map: InputMap = [
            ("a", json!("x.a")),
            ("b", json!("x.b")),
            ("c", json!("x.c")),
        ]
        .into_iter()
        .collect();
        let borrowed = map.iter();
        assert_eq!(borrowed.len(), 3);
        let keys: Vec<&str> = borrowed.rev().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["c", "b", "a"]);
        assert_eq!(
            (&map).into_iter().nth(1),
            Some((&"b".to_owned(), &json!("x.b")))
        );
        let mut owned = map.clone().into_iter();
        assert_eq!(owned.len(), 3);
        assert_eq!(owned.next_back(), Some(("c".to_owned(), json!("x.c"))));
        assert_eq!(owned.next(), Some(("a".to_owned(), json!("x.a"))));
        assert_eq!(owned.len(), 1);
        assert_eq!(owned.next(), Some(("b".to_owned(), json!("x.b"))));
        assert_eq!(owned.next(), None);
        assert_eq!(owned.next(), None);
    }

    #[test]
    fn a_later_duplicate_key_wins_in_the_first_ones_place() {
        let map: InputMap = serde_json::from_str(r#"{"a":"x","b":"y","a":"z"}"#).unwrap();
        assert_eq!(map.len(), 2);
        assert_eq!(map.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(map["a"], "z");
        // The same past the scan limit, through the hashed map.
        let mut text = String::from("{");
        for i in 0..40 {
            text.push_str(&format!("\"k{}\":\"v{i}\",", i % 20));
        }
        text.push_str("\"last\":1}");
        let map: InputMap = serde_json::from_str(&text).unwrap();
        assert_eq!(map.len(), 21);
        assert_eq!(map["k0"], "v20");
        assert_eq!(map.keys().next().map(String::as_str), Some("k0"));
        assert_eq!(map.keys().last().map(String::as_str), Some("last"));
    }

    #[test]
    fn it_is_a_json_object_both_ways() {
        let value = json!({"text": "read.output", "n": 3});
        let map: InputMap = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(serde_json::to_value(&map).unwrap(), value);
        assert_eq!(Map::from(map.clone()), *value.as_object().unwrap());
        assert_eq!(InputMap::from(value.as_object().unwrap().clone()), map);
        assert!(serde_json::from_value::<InputMap>(json!(["a"])).is_err());
        assert!(serde_json::from_value::<InputMap>(json!("a")).is_err());
    }

    #[test]
    fn insert_replaces_and_remove_takes_out() {
        let mut map = InputMap::new();
        assert_eq!(map.insert("a".into(), json!(1)), None);
        assert_eq!(map.insert("b".into(), json!(2)), None);
        assert_eq!(map.insert("a".into(), json!(3)), Some(json!(1)));
        assert_eq!(map.iter().count(), 2);
        assert_eq!(map.remove("a"), Some(json!(3)));
        assert_eq!(map.remove("a"), None);
        assert!(!map.contains_key("a"));
        assert_eq!(map["a"], Value::Null);
        assert_eq!((&map).into_iter().count(), 1);
        let collected: InputMap = [("x", json!(1)), ("y", json!(2)), ("x", json!(3))]
            .into_iter()
            .collect();
        assert_eq!(collected.len(), 2);
        assert_eq!(collected["x"], 3);
    }
}

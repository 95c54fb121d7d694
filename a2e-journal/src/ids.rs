//! Run ids and idempotency keys.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::JournalError;

/// Longest run id, in bytes.
pub const MAX_RUN_ID_LEN: usize = 64;
/// Longest node id, in bytes.
pub const MAX_NODE_ID_LEN: usize = 512;

/// A run's id: 1 to 64 ASCII letters, digits, `_` or `-` (so that it can be
/// a token of a NATS subject and a file name). [`RunId::generate`] makes a
/// fresh one (a UUID v4 in 32 hex digits). Cheap to clone.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RunId(Arc<str>);

impl RunId {
    /// A fresh random id.
    pub fn generate() -> Self {
        Self(Arc::from(uuid::Uuid::new_v4().simple().to_string()))
    }

    /// Checks `id` and takes it.
    pub fn parse(id: &str) -> Result<Self, JournalError> {
        let invalid = |message: String| JournalError::InvalidId {
            what: "run id",
            message,
        };
        if id.is_empty() {
            return Err(invalid("empty".into()));
        }
        if id.len() > MAX_RUN_ID_LEN {
            return Err(invalid(format!(
                "{} bytes; the limit is {MAX_RUN_ID_LEN}",
                id.len()
            )));
        }
        if let Some(c) = id
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        {
            return Err(invalid(format!(
                "`{}` holds {c:?}; only ASCII letters, digits, `_` and `-` are allowed",
                id.escape_debug()
            )));
        }
        Ok(Self(Arc::from(id)))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RunId({})", self.0)
    }
}

impl FromStr for RunId {
    type Err = JournalError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl AsRef<str> for RunId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Serialize for RunId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for RunId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// Checks a node id: 1 to [`MAX_NODE_ID_LEN`] bytes, no control characters.
pub fn check_node_id(id: &str) -> Result<(), JournalError> {
    let invalid = |message: String| JournalError::InvalidId {
        what: "node id",
        message,
    };
    if id.is_empty() {
        return Err(invalid("empty".into()));
    }
    if id.len() > MAX_NODE_ID_LEN {
        return Err(invalid(format!(
            "{} bytes; the limit is {MAX_NODE_ID_LEN}",
            id.len()
        )));
    }
    if id.chars().any(char::is_control) {
        return Err(invalid(format!(
            "`{}` holds a control character",
            id.escape_debug()
        )));
    }
    Ok(())
}

/// The idempotency key of one execution of a node (a chain node or map item,
/// an ACMP task, an Ontheia step, an LLM skill's turn): `run_id/node_id/attempt`.
///
/// A node that was running when its host died runs again with the **same**
/// key, so a plugin that remembers the keys it has seen can leave out a side
/// effect it already made; a deliberate new try (a retry step) takes the next
/// attempt. Attempts count from 1.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct NodeKey {
    run_id: RunId,
    node_id: Arc<str>,
    attempt: u32,
}

impl NodeKey {
    /// The key of `node_id`'s `attempt` (from 1) in run `run_id`.
    pub fn new(run_id: RunId, node_id: &str, attempt: u32) -> Result<Self, JournalError> {
        check_node_id(node_id)?;
        if attempt == 0 {
            return Err(JournalError::InvalidId {
                what: "idempotency key",
                message: "attempts count from 1".into(),
            });
        }
        Ok(Self {
            run_id,
            node_id: Arc::from(node_id),
            attempt,
        })
    }

    /// Parses `run_id/node_id/attempt` (the node id may itself hold `/`).
    pub fn parse(key: &str) -> Result<Self, JournalError> {
        let invalid = |message: &str| JournalError::InvalidId {
            what: "idempotency key",
            message: format!("`{}`: {message}", key.escape_debug()),
        };
        let (run, rest) = key
            .split_once('/')
            .ok_or_else(|| invalid("expected run_id/node_id/attempt"))?;
        let (node, attempt) = rest
            .rsplit_once('/')
            .ok_or_else(|| invalid("expected run_id/node_id/attempt"))?;
        let attempt: u32 = attempt
            .parse()
            .map_err(|_| invalid("the attempt is not a number"))?;
        Self::new(RunId::parse(run)?, node, attempt)
    }

    /// The run.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The node (for a chain's map item: `template[index]`).
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// The attempt, from 1.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }
}

impl fmt::Display for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.run_id, self.node_id, self.attempt)
    }
}

impl fmt::Debug for NodeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NodeKey({self})")
    }
}

impl Serialize for NodeKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NodeKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_checked() {
        assert!(RunId::parse("run-1_A").is_ok());
        assert_eq!(RunId::generate().as_str().len(), 32);
        for bad in ["", "a.b", "a b", "a/b", "é", &"x".repeat(65)] {
            let e = RunId::parse(bad).unwrap_err();
            assert_eq!(e.code(), "schema_violation", "{bad}");
        }
    }

    #[test]
    fn keys_round_trip_with_slashes_in_the_node_id() {
        let run = RunId::parse("r1").unwrap();
        let key = NodeKey::new(run, "fetch/all[3]", 2).unwrap();
        assert_eq!(key.to_string(), "r1/fetch/all[3]/2");
        let back = NodeKey::parse("r1/fetch/all[3]/2").unwrap();
        assert_eq!(back, key);
        assert_eq!(back.node_id(), "fetch/all[3]");
        assert_eq!(back.attempt(), 2);
        let json = serde_json::to_string(&key).unwrap();
        assert_eq!(json, "\"r1/fetch/all[3]/2\"");
        assert_eq!(serde_json::from_str::<NodeKey>(&json).unwrap(), key);
    }

    #[test]
    fn bad_keys_say_what_is_wrong() {
        for (bad, says) in [
            ("r1", "expected run_id/node_id/attempt"),
            ("r1/n", "expected run_id/node_id/attempt"),
            ("r1/n/x", "not a number"),
            ("r1/n/0", "count from 1"),
            ("r.1/n/1", "run id"),
            ("r1//1", "node id: empty"),
        ] {
            let e = NodeKey::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}

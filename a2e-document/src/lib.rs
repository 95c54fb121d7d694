#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]
//! The documents an A2E host runs from a file (`a2e run`, `a2e validate` and
//! `a2e graph` read the same ones), told apart by their top-level keys before
//! anything is parsed into them:
//!
//! - an **A2E chain**: a `chain/req` message or a bare object with `nodes` (and
//!   usually `entry_node`); at least one node;
//! - an **ACMP DAG**: an object with `tasks` (ACMP Layer 2);
//! - an **Ontheia chain**: an object with `steps` (the Ontheia engine v2 dialect),
//!   validated with every limit of its spec.
//!
//! Anything else is refused with a [`DocumentError`] that names what is
//! missing, and a key that the recognised document does not define is an error
//! (a typo such as `node` for `nodes` would otherwise run an empty chain).
//! Parsing checks the shape; the chain and DAG rules (references, cycles,
//! limits) are their engines' validation (`a2e_chain::validate`,
//! `acmp_dag::ValidatedDag::new`), which callers run next.
//!
//! ```
//! use a2e_document::{Document, DocumentError, parse_document};
//!
//! let doc = parse_document(
//!     r#"{"entry_node": "a", "nodes": [{"node_id": "a", "kind": "tool", "name": "echo"}]}"#,
//!     Some(r#"{"text": "hi"}"#),
//! )?;
//! let Document::Chain(req) = &doc else { unreachable!() };
//! assert_eq!(doc.kind(), "chain");
//! assert_eq!(req.initial_input["text"], "hi");
//!
//! let err = parse_document(r#"{"node": []}"#, None).unwrap_err();
//! assert!(matches!(err, DocumentError::Unrecognised));
//! # Ok::<(), DocumentError>(())
//! ```

use a2e_proto::{ChainRequest, Message};
use serde_json::{Map, Value};

/// The largest document text parsed: the wire's message limit.
pub const MAX_DOCUMENT_BYTES: usize = a2e_proto::decode::DEFAULT_MAX_BYTES;

/// A document recognised in a file.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Document {
    /// An A2E chain request.
    Chain(Box<ChainRequest>),
    /// An ACMP Layer 2 task DAG.
    Dag(Box<acmp_dag::Dag>),
    /// An Ontheia chain (validated).
    Ontheia(Box<ontheia::Document>),
}

impl Document {
    /// What the document is, for messages (`chain`, `DAG`, `Ontheia chain`).
    pub fn kind(&self) -> &'static str {
        match self {
            Document::Chain(_) => "chain",
            Document::Dag(_) => "DAG",
            Document::Ontheia(_) => "Ontheia chain",
        }
    }
}

/// Why a text is not a document the host runs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    /// More text than [`MAX_DOCUMENT_BYTES`].
    #[error("a document of {size} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Bytes given.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// Not JSON at all.
    #[error("not valid JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// JSON, but not an object.
    #[error("a document must be a JSON object")]
    NotObject,
    /// A chain's text that is not an object ([`parse_chain`]).
    #[error("a chain file must hold a JSON object")]
    ChainNotObject,
    /// An object with neither `nodes`, `tasks` nor `steps`.
    #[error(
        "not a document the host runs: expected `nodes` (an A2E chain), `tasks` (an ACMP DAG) \
         or `steps` (an Ontheia chain)"
    )]
    Unrecognised,
    /// Top-level keys the recognised document does not define.
    #[error(
        "unknown top-level key{} for {what}: {}",
        if keys.len() == 1 { "" } else { "s" },
        list_keys(keys)
    )]
    UnknownKeys {
        /// The document recognised (`an A2E chain`, `an ACMP DAG`).
        what: &'static str,
        /// The keys, in document order, each with the known key it is
        /// likely a typo of.
        keys: Vec<UnknownKey>,
    },
    /// Fields of a chain node that the chain engine does not define (a
    /// typo such as `nxt_node` would otherwise leave the node without a
    /// successor, and `retries` would silently do nothing).
    #[error(
        "unknown field{} in node `{node}` of an A2E chain: {}",
        if keys.len() == 1 { "" } else { "s" },
        list_keys(keys)
    )]
    UnknownNodeFields {
        /// The node's id (its index when it has none).
        node: String,
        /// The fields, in document order, each with a suggestion.
        keys: Vec<UnknownKey>,
    },
    /// An extra input given for a DAG.
    #[error("--input applies to chains; a DAG's inputs are in its tasks")]
    InputForDag,
    /// A DAG whose fields do not parse.
    #[error("not an ACMP DAG: {0}")]
    NotDag(#[source] serde_json::Error),
    /// An Ontheia chain that breaks a rule of its spec.
    #[error("not a valid Ontheia chain: {0}")]
    Ontheia(#[source] ontheia::ValidationErrors),
    /// A chain without `nodes`.
    #[error("a chain needs `nodes`")]
    MissingNodes,
    /// A chain whose `nodes` is empty.
    #[error("a chain needs at least one node (`nodes` is empty)")]
    NoNodes,
    /// A chain whose `nodes` is not an array.
    #[error("`nodes` must be an array of chain nodes")]
    NodesNotArray,
    /// A chain that does not decode as a `chain/req`.
    #[error("{0}")]
    Decode(#[source] a2e_proto::DecodeError),
    /// A message of another type.
    #[error("expected a chain/req, found `{0}`")]
    NotChainRequest(String),
    /// An extra input that is not JSON.
    #[error("--input is not valid JSON: {0}")]
    InputNotJson(#[source] serde_json::Error),
    /// An extra input that is not an object.
    #[error("--input must be a JSON object")]
    InputNotObject,
}

/// A key that a document does not define, and the known key it is most
/// likely a typo of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// The key as written.
    pub key: String,
    /// The closest known key, when one is close enough to be meant.
    pub suggestion: Option<String>,
}

impl std::fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", self.key)?;
        if let Some(meant) = &self.suggestion {
            write!(f, " (did you mean `{meant}`?)")?;
        }
        Ok(())
    }
}

fn list_keys(keys: &[UnknownKey]) -> String {
    keys.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The name among `known` that `given` is most likely a typo of: the
/// closest by Jaro-Winkler similarity, when close enough to be meant.
pub fn suggest<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .map(|k| (strsim::jaro_winkler(given, k), k))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// Keys of an ACMP DAG document.
const DAG_KEYS: &[&str] = &["dag_id", "tasks", "edges", "$schema"];

/// Recognises and parses a document; `input` (a JSON object) is merged over a
/// chain's `initial_input`.
pub fn parse_document(text: &str, input: Option<&str>) -> Result<Document, DocumentError> {
    let Value::Object(obj) = read_json(text)? else {
        return Err(DocumentError::NotObject);
    };
    let is_chain =
        obj.contains_key("nodes") || obj.get("type").and_then(Value::as_str) == Some("chain/req");
    if obj.contains_key("tasks") && !is_chain {
        if input.is_some() {
            return Err(DocumentError::InputForDag);
        }
        check_keys(&obj, DAG_KEYS, "an ACMP DAG")?;
        let dag: acmp_dag::Dag =
            serde_json::from_value(Value::Object(obj)).map_err(DocumentError::NotDag)?;
        return Ok(Document::Dag(Box::new(dag)));
    }
    if is_chain {
        return parse_chain_object(obj, input).map(|r| Document::Chain(Box::new(r)));
    }
    if obj.contains_key("steps") {
        let doc = ontheia::parse_value(&Value::Object(obj)).map_err(DocumentError::Ontheia)?;
        return Ok(Document::Ontheia(Box::new(doc)));
    }
    Err(DocumentError::Unrecognised)
}

/// Parses chain text: a `chain/req` message or a bare object with `nodes`.
pub fn parse_chain(text: &str, input: Option<&str>) -> Result<ChainRequest, DocumentError> {
    match read_json(text)? {
        Value::Object(obj) => parse_chain_object(obj, input),
        _ => Err(DocumentError::ChainNotObject),
    }
}

/// The text as JSON, its size bounded first (serde bounds the nesting).
fn read_json(text: &str) -> Result<Value, DocumentError> {
    if text.len() > MAX_DOCUMENT_BYTES {
        return Err(DocumentError::TooLarge {
            size: text.len(),
            limit: MAX_DOCUMENT_BYTES,
        });
    }
    serde_json::from_str(text).map_err(DocumentError::NotJson)
}

/// The top-level keys of a `chain/req`, from its schema.
fn chain_keys() -> Vec<String> {
    let mut keys: Vec<String> = a2e_proto::schema::schema_for_type("chain/req")
        .and_then(|s| s.get("properties").and_then(Value::as_object).cloned())
        .map(|props| props.keys().cloned().collect())
        .unwrap_or_default();
    // The version's accepted alias (a2e-core.md) and a schema reference.
    keys.extend(["a2e".to_owned(), "$schema".to_owned()]);
    keys
}

fn parse_chain_object(
    mut obj: Map<String, Value>,
    input: Option<&str>,
) -> Result<ChainRequest, DocumentError> {
    let known = chain_keys();
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    check_keys(&obj, &known, "an A2E chain")?;
    match obj.get("nodes") {
        Some(Value::Array(nodes)) if !nodes.is_empty() => check_node_fields(nodes)?,
        Some(Value::Array(_)) => return Err(DocumentError::NoNodes),
        Some(_) => return Err(DocumentError::NodesNotArray),
        None => return Err(DocumentError::MissingNodes),
    }
    obj.remove("$schema");
    obj.entry("type")
        .or_insert_with(|| Value::from("chain/req"));
    // Through the wire decoder, so that a file is read as an agent's request.
    let bytes = serde_json::to_vec(&Value::Object(obj)).map_err(DocumentError::NotJson)?;
    let mut req = match a2e_proto::decode(&bytes) {
        Ok(Message::ChainRequest(req)) => req,
        Ok(other) => return Err(DocumentError::NotChainRequest(other.type_str().to_owned())),
        Err(e) => return Err(DocumentError::Decode(e)),
    };
    if let Some(input) = input {
        let extra = match serde_json::from_str(input) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(DocumentError::InputNotObject),
            Err(e) => return Err(DocumentError::InputNotJson(e)),
        };
        req.initial_input.extend(extra);
    }
    Ok(req)
}

fn check_keys(
    obj: &Map<String, Value>,
    known: &[&str],
    what: &'static str,
) -> Result<(), DocumentError> {
    let keys = unknown_keys(obj, known);
    if keys.is_empty() {
        return Ok(());
    }
    Err(DocumentError::UnknownKeys { what, keys })
}

/// The keys of `obj` not in `known`, each with its suggestion.
fn unknown_keys(obj: &Map<String, Value>, known: &[&str]) -> Vec<UnknownKey> {
    obj.keys()
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| UnknownKey {
            key: k.clone(),
            suggestion: suggest(k, known.iter().copied()).map(str::to_owned),
        })
        .collect()
}

/// The fields of a chain node, from its schema.
fn node_keys() -> Vec<String> {
    a2e_proto::schema::schema_for_type("chain/req")
        .and_then(|s| {
            s.pointer("/$defs/ChainNode/properties")
                .and_then(Value::as_object)
                .map(|props| props.keys().cloned().collect())
        })
        .unwrap_or_default()
}

/// Refuses the first node that has a field the chain engine does not
/// define. (A node that is not an object is the wire decoder's to refuse.)
fn check_node_fields(nodes: &[Value]) -> Result<(), DocumentError> {
    let known = node_keys();
    if known.is_empty() {
        return Ok(());
    }
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    for (index, node) in nodes.iter().enumerate() {
        let Value::Object(fields) = node else {
            continue;
        };
        let keys = unknown_keys(fields, &known);
        if !keys.is_empty() {
            let node = fields
                .get("node_id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("#{index}"), str::to_owned);
            return Err(DocumentError::UnknownNodeFields { node, keys });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_no_document_is_refused_naming_what_is_missing() {
        let err = parse_document(r#"{"foo": 1}"#, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`nodes`") && err.contains("`tasks`") && err.contains("`steps`"),
            "{err}"
        );
        let err = parse_document("[1]", None).unwrap_err();
        assert!(matches!(err, DocumentError::NotObject), "{err}");
        let err = parse_document("{", None).unwrap_err();
        assert!(err.to_string().starts_with("not valid JSON: "), "{err}");
    }

    #[test]
    fn unknown_keys_and_empty_chains_are_refused() {
        let err = parse_document(r#"{"nodes": [], "entry_node": "a"}"#, None).unwrap_err();
        assert!(err.to_string().contains("at least one node"), "{err}");
        let err = parse_document(r#"{"nodes": {}}"#, None).unwrap_err();
        assert!(matches!(err, DocumentError::NodesNotArray), "{err}");
        let err = parse_document(r#"{"type": "chain/req"}"#, None).unwrap_err();
        assert!(matches!(err, DocumentError::MissingNodes), "{err}");
        let err = parse_document(
            r#"{"nodes": [{"node_id":"a","kind":"tool","name":"x"}], "entry_node": "a", "nodez": 1}"#,
            None,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown top-level key for an A2E chain: `nodez` (did you mean `nodes`?)"
        );
        let err = parse_document(r#"{"tasks": [], "extra": true, "more": 1}"#, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown top-level keys for an ACMP DAG: `extra`, `more`"
        );
    }

    #[test]
    fn unknown_node_fields_are_refused_with_a_suggestion() {
        let err = parse_document(
            r#"{"entry_node": "a", "nodes": [
                {"node_id": "a", "kind": "tool", "name": "x", "next_node": "b"},
                {"node_id": "b", "kind": "tool", "name": "x", "nxt_node": "c", "retries": 3}
            ]}"#,
            None,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown fields in node `b` of an A2E chain: `nxt_node` (did you mean `next_node`?), \
             `retries`"
        );
        let DocumentError::UnknownNodeFields { node, keys } = err else {
            panic!("not a node field error")
        };
        assert_eq!(node, "b");
        assert_eq!(keys[0].suggestion.as_deref(), Some("next_node"));
        assert_eq!(keys[1].suggestion, None);
    }

    #[test]
    fn chains_and_dags_are_recognised() {
        let doc = parse_document(
            r#"{"nodes": [{"node_id":"a","kind":"tool","name":"x"}], "entry_node": "a"}"#,
            Some(r#"{"k": 1}"#),
        )
        .unwrap();
        let Document::Chain(req) = doc else {
            panic!("not a chain")
        };
        assert_eq!(req.initial_input["k"], 1);
        let doc = parse_document(r#"{"dag_id": "d", "tasks": [], "edges": []}"#, None).unwrap();
        assert_eq!(doc.kind(), "DAG");
        let err =
            parse_document(r#"{"dag_id": "d", "tasks": [], "edges": []}"#, Some("{}")).unwrap_err();
        assert!(matches!(err, DocumentError::InputForDag), "{err}");
        let err = parse_document(r#"{"tasks": [{"task_id": 1}], "edges": []}"#, None).unwrap_err();
        assert!(err.to_string().starts_with("not an ACMP DAG: "), "{err}");
    }

    #[test]
    fn a_chains_extra_input_must_be_an_object() {
        let chain = r#"{"nodes": [{"node_id":"a","kind":"tool","name":"x"}], "entry_node": "a"}"#;
        let err = parse_chain(chain, Some("[1]")).unwrap_err();
        assert!(matches!(err, DocumentError::InputNotObject), "{err}");
        let err = parse_chain(chain, Some("{")).unwrap_err();
        assert!(matches!(err, DocumentError::InputNotJson(_)), "{err}");
        let err = parse_chain("[]", None).unwrap_err();
        assert!(matches!(err, DocumentError::ChainNotObject), "{err}");
    }

    #[test]
    fn a_chain_is_read_as_the_wire_decoder_reads_it() {
        let err =
            parse_document(r#"{"nodes": [{"node_id": 5}], "entry_node": "a"}"#, None).unwrap_err();
        assert!(matches!(err, DocumentError::Decode(_)), "{err}");
        let err = parse_document(r#"{"type": "ping", "nodes": [{}]}"#, None).unwrap_err();
        assert!(err.to_string().contains("ping"), "{err}");
    }

    #[test]
    fn text_over_the_limit_is_refused_before_it_is_parsed() {
        let text = " ".repeat(MAX_DOCUMENT_BYTES + 1);
        let err = parse_document(&text, None).unwrap_err();
        assert!(matches!(err, DocumentError::TooLarge { .. }), "{err}");
    }

    #[test]
    fn ontheia_chains_are_recognised_and_validated() {
        let doc = parse_document(
            r#"{"steps": [{"id": "t", "type": "transform", "prompt": "hi ${input}"}]}"#,
            None,
        )
        .unwrap();
        assert_eq!(doc.kind(), "Ontheia chain");
        let err = parse_document(
            r#"{"steps": [{"id": "l", "type": "loop", "count": 99, "steps": []}]}"#,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("Ontheia") && err.contains("count"), "{err}");
    }
}

/// The README's example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

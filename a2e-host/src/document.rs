//! The documents the host runs from a file (`a2e run`, `a2e validate`), told apart
//! by their top-level keys before anything is parsed into them.
//!
//! - an **A2E chain**: a `chain/req` message or a bare object with `nodes` (and
//!   usually `entry_node`); at least one node;
//! - an **ACMP DAG**: an object with `tasks` (ACMP Layer 2);
//! - an **Ontheia chain**: an object with `steps` (the Ontheia engine v2 dialect),
//!   validated with every limit of its spec;
//!
//! Anything else is refused with a message that names what is missing, and a key
//! that the recognised document does not define is an error (a typo such as
//! `node` for `nodes` would otherwise run an empty chain).

use a2e_proto::{ChainRequest, Message};
use serde_json::{Map, Value};

/// A document recognised in a file.
#[derive(Debug)]
#[non_exhaustive]
pub enum Document {
    /// An A2E chain request.
    Chain(Box<ChainRequest>),
    /// An ACMP Layer 2 task DAG.
    #[cfg(feature = "acmp")]
    Dag(Box<acmp_dag::Dag>),
    /// An Ontheia chain (validated).
    #[cfg(feature = "ontheia")]
    Ontheia(Box<ontheia::Document>),
}

impl Document {
    /// What the document is, for messages (`chain`, `DAG`).
    pub fn kind(&self) -> &'static str {
        match self {
            Document::Chain(_) => "chain",
            #[cfg(feature = "acmp")]
            Document::Dag(_) => "DAG",
            #[cfg(feature = "ontheia")]
            Document::Ontheia(_) => "Ontheia chain",
        }
    }
}

/// Keys of an ACMP DAG document.
const DAG_KEYS: &[&str] = &["dag_id", "tasks", "edges", "$schema"];

/// Recognises and parses a document; `input` (a JSON object) is merged over a
/// chain's `initial_input`.
pub fn parse_document(text: &str, input: Option<&str>) -> Result<Document, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))?;
    let Value::Object(obj) = value else {
        return Err("a document must be a JSON object".into());
    };
    let is_chain =
        obj.contains_key("nodes") || obj.get("type").and_then(Value::as_str) == Some("chain/req");
    if obj.contains_key("tasks") && !is_chain {
        if input.is_some() {
            return Err("--input applies to chains; a DAG's inputs are in its tasks".into());
        }
        check_keys(&obj, DAG_KEYS, "an ACMP DAG")?;
        #[cfg(feature = "acmp")]
        {
            let dag: acmp_dag::Dag = serde_json::from_value(Value::Object(obj))
                .map_err(|e| format!("not an ACMP DAG: {e}"))?;
            return Ok(Document::Dag(Box::new(dag)));
        }
        #[cfg(not(feature = "acmp"))]
        return Err("an ACMP DAG needs a host built with its `acmp` feature".into());
    }
    if is_chain {
        return parse_chain_object(obj, input).map(|r| Document::Chain(Box::new(r)));
    }
    if obj.contains_key("steps") {
        #[cfg(feature = "ontheia")]
        {
            let doc = ontheia::parse_value(&Value::Object(obj))
                .map_err(|e| format!("not a valid Ontheia chain: {e}"))?;
            return Ok(Document::Ontheia(Box::new(doc)));
        }
        #[cfg(not(feature = "ontheia"))]
        return Err("an Ontheia chain needs a host built with its `ontheia` feature".into());
    }
    Err(
        "not a document the host runs: expected `nodes` (an A2E chain), `tasks` (an ACMP DAG) \
         or `steps` (an Ontheia chain)"
            .into(),
    )
}

/// Parses chain text: a `chain/req` message or a bare object with `nodes`.
pub fn parse_chain(text: &str, input: Option<&str>) -> Result<ChainRequest, String> {
    match serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))? {
        Value::Object(obj) => parse_chain_object(obj, input),
        _ => Err("a chain file must hold a JSON object".into()),
    }
}

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
) -> Result<ChainRequest, String> {
    let known = chain_keys();
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    check_keys(&obj, &known, "an A2E chain")?;
    match obj.get("nodes") {
        Some(Value::Array(nodes)) if !nodes.is_empty() => {}
        Some(Value::Array(_)) => {
            return Err("a chain needs at least one node (`nodes` is empty)".into());
        }
        Some(_) => return Err("`nodes` must be an array of chain nodes".into()),
        None => return Err("a chain needs `nodes`".into()),
    }
    obj.remove("$schema");
    obj.entry("type")
        .or_insert_with(|| Value::from("chain/req"));
    let bytes = serde_json::to_vec(&Value::Object(obj)).map_err(|e| e.to_string())?;
    let mut req = match a2e_proto::decode(&bytes) {
        Ok(Message::ChainRequest(req)) => req,
        Ok(other) => {
            return Err(format!(
                "expected a chain/req, found `{}`",
                other.type_str()
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    if let Some(input) = input {
        let extra: Map<String, Value> = match serde_json::from_str(input) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err("--input must be a JSON object".into()),
            Err(e) => return Err(format!("--input is not valid JSON: {e}")),
        };
        req.initial_input.extend(extra);
    }
    Ok(req)
}

fn check_keys(obj: &Map<String, Value>, known: &[&str], what: &str) -> Result<(), String> {
    let unknown: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| !known.contains(k))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(format!(
        "unknown top-level key{} for {what}: {}",
        if unknown.len() == 1 { "" } else { "s" },
        unknown
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_no_document_is_refused_naming_what_is_missing() {
        let err = parse_document(r#"{"foo": 1}"#, None).unwrap_err();
        assert!(
            err.contains("`nodes`") && err.contains("`tasks`") && err.contains("`steps`"),
            "{err}"
        );
    }

    #[test]
    fn unknown_keys_and_empty_chains_are_refused() {
        let err = parse_document(r#"{"nodes": [], "entry_node": "a"}"#, None).unwrap_err();
        assert!(err.contains("at least one node"), "{err}");
        let err = parse_document(
            r#"{"nodes": [{"node_id":"a","kind":"tool","name":"x"}], "entry_node": "a", "nodez": 1}"#,
            None,
        )
        .unwrap_err();
        assert!(err.contains("`nodez`"), "{err}");
        let err = parse_document(r#"{"tasks": [], "extra": true}"#, None).unwrap_err();
        assert!(err.contains("`extra`") && err.contains("ACMP"), "{err}");
    }

    #[cfg(feature = "acmp")]
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
    }

    #[cfg(feature = "ontheia")]
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
        .unwrap_err();
        assert!(err.contains("Ontheia") && err.contains("count"), "{err}");
    }
}

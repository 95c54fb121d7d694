//! Wire extensions of this implementation: messages the A2E specification
//! does not define, which a host of this workspace serves beside the core
//! ones (`docs/durability.md`). They share the envelope (`type`, `id`,
//! `version`, `ts`), are variants of [`crate::Message`] decoded as every
//! other message (a field of the wrong type is a `schema_violation` naming
//! its path), and their schemas are committed under `schemas/a2e/ext/`.
//! [`crate::Message::TYPES`] stays the specifications' list; these are
//! [`crate::Message::EXTENSION_TYPES`].
//!
//! - `chain/attach`: re-attach to a durable run (a chain, an ACMP DAG, an
//!   Ontheia or LLM skill call): its events from `from_seq` on, each `seq`
//!   once, then its answer, as `chain/event`s and a `chain/resp` whose
//!   `req_id` is the attach request's id.
//! - `dag/req`: run an ACMP Layer 2 DAG on the host, answered like a chain.
//! - `chain/fork`: run a journaled chain again from one of its nodes, as a
//!   new run whose other nodes take the results the first run journaled
//!   (docs/forks.md), answered like a chain.
//! - `run_id` on `chain/event` (the run's first) and `chain/resp`: the
//!   durable run's id, so that an agent can attach to, show or cancel its
//!   run; defined on those messages' structs, absent without a journal.

use serde_json::{Map, Value};

wire_message! {
    /// `chain/attach` — re-attach to a durable run, named by exactly one of
    /// `run_id` and `chain_req_id`.
    pub struct ChainAttach = "chain/attach" {
        /// The run's id (as `a2e runs list` shows it).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub run_id: String = String::new(),
        /// The id of the request that started the run (`chain/req`,
        /// `dag/req` or `skill/call/req`): the agent's newest run of it.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub chain_req_id: String = String::new(),
        /// The first event wanted (0: every event).
        #[serde(default)]
        #[serde(deserialize_with = "crate::num::int")]
        pub from_seq: u64 = 0,
    }
}

wire_message! {
    /// `dag/req` — run an ACMP Layer 2 task DAG on the host (durably when it
    /// journals its runs); answered with `chain/event`s (with `streaming`)
    /// and a `chain/resp`.
    pub struct DagRequest = "dag/req" {
        /// The DAG, as ACMP Layer 2 defines it (`schemas/acmp/acmp.dag.json`).
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::json()"))]
        pub dag: Value = Value::Null,
        /// Send each task's transitions as `chain/event`s.
        #[serde(default)]
        pub streaming: bool = false,
    }
}

wire_message! {
    /// `chain/fork` — a new run of a journaled chain run of the agent's, from
    /// node `from_node`: every node not downstream of it takes the result
    /// the run journaled (not called again); it and what depends on it run.
    /// Answered with `chain/event`s (with `streaming`) and a `chain/resp`
    /// naming the new run in `run_id`.
    pub struct ChainFork = "chain/fork" {
        /// The run forked (as `a2e runs list` shows it).
        #[serde(default)]
        pub run_id: String = String::new(),
        /// The node to run again from.
        #[serde(default)]
        pub from_node: String = String::new(),
        /// Keys merged into that node's static `input`.
        #[serde(default, skip_serializing_if = "Map::is_empty")]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
        pub input: Map<String, Value> = Map::new(),
        /// Send the new run's events as `chain/event`s.
        #[serde(default)]
        pub streaming: bool = false,
    }
}

impl_request!(ChainAttach, DagRequest, ChainFork);

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{DecodeOptions, ErrorCode, Message, decode, decode_with};

    #[test]
    fn chain_attach_is_a_message_of_its_own_and_survives_a_round_trip() {
        let line = br#"{"type":"chain/attach","id":"a1","version":"1.0","ts":1.5,"run_id":"r","from_seq":3.0}"#;
        let msg = decode(line).unwrap();
        let Message::ChainAttach(attach) = &msg else {
            panic!("{msg:?}")
        };
        assert_eq!(
            (attach.run_id.as_str(), attach.chain_req_id.as_str()),
            ("r", "")
        );
        assert_eq!(attach.from_seq, 3);
        assert_eq!(
            (msg.type_str(), msg.id(), msg.req_id()),
            ("chain/attach", "a1", None)
        );
        // Encoded, an empty `chain_req_id` is left out; decoded again, the same message.
        let encoded: Value = serde_json::from_slice(&msg.to_json()).unwrap();
        assert_eq!(
            encoded,
            json!({"type": "chain/attach", "id": "a1", "version": "1.0", "ts": 1.5,
                   "run_id": "r", "from_seq": 3})
        );
        assert_eq!(decode(&msg.to_json()).unwrap(), msg);
        // A type the decoder knows even when unknown types are refused.
        let strict = DecodeOptions {
            allow_unknown: false,
            ..DecodeOptions::default()
        };
        assert_eq!(decode_with(line, &strict).unwrap(), msg);
    }

    #[test]
    fn a_chain_attach_of_the_wrong_shape_is_a_schema_violation_naming_the_field() {
        for (line, path) in [
            (r#"{"type":"chain/attach","id":"a2","run_id":5}"#, "run_id"),
            (
                r#"{"type":"chain/attach","id":"a2","chain_req_id":"q","from_seq":-1}"#,
                "from_seq",
            ),
            (
                r#"{"id":"a2","run_id":null,"type":"chain/attach"}"#,
                "run_id",
            ),
        ] {
            let err = decode(line.as_bytes()).unwrap_err();
            assert_eq!(err.code(), ErrorCode::SCHEMA_VIOLATION, "{line}");
            assert_eq!(err.path(), Some(path), "{line}");
            assert_eq!(err.req_id, "a2", "{line}");
        }
    }

    #[test]
    fn dag_req_carries_its_dag_whole_and_survives_a_round_trip() {
        let dag = json!({"dag_id": "d", "tasks": [{"task_id": "x", "input": {"n": [1, 2.5]}}]});
        let line = json!({"type": "dag/req", "id": "d1", "streaming": true, "dag": dag});
        let msg = decode(line.to_string().as_bytes()).unwrap();
        let Message::DagRequest(req) = &msg else {
            panic!("{msg:?}")
        };
        assert_eq!(req.dag, dag);
        assert!(req.streaming);
        assert_eq!(decode(&msg.to_json()).unwrap(), msg);
        let built = Message::from(DagRequest {
            dag: dag.clone(),
            ..DagRequest::default()
        });
        let Message::DagRequest(back) = decode(&built.to_line()[..]).unwrap() else {
            panic!()
        };
        assert_eq!((back.dag, back.streaming), (dag, false));
        // The DAG is required: without one the request names what is missing.
        let err = decode(br#"{"type":"dag/req","id":"d2"}"#).unwrap_err();
        assert_eq!(err.code(), ErrorCode::SCHEMA_VIOLATION);
        assert_eq!(err.req_id, "d2");
        assert!(err.to_string().contains("missing field `dag`"), "{err}");
    }

    #[test]
    fn chain_fork_survives_a_round_trip_and_names_a_field_of_the_wrong_shape() {
        let line = json!({"type": "chain/fork", "id": "f1", "run_id": "r7",
                          "from_node": "b", "input": {"n": 2}, "streaming": true});
        let msg = decode(line.to_string().as_bytes()).unwrap();
        let Message::ChainFork(fork) = &msg else {
            panic!("{msg:?}")
        };
        assert_eq!((fork.run_id.as_str(), fork.from_node.as_str()), ("r7", "b"));
        assert_eq!(fork.input["n"], 2);
        assert!(fork.streaming);
        assert_eq!(decode(&msg.to_json()).unwrap(), msg);
        let err = decode(br#"{"type":"chain/fork","id":"f2","from_node":3}"#).unwrap_err();
        assert_eq!(err.code(), ErrorCode::SCHEMA_VIOLATION);
        assert_eq!(err.path(), Some("from_node"));
        assert_eq!(err.req_id, "f2");
    }

    #[test]
    fn the_extension_types_are_listed_apart_from_the_specifications() {
        assert_eq!(Message::TYPES.len(), 29);
        assert_eq!(
            Message::EXTENSION_TYPES,
            ["chain/attach", "dag/req", "chain/fork"]
        );
        assert!(
            Message::EXTENSION_TYPES
                .iter()
                .all(|t| !Message::TYPES.contains(t))
        );
    }

    #[cfg(feature = "schema")]
    #[test]
    fn their_schemas_are_derived_with_the_others() {
        let types: Vec<&str> = crate::schema::extension_schemas()
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        assert_eq!(types, Message::EXTENSION_TYPES);
        let schema = crate::schema::schema_for_type("chain/attach").unwrap();
        assert_eq!(schema["properties"]["type"]["const"], "chain/attach");
        assert!(crate::schema::message_schemas().len() == Message::TYPES.len());
    }
}

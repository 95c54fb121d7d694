//! Wire extensions of this implementation: messages the A2E specification
//! does not define, which a host of this workspace serves beside the core
//! ones (`docs/durability.md`). They share the envelope (`type`, `id`,
//! `version`, `ts`); their schemas are committed under `schemas/a2e/ext/`.
//!
//! - `chain/attach`: re-attach to a durable run (a chain, an ACMP DAG, an
//!   Ontheia or LLM skill call): its events from `from_seq` on, each `seq`
//!   once, then its answer, as `chain/event`s and a `chain/resp` whose
//!   `req_id` is the attach request's id.
//! - `dag/req`: run an ACMP Layer 2 DAG on the host, answered like a chain.
//! - `run_id` on `chain/event` (the run's first) and `chain/resp`: the
//!   durable run's id, so that an agent can attach to, show or cancel its
//!   run; defined on those messages' structs, absent without a journal.

use serde_json::Value;

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

impl_request!(ChainAttach, DagRequest);

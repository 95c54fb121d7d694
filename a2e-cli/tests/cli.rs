//! Every integration test of the `a2e` binary, in one test binary: linking
//! the host once instead of once per file keeps a workspace build's disk use
//! and link time down. Each module is one area; the `*_support` modules are
//! the helpers they share. Run one area with `cargo test -p a2e-cli --test
//! cli AREA::`.

mod acmp_support;
mod cluster_support;
mod durable_support;
mod fuzz_support;
mod llm_support;
mod local_model;
mod mcp_conformance_support;
/// The process lookups the stdio transport tests share with a2e-host's
/// network tests.
mod net_support {
    pub use a2e_test_kit::process::{alive, eventually};
}
mod otlp_support;
use a2e_test_kit::skip;

mod a2a_client;
mod a2a_cluster;
mod a2a_durable;
mod a2a_http;
mod a2a_input;
mod a2a_push;
mod a2a_sdk;
mod a2a_turns;
mod acmp_errors;
mod acmp_host;
mod acmp_interop;
mod acmp_mcp;
mod acmp_remote;
mod approvals;
mod audit;
mod blackbox;
mod cluster;
mod cluster_approvals;
mod command_env;
mod durable_acmp;
mod durable_runs;
mod durable_skills;
mod forks;
mod fuzz_session;
mod graph_cli;
mod list_json;
mod llm_skill;
mod llm_skill_cli;
mod llm_skill_local;
mod llm_skill_toolkits;
mod mcp_approvals;
mod mcp_client_model;
mod mcp_conformance_client;
mod mcp_conformance_revisions;
mod mcp_conformance_server;
mod mcp_host;
mod mcp_mount_revision;
mod mcp_rounds;
mod mcp_sampling;
mod mcp_served_tools;
mod mcp_tasks;
mod mcp_tasks_cluster;
mod mcp_tasks_durable;
mod mcp_tasks_session;
mod mcp_tasks_support;
mod mcp_ts_sdk;
mod memory;
mod net_stdio;
mod ontheia_run;
mod plugin_misbehaving;
mod plugin_python;
mod run_id_wire;
mod run_progress;
mod runs_cli;
mod skill_kinds;
mod stdio_binary;
mod telemetry;
mod telemetry_a2a;
mod telemetry_acmp;
mod telemetry_cluster;
mod telemetry_hops;
mod ui_stdio;
mod validate_catalog;

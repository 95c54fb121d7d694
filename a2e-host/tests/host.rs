//! The host's integration tests, in one test binary: linking the host once
//! instead of once per file keeps a workspace build's disk use and link time
//! down. Each module is one area; `net_support` and `proc_support` are the
//! helpers they share. Two are binaries of their own: `net_load` reads this
//! process's resident memory, which other tests running beside it would move,
//! and `ui_browser` installs a global tracing subscriber with telemetry on.

mod net_support;
mod proc_support;

mod builtins_command;
mod builtins_fs;
mod builtins_http;
mod call_layers;
mod host_handle;
mod net_http;
mod net_ws;
mod plugin_process;
mod proc_manager;
mod proc_run;
mod session;
mod skills;
mod ui_actions;
mod ui_http;
mod ui_runs;

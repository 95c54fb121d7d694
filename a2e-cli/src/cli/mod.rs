//! Command-line interface of the `a2e` binary.

mod acmp;
mod approvals;
mod catalog;
mod commands;
mod graph;
mod inspect;
mod mcp_client;
mod progress;
mod run;
mod runs;
mod runs_view;
mod signal;
mod skill;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The A2E host: tools, skills and chains for AI agents.
#[derive(Debug, Parser)]
#[command(name = "a2e", version, about)]
pub struct Cli {
    /// Host configuration file (TOML). Without it: safe defaults.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Workspace root for the built-in tools (overrides the config file).
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Allow a command for run_command, proc and chain proc nodes (repeatable).
    #[arg(long = "allow-command", global = true, value_name = "NAME")]
    pub allow_commands: Vec<String>,
    /// The cluster's NATS server (JetStream), over `[cluster] nats_url` of
    /// the configuration; without it, `A2E_CLUSTER`. `serve` shares runs
    /// with the cluster's hosts, `runs` and `graph --run` read the cluster's
    /// journal, `run --detach` hands the run to it (docs/durability.md).
    #[arg(long, global = true, value_name = "URL")]
    pub cluster: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the A2E protocol.
    Serve {
        /// NDJSON on stdin/stdout (logs go to stderr). With `--ws` or
        /// `--http` too, those listeners serve beside it (their live view
        /// lists the stdio session) and stop when stdin ends.
        #[arg(long)]
        stdio: bool,
        /// WebSocket on ADDR (`host:port`), one message per text frame. Binding
        /// anything but loopback needs `auth_token` in the configuration.
        #[arg(long, value_name = "ADDR")]
        ws: Option<String>,
        /// HTTP+SSE on ADDR (`POST /session`, `POST /send`, `GET /stream`);
        /// the same ADDR as `--ws` serves both on one listener.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// Serve MCP on stdin/stdout instead of A2E: the host's tools and
        /// Published skills (`skill.NAME`) as MCP tools.
        #[arg(long, conflicts_with_all = ["stdio", "ws", "http", "mcp_http"])]
        mcp_stdio: bool,
        /// Serve MCP over Streamable HTTP on ADDR (`/mcp`); binding anything but
        /// loopback needs `auth_token` in the configuration (a bearer token).
        #[arg(long, value_name = "ADDR", conflicts_with_all = ["stdio"])]
        mcp_http: Option<String>,
        /// Serve the host's published skills as an A2A (Agent2Agent v1.0) agent
        /// on ADDR: the Agent Card at `/.well-known/agent-card.json`, JSON-RPC at
        /// `/`, HTTP+JSON beside it; each message a durable task (docs/a2a.md).
        /// Binding anything but loopback needs `auth_token` (a bearer token).
        #[arg(long, value_name = "ADDR", conflicts_with_all = ["stdio", "mcp_stdio", "mcp_http"])]
        a2a: Option<String>,
        /// Serve the ACMP capabilities of `[acmp.provider]` as JSON-RPC over
        /// WebSocket on ADDR (`acmp/invoke`, `acmp/cancel`, `acmp/inputChunk`;
        /// a bearer token is required); alone or beside another transport.
        #[arg(long, value_name = "ADDR")]
        acmp_ws: Option<String>,
    },
    /// Run a document (a chain, an ACMP DAG or an Ontheia chain) on the
    /// embedded host: one progress line per node or step on stderr, the
    /// outcome (a chain's chain/resp) on stdout.
    Run {
        /// The document: a chain (JSON `chain/req`, or a bare object with
        /// `nodes` and `entry_node`), an ACMP DAG or an Ontheia chain.
        file: PathBuf,
        /// Initial input (a JSON object) merged over the file's `initial_input`.
        #[arg(long, value_name = "JSON")]
        input: Option<String>,
        /// Print the run's events to stderr as JSON lines instead of
        /// progress (`chain/event`s of a chain, the DAG's and the Ontheia
        /// chain's events).
        #[arg(long)]
        events: bool,
        /// A global variable of an Ontheia chain (`user_id`, `user_name`,
        /// `user_email`, `agent_id`, `task_id`, `chat_id`, or any name), as
        /// NAME=VALUE; repeatable; over `[ontheia.globals]` of the configuration.
        #[arg(long = "var", value_name = "NAME=VALUE")]
        vars: Vec<String>,
        /// Hand an A2E chain to the cluster of `[cluster]` instead of running
        /// it here: prints its run id at once (follow it with `a2e runs
        /// attach ID`); one of the cluster's hosts takes the run and runs it.
        #[arg(long, conflicts_with = "events")]
        detach: bool,
    },
    /// Validate a document (a chain, an ACMP DAG or an Ontheia chain)
    /// without running it.
    Validate {
        /// The document file.
        file: PathBuf,
    },
    /// Draw a document (a chain, an ACMP DAG or an Ontheia chain) as Mermaid,
    /// DOT or SVG, laid out offline; an invalid document is refused as by
    /// `validate`.
    Graph {
        /// The document file.
        file: PathBuf,
        /// mermaid, dot or svg (default: from `--out`'s extension, else mermaid).
        #[arg(long, value_name = "FORMAT")]
        format: Option<a2e_graph::Format>,
        /// Write the picture to PATH instead of stdout.
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
        /// Colour the nodes by what the run journal says of run RUN_ID
        /// (done, failed, skipped, running, not reached), each labelled
        /// with its duration.
        #[arg(long, value_name = "RUN_ID")]
        run: Option<String>,
    },
    /// List the host's tools, or search them.
    Tools {
        /// Search query (ranks by relevance; includes deferred tools).
        #[arg(long)]
        query: Option<String>,
        /// One JSON object per line (name, description, …) instead of columns.
        #[arg(long)]
        json: bool,
    },
    /// List the host's skills (chain and LLM skills, with their kind).
    Skills {
        /// One JSON object per line (name, status, kind, description) instead
        /// of columns.
        #[arg(long)]
        json: bool,
    },
    /// Run one skill on the embedded host: the skill/call/resp to stdout; exit 0 on
    /// success, 1 when the skill failed, 2 when the call was refused or the input is invalid.
    Skill {
        /// The skill's name.
        name: String,
        /// The arguments (a JSON object).
        #[arg(long, value_name = "JSON")]
        input: Option<String>,
        /// Print `skill/event`s to stderr as JSON lines.
        #[arg(long)]
        events: bool,
        /// Time limit in seconds (default: the skill's `timeout_seconds`).
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<u64>,
        /// An `llm_override` (a JSON object: provider_name, provider_config, …), held to
        /// the host's allow-list like an agent's.
        #[arg(long, value_name = "JSON")]
        llm_override: Option<String>,
    },
    /// Inspect the MCP servers of `[[mcp.servers]]`.
    Mcp {
        /// What to show.
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Inspect or edit long-term memory (every namespace; for people, not agents).
    Memory {
        /// What to do.
        #[command(subcommand)]
        command: MemoryCommand,
    },
    /// The durable runs in the host's run journal (`[journal]`, or the
    /// cluster's with `--cluster`; for people, not agents): list them, show one, or cancel one (the host running it
    /// stops it within a second; an unfinished run of a stopped host ends
    /// as cancelled when it starts).
    Runs {
        /// What to do.
        #[command(subcommand)]
        command: RunsCommand,
    },
    /// Print the JSON Schema of a message type (or list the types).
    Schema {
        /// A message type such as `tool/call/req`.
        r#type: Option<String>,
    },
}

/// `a2e mcp …`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Each configured server: its transport, whether it started, how many tools.
    List {
        /// One JSON object per line (name, ok, tools, error, deferred,
        /// transport) instead of columns.
        #[arg(long)]
        json: bool,
    },
    /// The tools of one server, as the host exposes them.
    Tools {
        /// The server's name.
        server: String,
        /// One JSON object per line: each tool's name, description, and its
        /// input (and output) schema exactly as the server gave them.
        #[arg(long)]
        json: bool,
    },
    /// Authorize the host for a server behind OAuth (the first consent):
    /// prints the URL to open, waits for the redirect, stores the tokens.
    Login {
        /// The server's name, or the URL of a Streamable HTTP server.
        server: String,
    },
    /// Call a tool of one server and print the result (JSON).
    Call {
        /// The server's name, or the URL of a Streamable HTTP server.
        server: String,
        /// The tool.
        tool: String,
        /// The arguments (a JSON object).
        #[arg(long, value_name = "JSON")]
        input: Option<String>,
    },
}

/// `a2e runs …`.
#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// The runs, newest first: id, kind, status, age, events, agent, the
    /// chain (or DAG) id and the request id; a `running` run that no live
    /// host runs is marked orphaned.
    List {
        /// Only runs in this status (`running`, `waiting`, `succeeded`, `failed`,
        /// `cancelled`; `waiting`: running, a call waiting for a decision).
        #[arg(long)]
        status: Option<String>,
        /// Only this agent's runs.
        #[arg(long)]
        agent: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// One JSON object per line instead of columns.
        #[arg(long)]
        json: bool,
    },
    /// One run as JSON: its request, each node's attempts and results (in
    /// start order, with the host that ran each when journaled), its answer.
    Show {
        /// The run id.
        id: String,
    },
    /// Ask for a run to be cancelled.
    Cancel {
        /// The run id.
        id: String,
    },
    /// The calls that wait for a person's decision, across runs, newest
    /// first: run, node, tool or skill, its arguments (redacted), how long
    /// it has waited and until when.
    Waiting {
        /// One JSON object per line instead of columns.
        #[arg(long)]
        json: bool,
    },
    /// Approve a call that waits for a decision; it runs once.
    Approve {
        /// The run id.
        id: String,
        /// The node whose call to approve (needed when several wait).
        #[arg(long)]
        node: Option<String>,
        /// The arguments to run it with instead of its own (a JSON object;
        /// checked against the tool's schema when it runs).
        #[arg(long)]
        args: Option<String>,
    },
    /// Deny a call that waits for a decision: it fails with code `denied`
    /// and the reason, and its node's `on_error` applies.
    Deny {
        /// The run id.
        id: String,
        /// The node whose call to deny (needed when several wait).
        #[arg(long)]
        node: Option<String>,
        /// Why (the agent reads it in the call's answer).
        #[arg(long)]
        reason: String,
    },
    /// Fork a chain run from a node: a new run of the same document (its
    /// request names its parent in `forked_from`) in which every node that
    /// is not downstream of NODE takes the result the run journaled (not
    /// called again), and NODE and what depends on it run. Runs it here and
    /// prints its answer; exit 0 when it succeeded.
    Fork {
        /// The run id.
        id: String,
        /// The node to run again from.
        #[arg(long = "from", value_name = "NODE")]
        from: String,
        /// Keys merged into NODE's `input` (a JSON object).
        #[arg(long)]
        input: Option<String>,
    },
    /// The journaled events of a run as JSON lines, then its answer, as its
    /// agent saw them; nothing is called. A run that has not finished
    /// prints what is journaled so far (exit 1).
    Replay {
        /// The run id.
        id: String,
    },
    /// Follow a run: its events as JSON lines from `--from-seq` on (those
    /// journaled, then the live ones), then its answer; exit 0 when it
    /// succeeded, 1 otherwise.
    Attach {
        /// The run id.
        id: String,
        /// The first event wanted.
        #[arg(long, default_value_t = 0)]
        from_seq: u64,
    },
}

/// `a2e memory …`.
#[derive(Debug, Subcommand)]
pub enum MemoryCommand {
    /// Search memories.
    Search {
        /// What to look for.
        query: String,
        /// Namespaces to search (repeatable; default: every namespace).
        #[arg(long = "namespace", value_name = "NS")]
        namespaces: Vec<String>,
        /// How many hits (1–20).
        #[arg(long, default_value_t = 5)]
        top_k: u64,
    },
    /// Store a memory.
    Write {
        /// The namespace.
        namespace: String,
        /// The text.
        content: String,
        /// Metadata (a JSON object).
        #[arg(long, value_name = "JSON")]
        metadata: Option<String>,
    },
    /// The namespaces and how many memories each holds.
    List,
}

/// Parses arguments and runs the command.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("a2e: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    // Telemetry (`[telemetry]` and the OTEL_* variables) before the first log
    // line: its layer joins the subscriber. Inside the runtime: the gRPC
    // exporter lives on it.
    let (telemetry, guard) = match runtime.block_on(async { commands::telemetry(&cli) }) {
        Ok(set_up) => set_up,
        Err(e) => {
            eprintln!("a2e: {e}");
            return ExitCode::from(2);
        }
    };
    init_logging(telemetry.layer());
    let code = runtime.block_on(commands::run(cli, telemetry));
    // The last spans and metrics go out while the runtime still runs.
    drop(guard);
    // A blocking read of stdin may still be parked on a runtime thread; do not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    code
}

type OtelLayer = Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// The log filter without `A2E_LOG`: warnings, and what happens to durable
/// runs (a run resumed, a cluster joined, a run taken over from a dead
/// host), which a person running hosts needs to see.
const DEFAULT_LOG: &str = "warn,a2e_host_runs=info";

/// Log lines to stderr (`A2E_LOG`, default [`DEFAULT_LOG`]), and the
/// OpenTelemetry layer when telemetry is on (its own filter: the spans of
/// `a2e_telemetry`).
fn init_logging(otel: Option<OtelLayer>) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let filter = EnvFilter::try_from_env("A2E_LOG").unwrap_or_else(|_| EnvFilter::new(DEFAULT_LOG));
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(filter);
    let _ = tracing_subscriber::registry()
        .with(otel)
        .with(fmt)
        .try_init();
}

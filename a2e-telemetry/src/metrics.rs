//! The host's instruments as a small typed API. Each method is one branch
//! when telemetry is off; on, one instrument update (attributes built from
//! the arguments).
//!
//! | instrument | kind | unit | attributes |
//! |---|---|---|---|
//! | `a2e.requests` | counter | `{request}` | `a2e.request.type`, `a2e.outcome` |
//! | `a2e.call.duration` | histogram | `s` | `a2e.call.kind` (`tool`/`skill`), `a2e.call.name`, `a2e.outcome` |
//! | `a2e.workflow.duration` | histogram | `s` | `a2e.workflow.kind`, `a2e.outcome` |
//! | `a2e.node.duration` | histogram | `s` | `a2e.node.kind`, `a2e.outcome` |
//! | `gen_ai.client.operation.duration` | histogram | `s` | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.response.model`, `error.type` |
//! | `gen_ai.client.token.usage` | histogram | `{token}` | the same and `gen_ai.token.type` (`input`/`output`) |
//! | `a2e.sessions.open` | up-down counter | `{session}` | `a2e.transport` |
//! | `a2e.runs.in_flight` | up-down counter | `{run}` | `a2e.run.kind` |
//! | `a2e.mcp.server.up` | gauge | `1` | `a2e.mcp.server` |
//! | `a2e.memory.entries` / `a2e.memory.size` | gauge | `{entry}` / `By` | — |
//! | `a2e.cluster.queue.depth` | gauge | `{message}` | `a2e.cluster.queue` |
//! | `a2e.cluster.redeliveries` | counter | `{message}` | `a2e.cluster.queue` |
//!
//! `a2e.outcome` is `ok` or the A2E error code. Chain ids, session ids and
//! arguments are never attributes (they would make a series per call).

use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Gauge, Histogram, Meter, UpDownCounter};

/// The buckets of `gen_ai.client.operation.duration` (seconds), as the
/// conventions specify them.
pub const GEN_AI_DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// The buckets of `gen_ai.client.token.usage`, as the conventions specify them.
pub const GEN_AI_TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The buckets of a2e's call, workflow and node durations (seconds): from
/// half a millisecond (a built-in tool) to five minutes.
pub const CALL_DURATION_BUCKETS: [f64; 17] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 300.0,
];

/// The outcome of a success.
pub const OK: &str = "ok";

#[derive(Debug)]
pub(crate) struct Instruments {
    requests: Counter<u64>,
    call_duration: Histogram<f64>,
    workflow_duration: Histogram<f64>,
    node_duration: Histogram<f64>,
    gen_ai_duration: Histogram<f64>,
    gen_ai_tokens: Histogram<u64>,
    sessions_open: UpDownCounter<i64>,
    runs_in_flight: UpDownCounter<i64>,
    mcp_server_up: Gauge<u64>,
    memory_entries: Gauge<u64>,
    memory_size: Gauge<u64>,
    queue_depth: Gauge<u64>,
    redeliveries: Counter<u64>,
}

impl Instruments {
    pub(crate) fn new(meter: &Meter) -> Self {
        let seconds = |name: &'static str, description: &'static str, buckets: &[f64]| {
            meter
                .f64_histogram(name)
                .with_unit("s")
                .with_description(description)
                .with_boundaries(buckets.to_vec())
                .build()
        };
        Instruments {
            requests: meter
                .u64_counter("a2e.requests")
                .with_unit("{request}")
                .with_description("Requests the host answered, by type and outcome.")
                .build(),
            call_duration: seconds(
                "a2e.call.duration",
                "Duration of tool and skill calls.",
                &CALL_DURATION_BUCKETS,
            ),
            workflow_duration: seconds(
                "a2e.workflow.duration",
                "Duration of chains, ACMP DAGs and Ontheia documents.",
                &CALL_DURATION_BUCKETS,
            ),
            node_duration: seconds(
                "a2e.node.duration",
                "Duration of chain nodes, Ontheia steps and ACMP tasks.",
                &CALL_DURATION_BUCKETS,
            ),
            gen_ai_duration: seconds(
                "gen_ai.client.operation.duration",
                "GenAI operation duration.",
                &GEN_AI_DURATION_BUCKETS,
            ),
            gen_ai_tokens: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .with_boundaries(GEN_AI_TOKEN_BUCKETS.to_vec())
                .build(),
            sessions_open: meter
                .i64_up_down_counter("a2e.sessions.open")
                .with_unit("{session}")
                .with_description("Sessions open, by transport.")
                .build(),
            runs_in_flight: meter
                .i64_up_down_counter("a2e.runs.in_flight")
                .with_unit("{run}")
                .with_description("Calls, chains and DAGs running now, by kind.")
                .build(),
            mcp_server_up: meter
                .u64_gauge("a2e.mcp.server.up")
                .with_unit("1")
                .with_description("Whether a mounted MCP server is up (1) or down (0).")
                .build(),
            memory_entries: meter
                .u64_gauge("a2e.memory.entries")
                .with_unit("{entry}")
                .with_description("Memories in the store.")
                .build(),
            memory_size: meter
                .u64_gauge("a2e.memory.size")
                .with_unit("By")
                .with_description("Size of the memory store.")
                .build(),
            queue_depth: meter
                .u64_gauge("a2e.cluster.queue.depth")
                .with_unit("{message}")
                .with_description("Messages waiting in a cluster work queue.")
                .build(),
            redeliveries: meter
                .u64_counter("a2e.cluster.redeliveries")
                .with_unit("{message}")
                .with_description("Work-queue messages delivered again.")
                .build(),
        }
    }
}

/// Whether a call was a tool's or a skill's (`a2e.call.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// A tool call.
    Tool,
    /// A skill call.
    Skill,
}

impl CallKind {
    fn as_str(self) -> &'static str {
        match self {
            CallKind::Tool => "tool",
            CallKind::Skill => "skill",
        }
    }
}

/// One model call, for [`Metrics::model_call`].
#[derive(Debug, Clone, Copy)]
pub struct ModelCall<'a> {
    /// `gen_ai.provider.name` (`openai`, `anthropic`, …).
    pub provider: &'a str,
    /// `gen_ai.request.model`.
    pub request_model: &'a str,
    /// `gen_ai.response.model`, when the answer named one.
    pub response_model: Option<&'a str>,
    /// `error.type` when the call failed.
    pub error: Option<&'a str>,
    /// How long it took.
    pub duration: Duration,
    /// Input and output tokens, when the provider counted them.
    pub usage: Option<(u64, u64)>,
}

/// The host's metrics. Clone it freely; with telemetry off every method
/// returns at once.
#[derive(Debug, Clone, Default)]
pub struct Metrics {
    inner: Option<Arc<Instruments>>,
}

impl Metrics {
    pub(crate) fn new(inner: Option<Arc<Instruments>>) -> Self {
        Metrics { inner }
    }

    /// Whether anything is recorded.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// A clock for one call, read only when metrics are on (off, no clock
    /// is read): `timer.call(...)` when the call ends.
    #[inline]
    pub fn timer(&self) -> Timer<'_> {
        Timer {
            metrics: self,
            start: self.inner.as_ref().map(|_| Instant::now()),
        }
    }

    /// A request of `kind` (`tool/call`, `chain/req`, `tools/call`…) was
    /// answered with `outcome` ([`OK`] or an error code).
    #[inline]
    pub fn request(&self, kind: &str, outcome: &str) {
        if let Some(i) = &self.inner {
            i.requests.add(
                1,
                &[
                    KeyValue::new("a2e.request.type", kind.to_owned()),
                    KeyValue::new("a2e.outcome", outcome.to_owned()),
                ],
            );
        }
    }

    /// A tool or skill call named `name` took `duration` and ended with `outcome`.
    #[inline]
    pub fn call(&self, kind: CallKind, name: &str, outcome: &str, duration: Duration) {
        if let Some(i) = &self.inner {
            i.call_duration.record(
                duration.as_secs_f64(),
                &[
                    KeyValue::new("a2e.call.kind", kind.as_str()),
                    KeyValue::new("a2e.call.name", name.to_owned()),
                    KeyValue::new("a2e.outcome", outcome.to_owned()),
                ],
            );
        }
    }

    /// A chain (`chain`), ACMP DAG (`acmp`) or Ontheia document (`ontheia`) took `duration`.
    #[inline]
    pub fn workflow(&self, kind: crate::WorkflowKind, outcome: &str, duration: Duration) {
        if let Some(i) = &self.inner {
            i.workflow_duration.record(
                duration.as_secs_f64(),
                &[
                    KeyValue::new("a2e.workflow.kind", workflow_kind(kind)),
                    KeyValue::new("a2e.outcome", outcome.to_owned()),
                ],
            );
        }
    }

    /// A chain node, Ontheia step or ACMP task of `kind` (`tool`, `skill`,
    /// `branch`, `map`, `llm`, `task`…) took `duration`.
    #[inline]
    pub fn node(&self, kind: &str, outcome: &str, duration: Duration) {
        if let Some(i) = &self.inner {
            i.node_duration.record(
                duration.as_secs_f64(),
                &[
                    KeyValue::new("a2e.node.kind", kind.to_owned()),
                    KeyValue::new("a2e.outcome", outcome.to_owned()),
                ],
            );
        }
    }

    /// A model call: `gen_ai.client.operation.duration`, and
    /// `gen_ai.client.token.usage` once per token type when counted.
    pub fn model_call(&self, call: &ModelCall<'_>) {
        let Some(i) = &self.inner else {
            return;
        };
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", call.provider.to_owned()),
            KeyValue::new("gen_ai.request.model", call.request_model.to_owned()),
        ];
        if let Some(model) = call.response_model {
            attributes.push(KeyValue::new("gen_ai.response.model", model.to_owned()));
        }
        if let Some(error) = call.error {
            attributes.push(KeyValue::new("error.type", error.to_owned()));
        }
        i.gen_ai_duration
            .record(call.duration.as_secs_f64(), &attributes);
        if let Some((input, output)) = call.usage {
            attributes.push(KeyValue::new("gen_ai.token.type", "input"));
            i.gen_ai_tokens.record(input, &attributes);
            if let Some(last) = attributes.last_mut() {
                *last = KeyValue::new("gen_ai.token.type", "output");
            }
            i.gen_ai_tokens.record(output, &attributes);
        }
    }

    /// A session opened on `transport` (`stdio`, `ws`, `http`, `mcp`); it
    /// counts as open until the guard drops.
    #[must_use = "the session counts as open until the guard drops"]
    pub fn session_opened(&self, transport: &'static str) -> Gauged {
        Gauged::start(self, Which::Session, transport)
    }

    /// A run of `kind` (`tool`, `skill`, `chain`, `acmp`, `ontheia`) started;
    /// it counts as in flight until the guard drops.
    #[must_use = "the run counts as in flight until the guard drops"]
    pub fn run_started(&self, kind: &'static str) -> Gauged {
        Gauged::start(self, Which::Run, kind)
    }

    /// Whether mounted MCP server `server` is up.
    pub fn mcp_server_up(&self, server: &str, up: bool) {
        if let Some(i) = &self.inner {
            i.mcp_server_up.record(
                u64::from(up),
                &[KeyValue::new("a2e.mcp.server", server.to_owned())],
            );
        }
    }

    /// The memory store holds `entries` memories in `bytes` bytes.
    pub fn memory_store(&self, entries: u64, bytes: u64) {
        if let Some(i) = &self.inner {
            i.memory_entries.record(entries, &[]);
            i.memory_size.record(bytes, &[]);
        }
    }

    /// Cluster work queue `queue` holds `depth` messages.
    pub fn queue_depth(&self, queue: &str, depth: u64) {
        if let Some(i) = &self.inner {
            i.queue_depth.record(
                depth,
                &[KeyValue::new("a2e.cluster.queue", queue.to_owned())],
            );
        }
    }

    /// A message of cluster work queue `queue` was delivered again.
    pub fn redelivered(&self, queue: &str) {
        if let Some(i) = &self.inner {
            i.redeliveries
                .add(1, &[KeyValue::new("a2e.cluster.queue", queue.to_owned())]);
        }
    }
}

/// The start of a call, for its duration metric ([`Metrics::timer`]).
#[derive(Debug, Clone, Copy)]
pub struct Timer<'a> {
    metrics: &'a Metrics,
    start: Option<Instant>,
}

impl Timer<'_> {
    /// Time since the timer started (`None` with metrics off).
    pub fn elapsed(&self) -> Option<Duration> {
        self.start.map(|s| s.elapsed())
    }

    /// Records [`Metrics::call`] with the time since the start.
    #[inline]
    pub fn call(self, kind: CallKind, name: &str, outcome: &str) {
        if let Some(elapsed) = self.elapsed() {
            self.metrics.call(kind, name, outcome, elapsed);
        }
    }

    /// Records [`Metrics::node`] with the time since the start.
    #[inline]
    pub fn node(self, kind: &str, outcome: &str) {
        if let Some(elapsed) = self.elapsed() {
            self.metrics.node(kind, outcome, elapsed);
        }
    }

    /// Records [`Metrics::workflow`] with the time since the start.
    #[inline]
    pub fn workflow(self, kind: crate::WorkflowKind, outcome: &str) {
        if let Some(elapsed) = self.elapsed() {
            self.metrics.workflow(kind, outcome, elapsed);
        }
    }
}

fn workflow_kind(kind: crate::WorkflowKind) -> &'static str {
    match kind {
        crate::WorkflowKind::Chain => "chain",
        crate::WorkflowKind::Acmp => "acmp",
        crate::WorkflowKind::Ontheia => "ontheia",
    }
}

#[derive(Debug, Clone, Copy)]
enum Which {
    Session,
    Run,
}

/// Counts a session as open or a run as in flight until it drops.
#[derive(Debug)]
pub struct Gauged {
    held: Option<(Arc<Instruments>, Which, &'static str)>,
}

impl Gauged {
    fn start(metrics: &Metrics, which: Which, label: &'static str) -> Self {
        let held = metrics.inner.as_ref().map(|i| {
            Self::add(i, which, label, 1);
            (Arc::clone(i), which, label)
        });
        Gauged { held }
    }

    fn add(i: &Instruments, which: Which, label: &'static str, delta: i64) {
        match which {
            Which::Session => i
                .sessions_open
                .add(delta, &[KeyValue::new("a2e.transport", label)]),
            Which::Run => i
                .runs_in_flight
                .add(delta, &[KeyValue::new("a2e.run.kind", label)]),
        }
    }
}

impl Drop for Gauged {
    fn drop(&mut self) {
        if let Some((i, which, label)) = self.held.take() {
            Self::add(&i, which, label, -1);
        }
    }
}

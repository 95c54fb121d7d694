//! OpenTelemetry for A2E hosts: traces named per the GenAI semantic
//! conventions, W3C trace context across every hop, metrics as Prometheus
//! text and over OTLP. Off by default, and then free.
//!
//! * [`TelemetryConfig`]: the `[telemetry]` table and the standard
//!   `OTEL_*` variables ([`TelemetryConfig::with_env`]).
//! * [`Telemetry::init`]: the exporters (OTLP/HTTP or gRPC, batched, a
//!   bounded queue, one rate-limited warning when the endpoint is away), the
//!   [`Telemetry`] handle, and a [`TelemetryGuard`] that flushes on drop;
//!   [`Telemetry::layer`] is the `tracing` layer to add to the subscriber.
//! * Spans: [`Telemetry::request`], [`Telemetry::workflow`],
//!   [`Telemetry::agent`], [`Telemetry::chat`], [`Telemetry::tool`],
//!   [`Telemetry::step`]; on the [`OpSpan`], tokens, errors (status and the
//!   A2E code) and, only with `capture_content`, content.
//! * [`TraceContext`]: `traceparent` / `tracestate` in and out of HTTP
//!   headers, JSON `_meta` and any string map.
//! * [`Metrics`]: the host's instruments; [`Telemetry::prometheus_text`]
//!   for `/metrics`.
//!
//! Features: `otlp` (default) brings the OTLP exporters and their HTTP client;
//! `grpc` (default) adds OTLP over gRPC. Without `otlp`, spans, metrics, the
//! Prometheus text and trace context work as ever, and an OTLP exporter in the
//! configuration is refused by [`Telemetry::init`]
//! ([`TelemetryError::OtlpUnavailable`]).
//!
//! `docs/observability.md` shows the span tree of a chain and how to point a
//! host at Jaeger or any OTLP endpoint.
//!
//! ```
//! use std::time::Duration;
//!
//! use a2e_telemetry::{
//!     CallKind, Parent, Telemetry, TelemetryConfig, TraceContext, WorkflowKind, metrics::OK,
//! };
//!
//! // Off by default: every helper is a no-op.
//! let (off, _guard) = Telemetry::init(&TelemetryConfig::default())?;
//! assert!(!off.tool("echo").start().is_recording());
//! assert!(off.prometheus_text().is_none());
//!
//! // On, spans not exported here (no collector in a doc test), metrics kept for `/metrics`.
//! let config: TelemetryConfig = toml::from_str(
//!     r#"
//!     enabled = true
//!     traces_exporter = "none"
//!     metrics_exporter = "none"
//!     "#,
//! )?;
//! let (telemetry, guard) = Telemetry::init(&config.with_env_from(|_| None)?)?;
//!
//! // An incoming traceparent becomes the parent of the request's span.
//! let incoming =
//!     TraceContext::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", None)?;
//! let chain = telemetry
//!     .workflow(WorkflowKind::Chain, None)
//!     .chain("c1")
//!     .parent(Parent::Remote(&incoming))
//!     .start();
//! let node = telemetry.tool("echo").node("n1").parent(Parent::Span(chain.span())).start();
//! node.error("tool_error", "exit status 1");
//!
//! // Metrics, and their Prometheus text.
//! telemetry.metrics().request("tool/call", OK);
//! telemetry.metrics().call(CallKind::Tool, "echo", OK, Duration::from_millis(3));
//! let text = telemetry.prometheus_text().unwrap_or_default();
//! assert!(text.contains(r#"a2e_requests_total{a2e_outcome="ok",a2e_request_type="tool/call"} 1"#));
//! drop(guard);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod config;
mod content;
pub mod context;
mod error;
mod export;
pub mod metrics;
mod parse;
mod spans;
mod telemetry;

pub use config::{BatchSettings, Exporter, Protocol as OtlpProtocol, Sampler, TelemetryConfig};
pub use content::{
    MAX_CONTENT_BYTES, REDACTED, SECRET_KEYS, is_secret_key, redact, redact_entry, redact_map,
    scrub,
};
pub use context::{TraceContext, TraceContextError};
pub use error::{ConfigError, TelemetryError};
pub use export::{ExportStats, WARN_INTERVAL};
pub use metrics::{CallKind, Gauged, Metrics, ModelCall, Timer};
pub use spans::{OpSpan, Parent, Protocol, SpanBuilder, WorkflowKind};
pub use telemetry::{
    PROMETHEUS_CONTENT_TYPE, SHUTDOWN_TIMEOUT, SPAN_TARGET, Telemetry, TelemetryGuard,
};

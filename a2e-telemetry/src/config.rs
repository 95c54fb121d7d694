//! What telemetry does, from a `[telemetry]` table and the standard
//! OpenTelemetry environment variables.
//!
//! Telemetry is off unless the table says `enabled = true` or an OTLP endpoint
//! is given (`endpoint` in the table, `OTEL_EXPORTER_OTLP_ENDPOINT` or a
//! per-signal endpoint variable). `OTEL_SDK_DISABLED=true` turns it off
//! whatever else is set. The variables, when set, override the table, as any
//! OpenTelemetry SDK reads them.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::parse::{parse_bool, parse_key_values, parse_u64, parse_url};

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Protocol {
    /// OTLP/HTTP with protobuf bodies (port 4318 by convention).
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    /// OTLP/gRPC (port 4317 by convention; the crate's `grpc` feature).
    #[serde(rename = "grpc")]
    Grpc,
}

impl Protocol {
    /// The value as `OTEL_EXPORTER_OTLP_PROTOCOL` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::HttpProtobuf => "http/protobuf",
            Protocol::Grpc => "grpc",
        }
    }

    fn parse(var: &'static str, value: &str) -> Result<Self, ConfigError> {
        match value.trim() {
            "http/protobuf" => Ok(Protocol::HttpProtobuf),
            "grpc" => Ok(Protocol::Grpc),
            other => Err(ConfigError::Invalid {
                source_name: var,
                value: other.to_owned(),
                reason: "expected `http/protobuf` or `grpc` (`http/json` is not supported)".into(),
            }),
        }
    }

    /// The endpoint an OpenTelemetry SDK uses when none is given.
    pub fn default_endpoint(self) -> &'static str {
        match self {
            Protocol::HttpProtobuf => "http://localhost:4318",
            Protocol::Grpc => "http://localhost:4317",
        }
    }
}

/// Which traces are recorded (`OTEL_TRACES_SAMPLER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Sampler {
    /// Every trace.
    #[serde(rename = "always_on")]
    AlwaysOn,
    /// No trace.
    #[serde(rename = "always_off")]
    AlwaysOff,
    /// A fraction of traces, `sampler_arg` (0 to 1), chosen by trace id.
    #[serde(rename = "traceidratio")]
    TraceIdRatio,
    /// As the parent decided; every root trace (the SDK default).
    #[default]
    #[serde(rename = "parentbased_always_on")]
    ParentBasedAlwaysOn,
    /// As the parent decided; no root trace.
    #[serde(rename = "parentbased_always_off")]
    ParentBasedAlwaysOff,
    /// As the parent decided; a fraction of root traces.
    #[serde(rename = "parentbased_traceidratio")]
    ParentBasedTraceIdRatio,
}

impl Sampler {
    fn parse(value: &str) -> Result<Self, ConfigError> {
        Ok(match value.trim() {
            "always_on" => Sampler::AlwaysOn,
            "always_off" => Sampler::AlwaysOff,
            "traceidratio" => Sampler::TraceIdRatio,
            "parentbased_always_on" => Sampler::ParentBasedAlwaysOn,
            "parentbased_always_off" => Sampler::ParentBasedAlwaysOff,
            "parentbased_traceidratio" => Sampler::ParentBasedTraceIdRatio,
            other => {
                return Err(ConfigError::Invalid {
                    source_name: "OTEL_TRACES_SAMPLER",
                    value: other.to_owned(),
                    reason: "expected always_on, always_off, traceidratio, parentbased_always_on, \
                             parentbased_always_off or parentbased_traceidratio"
                        .into(),
                });
            }
        })
    }
}

/// Where a signal goes (`OTEL_TRACES_EXPORTER`, `OTEL_METRICS_EXPORTER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Exporter {
    /// To the OTLP endpoint.
    #[default]
    Otlp,
    /// Nowhere (metrics are still served as Prometheus text).
    None,
}

impl Exporter {
    fn parse(var: &'static str, value: &str) -> Result<Self, ConfigError> {
        match value.trim() {
            "otlp" => Ok(Exporter::Otlp),
            "none" => Ok(Exporter::None),
            other => Err(ConfigError::Invalid {
                source_name: var,
                value: other.to_owned(),
                reason: "expected `otlp` or `none`".into(),
            }),
        }
    }
}

/// The batch span processor's bounds (`OTEL_BSP_*`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BatchSettings {
    /// Finished spans held for export at most; past it new spans are dropped.
    pub max_queue_size: usize,
    /// Spans per export request at most.
    pub max_export_batch_size: usize,
    /// Milliseconds between exports.
    pub scheduled_delay_ms: u64,
}

impl Default for BatchSettings {
    fn default() -> Self {
        BatchSettings {
            max_queue_size: 2048,
            max_export_batch_size: 512,
            scheduled_delay_ms: 5000,
        }
    }
}

/// The `[telemetry]` table.
///
/// ```toml
/// [telemetry]
/// enabled = true
/// endpoint = "http://localhost:4318"   # OTLP collector, Jaeger, Tempo, ...
/// protocol = "http/protobuf"           # or "grpc"
/// service_name = "a2e"
/// capture_content = false              # prompts, completions, tool arguments and results
/// resource_attributes = { "deployment.environment.name" = "dev" }
/// ```
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryConfig {
    /// Telemetry on (off by default; an endpoint turns it on too).
    pub enabled: bool,
    /// The OTLP endpoint: a base URL (`/v1/traces`, `/v1/metrics` are appended
    /// for OTLP/HTTP). Default: the protocol's local port.
    pub endpoint: Option<String>,
    /// The full URL spans go to, overriding `endpoint` for traces
    /// (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
    pub traces_endpoint: Option<String>,
    /// The full URL metrics go to (`OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`).
    pub metrics_endpoint: Option<String>,
    /// `http/protobuf` (default) or `grpc`.
    pub protocol: Protocol,
    /// Headers sent with every export (`OTEL_EXPORTER_OTLP_HEADERS`), such as a
    /// collector's key. Never printed.
    pub headers: BTreeMap<String, String>,
    /// Milliseconds one export may take (`OTEL_EXPORTER_OTLP_TIMEOUT`).
    pub timeout_ms: u64,
    /// `service.name` of every span and metric (`OTEL_SERVICE_NAME`).
    pub service_name: String,
    /// More resource attributes (`OTEL_RESOURCE_ATTRIBUTES`).
    pub resource_attributes: BTreeMap<String, String>,
    /// Which traces are recorded.
    pub sampler: Sampler,
    /// The ratio of the ratio samplers, 0 to 1 (`OTEL_TRACES_SAMPLER_ARG`).
    pub sampler_arg: Option<f64>,
    /// Record prompts, completions, tool arguments and results on spans (off:
    /// the GenAI conventions' opt-in). Secret-named fields are redacted even then.
    pub capture_content: bool,
    /// Whether spans are exported.
    pub traces_exporter: Exporter,
    /// Whether metrics are exported over OTLP (the Prometheus text is there either way).
    pub metrics_exporter: Exporter,
    /// Milliseconds between metric exports (`OTEL_METRIC_EXPORT_INTERVAL`).
    pub metrics_interval_ms: u64,
    /// The span batch's bounds.
    pub batch: BatchSettings,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            enabled: false,
            endpoint: None,
            traces_endpoint: None,
            metrics_endpoint: None,
            protocol: Protocol::default(),
            headers: BTreeMap::new(),
            timeout_ms: 10_000,
            service_name: "a2e".into(),
            resource_attributes: BTreeMap::new(),
            sampler: Sampler::default(),
            sampler_arg: None,
            capture_content: false,
            traces_exporter: Exporter::Otlp,
            metrics_exporter: Exporter::Otlp,
            metrics_interval_ms: 60_000,
            batch: BatchSettings::default(),
        }
    }
}

impl fmt::Debug for TelemetryConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers: Vec<&str> = self.headers.keys().map(String::as_str).collect();
        f.debug_struct("TelemetryConfig")
            .field("enabled", &self.enabled)
            .field("endpoint", &self.endpoint)
            .field("traces_endpoint", &self.traces_endpoint)
            .field("metrics_endpoint", &self.metrics_endpoint)
            .field("protocol", &self.protocol)
            .field("headers (names only)", &headers)
            .field("timeout_ms", &self.timeout_ms)
            .field("service_name", &self.service_name)
            .field("resource_attributes", &self.resource_attributes)
            .field("sampler", &self.sampler)
            .field("sampler_arg", &self.sampler_arg)
            .field("capture_content", &self.capture_content)
            .field("traces_exporter", &self.traces_exporter)
            .field("metrics_exporter", &self.metrics_exporter)
            .field("metrics_interval_ms", &self.metrics_interval_ms)
            .field("batch", &self.batch)
            .finish()
    }
}

/// The most spans a queue may hold, so that a configuration cannot ask for
/// unbounded memory.
pub const MAX_QUEUE_SIZE: usize = 1 << 20;

impl TelemetryConfig {
    /// This configuration with the process environment applied over it.
    pub fn with_env(self) -> Result<Self, ConfigError> {
        self.with_env_from(|name| std::env::var(name).ok())
    }

    /// This configuration with the variables `get` returns applied over it
    /// (the standard names; an empty value counts as unset).
    pub fn with_env_from(
        mut self,
        get: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let var = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        if let Some(v) = var("OTEL_EXPORTER_OTLP_PROTOCOL") {
            self.protocol = Protocol::parse("OTEL_EXPORTER_OTLP_PROTOCOL", &v)?;
        }
        if let Some(v) = var("OTEL_EXPORTER_OTLP_ENDPOINT") {
            self.endpoint = Some(v.trim().to_owned());
            self.enabled = true;
        }
        if let Some(v) = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            self.traces_endpoint = Some(v.trim().to_owned());
            self.enabled = true;
        }
        if let Some(v) = var("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") {
            self.metrics_endpoint = Some(v.trim().to_owned());
            self.enabled = true;
        }
        if let Some(v) = var("OTEL_EXPORTER_OTLP_HEADERS") {
            self.headers
                .extend(parse_key_values("OTEL_EXPORTER_OTLP_HEADERS", &v)?);
        }
        if let Some(v) = var("OTEL_EXPORTER_OTLP_TIMEOUT") {
            self.timeout_ms = parse_u64("OTEL_EXPORTER_OTLP_TIMEOUT", &v)?;
        }
        if let Some(v) = var("OTEL_SERVICE_NAME") {
            self.service_name = v.trim().to_owned();
        }
        if let Some(v) = var("OTEL_RESOURCE_ATTRIBUTES") {
            self.resource_attributes
                .extend(parse_key_values("OTEL_RESOURCE_ATTRIBUTES", &v)?);
        }
        if let Some(v) = var("OTEL_TRACES_SAMPLER") {
            self.sampler = Sampler::parse(&v)?;
        }
        if let Some(v) = var("OTEL_TRACES_SAMPLER_ARG") {
            let ratio = v.trim().parse::<f64>().map_err(|e| ConfigError::Invalid {
                source_name: "OTEL_TRACES_SAMPLER_ARG",
                value: v.clone(),
                reason: e.to_string(),
            })?;
            self.sampler_arg = Some(ratio);
        }
        if let Some(v) = var("OTEL_TRACES_EXPORTER") {
            self.traces_exporter = Exporter::parse("OTEL_TRACES_EXPORTER", &v)?;
        }
        if let Some(v) = var("OTEL_METRICS_EXPORTER") {
            self.metrics_exporter = Exporter::parse("OTEL_METRICS_EXPORTER", &v)?;
        }
        if let Some(v) = var("OTEL_METRIC_EXPORT_INTERVAL") {
            self.metrics_interval_ms = parse_u64("OTEL_METRIC_EXPORT_INTERVAL", &v)?;
        }
        if let Some(v) = var("OTEL_BSP_MAX_QUEUE_SIZE") {
            self.batch.max_queue_size = parse_usize("OTEL_BSP_MAX_QUEUE_SIZE", &v)?;
        }
        if let Some(v) = var("OTEL_BSP_MAX_EXPORT_BATCH_SIZE") {
            self.batch.max_export_batch_size = parse_usize("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", &v)?;
        }
        if let Some(v) = var("OTEL_BSP_SCHEDULE_DELAY") {
            self.batch.scheduled_delay_ms = parse_u64("OTEL_BSP_SCHEDULE_DELAY", &v)?;
        }
        if let Some(v) = var("OTEL_SDK_DISABLED")
            && parse_bool("OTEL_SDK_DISABLED", &v)?
        {
            self.enabled = false;
        }
        Ok(self)
    }

    /// Whether telemetry is on: `enabled`, or an endpoint given in the table.
    pub fn is_enabled(&self) -> bool {
        self.enabled
            || self.endpoint.is_some()
            || self.traces_endpoint.is_some()
            || self.metrics_endpoint.is_some()
    }

    /// Checks every value; the first wrong one is named.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.is_enabled() {
            self.traces_url()?;
            self.metrics_url()?;
        }
        if self.service_name.trim().is_empty() {
            return Err(invalid("service_name", "", "must not be empty"));
        }
        if let Some(ratio) = self.sampler_arg
            && !(0.0..=1.0).contains(&ratio)
        {
            return Err(invalid(
                "sampler_arg",
                &ratio.to_string(),
                "must be between 0 and 1",
            ));
        }
        let batch = &self.batch;
        if batch.max_queue_size == 0 || batch.max_queue_size > MAX_QUEUE_SIZE {
            return Err(invalid(
                "batch.max_queue_size",
                &batch.max_queue_size.to_string(),
                &format!("must be between 1 and {MAX_QUEUE_SIZE}"),
            ));
        }
        if batch.max_export_batch_size == 0 || batch.max_export_batch_size > batch.max_queue_size {
            return Err(invalid(
                "batch.max_export_batch_size",
                &batch.max_export_batch_size.to_string(),
                "must be between 1 and batch.max_queue_size",
            ));
        }
        for (name, ms) in [
            ("timeout_ms", self.timeout_ms),
            ("metrics_interval_ms", self.metrics_interval_ms),
            ("batch.scheduled_delay_ms", batch.scheduled_delay_ms),
        ] {
            if ms == 0 || ms > 86_400_000 {
                return Err(invalid(
                    name,
                    &ms.to_string(),
                    "must be between 1 ms and one day",
                ));
            }
        }
        for name in self.headers.keys() {
            if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                return Err(invalid("headers", name, "not a valid header name"));
            }
        }
        Ok(())
    }

    /// Where spans are sent.
    pub fn traces_url(&self) -> Result<String, ConfigError> {
        self.signal_url(
            self.traces_endpoint.as_deref(),
            "traces_endpoint",
            "/v1/traces",
        )
    }

    /// Where metrics are sent.
    pub fn metrics_url(&self) -> Result<String, ConfigError> {
        self.signal_url(
            self.metrics_endpoint.as_deref(),
            "metrics_endpoint",
            "/v1/metrics",
        )
    }

    fn signal_url(
        &self,
        own: Option<&str>,
        own_name: &'static str,
        path: &str,
    ) -> Result<String, ConfigError> {
        if let Some(url) = own {
            return parse_url(own_name, url);
        }
        let base = self
            .endpoint
            .as_deref()
            .unwrap_or(self.protocol.default_endpoint());
        let base = parse_url("endpoint", base)?;
        Ok(match self.protocol {
            Protocol::HttpProtobuf => format!("{}{path}", base.trim_end_matches('/')),
            Protocol::Grpc => base,
        })
    }

    /// One export's time limit.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }
}

fn parse_usize(var: &'static str, value: &str) -> Result<usize, ConfigError> {
    let n = parse_u64(var, value)?;
    usize::try_from(n).map_err(|_| ConfigError::Invalid {
        source_name: var,
        value: value.to_owned(),
        reason: "too large".into(),
    })
}

fn invalid(source_name: &'static str, value: &str, reason: &str) -> ConfigError {
    ConfigError::Invalid {
        source_name,
        value: value.to_owned(),
        reason: reason.to_owned(),
    }
}

#[cfg(test)]
mod tests;

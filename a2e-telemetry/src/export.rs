//! The OTLP exporters, and what stands between them and the host: one
//! warning (rate-limited) when the endpoint cannot be reached, counters of
//! what went and what failed.
//!
//! Exports run on the SDK's own threads (the batch span processor's and the
//! periodic metric reader's), never on a caller's: a span's end puts it in a
//! bounded queue (`batch.max_queue_size`) or drops it when the queue is full,
//! and an export that waits on an unreachable endpoint waits on that thread,
//! up to `timeout_ms` per attempt.
//!
//! Without the `otlp` feature only the counting half is here (nothing is
//! exported, so nothing fails).
#![cfg_attr(not(feature = "otlp"), allow(dead_code))]

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[cfg(feature = "otlp")]
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::Temporality;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

#[cfg(feature = "otlp")]
use crate::config::{Protocol, TelemetryConfig};
#[cfg(feature = "otlp")]
use crate::error::TelemetryError;

/// How often at most the warning about an unreachable endpoint is repeated.
pub const WARN_INTERVAL: Duration = Duration::from_secs(300);

/// What the exporters did: shared by the trace and metric exporters of one
/// set-up, read through [`crate::TelemetryGuard::export_stats`].
#[derive(Debug, Default)]
pub(crate) struct ExportHealth {
    exported: AtomicU64,
    failed: AtomicU64,
    warnings: AtomicU64,
    /// When the last warning was given, and whether the endpoint was failing.
    state: Mutex<WarnState>,
    /// Header values and the like, cut out of error texts before they are logged.
    secrets: Vec<String>,
}

#[derive(Debug, Default)]
struct WarnState {
    last_warning: Option<Instant>,
    failing: bool,
}

/// Counts of export requests since set-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportStats {
    /// Export requests that succeeded.
    pub exported: u64,
    /// Export requests that failed (each after the exporter's own retries).
    pub failed: u64,
    /// Warnings logged about them.
    pub warnings: u64,
}

impl ExportHealth {
    pub(crate) fn new(secrets: Vec<String>) -> Self {
        ExportHealth {
            secrets: secrets.into_iter().filter(|s| s.len() >= 4).collect(),
            ..ExportHealth::default()
        }
    }

    pub(crate) fn stats(&self) -> ExportStats {
        ExportStats {
            exported: self.exported.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            warnings: self.warnings.load(Ordering::Relaxed),
        }
    }

    fn record(&self, signal: &'static str, endpoint: &str, result: &OTelSdkResult) {
        let mut state = match self.state.lock() {
            Ok(state) => state,
            Err(poisoned) => poisoned.into_inner(),
        };
        match result {
            Ok(()) => {
                self.exported.fetch_add(1, Ordering::Relaxed);
                if std::mem::take(&mut state.failing) {
                    tracing::info!(
                        signal,
                        endpoint,
                        "telemetry: the OTLP endpoint answers again"
                    );
                }
            }
            Err(error) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                state.failing = true;
                let now = Instant::now();
                let due = state
                    .last_warning
                    .is_none_or(|last| now.duration_since(last) >= WARN_INTERVAL);
                if due {
                    state.last_warning = Some(now);
                    self.warnings.fetch_add(1, Ordering::Relaxed);
                    let error = self.scrub(&error.to_string());
                    tracing::warn!(
                        signal,
                        endpoint,
                        %error,
                        "telemetry: cannot export to the OTLP endpoint; what cannot be sent is \
                         dropped (this warning repeats at most every {} s)",
                        WARN_INTERVAL.as_secs()
                    );
                }
            }
        }
    }

    fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            out = out.replace(secret.as_str(), "[REDACTED]");
        }
        out
    }
}

/// An exporter whose results are counted and warned about.
#[derive(Debug)]
pub(crate) struct Watched<E> {
    inner: E,
    signal: &'static str,
    endpoint: String,
    health: Arc<ExportHealth>,
}

impl<E> Watched<E> {
    pub(crate) fn new(
        inner: E,
        signal: &'static str,
        endpoint: &str,
        health: Arc<ExportHealth>,
    ) -> Self {
        Watched {
            inner,
            signal,
            endpoint: without_userinfo(endpoint),
            health,
        }
    }
}

impl<E: SpanExporter> SpanExporter for Watched<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        self.health.record(self.signal, &self.endpoint, &result);
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: PushMetricExporter> PushMetricExporter for Watched<E> {
    async fn export(&self, metrics: &ResourceMetrics) -> OTelSdkResult {
        let result = self.inner.export(metrics).await;
        self.health.record(self.signal, &self.endpoint, &result);
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> Temporality {
        self.inner.temporality()
    }
}

/// The span exporter the configuration asks for.
#[cfg(feature = "otlp")]
pub(crate) fn span_exporter(
    config: &TelemetryConfig,
) -> Result<opentelemetry_otlp::SpanExporter, TelemetryError> {
    let url = config.traces_url()?;
    let built = match config.protocol {
        Protocol::HttpProtobuf => over_http(
            opentelemetry_otlp::SpanExporter::builder().with_http(),
            config,
            url,
        )?
        .build(),
        Protocol::Grpc => return grpc::span_exporter(config, url),
    };
    built.map_err(|source| TelemetryError::Exporter {
        signal: "traces",
        source,
    })
}

/// The metric exporter the configuration asks for.
#[cfg(feature = "otlp")]
pub(crate) fn metric_exporter(
    config: &TelemetryConfig,
) -> Result<opentelemetry_otlp::MetricExporter, TelemetryError> {
    let url = config.metrics_url()?;
    let built = match config.protocol {
        Protocol::HttpProtobuf => over_http(
            opentelemetry_otlp::MetricExporter::builder().with_http(),
            config,
            url,
        )?
        .build(),
        Protocol::Grpc => return grpc::metric_exporter(config, url),
    };
    built.map_err(|source| TelemetryError::Exporter {
        signal: "metrics",
        source,
    })
}

/// An OTLP/HTTP exporter builder (traces or metrics) set up from the
/// configuration: binary protobuf to `url`, its timeout, headers and client.
#[cfg(feature = "otlp")]
fn over_http<B: WithExportConfig + WithHttpConfig>(
    builder: B,
    config: &TelemetryConfig,
    url: String,
) -> Result<B, TelemetryError> {
    Ok(builder
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(url)
        .with_timeout(config.timeout())
        .with_headers(config.headers.clone().into_iter().collect())
        .with_http_client(http_client(config)?))
}

/// A blocking client (the batch processor's thread waits on it, no runtime
/// needed) on the workspace's rustls set-up. Built on a thread of its own:
/// a blocking client may not be made inside an async context.
#[cfg(feature = "otlp")]
fn http_client(config: &TelemetryConfig) -> Result<reqwest::blocking::Client, TelemetryError> {
    let tls = a2e_http::tls_config().map_err(|e| TelemetryError::HttpClient(e.to_string()))?;
    let timeout = config.timeout();
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                reqwest::blocking::Client::builder()
                    .tls_backend_preconfigured(tls)
                    .timeout(timeout)
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
            })
            .join()
    })
    .map_err(|_| TelemetryError::HttpClient("the thread building it panicked".into()))?
    .map_err(|e| TelemetryError::HttpClient(e.to_string()))
}

/// `scheme://host:port/path` without a `user:password@` part.
fn without_userinfo(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    }
}

#[cfg(feature = "grpc")]
mod grpc {
    use opentelemetry_otlp::{WithExportConfig, WithTonicConfig};
    use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};

    use super::*;

    fn metadata(config: &TelemetryConfig) -> Result<MetadataMap, TelemetryError> {
        let mut map = MetadataMap::new();
        for (name, value) in &config.headers {
            let key =
                MetadataKey::from_bytes(name.to_ascii_lowercase().as_bytes()).map_err(|_| {
                    crate::error::ConfigError::Invalid {
                        source_name: "headers",
                        value: name.clone(),
                        reason: "not a valid gRPC metadata key".into(),
                    }
                })?;
            let value = MetadataValue::try_from(value.as_str()).map_err(|_| {
                crate::error::ConfigError::Invalid {
                    source_name: "headers",
                    value: name.clone(),
                    reason: "the value is not valid gRPC metadata".into(),
                }
            })?;
            map.insert(key, value);
        }
        Ok(map)
    }

    fn in_runtime() -> Result<(), TelemetryError> {
        tokio::runtime::Handle::try_current()
            .map(drop)
            .map_err(|_| TelemetryError::NoRuntime)
    }

    pub(super) fn span_exporter(
        config: &TelemetryConfig,
        url: String,
    ) -> Result<opentelemetry_otlp::SpanExporter, TelemetryError> {
        in_runtime()?;
        opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(url)
            .with_timeout(config.timeout())
            .with_metadata(metadata(config)?)
            .build()
            .map_err(|source| TelemetryError::Exporter {
                signal: "traces",
                source,
            })
    }

    pub(super) fn metric_exporter(
        config: &TelemetryConfig,
        url: String,
    ) -> Result<opentelemetry_otlp::MetricExporter, TelemetryError> {
        in_runtime()?;
        opentelemetry_otlp::MetricExporter::builder()
            .with_tonic()
            .with_endpoint(url)
            .with_timeout(config.timeout())
            .with_metadata(metadata(config)?)
            .build()
            .map_err(|source| TelemetryError::Exporter {
                signal: "metrics",
                source,
            })
    }
}

#[cfg(all(feature = "otlp", not(feature = "grpc")))]
mod grpc {
    use super::*;

    pub(super) fn span_exporter(
        _: &TelemetryConfig,
        _: String,
    ) -> Result<opentelemetry_otlp::SpanExporter, TelemetryError> {
        Err(TelemetryError::GrpcUnavailable)
    }

    pub(super) fn metric_exporter(
        _: &TelemetryConfig,
        _: String,
    ) -> Result<opentelemetry_otlp::MetricExporter, TelemetryError> {
        Err(TelemetryError::GrpcUnavailable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_sdk::error::OTelSdkError;

    #[test]
    fn userinfo_is_cut_from_endpoints() {
        assert_eq!(
            without_userinfo("https://user:pw@otel.example.com:4318/v1/traces"),
            "https://otel.example.com:4318/v1/traces"
        );
        assert_eq!(without_userinfo("http://h:1"), "http://h:1");
    }

    #[test]
    fn failures_warn_once_per_interval_and_count() {
        let health = ExportHealth::new(vec!["sk-fake-123".into()]);
        let failure: OTelSdkResult = Err(OTelSdkError::InternalFailure(
            "refused with key sk-fake-123".into(),
        ));
        for _ in 0..5 {
            health.record("traces", "http://h", &failure);
        }
        health.record("traces", "http://h", &Ok(()));
        health.record("traces", "http://h", &failure);
        assert_eq!(
            health.stats(),
            ExportStats {
                exported: 1,
                failed: 6,
                warnings: 1
            }
        );
        assert_eq!(health.scrub("a sk-fake-123 b"), "a [REDACTED] b");
    }
}

//! Setting telemetry up: the tracer and meter providers, the `tracing` layer,
//! the guard that flushes on drop, and the handle the host keeps.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::InstrumentationScope;
use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider;
use opentelemetry::trace::TracerProvider;
use opentelemetry_sdk::Resource;
#[cfg(feature = "otlp")]
use opentelemetry_sdk::metrics::PeriodicReader;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::resource::TelemetryResourceDetector;
#[cfg(feature = "otlp")]
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

use crate::config::{Exporter, Sampler, TelemetryConfig};
use crate::error::TelemetryError;
#[cfg(feature = "otlp")]
use crate::export::{self, Watched};
use crate::export::{ExportHealth, ExportStats};
use crate::metrics::{Instruments, Metrics};

/// The `tracing` target of every span this crate makes; the OpenTelemetry
/// layer of [`Telemetry::layer`] sees spans of this target only.
pub const SPAN_TARGET: &str = "a2e_otel";

/// How long dropping the guard waits for the last export, per signal.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The content type of [`Telemetry::prometheus_text`].
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The handle a host keeps: span helpers, metrics, the Prometheus text.
/// Clone it freely. [`Telemetry::disabled`] (the default) records nothing and
/// costs a branch per call.
#[derive(Debug, Clone, Default)]
pub struct Telemetry {
    inner: Option<Arc<Inner>>,
    metrics: Metrics,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) capture_content: bool,
    pub(crate) secrets: Arc<[String]>,
    tracer: Option<SdkTracer>,
    registry: prometheus::Registry,
}

/// Flushes and stops the exporters when dropped (each signal waits at most
/// [`SHUTDOWN_TIMEOUT`]). Drop it outside the async runtime, or on a
/// multi-threaded one: the gRPC exporter finishes its last export on the
/// runtime.
#[derive(Debug)]
#[must_use = "dropping the guard stops the exporters"]
pub struct TelemetryGuard {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    health: Arc<ExportHealth>,
}

impl TelemetryGuard {
    /// Exports what is queued now (spans and metrics), waiting for it.
    pub fn flush(&self) {
        if let Some(p) = &self.tracer_provider {
            let _ = p.force_flush();
        }
        if let Some(p) = &self.meter_provider {
            let _ = p.force_flush();
        }
    }

    /// What the exporters did since set-up.
    pub fn export_stats(&self) -> ExportStats {
        self.health.stats()
    }
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        if let Some(p) = self.tracer_provider.take() {
            let _ = p.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
        }
        if let Some(p) = self.meter_provider.take() {
            let _ = p.shutdown_with_timeout(SHUTDOWN_TIMEOUT);
        }
    }
}

impl Telemetry {
    /// Telemetry that records nothing.
    pub fn disabled() -> Self {
        Telemetry::default()
    }

    /// Sets telemetry up as `config` says (apply [`TelemetryConfig::with_env`]
    /// first for the standard variables). Off: a disabled handle, no threads,
    /// no exporters. With `protocol = "grpc"` it must run inside a Tokio runtime.
    pub fn init(config: &TelemetryConfig) -> Result<(Telemetry, TelemetryGuard), TelemetryError> {
        let health = Arc::new(ExportHealth::new(
            config.headers.values().cloned().collect(),
        ));
        if !config.is_enabled() {
            let guard = TelemetryGuard {
                tracer_provider: None,
                meter_provider: None,
                health,
            };
            return Ok((Telemetry::disabled(), guard));
        }
        config.validate()?;
        let resource = resource(config);
        let scope = InstrumentationScope::builder("a2e")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();

        let tracer_provider = match config.traces_exporter {
            Exporter::None => None,
            Exporter::Otlp => Some(otlp::tracer_provider(
                config,
                resource.clone(),
                sampler(config),
                &health,
            )?),
        };
        let tracer = tracer_provider
            .as_ref()
            .map(|p| p.tracer_with_scope(scope.clone()));

        let registry = prometheus::Registry::new();
        let prometheus = opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .scope_info_enabled(false)
            .build()
            .map_err(|e| TelemetryError::Prometheus(e.to_string()))?;
        let mut meters = SdkMeterProvider::builder()
            .with_resource(resource)
            .with_reader(prometheus);
        if config.metrics_exporter == Exporter::Otlp {
            meters = meters.with_reader(otlp::metric_reader(config, &health)?);
        }
        let meter_provider = meters.build();
        let instruments = Instruments::new(&meter_provider.meter_with_scope(scope));

        let secrets: Vec<String> = config
            .headers
            .values()
            .filter(|v| v.len() >= 4)
            .cloned()
            .collect();
        let telemetry = Telemetry {
            inner: Some(Arc::new(Inner {
                capture_content: config.capture_content,
                secrets: secrets.into(),
                tracer,
                registry,
            })),
            metrics: Metrics::new(Some(Arc::new(instruments))),
        };
        let guard = TelemetryGuard {
            tracer_provider,
            meter_provider: Some(meter_provider),
            health,
        };
        Ok((telemetry, guard))
    }

    /// The same telemetry, cutting these values (provider keys and the like)
    /// out of every content attribute and error message too.
    pub fn with_secrets<I, S>(&self, secrets: I) -> Telemetry
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let Some(inner) = &self.inner else {
            return self.clone();
        };
        let mut all: Vec<String> = inner.secrets.to_vec();
        all.extend(
            secrets
                .into_iter()
                .map(Into::into)
                .filter(|s: &String| s.len() >= 4),
        );
        Telemetry {
            inner: Some(Arc::new(Inner {
                capture_content: inner.capture_content,
                secrets: all.into(),
                tracer: inner.tracer.clone(),
                registry: inner.registry.clone(),
            })),
            metrics: self.metrics.clone(),
        }
    }

    /// Whether telemetry is on.
    pub fn is_enabled(&self) -> bool {
        self.inner.is_some()
    }

    /// Whether spans are recorded (on, with a trace exporter).
    pub fn traces_enabled(&self) -> bool {
        self.traced().is_some()
    }

    pub(crate) fn traced(&self) -> Option<&Inner> {
        self.inner.as_deref().filter(|i| i.tracer.is_some())
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The `tracing` layer that turns this crate's spans (target
    /// [`SPAN_TARGET`]) into OpenTelemetry spans; `None` when spans are not
    /// exported. Add it to the subscriber: `registry().with(telemetry.layer())`.
    pub fn layer<S>(&self) -> Option<Box<dyn Layer<S> + Send + Sync + 'static>>
    where
        S: Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        let tracer = self.traced()?.tracer.clone()?;
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_context_activation(false)
            .with_filter(Targets::new().with_target(SPAN_TARGET, tracing::Level::TRACE));
        Some(Box::new(layer))
    }

    /// The metrics in the Prometheus text format (for `/metrics`, served as
    /// [`PROMETHEUS_CONTENT_TYPE`]); `None` with telemetry off.
    pub fn prometheus_text(&self) -> Option<String> {
        let inner = self.inner.as_ref()?;
        let families = inner.registry.gather();
        let mut out = String::new();
        prometheus::TextEncoder::new()
            .encode_utf8(&families, &mut out)
            .ok()?;
        Some(out)
    }
}

/// The OTLP halves of [`Telemetry::init`].
#[cfg(feature = "otlp")]
mod otlp {
    use super::*;

    pub(super) fn tracer_provider(
        config: &TelemetryConfig,
        resource: Resource,
        sampler: opentelemetry_sdk::trace::Sampler,
        health: &Arc<ExportHealth>,
    ) -> Result<SdkTracerProvider, TelemetryError> {
        let url = config.traces_url()?;
        let exporter = Watched::new(
            export::span_exporter(config)?,
            "traces",
            &url,
            health.clone(),
        );
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(config.batch.max_queue_size)
            .with_max_export_batch_size(config.batch.max_export_batch_size)
            .with_scheduled_delay(Duration::from_millis(config.batch.scheduled_delay_ms))
            .build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch)
            .build();
        Ok(SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_sampler(sampler)
            .with_resource(resource)
            .build())
    }

    pub(super) fn metric_reader(
        config: &TelemetryConfig,
        health: &Arc<ExportHealth>,
    ) -> Result<PeriodicReader<Watched<opentelemetry_otlp::MetricExporter>>, TelemetryError> {
        let url = config.metrics_url()?;
        let exporter = Watched::new(
            export::metric_exporter(config)?,
            "metrics",
            &url,
            health.clone(),
        );
        Ok(PeriodicReader::builder(exporter)
            .with_interval(Duration::from_millis(config.metrics_interval_ms))
            .build())
    }
}

/// Without the `otlp` feature: an OTLP exporter asked for is refused by name.
#[cfg(not(feature = "otlp"))]
mod otlp {
    use super::*;

    pub(super) fn tracer_provider(
        _: &TelemetryConfig,
        _: Resource,
        _: opentelemetry_sdk::trace::Sampler,
        _: &Arc<ExportHealth>,
    ) -> Result<SdkTracerProvider, TelemetryError> {
        Err(TelemetryError::OtlpUnavailable("traces"))
    }

    pub(super) fn metric_reader(
        _: &TelemetryConfig,
        _: &Arc<ExportHealth>,
    ) -> Result<opentelemetry_sdk::metrics::ManualReader, TelemetryError> {
        Err(TelemetryError::OtlpUnavailable("metrics"))
    }
}

fn resource(config: &TelemetryConfig) -> Resource {
    Resource::builder_empty()
        .with_detector(Box::new(TelemetryResourceDetector))
        .with_attributes(
            config
                .resource_attributes
                .iter()
                .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
        )
        .with_service_name(config.service_name.clone())
        .build()
}

fn sampler(config: &TelemetryConfig) -> opentelemetry_sdk::trace::Sampler {
    use opentelemetry_sdk::trace::Sampler as S;
    let ratio = config.sampler_arg.unwrap_or(1.0);
    match config.sampler {
        Sampler::AlwaysOn => S::AlwaysOn,
        Sampler::AlwaysOff => S::AlwaysOff,
        Sampler::TraceIdRatio => S::TraceIdRatioBased(ratio),
        Sampler::ParentBasedAlwaysOn => S::ParentBased(Box::new(S::AlwaysOn)),
        Sampler::ParentBasedAlwaysOff => S::ParentBased(Box::new(S::AlwaysOff)),
        Sampler::ParentBasedTraceIdRatio => S::ParentBased(Box::new(S::TraceIdRatioBased(ratio))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_exporters_metrics_are_still_served() {
        let config = TelemetryConfig {
            enabled: true,
            traces_exporter: Exporter::None,
            metrics_exporter: Exporter::None,
            ..TelemetryConfig::default()
        };
        let (telemetry, _guard) = Telemetry::init(&config).unwrap();
        telemetry.metrics().request("tool/call", crate::metrics::OK);
        let text = telemetry.prometheus_text().unwrap();
        assert!(text.contains("a2e_requests_total"), "{text}");
    }

    #[cfg(not(feature = "otlp"))]
    #[test]
    fn an_otlp_exporter_is_refused_by_name_without_the_feature() {
        let config = TelemetryConfig {
            enabled: true,
            ..TelemetryConfig::default()
        };
        let err = Telemetry::init(&config).unwrap_err();
        assert!(
            matches!(err, TelemetryError::OtlpUnavailable("traces")),
            "{err}"
        );
        assert!(err.to_string().contains("`otlp` feature"), "{err}");
        let config = TelemetryConfig {
            enabled: true,
            traces_exporter: Exporter::None,
            ..TelemetryConfig::default()
        };
        let err = Telemetry::init(&config).unwrap_err();
        assert!(
            matches!(err, TelemetryError::OtlpUnavailable("metrics")),
            "{err}"
        );
    }
}

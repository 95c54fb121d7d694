//! Setting telemetry up: the tracer and meter providers, the `tracing` layer,
//! the guard that flushes on drop, and the handle the host keeps.

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::InstrumentationScope;
use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider;
use opentelemetry::trace::TracerProvider;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::resource::TelemetryResourceDetector;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider,
};
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

use crate::config::{Exporter, Sampler, TelemetryConfig};
use crate::error::TelemetryError;
use crate::export::{self, ExportHealth, ExportStats, Watched};
use crate::metrics::{Instruments, Metrics};
use crate::spans::SPAN_TARGET;

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
            Exporter::Otlp => {
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
                Some(
                    SdkTracerProvider::builder()
                        .with_span_processor(processor)
                        .with_sampler(sampler(config))
                        .with_resource(resource.clone())
                        .build(),
                )
            }
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
            let url = config.metrics_url()?;
            let exporter = Watched::new(
                export::metric_exporter(config)?,
                "metrics",
                &url,
                health.clone(),
            );
            meters = meters.with_reader(
                PeriodicReader::builder(exporter)
                    .with_interval(Duration::from_millis(config.metrics_interval_ms))
                    .build(),
            );
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

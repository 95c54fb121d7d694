//! Errors of configuration and set-up.

/// A configuration value that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A value of the table or a variable is wrong.
    #[error("telemetry setting `{source_name}`: `{value}` is invalid: {reason}")]
    Invalid {
        /// The table key or environment variable.
        source_name: &'static str,
        /// The value as given (a header's name, never its value).
        value: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// Telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The configuration is wrong.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The OTLP exporter could not be built.
    #[cfg(feature = "otlp")]
    #[error("the OTLP {signal} exporter could not be built: {source}")]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// Why.
        #[source]
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// The HTTP client for OTLP/HTTP could not be built.
    #[error("the OTLP/HTTP client could not be built: {0}")]
    HttpClient(String),
    /// An OTLP exporter was asked for, and the crate was built without its
    /// `otlp` feature.
    #[error(
        "the OTLP {0} exporter needs a2e-telemetry's `otlp` feature (set `{0}_exporter = \"none\"` \
         to keep {0} local)"
    )]
    OtlpUnavailable(&'static str),
    /// gRPC needs the crate's `grpc` feature.
    #[error("OTLP over gRPC needs a2e-telemetry's `grpc` feature")]
    GrpcUnavailable,
    /// gRPC exporters run on the Tokio runtime they were made in.
    #[error("OTLP over gRPC must be set up inside a Tokio runtime")]
    NoRuntime,
    /// The Prometheus registry refused the exporter.
    #[error("the Prometheus exporter could not be set up: {0}")]
    Prometheus(String),
}

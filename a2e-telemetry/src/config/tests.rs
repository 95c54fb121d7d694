use super::*;
use std::collections::HashMap;

fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| map.get(k).cloned()
}

#[test]
fn off_by_default_and_without_variables() {
    let config = TelemetryConfig::default().with_env_from(env(&[])).unwrap();
    assert!(!config.is_enabled());
    assert!(!config.capture_content);
    config.validate().unwrap();
}

#[test]
fn the_standard_variables_configure_everything() {
    let config = TelemetryConfig::default()
        .with_env_from(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317/"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_SERVICE_NAME", "edge-host"),
            ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment.name=prod,team=a%20b",
            ),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=abc%3D"),
        ]))
        .unwrap();
    assert!(config.is_enabled());
    assert_eq!(config.protocol, Protocol::Grpc);
    assert_eq!(config.service_name, "edge-host");
    assert_eq!(config.sampler, Sampler::ParentBasedTraceIdRatio);
    assert_eq!(config.sampler_arg, Some(0.25));
    assert_eq!(config.resource_attributes["team"], "a b");
    assert_eq!(config.headers["x-api-key"], "abc=");
    assert_eq!(config.traces_url().unwrap(), "http://collector:4317/");
    config.validate().unwrap();
}

#[test]
fn http_urls_get_the_signal_paths_and_signal_endpoints_win() {
    let config = TelemetryConfig::default()
        .with_env_from(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://m:9/x"),
        ]))
        .unwrap();
    assert_eq!(
        config.traces_url().unwrap(),
        "http://127.0.0.1:4318/v1/traces"
    );
    assert_eq!(config.metrics_url().unwrap(), "http://m:9/x");
    let local = TelemetryConfig {
        enabled: true,
        ..TelemetryConfig::default()
    };
    assert_eq!(
        local.traces_url().unwrap(),
        "http://localhost:4318/v1/traces"
    );
}

#[test]
fn sdk_disabled_wins_and_empty_values_are_unset() {
    let config = TelemetryConfig {
        enabled: true,
        ..TelemetryConfig::default()
    }
    .with_env_from(env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x:1"),
        ("OTEL_SDK_DISABLED", "true"),
        ("OTEL_SERVICE_NAME", " "),
    ]))
    .unwrap();
    assert!(!config.enabled);
    assert_eq!(config.service_name, "a2e");
}

#[test]
fn bad_values_are_named() {
    let err = TelemetryConfig::default()
        .with_env_from(env(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]))
        .unwrap_err();
    assert!(
        err.to_string().contains("OTEL_EXPORTER_OTLP_PROTOCOL"),
        "{err}"
    );
    let err = TelemetryConfig::default()
        .with_env_from(env(&[("OTEL_TRACES_SAMPLER", "xray")]))
        .unwrap_err();
    assert!(err.to_string().contains("`xray`"), "{err}");
    let err = TelemetryConfig::default()
        .with_env_from(env(&[("OTEL_RESOURCE_ATTRIBUTES", "novalue")]))
        .unwrap_err();
    assert!(
        err.to_string().contains("OTEL_RESOURCE_ATTRIBUTES"),
        "{err}"
    );
    let bad_url = TelemetryConfig {
        endpoint: Some("localhost:4318".into()),
        ..TelemetryConfig::default()
    };
    let err = bad_url.validate().unwrap_err();
    assert!(err.to_string().contains("endpoint"), "{err}");
    let ratio = TelemetryConfig {
        sampler_arg: Some(1.5),
        ..TelemetryConfig::default()
    };
    assert!(
        ratio
            .validate()
            .unwrap_err()
            .to_string()
            .contains("sampler_arg")
    );
    let queue = TelemetryConfig {
        batch: BatchSettings {
            max_queue_size: 0,
            ..BatchSettings::default()
        },
        ..TelemetryConfig::default()
    };
    assert!(queue.validate().is_err());
}

#[test]
fn the_table_reads_from_toml_and_headers_never_print() {
    let config: TelemetryConfig = toml::from_str(
        r#"
        enabled = true
        endpoint = "https://otel.example.com"
        protocol = "grpc"
        capture_content = true
        sampler = "traceidratio"
        sampler_arg = 0.5
        headers = { authorization = "Bearer sk-fake-telemetry-key" }
        [batch]
        max_queue_size = 64
        "#,
    )
    .unwrap();
    assert!(config.capture_content);
    assert_eq!(config.protocol, Protocol::Grpc);
    assert_eq!(config.batch.max_queue_size, 64);
    assert_eq!(config.batch.max_export_batch_size, 512);
    let shown = format!("{config:?}");
    assert!(shown.contains("authorization"));
    assert!(!shown.contains("sk-fake-telemetry-key"), "{shown}");
    // The batch may not exceed the queue.
    assert!(config.validate().is_err());
    let unknown = toml::from_str::<TelemetryConfig>("enable = true").unwrap_err();
    assert!(unknown.to_string().contains("enable"), "{unknown}");
}

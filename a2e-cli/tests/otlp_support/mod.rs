//! An OTLP/HTTP receiver for the telemetry tests of the binary: it decodes
//! what a host exports with the official OpenTelemetry protobuf definitions.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// What the receiver got.
#[derive(Default)]
pub struct Received {
    pub spans: Vec<Span>,
    pub metric_names: Vec<String>,
    /// Every body as it came.
    pub raw: Vec<Vec<u8>>,
}

/// An OTLP/HTTP receiver on a free loopback port, on a runtime of its own.
pub fn receiver() -> (String, Arc<Mutex<Received>>, tokio::runtime::Runtime) {
    let got = Arc::new(Mutex::new(Received::default()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (traces, metrics) = (got.clone(), got.clone());
    let app = axum::Router::new()
        .route(
            "/v1/traces",
            axum::routing::post(move |body: Bytes| async move {
                let request = ExportTraceServiceRequest::decode(body.clone()).unwrap();
                let mut got = traces.lock().unwrap();
                got.raw.push(body.to_vec());
                for rs in request.resource_spans {
                    for ss in rs.scope_spans {
                        got.spans.extend(ss.spans);
                    }
                }
                ""
            }),
        )
        .route(
            "/v1/metrics",
            axum::routing::post(move |body: Bytes| async move {
                let request = ExportMetricsServiceRequest::decode(body.clone()).unwrap();
                let mut got = metrics.lock().unwrap();
                got.raw.push(body.to_vec());
                for rm in request.resource_metrics {
                    for sm in rm.scope_metrics {
                        got.metric_names
                            .extend(sm.metrics.into_iter().map(|m| m.name));
                    }
                }
                ""
            }),
        );
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), got, runtime)
}

pub fn attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?;
    match value.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::IntValue(n) => Some(n.to_string()),
        _ => None,
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The spans named `name`.
pub fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// Waits up to `within` until `ready` holds for what arrived.
pub fn wait_for(
    got: &Arc<Mutex<Received>>,
    within: std::time::Duration,
    ready: impl Fn(&Received) -> bool,
) -> bool {
    let deadline = std::time::Instant::now() + within;
    loop {
        if ready(&got.lock().unwrap()) {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

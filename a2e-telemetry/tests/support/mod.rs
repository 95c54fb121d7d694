//! An OTLP receiver inside the test: OTLP/HTTP (axum) or OTLP/gRPC (tonic),
//! decoding what is exported with the official protobuf definitions
//! (`opentelemetry-proto`), keeping the raw bodies too.

#![allow(dead_code)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::Metric;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use tokio::sync::oneshot;

/// What the receiver got.
#[derive(Default)]
pub struct Received {
    pub traces: Vec<ExportTraceServiceRequest>,
    pub metrics: Vec<ExportMetricsServiceRequest>,
    /// Every request body as it came (protobuf bytes).
    pub raw: Vec<Vec<u8>>,
    /// The headers (or gRPC metadata) of every request.
    pub headers: Vec<HashMap<String, String>>,
}

pub struct Receiver {
    pub addr: SocketAddr,
    pub grpc: bool,
    got: Arc<Mutex<Received>>,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

fn header_map(headers: &HeaderMap) -> HashMap<String, String> {
    headers
        .iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect()
}

impl Receiver {
    /// OTLP/HTTP on a free loopback port: `POST /v1/traces`, `POST /v1/metrics`.
    pub async fn http() -> Receiver {
        let got = Arc::new(Mutex::new(Received::default()));
        let (traces, metrics) = (got.clone(), got.clone());
        let app = axum::Router::new()
            .route(
                "/v1/traces",
                axum::routing::post(move |headers: HeaderMap, body: Bytes| async move {
                    let Ok(request) = ExportTraceServiceRequest::decode(body.clone()) else {
                        return (StatusCode::BAD_REQUEST, Vec::new());
                    };
                    let mut got = traces.lock().unwrap();
                    got.raw.push(body.to_vec());
                    got.headers.push(header_map(&headers));
                    got.traces.push(request);
                    (
                        StatusCode::OK,
                        ExportTraceServiceResponse::default().encode_to_vec(),
                    )
                }),
            )
            .route(
                "/v1/metrics",
                axum::routing::post(move |headers: HeaderMap, body: Bytes| async move {
                    let Ok(request) = ExportMetricsServiceRequest::decode(body.clone()) else {
                        return (StatusCode::BAD_REQUEST, Vec::new());
                    };
                    let mut got = metrics.lock().unwrap();
                    got.raw.push(body.to_vec());
                    got.headers.push(header_map(&headers));
                    got.metrics.push(request);
                    (
                        StatusCode::OK,
                        ExportMetricsServiceResponse::default().encode_to_vec(),
                    )
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await;
        });
        Receiver {
            addr,
            grpc: false,
            got,
            stop: Some(stop),
        }
    }

    /// OTLP/gRPC on a free loopback port.
    pub async fn grpc() -> Receiver {
        let got = Arc::new(Mutex::new(Received::default()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let service = Grpc(got.clone());
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(service.clone()))
                .add_service(MetricsServiceServer::new(service))
                .serve_with_incoming_shutdown(
                    tonic::transport::server::TcpIncoming::from(listener),
                    async {
                        let _ = stopped.await;
                    },
                )
                .await;
        });
        Receiver {
            addr,
            grpc: true,
            got,
            stop: Some(stop),
        }
    }

    /// The base endpoint to configure.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn with<T>(&self, f: impl FnOnce(&Received) -> T) -> T {
        f(&self.got.lock().unwrap())
    }

    /// Every span received, in arrival order.
    pub fn spans(&self) -> Vec<Span> {
        self.with(|got| {
            got.traces
                .iter()
                .flat_map(|r| &r.resource_spans)
                .flat_map(|rs| &rs.scope_spans)
                .flat_map(|ss| ss.spans.clone())
                .collect()
        })
    }

    /// The resource attributes of the first span batch.
    pub fn resource(&self) -> Vec<KeyValue> {
        self.with(|got| {
            got.traces
                .iter()
                .flat_map(|r| &r.resource_spans)
                .find_map(|rs| rs.resource.clone())
                .map(|r| r.attributes)
                .unwrap_or_default()
        })
    }

    /// Every metric received (each export holds the cumulative state).
    pub fn metrics(&self) -> Vec<Metric> {
        self.with(|got| {
            got.metrics
                .iter()
                .flat_map(|r| &r.resource_metrics)
                .flat_map(|rm| &rm.scope_metrics)
                .flat_map(|sm| sm.metrics.clone())
                .collect()
        })
    }

    /// Whether `needle` occurs in any body received.
    pub fn raw_contains(&self, needle: &str) -> bool {
        self.with(|got| {
            got.raw
                .iter()
                .any(|body| body.windows(needle.len()).any(|w| w == needle.as_bytes()))
        })
    }

    /// Waits (a bounded time) until `ready` holds.
    pub async fn wait_until(&self, what: &str, ready: impl Fn(&Received) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.with(&ready) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[derive(Clone)]
struct Grpc(Arc<Mutex<Received>>);

fn metadata_map(metadata: &tonic::metadata::MetadataMap) -> HashMap<String, String> {
    header_map(&metadata.clone().into_headers())
}

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let headers = metadata_map(request.metadata());
        let request = request.into_inner();
        let mut got = self.0.lock().unwrap();
        got.raw.push(request.encode_to_vec());
        got.headers.push(headers);
        got.traces.push(request);
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportMetricsServiceRequest>,
    ) -> Result<tonic::Response<ExportMetricsServiceResponse>, tonic::Status> {
        let headers = metadata_map(request.metadata());
        let request = request.into_inner();
        let mut got = self.0.lock().unwrap();
        got.raw.push(request.encode_to_vec());
        got.headers.push(headers);
        got.metrics.push(request);
        Ok(tonic::Response::new(ExportMetricsServiceResponse::default()))
    }
}

/// An attribute's value as text (strings as they are, numbers printed).
pub fn attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(value_text)
}

pub fn value_text(value: &AnyValue) -> Option<String> {
    match value.value.as_ref()? {
        any_value::Value::StringValue(s) => Some(s.clone()),
        any_value::Value::IntValue(n) => Some(n.to_string()),
        any_value::Value::BoolValue(b) => Some(b.to_string()),
        any_value::Value::DoubleValue(d) => Some(d.to_string()),
        any_value::Value::ArrayValue(list) => Some(
            list.values
                .iter()
                .filter_map(value_text)
                .collect::<Vec<_>>()
                .join(","),
        ),
        _ => None,
    }
}

/// An integer attribute.
pub fn int_attr(attributes: &[KeyValue], key: &str) -> Option<i64> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| match v.value.as_ref()? {
            any_value::Value::IntValue(n) => Some(*n),
            _ => None,
        })
}

/// The span named `name`.
pub fn span<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| {
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
        panic!("no span `{name}` among {names:?}")
    })
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

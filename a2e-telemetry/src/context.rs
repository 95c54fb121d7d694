//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>): the
//! `traceparent` (and `tracestate`) that carry a trace across every hop,
//! read and written by OpenTelemetry's [`TraceContextPropagator`].
//!
//! In: an incoming value ([`TraceContext::from_headers`], [`TraceContext::from_meta`]
//! for MCP's `params._meta`, [`TraceContext::parse`] for the A2E envelope's
//! field, [`TraceContext::extract`] for any string map such as NATS headers)
//! becomes the parent of the request's span ([`Parent::Remote`](crate::Parent)).
//! Out: the context of the span making the call ([`TraceContext::of`]) goes
//! into the outbound request ([`TraceContext::to_headers`],
//! [`TraceContext::to_meta`], [`TraceContext::inject`]).
//!
//! Each carrier is an OpenTelemetry [`Extractor`] / [`Injector`]
//! (`carriers.rs`). Before the propagator reads a `traceparent`,
//! `check_grammar` holds it to the W3C grammar, which the propagator leaves
//! to Rust's integer parsing (that takes `00-1-1-01`, an uppercase version
//! or a leading `+`); it also names what is wrong, for the log line of an
//! ignored context.

use std::fmt;
use std::str::FromStr;

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry::trace::{SpanContext, TraceContextExt};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{Map, Value};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use carriers::{Bounded, Headers, HeadersMut, Meta, MetaMut, Setter, lookup};

mod carriers;

/// The header (and `_meta` key) of the parent.
pub const TRACEPARENT: &str = "traceparent";
/// The header (and `_meta` key) of vendor state.
pub const TRACESTATE: &str = "tracestate";

/// A `traceparent` longer than this is refused before it is read.
pub const MAX_TRACEPARENT_LEN: usize = 256;
/// A `tracestate` longer than this is dropped (the parent is kept), as the
/// W3C text allows.
pub const MAX_TRACESTATE_LEN: usize = 512;

/// Why a `traceparent` cannot be used. The W3C rule for all of them: start a
/// new trace as if there were none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceContextError {
    /// Over [`MAX_TRACEPARENT_LEN`] bytes.
    #[error("traceparent is {0} bytes long; at most {MAX_TRACEPARENT_LEN} are read")]
    TooLong(usize),
    /// Not `version-traceid-parentid-flags` with the lengths of version 00.
    #[error("traceparent `{0}` is not `00-<32 hex>-<16 hex>-<2 hex>`")]
    Shape(String),
    /// A field with other characters than lowercase hex digits.
    #[error("traceparent field {field} `{value}` is not lowercase hex")]
    NotHex {
        /// `version`, `trace-id`, `parent-id` or `trace-flags`.
        field: &'static str,
        /// The field as given.
        value: String,
    },
    /// Version `ff` is invalid.
    #[error("traceparent version ff is invalid")]
    Version,
    /// An all-zero trace id or parent id.
    #[error("traceparent {0} is all zeros")]
    Zero(&'static str),
    /// A value that is not text (a header of other bytes, a `_meta` entry of another type).
    #[error("{0} is not a string")]
    NotText(&'static str),
}

/// A W3C trace context: trace id, parent span id, flags and vendor state,
/// always a valid remote span context.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceContext(SpanContext);

impl TraceContext {
    /// Reads a `traceparent` and, if given, a `tracestate` (dropped when it is
    /// invalid or over [`MAX_TRACESTATE_LEN`]: the parent still counts).
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Result<Self, TraceContextError> {
        Self::read(
            traceparent,
            &lookup(|key| match key {
                TRACEPARENT => Some(traceparent),
                TRACESTATE => tracestate,
                _ => None,
            }),
        )
    }

    /// The `traceparent` value: `00-<trace id>-<span id>-<flags>`.
    pub fn traceparent(&self) -> String {
        let mut parent = String::new();
        self.inject(|name, value| {
            if name == TRACEPARENT {
                parent = value;
            }
        });
        parent
    }

    /// The `tracestate` value, when there is vendor state.
    pub fn tracestate(&self) -> Option<String> {
        let header = self.0.trace_state().header();
        (!header.is_empty()).then_some(header)
    }

    /// The trace id, 32 lowercase hex digits.
    pub fn trace_id(&self) -> String {
        self.0.trace_id().to_string()
    }

    /// The parent span id, 16 lowercase hex digits.
    pub fn span_id(&self) -> String {
        self.0.span_id().to_string()
    }

    /// Whether the caller recorded the trace (the `sampled` flag).
    pub fn sampled(&self) -> bool {
        self.0.is_sampled()
    }

    /// The context of `span` to send on: `None` when the span is not
    /// recorded by an OpenTelemetry layer (telemetry off).
    pub fn of(span: &tracing::Span) -> Option<Self> {
        if span.is_disabled() {
            return None;
        }
        let cx = span.context();
        let span_ref = cx.span();
        let sc = span_ref.span_context();
        // Remote, as it is to whoever receives it; equal to what they extract.
        sc.is_valid().then(|| {
            TraceContext(SpanContext::new(
                sc.trace_id(),
                sc.span_id(),
                sc.trace_flags(),
                true,
                sc.trace_state().clone(),
            ))
        })
    }

    /// The context of the current span ([`TraceContext::of`]).
    pub fn current() -> Option<Self> {
        Self::of(&tracing::Span::current())
    }

    /// This context as the remote parent of OpenTelemetry spans.
    pub(crate) fn otel_context(&self) -> opentelemetry::Context {
        opentelemetry::Context::new().with_remote_span_context(self.0.clone())
    }

    /// Makes this context the parent of `span`, which must not have been
    /// entered yet. False when the span is not recorded or already started.
    pub fn set_as_parent_of(&self, span: &tracing::Span) -> bool {
        span.set_parent(self.otel_context()).is_ok()
    }

    /// The context in HTTP headers: `None` without a `traceparent`, an error
    /// when it is unusable.
    pub fn from_headers(headers: &http::HeaderMap) -> Option<Result<Self, TraceContextError>> {
        let parent = headers.get(TRACEPARENT)?;
        let Ok(parent) = parent.to_str() else {
            return Some(Err(TraceContextError::NotText(TRACEPARENT)));
        };
        Some(Self::read(parent, &Headers(headers)))
    }

    /// Sets `traceparent` (and `tracestate`, removed when there is no state)
    /// on outbound HTTP headers.
    pub fn to_headers(&self, headers: &mut http::HeaderMap) {
        self.inject_into(&mut HeadersMut(headers));
    }

    /// The context in a JSON `_meta` object (MCP's `params._meta`, per the
    /// semantic conventions for MCP).
    pub fn from_meta(meta: &Map<String, Value>) -> Option<Result<Self, TraceContextError>> {
        let parent = meta.get(TRACEPARENT)?;
        let Some(parent) = parent.as_str() else {
            return Some(Err(TraceContextError::NotText(TRACEPARENT)));
        };
        Some(Self::read(parent, &Meta(meta)))
    }

    /// Sets `traceparent` (and `tracestate`, removed when there is no state)
    /// in a JSON `_meta` object.
    pub fn to_meta(&self, meta: &mut Map<String, Value>) {
        self.inject_into(&mut MetaMut(meta));
    }

    /// The context from any string map (a NATS message's headers, an
    /// envelope's fields): `get` returns the value of a key.
    pub fn extract<'a>(
        get: impl Fn(&str) -> Option<&'a str>,
    ) -> Option<Result<Self, TraceContextError>> {
        let parent = get(TRACEPARENT)?;
        Some(Self::read(parent, &lookup(get)))
    }

    /// Hands `traceparent` (and `tracestate`, when there is state) to `set`,
    /// for any string map.
    pub fn inject(&self, set: impl FnMut(&'static str, String)) {
        self.inject_into(&mut Setter(set));
    }

    /// The propagator's reading of `carrier`, whose `traceparent` is `parent`
    /// (held to the grammar first).
    fn read(parent: &str, carrier: &dyn Extractor) -> Result<Self, TraceContextError> {
        check_grammar(parent)?;
        let cx = TraceContextPropagator::new()
            .extract_with_context(&opentelemetry::Context::new(), &Bounded(carrier));
        let span = cx.span();
        let sc = span.span_context();
        if sc.is_valid() {
            return Ok(TraceContext(sc.clone()));
        }
        // The grammar holds, so only an all-zero id leaves the context invalid.
        let trace = parent.trim().get(3..35).unwrap_or_default();
        Err(TraceContextError::Zero(
            if trace.bytes().all(|b| b == b'0') {
                "trace-id"
            } else {
                "parent-id"
            },
        ))
    }

    fn inject_into(&self, carrier: &mut dyn Injector) {
        TraceContextPropagator::new().inject_context(&self.otel_context(), carrier);
    }
}

impl fmt::Display for TraceContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.traceparent())
    }
}

impl FromStr for TraceContext {
    type Err = TraceContextError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s, None)
    }
}

/// The W3C `traceparent` grammar: `version-trace-id-parent-id-flags` of 2,
/// 32, 16 and 2 lowercase hex digits, version `ff` invalid, version `00` with
/// exactly these four fields (a later version may add more after a dash).
fn check_grammar(value: &str) -> Result<(), TraceContextError> {
    if value.len() > MAX_TRACEPARENT_LEN {
        return Err(TraceContextError::TooLong(value.len()));
    }
    let value = value.trim();
    let shape = || TraceContextError::Shape(value.to_owned());
    let mut fields = value.split('-');
    for (name, len) in [
        ("version", 2),
        ("trace-id", 32),
        ("parent-id", 16),
        ("trace-flags", 2),
    ] {
        let field = fields.next().filter(|f| f.len() == len).ok_or_else(shape)?;
        if !field
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(TraceContextError::NotHex {
                field: name,
                value: field.to_owned(),
            });
        }
    }
    match (value.get(..2), fields.next()) {
        (Some("ff"), _) => Err(TraceContextError::Version),
        (Some("00"), Some(_)) => Err(shape()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn refused(input: &str) -> TraceContextError {
        TraceContext::parse(input, None).unwrap_err()
    }

    #[test]
    fn a_valid_traceparent_round_trips_with_its_state() {
        let cx =
            TraceContext::parse(PARENT, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).unwrap();
        assert_eq!(cx.trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(cx.span_id(), "00f067aa0ba902b7");
        assert!(cx.sampled());
        assert_eq!(cx.traceparent(), PARENT);
        assert_eq!(
            cx.tracestate().as_deref(),
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        );
        assert_eq!(cx.to_string(), PARENT);
        let unsampled: TraceContext = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
            .parse()
            .unwrap();
        assert!(!unsampled.sampled());
        // Surrounding whitespace (a header's optional white space) is not part of it.
        assert_eq!(
            TraceContext::parse(&format!(" {PARENT}\t"), None).unwrap(),
            TraceContext::parse(PARENT, None).unwrap()
        );
    }

    #[test]
    fn fields_of_other_lengths_are_refused() {
        for input in [
            // A missing field.
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            // Short ids and version, which integer parsing alone would take.
            "00-1-1-01",
            "0-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
            // Long ids and flags.
            "00-4bf92f3577b34da6a3ce929d0e0e473600-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b700-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0100",
            "",
        ] {
            assert!(
                matches!(refused(input), TraceContextError::Shape(_)),
                "{input}"
            );
        }
    }

    #[test]
    fn fields_must_be_lowercase_hex() {
        for (input, field) in [
            (
                "0A-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "version",
            ),
            (
                "+1-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "version",
            ),
            (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                "trace-id",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00F067AA0BA902B7-01",
                "parent-id",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
                "trace-flags",
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0A",
                "trace-flags",
            ),
        ] {
            let err = refused(input);
            assert!(
                matches!(&err, TraceContextError::NotHex { field: f, .. } if *f == field),
                "{input}: {err:?}"
            );
        }
    }

    #[test]
    fn version_ff_is_invalid() {
        assert_eq!(
            refused("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            TraceContextError::Version
        );
    }

    #[test]
    fn all_zero_ids_are_invalid() {
        assert_eq!(
            refused("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
            TraceContextError::Zero("trace-id")
        );
        assert_eq!(
            refused("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"),
            TraceContextError::Zero("parent-id")
        );
    }

    #[test]
    fn version_00_has_exactly_four_fields() {
        for input in [
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
        ] {
            assert!(
                matches!(refused(input), TraceContextError::Shape(_)),
                "{input}"
            );
        }
    }

    #[test]
    fn later_versions_may_carry_more_fields() {
        let cx = TraceContext::parse(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            None,
        )
        .unwrap();
        // Sent on as the version this side speaks.
        assert_eq!(cx.traceparent(), PARENT);
    }

    #[test]
    fn unknown_flags_are_not_passed_on() {
        // Version 00 defines only `sampled`; the other bits are set to zero.
        let cx = TraceContext::parse(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-09",
            None,
        )
        .unwrap();
        assert!(cx.sampled());
        assert_eq!(cx.traceparent(), PARENT);
    }

    #[test]
    fn an_overlong_traceparent_is_refused_before_it_is_read() {
        let long = "0".repeat(MAX_TRACEPARENT_LEN + 1);
        assert_eq!(
            refused(&long),
            TraceContextError::TooLong(MAX_TRACEPARENT_LEN + 1)
        );
    }

    #[test]
    fn an_invalid_or_overlong_tracestate_is_dropped_and_the_parent_kept() {
        let cx = TraceContext::parse(PARENT, Some("not a valid state!")).unwrap();
        assert_eq!(cx.traceparent(), PARENT);
        assert_eq!(cx.tracestate(), None);
        let big = format!("a={}", "b".repeat(MAX_TRACESTATE_LEN));
        let cx = TraceContext::parse(PARENT, Some(&big)).unwrap();
        assert_eq!(cx.traceparent(), PARENT);
        assert_eq!(cx.tracestate(), None);
    }

    #[test]
    fn headers_meta_and_string_maps_carry_it_both_ways() {
        let cx = TraceContext::parse(PARENT, Some("k=v")).unwrap();

        let mut headers = http::HeaderMap::new();
        cx.to_headers(&mut headers);
        assert_eq!(headers[TRACEPARENT], PARENT);
        assert_eq!(headers[TRACESTATE], "k=v");
        assert_eq!(TraceContext::from_headers(&headers).unwrap().unwrap(), cx);
        assert!(TraceContext::from_headers(&http::HeaderMap::new()).is_none());
        let mut bytes = http::HeaderMap::new();
        bytes.insert(TRACEPARENT, http::HeaderValue::from_bytes(b"\xff").unwrap());
        assert_eq!(
            TraceContext::from_headers(&bytes).unwrap().unwrap_err(),
            TraceContextError::NotText(TRACEPARENT)
        );

        let mut meta = Map::new();
        cx.to_meta(&mut meta);
        assert_eq!(meta[TRACEPARENT], PARENT);
        assert_eq!(meta[TRACESTATE], "k=v");
        assert_eq!(TraceContext::from_meta(&meta).unwrap().unwrap(), cx);
        meta.insert(TRACEPARENT.into(), Value::from(7));
        assert_eq!(
            TraceContext::from_meta(&meta).unwrap().unwrap_err(),
            TraceContextError::NotText(TRACEPARENT)
        );

        let mut nats: Vec<(&str, String)> = Vec::new();
        cx.inject(|k, v| nats.push((k, v)));
        assert_eq!(nats.len(), 2);
        let got =
            TraceContext::extract(|k| nats.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str()));
        assert_eq!(got.unwrap().unwrap(), cx);
        assert!(TraceContext::extract(|_| None).is_none());
    }

    #[test]
    fn a_context_without_state_sends_none_and_clears_an_earlier_one() {
        let cx = TraceContext::parse(PARENT, None).unwrap();
        let mut names = Vec::new();
        cx.inject(|k, _| names.push(k));
        assert_eq!(names, [TRACEPARENT]);

        let mut headers = http::HeaderMap::new();
        TraceContext::parse(PARENT, Some("k=v"))
            .unwrap()
            .to_headers(&mut headers);
        cx.to_headers(&mut headers);
        assert!(!headers.contains_key(TRACESTATE));

        let mut meta = Map::new();
        meta.insert(TRACESTATE.into(), Value::from("old=1"));
        cx.to_meta(&mut meta);
        assert_eq!(meta[TRACEPARENT], PARENT);
        assert!(!meta.contains_key(TRACESTATE));
    }

    #[test]
    fn a_span_without_a_layer_has_no_context() {
        assert!(TraceContext::of(&tracing::Span::none()).is_none());
        assert!(TraceContext::current().is_none());
    }
}

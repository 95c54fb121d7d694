//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>): the
//! `traceparent` (and `tracestate`) that carry a trace across every hop.
//!
//! In: an incoming value ([`TraceContext::from_headers`], [`TraceContext::from_meta`]
//! for MCP's `params._meta`, [`TraceContext::parse`] for the A2E envelope's
//! field, [`TraceContext::extract`] for any string map such as NATS headers)
//! becomes the parent of the request's span ([`Parent::Remote`](crate::Parent)).
//! Out: the context of the span making the call ([`TraceContext::of`]) goes
//! into the outbound request ([`TraceContext::to_headers`],
//! [`TraceContext::to_meta`], [`TraceContext::inject`]).

use std::fmt;
use std::str::FromStr;

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use serde_json::{Map, Value};
use tracing_opentelemetry::OpenTelemetrySpanExt;

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

/// A W3C trace context: trace id, parent span id, flags and vendor state.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceContext {
    trace_id: TraceId,
    span_id: SpanId,
    flags: TraceFlags,
    state: TraceState,
}

impl TraceContext {
    /// Reads a `traceparent` and, if given, a `tracestate` (dropped when it is
    /// invalid or over [`MAX_TRACESTATE_LEN`]: the parent still counts).
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Result<Self, TraceContextError> {
        let (trace_id, span_id, flags) = parse_traceparent(traceparent)?;
        let state = tracestate
            .filter(|s| s.len() <= MAX_TRACESTATE_LEN)
            .and_then(|s| TraceState::from_str(s.trim()).ok())
            .unwrap_or_default();
        Ok(TraceContext {
            trace_id,
            span_id,
            flags,
            state,
        })
    }

    /// The `traceparent` value: `00-<trace id>-<span id>-<flags>`.
    pub fn traceparent(&self) -> String {
        format!(
            "00-{}-{}-{:02x}",
            self.trace_id,
            self.span_id,
            self.flags.to_u8()
        )
    }

    /// The `tracestate` value, when there is vendor state.
    pub fn tracestate(&self) -> Option<String> {
        let header = self.state.header();
        (!header.is_empty()).then_some(header)
    }

    /// The trace id, 32 lowercase hex digits.
    pub fn trace_id(&self) -> String {
        self.trace_id.to_string()
    }

    /// The parent span id, 16 lowercase hex digits.
    pub fn span_id(&self) -> String {
        self.span_id.to_string()
    }

    /// Whether the caller recorded the trace (the `sampled` flag).
    pub fn sampled(&self) -> bool {
        self.flags.is_sampled()
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
        sc.is_valid().then(|| TraceContext {
            trace_id: sc.trace_id(),
            span_id: sc.span_id(),
            flags: sc.trace_flags(),
            state: sc.trace_state().clone(),
        })
    }

    /// The context of the current span ([`TraceContext::of`]).
    pub fn current() -> Option<Self> {
        Self::of(&tracing::Span::current())
    }

    /// This context as the remote parent of OpenTelemetry spans.
    pub(crate) fn otel_context(&self) -> opentelemetry::Context {
        opentelemetry::Context::new().with_remote_span_context(SpanContext::new(
            self.trace_id,
            self.span_id,
            self.flags,
            true,
            self.state.clone(),
        ))
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
        let state = headers.get(TRACESTATE).and_then(|v| v.to_str().ok());
        Some(Self::parse(parent, state))
    }

    /// Sets `traceparent` (and `tracestate`) on outbound HTTP headers.
    pub fn to_headers(&self, headers: &mut http::HeaderMap) {
        if let Ok(value) = http::HeaderValue::from_str(&self.traceparent()) {
            headers.insert(TRACEPARENT, value);
        }
        match self
            .tracestate()
            .and_then(|s| http::HeaderValue::from_str(&s).ok())
        {
            Some(value) => {
                headers.insert(TRACESTATE, value);
            }
            None => {
                headers.remove(TRACESTATE);
            }
        }
    }

    /// The context in a JSON `_meta` object (MCP's `params._meta`, per the
    /// semantic conventions for MCP).
    pub fn from_meta(meta: &Map<String, Value>) -> Option<Result<Self, TraceContextError>> {
        let parent = meta.get(TRACEPARENT)?;
        let Some(parent) = parent.as_str() else {
            return Some(Err(TraceContextError::NotText(TRACEPARENT)));
        };
        let state = meta.get(TRACESTATE).and_then(Value::as_str);
        Some(Self::parse(parent, state))
    }

    /// Sets `traceparent` (and `tracestate`) in a JSON `_meta` object.
    pub fn to_meta(&self, meta: &mut Map<String, Value>) {
        meta.insert(TRACEPARENT.into(), Value::String(self.traceparent()));
        match self.tracestate() {
            Some(state) => {
                meta.insert(TRACESTATE.into(), Value::String(state));
            }
            None => {
                meta.remove(TRACESTATE);
            }
        }
    }

    /// The context from any string map (a NATS message's headers, an
    /// envelope's fields): `get` returns the value of a key.
    pub fn extract<'a>(
        get: impl Fn(&str) -> Option<&'a str>,
    ) -> Option<Result<Self, TraceContextError>> {
        let parent = get(TRACEPARENT)?;
        Some(Self::parse(parent, get(TRACESTATE)))
    }

    /// Hands `traceparent` (and `tracestate`, when there is state) to `set`,
    /// for any string map.
    pub fn inject(&self, mut set: impl FnMut(&'static str, String)) {
        set(TRACEPARENT, self.traceparent());
        if let Some(state) = self.tracestate() {
            set(TRACESTATE, state);
        }
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

fn parse_traceparent(value: &str) -> Result<(TraceId, SpanId, TraceFlags), TraceContextError> {
    if value.len() > MAX_TRACEPARENT_LEN {
        return Err(TraceContextError::TooLong(value.len()));
    }
    let value = value.trim();
    let shape = || TraceContextError::Shape(value.to_owned());
    let mut parts = value.splitn(5, '-');
    let (Some(version), Some(trace), Some(parent), Some(flags)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(shape());
    };
    let rest = parts.next();
    if version.len() != 2 || trace.len() != 32 || parent.len() != 16 || flags.len() != 2 {
        return Err(shape());
    }
    let version = hex_field("version", version)?;
    if version == 0xff {
        return Err(TraceContextError::Version);
    }
    // Version 00 has exactly four fields; a later version may add more after a dash.
    if version == 0 && rest.is_some() {
        return Err(shape());
    }
    let trace_id = TraceId::from_bytes(
        u128::from_str_radix(checked_hex("trace-id", trace)?, 16)
            .map_err(|_| shape())?
            .to_be_bytes(),
    );
    let span_id = SpanId::from_bytes(
        u64::from_str_radix(checked_hex("parent-id", parent)?, 16)
            .map_err(|_| shape())?
            .to_be_bytes(),
    );
    if trace_id == TraceId::INVALID {
        return Err(TraceContextError::Zero("trace-id"));
    }
    if span_id == SpanId::INVALID {
        return Err(TraceContextError::Zero("parent-id"));
    }
    let flags = TraceFlags::new(hex_field("trace-flags", flags)?);
    Ok((trace_id, span_id, flags))
}

fn checked_hex<'a>(field: &'static str, value: &'a str) -> Result<&'a str, TraceContextError> {
    if value
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        Ok(value)
    } else {
        Err(TraceContextError::NotHex {
            field,
            value: value.to_owned(),
        })
    }
}

fn hex_field(field: &'static str, value: &str) -> Result<u8, TraceContextError> {
    u8::from_str_radix(checked_hex(field, value)?, 16).map_err(|_| TraceContextError::NotHex {
        field,
        value: value.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

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
    }

    #[test]
    fn invalid_traceparents_say_what_is_wrong() {
        use TraceContextError::*;
        type Check = fn(&TraceContextError) -> bool;
        let cases: &[(&str, Check)] = &[
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
                |e| matches!(e, Shape(_)),
            ),
            (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                |e| {
                    matches!(
                        e,
                        NotHex {
                            field: "trace-id",
                            ..
                        }
                    )
                },
            ),
            (
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                |e| matches!(e, Version),
            ),
            (
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                |e| matches!(e, Zero("trace-id")),
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                |e| matches!(e, Zero("parent-id")),
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-xyz",
                |e| matches!(e, Shape(_)),
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
                |e| {
                    matches!(
                        e,
                        NotHex {
                            field: "trace-flags",
                            ..
                        }
                    )
                },
            ),
        ];
        for (input, expected) in cases {
            let err = TraceContext::parse(input, None).unwrap_err();
            assert!(expected(&err), "{input}: {err:?}");
        }
        let long = "0".repeat(MAX_TRACEPARENT_LEN + 1);
        assert_eq!(
            TraceContext::parse(&long, None).unwrap_err(),
            TraceContextError::TooLong(MAX_TRACEPARENT_LEN + 1)
        );
    }

    #[test]
    fn later_versions_may_carry_more_fields_and_bad_state_is_dropped() {
        let cx = TraceContext::parse(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            Some("not a valid state!"),
        )
        .unwrap();
        assert_eq!(cx.traceparent(), PARENT);
        assert_eq!(cx.tracestate(), None);
        let big = format!("a={}", "b".repeat(MAX_TRACESTATE_LEN));
        assert_eq!(
            TraceContext::parse(PARENT, Some(&big))
                .unwrap()
                .tracestate(),
            None
        );
    }

    #[test]
    fn headers_meta_and_string_maps_carry_it_both_ways() {
        let cx = TraceContext::parse(PARENT, Some("k=v")).unwrap();

        let mut headers = http::HeaderMap::new();
        cx.to_headers(&mut headers);
        assert_eq!(headers[TRACEPARENT], PARENT);
        assert_eq!(TraceContext::from_headers(&headers).unwrap().unwrap(), cx);
        assert!(TraceContext::from_headers(&http::HeaderMap::new()).is_none());

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
        let got =
            TraceContext::extract(|k| nats.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str()));
        assert_eq!(got.unwrap().unwrap(), cx);
    }

    #[test]
    fn a_span_without_a_layer_has_no_context() {
        assert!(TraceContext::of(&tracing::Span::none()).is_none());
        assert!(TraceContext::current().is_none());
    }
}

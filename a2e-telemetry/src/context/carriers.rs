//! The carriers of a trace context as OpenTelemetry [`Extractor`]s and
//! [`Injector`]s: HTTP headers, JSON `_meta` objects (MCP) and any string
//! map through a lookup or a setter (NATS headers, the A2E envelope).

use std::marker::PhantomData;

use opentelemetry::propagation::{Extractor, Injector};
use serde_json::{Map, Value};

use super::{MAX_TRACESTATE_LEN, TRACEPARENT, TRACESTATE};

/// A carrier whose `tracestate` is dropped when over [`MAX_TRACESTATE_LEN`]
/// (the propagator reads any length).
pub(super) struct Bounded<'a>(pub(super) &'a dyn Extractor);

impl Extractor for Bounded<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .filter(|v| key != TRACESTATE || v.len() <= MAX_TRACESTATE_LEN)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys()
    }
}

/// Any string map, through its lookup function ([`lookup`]).
pub(super) struct Lookup<'a, F>(F, PhantomData<&'a str>);

/// A [`Lookup`]; the bound makes a closure's argument any lifetime.
pub(super) fn lookup<'a, F: Fn(&str) -> Option<&'a str>>(get: F) -> Lookup<'a, F> {
    Lookup(get, PhantomData)
}

impl<'a, F: Fn(&str) -> Option<&'a str>> Extractor for Lookup<'a, F> {
    fn get(&self, key: &str) -> Option<&str> {
        (self.0)(key)
    }

    fn keys(&self) -> Vec<&str> {
        [TRACEPARENT, TRACESTATE]
            .into_iter()
            .filter(|k| (self.0)(k).is_some())
            .collect()
    }
}

/// Any string map, through its setter. The propagator sets only
/// `traceparent` and `tracestate`, under the names of this module.
pub(super) struct Setter<F>(pub(super) F);

impl<F: FnMut(&'static str, String)> Injector for Setter<F> {
    fn set(&mut self, key: &str, value: String) {
        let key = match key {
            TRACEPARENT => TRACEPARENT,
            TRACESTATE if !value.is_empty() => TRACESTATE,
            _ => return,
        };
        (self.0)(key, value);
    }
}

/// HTTP headers, read.
pub(super) struct Headers<'a>(pub(super) &'a http::HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// HTTP headers, written: an empty value (no `tracestate`) or one that is no
/// header value removes the header, so none of an earlier context stays.
pub(super) struct HeadersMut<'a>(pub(super) &'a mut http::HeaderMap);

impl Injector for HeadersMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        let Ok(name) = http::HeaderName::from_bytes(key.as_bytes()) else {
            return;
        };
        match http::HeaderValue::from_str(&value) {
            Ok(value) if !value.is_empty() => {
                self.0.insert(name, value);
            }
            _ => {
                self.0.remove(name);
            }
        }
    }
}

/// A JSON `_meta` object, read: entries that are not strings are absent.
pub(super) struct Meta<'a>(pub(super) &'a Map<String, Value>);

impl Extractor for Meta<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// A JSON `_meta` object, written: an empty value (no `tracestate`) removes
/// the entry.
pub(super) struct MetaMut<'a>(pub(super) &'a mut Map<String, Value>);

impl Injector for MetaMut<'_> {
    fn set(&mut self, key: &str, value: String) {
        if value.is_empty() {
            self.0.remove(key);
        } else {
            self.0.insert(key.to_owned(), Value::String(value));
        }
    }
}

//! proptest strategies for the parts of messages that derive cannot cover.

use proptest::prelude::*;
use serde_json::{Map, Value};

/// An id-like string.
pub fn id() -> impl Strategy<Value = String> {
    "[a-f0-9]{1,32}"
}

/// A supported protocol version.
pub fn version() -> impl Strategy<Value = String> {
    prop_oneof![Just("1.0".to_owned()), "1\\.[0-9]"]
}

/// A finite float (JSON has no NaN or infinity).
pub fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        (0u32..2_000_000_000).prop_map(f64::from),
        proptest::num::f64::NORMAL | proptest::num::f64::ZERO,
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        proptest::num::f64::NORMAL.prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ]
}

/// Any JSON value, a few levels deep.
pub fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::vec(("[a-z_]{1,8}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A JSON object.
pub fn object() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::vec(("[a-z_]{1,8}", json()), 0..4).prop_map(|kv| kv.into_iter().collect())
}

/// A chain response's outputs.
pub fn outputs() -> impl Strategy<Value = crate::Outputs> {
    object().prop_map(crate::Outputs::from)
}

/// A JSON object or nothing.
pub fn opt_object() -> impl Strategy<Value = Option<Map<String, Value>>> {
    proptest::option::of(object())
}

/// A list of JSON values or nothing.
pub fn opt_list() -> impl Strategy<Value = Option<Vec<Value>>> {
    proptest::option::of(proptest::collection::vec(json(), 0..3))
}

/// An object of string values.
pub fn string_map() -> impl Strategy<Value = Map<String, Value>> {
    proptest::collection::vec(("[a-z_]{1,8}", "[a-z_.]{0,12}"), 0..4)
        .prop_map(|kv| kv.into_iter().map(|(k, v)| (k, Value::String(v))).collect())
}

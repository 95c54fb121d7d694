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

/// A chain node's input map: an object of string values.
pub fn input_map() -> impl Strategy<Value = crate::InputMap> {
    string_map().prop_map(crate::InputMap::from)
}

// ---------------------------------------------------------------------------
// Hostile input: every message, and mutations of any JSON document.
// ---------------------------------------------------------------------------

use crate::Message;
#[allow(clippy::wildcard_imports)]
use crate::{chains::*, core::*, extensions::*, proc::*, skills::*, tools::*};

macro_rules! any_message {
    (spec: [$( $spec:ident ),+ $(,)?], extensions: [$( $ext:ident ),+ $(,)?] $(,)?) => {
        any_message!($( $spec, )+ $( $ext ),+);
    };
    ($( $variant:ident ),+ $(,)?) => {
        /// Any known message (the wire extensions too), every type equally likely.
        pub fn message() -> BoxedStrategy<Message> {
            let all: Vec<BoxedStrategy<Message>> = vec![
                $( any::<$variant>().prop_map(Message::from).boxed(), )+
            ];
            proptest::strategy::Union::new(all).boxed()
        }
    };
}

for_each_message!(any_message);

/// Where a mutation lands in a document: a path of object keys and array
/// indexes from the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
}

/// Every path in `doc` (the root first), breadth first, at most 256.
pub fn paths(doc: &Value) -> Vec<Vec<Step>> {
    let mut out: Vec<Vec<Step>> = vec![Vec::new()];
    let mut at = 0;
    while let Some(path) = out.get(at).cloned() {
        at += 1;
        let Some(value) = get(doc, &path) else {
            continue;
        };
        let children: Vec<Step> = match value {
            Value::Object(map) => map.keys().cloned().map(Step::Key).collect(),
            Value::Array(items) => (0..items.len()).map(Step::Index).collect(),
            _ => continue,
        };
        for child in children {
            if out.len() >= 256 {
                return out;
            }
            let mut p = path.clone();
            p.push(child);
            out.push(p);
        }
    }
    out
}

fn get<'a>(doc: &'a Value, path: &[Step]) -> Option<&'a Value> {
    path.iter().try_fold(doc, |v, step| match step {
        Step::Key(k) => v.get(k.as_str()),
        Step::Index(i) => v.get(*i),
    })
}

fn get_mut<'a>(doc: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    path.iter().try_fold(doc, |v, step| match step {
        Step::Key(k) => v.get_mut(k.as_str()),
        Step::Index(i) => v.get_mut(*i),
    })
}

/// A marker no generator produces, replaced by hostile text after encoding.
const MARK: &str = "\u{1}hostile\u{1}";

/// Hostile JSON text to put where a value was: nesting past every limit,
/// numbers past every integer and float, long strings, JMESPath that would
/// overflow a recursive parser, and values of every other type.
pub fn hostile_json() -> impl Strategy<Value = String> {
    let nested = prop_oneof![Just(65usize), Just(129), Just(1_000), Just(100_000)];
    prop_oneof![
        nested
            .clone()
            .prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n))),
        nested.prop_map(|n| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n))),
        proptest::sample::select(vec![
            "1e400",
            "-1e400",
            "1e-400",
            "18446744073709551616",
            "18446744073709551615",
            "10000000000000000000",
            "-9223372036854775809",
            "-9223372036854775808",
            "9007199254740993",
            "1.7976931348623157e308",
            "-0",
            "-0.0",
            "4294967296",
            "-1",
            "0.5",
            "1E+2",
        ])
        .prop_map(str::to_owned),
        proptest::sample::select(vec![
            "null",
            "true",
            "false",
            "0",
            "\"\"",
            "[]",
            "{}",
            "[null]",
            "{\"\":null}",
            "\"\\u0000\"",
            "\"\\ud800\"",
            "\"\\\\\"",
            "\"../../../etc/passwd\"",
            "\"/dev/zero\"",
            "\"\\n\"",
        ])
        .prop_map(str::to_owned),
        (1usize..4, prop_oneof![Just(10_000usize), Just(200_000)]).prop_map(|(k, n)| {
            let s = match k {
                1 => "!".repeat(n),
                2 => format!("{}a{}", "(".repeat(n / 2), ")".repeat(n / 2)),
                _ => format!("a{}", "[".repeat(n / 2)),
            };
            serde_json::to_string(&s).unwrap_or_default()
        }),
        ".{0,40}".prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        (any::<u8>(), 1usize..100_000).prop_map(|(c, n)| {
            let c = char::from(c % 26 + b'a');
            format!("\"{}\"", c.to_string().repeat(n))
        }),
    ]
}

/// `doc` encoded as JSON after one hostile mutation: a value replaced by
/// [`hostile_json`], a member removed, a duplicate member, the `type`
/// swapped for another message's, bytes flipped, inserted or cut (invalid
/// UTF-8, NUL, broken syntax), or the whole wrapped in deep nesting.
pub fn mutated(doc: Value) -> BoxedStrategy<Vec<u8>> {
    let all = paths(&doc);
    let text = serde_json::to_vec(&doc).unwrap_or_default();
    let types: Vec<&'static str> = Message::TYPES
        .iter()
        .chain(Message::EXTENSION_TYPES)
        .copied()
        .collect();
    let replace = {
        let (doc, all) = (doc.clone(), all.clone());
        (any::<proptest::sample::Index>(), hostile_json()).prop_map(move |(at, hostile)| {
            let mut doc = doc.clone();
            if let Some(slot) = all
                .get(at.index(all.len()))
                .and_then(|p| get_mut(&mut doc, p))
            {
                *slot = Value::String(MARK.to_owned());
            }
            let encoded = serde_json::to_string(&doc).unwrap_or_default();
            let mark = serde_json::to_string(MARK).unwrap_or_default();
            encoded.replacen(&mark, &hostile, 1).into_bytes()
        })
    };
    let remove = {
        let (doc, all) = (doc.clone(), all.clone());
        any::<proptest::sample::Index>().prop_map(move |at| {
            let mut doc = doc.clone();
            if let Some(path) = all.get(at.index(all.len()))
                && let Some((Step::Key(last), parent)) = path.split_last()
                && let Some(Value::Object(map)) = get_mut(&mut doc, parent)
            {
                map.remove(last.as_str());
            }
            serde_json::to_vec(&doc).unwrap_or_default()
        })
    };
    let duplicate = {
        let text = text.clone();
        (
            proptest::sample::select(vec!["id", "type", "arguments", "timeout", "nodes"]),
            hostile_json(),
        )
            .prop_map(move |(key, hostile)| {
                let mut out = format!("{{\"{key}\":{hostile},").into_bytes();
                out.extend(text.iter().skip(1));
                out
            })
    };
    let retype = {
        let doc = doc.clone();
        proptest::sample::select(types).prop_map(move |t| {
            let mut doc = doc.clone();
            if let Value::Object(map) = &mut doc {
                map.insert("type".into(), Value::String(t.to_owned()));
            }
            serde_json::to_vec(&doc).unwrap_or_default()
        })
    };
    let bytes = {
        let text = text.clone();
        proptest::collection::vec(
            (
                0u8..3,
                any::<proptest::sample::Index>(),
                prop_oneof![
                    any::<u8>(),
                    proptest::sample::select(b"\0\xff\xc0{}[]\",:\\\n".to_vec())
                ],
            ),
            1..4,
        )
        .prop_map(move |edits| {
            let mut out = text.clone();
            for (op, at, byte) in edits {
                let i = at.index(out.len().max(1));
                match op {
                    0 => {
                        if let Some(b) = out.get_mut(i) {
                            *b = byte;
                        }
                    }
                    1 => out.insert(i.min(out.len()), byte),
                    _ => out.truncate(i),
                }
            }
            out
        })
    };
    let wrap = {
        let text = text.clone();
        prop_oneof![Just(64usize), Just(200), Just(50_000)].prop_map(move |n| {
            let mut out = "[".repeat(n).into_bytes();
            out.extend(&text);
            out.extend("]".repeat(n).into_bytes());
            out
        })
    };
    prop_oneof![
        4 => replace,
        1 => remove,
        1 => duplicate,
        1 => retype,
        2 => bytes,
        1 => wrap,
    ]
    .boxed()
}

/// One hostile line: a known message as it is, a mutation of one, random
/// bytes, or a mutation of one of `seeds` (e.g. the conformance fixtures).
pub fn hostile_line(seeds: Vec<Value>) -> BoxedStrategy<Vec<u8>> {
    let from_message = message().prop_flat_map(|m| {
        let doc = serde_json::to_value(&m).unwrap_or(Value::Null);
        prop_oneof![
            1 => Just(serde_json::to_vec(&doc).unwrap_or_default()),
            3 => mutated(doc),
        ]
    });
    let random = proptest::collection::vec(any::<u8>(), 0..64);
    if seeds.is_empty() {
        return prop_oneof![4 => from_message, 1 => random].boxed();
    }
    let from_seed = proptest::sample::select(seeds).prop_flat_map(mutated);
    prop_oneof![3 => from_message, 3 => from_seed, 1 => random].boxed()
}

//! Extraction and repair of model output, case by case, plus properties:
//! nothing panics, valid JSON stays the same value, output is valid JSON.

use ontheia::repair::{extract_json, parse_lenient, repair};
use proptest::prelude::*;
use serde_json::{Value, json};

fn repaired(text: &str) -> Value {
    let out = repair(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{text:?} → {out:?}: {e}"))
}

#[test]
fn the_kinds_of_damage_models_do() {
    let cases = [
        ("{'a': 'b'}", json!({"a": "b"})),
        ("{a: 1, b_c: true}", json!({"a": 1, "b_c": true})),
        ("{\"a\": 1, \"b\": 2,}", json!({"a": 1, "b": 2})),
        ("[1 2 3]", json!([1, 2, 3])),
        ("{\"a\": 1 \"b\": 2}", json!({"a": 1, "b": 2})),
        (
            "{\"x\": True, \"y\": None, \"z\": False}",
            json!({"x": true, "y": null, "z": false}),
        ),
        (
            "{\"a\": 1 /* c */, // d\n \"b\": 2}",
            json!({"a": 1, "b": 2}),
        ),
        ("{\"a\": {\"b\": [1, 2", json!({"a": {"b": [1, 2]}})),
        ("{\"text\": \"one\ntwo\"}", json!({"text": "one\ntwo"})),
        (
            "{\"q\": \"say \"hi\" now\"}",
            json!({"q": "say \"hi\" now"}),
        ),
        ("```json\n{\"a\": 1}\n```", json!({"a": 1})),
        ("{\u{201c}a\u{201d}: \u{201c}b\u{201d}}", json!({"a": "b"})),
        ("{\"s\": \"a\" + \"b\"}", json!({"s": "ab"})),
        (
            "{\"a\": undefined, \"n\": .5, \"m\": 2.}",
            json!({"a": null, "n": 0.5, "m": 2.0}),
        ),
        ("callback({\"a\": 1});", json!({"a": 1})),
        ("{\"id\": ObjectId(\"x1\")}", json!({"id": "x1"})),
        ("[1, 2, ...]", json!([1, 2])),
        ("{\"city\": Berlin}", json!({"city": "Berlin"})),
        ("{\"a\":1}\n{\"b\":2}", json!([{"a": 1}, {"b": 2}])),
        ("{\"n\": 007}", json!({"n": "007"})),
        ("{\"u\": \"http://x.y/z\"}", json!({"u": "http://x.y/z"})),
        (
            "{\"url\": https://x.y/z?q=1}",
            json!({"url": "https://x.y/z?q=1"}),
        ),
    ];
    for (text, want) in cases {
        assert_eq!(repaired(text), want, "{text:?}");
    }
}

#[test]
fn what_cannot_be_repaired_is_an_error() {
    for text in [
        "",
        "   ",
        "{\"a\"}",
        "{\"a\": 1} trailing",
        "{\"a\": 1,, \"b\": 2}",
        "\"\\u12\" x",
    ] {
        assert!(repair(text).is_err(), "{text:?} → {:?}", repair(text));
    }
    let deep = "[".repeat(600);
    let e = repair(&deep).unwrap_err();
    assert!(e.message.contains("nesting deeper than 127"), "{e}");
}

#[test]
fn extraction_slices_from_first_to_last_bracket() {
    assert_eq!(
        extract_json("Sure! {'ok': true} Hope this helps."),
        Some(json!({"ok": true}))
    );
    assert_eq!(
        extract_json("The list: [1, 2, 3]. Done"),
        Some(json!([1, 2, 3]))
    );
    assert_eq!(extract_json("no json at all"), None);
    assert_eq!(extract_json("} backwards {"), None);
    assert_eq!(
        extract_json("```json\n{\"a\": [1, 2,],}\n```"),
        Some(json!({"a": [1, 2]}))
    );
    // Two objects on one line: the slice spans both and the prose between
    // them, which npm jsonrepair refuses too. On separate lines they are a list.
    assert_eq!(extract_json("A {\"a\": 1} and B {\"b\": 2}."), None);
    assert_eq!(
        extract_json("A {\"a\": 1}\n{\"b\": 2}."),
        Some(json!([{"a": 1}, {"b": 2}]))
    );
    assert_eq!(parse_lenient("{\"a\": 1}"), Some(json!({"a": 1})));
    assert_eq!(parse_lenient("{a: 1"), Some(json!({"a": 1})));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn valid_json_keeps_its_value(v in arb_json()) {
        let text = serde_json::to_string_pretty(&v).unwrap();
        prop_assert_eq!(repaired(&text), v);
    }

    #[test]
    fn truncated_json_still_repairs(v in arb_json(), cut in 0usize..200) {
        let text = serde_json::to_string(&v).unwrap();
        let cut = text.char_indices().map(|(i, _)| i).nth(cut % text.chars().count().max(1)).unwrap_or(0);
        let _ = repair(&text[..cut]);
    }
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        "[a-zA-Z0-9 ,:'\\[\\]{}\"\\\\\\n]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec(("[a-z]{1,5}", inner), 0..4)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

#[test]
fn an_escape_over_the_comma_a_string_ends_at_does_not_loop() {
    // Found by the noise property: the re-scan that ends a string at its
    // comma stepped over that comma with the escape `\,` and recursed until
    // the stack overflowed (npm jsonrepair 3 overflows on these too).
    assert_eq!(repaired("[\"a\\,\"b"), json!(["a,", "b"]));
    assert_eq!(repaired("{\"a\\,\"b:1}"), json!({"a,": "b:1"}));
    let err = repair("\"a\\,\"b").unwrap_err();
    assert_eq!(err.position, 4, "{err}");
}

#[test]
fn noise_the_property_found_gives_json_or_a_clear_error() {
    // A function call in key position keeps only a string argument.
    assert_eq!(repaired("{a(\"x\"): 1}"), json!({"x": 1}));
    let err = repair("{a({").unwrap_err();
    assert!(err.message.contains("object key expected"), "{err}");
    // A cut-off number with a leading zero is quoted, not completed.
    assert_eq!(repaired("00.//"), json!("00."));
    assert_eq!(repaired("[-00.]"), json!(["-00."]));
    assert_eq!(repaired("[1.]"), json!([1.0]));
    // …and one without its integer part gets it.
    assert_eq!(repaired(".0e"), json!(0.0));
    assert_eq!(repaired("[-.5e-]"), json!([-0.5]));
}

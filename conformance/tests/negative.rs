//! Malformed lines: each gives its exact error code, path and `req_id`.

use crate::common;

use a2e_proto::decode::{DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH};
use a2e_proto::{DecodeOptions, ErrorCode, Message, decode, decode_with};
use conformance::Suite;
use conformance::negative::{self, Input};

fn cases() -> Vec<negative::Case> {
    negative::load().expect("negative.json loads")
}

fn case(name: &str) -> negative::Case {
    cases()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no negative case {name}"))
}

#[test]
fn every_negative_case_gives_its_exact_error() {
    let suite = Suite::load().expect("suite loads");
    let outcomes = suite.run_negative();
    assert!(outcomes.len() >= cases().len());
    common::assert_passed(&outcomes);
}

#[test]
fn the_table_covers_every_kind_of_malformed_line() {
    let all = cases();
    assert!(all.len() >= 25, "only {} cases", all.len());
    for name in [
        "empty_line",
        "truncated_object",
        "invalid_utf8",
        "not_an_object_array",
        "not_an_object_string",
        "type_not_a_string",
        "type_missing",
        "unknown_type_refused",
        "version_2_0",
        "nested_10000_deep_arrays",
        "line_20_mib",
        "missing_tool_name",
        "tool_name_not_a_string",
        "chain_node_input_map_a_string",
    ] {
        assert!(all.iter().any(|c| c.name == name), "no case {name}");
    }
    for code in [
        ErrorCode::PARSE_ERROR,
        ErrorCode::INVALID_MESSAGE,
        ErrorCode::SCHEMA_VIOLATION,
        ErrorCode::VERSION_MISMATCH,
    ] {
        assert!(all.iter().any(|c| c.code == code), "no case of {code}");
    }
    for c in &all {
        assert_eq!(
            c.path.is_some(),
            c.code == ErrorCode::SCHEMA_VIOLATION,
            "{}: a path goes with schema_violation only",
            c.name
        );
    }
}

#[test]
fn the_deep_input_map_error_names_its_path() {
    let c = case("chain_node_input_map_a_string");
    let err = decode(&c.bytes().expect("bytes")).expect_err("refused");
    assert_eq!(err.code(), ErrorCode::SCHEMA_VIOLATION);
    assert_eq!(err.path(), Some("nodes[1].input_map"));
    assert_eq!(err.req_id, "d1");
    let answer = err.to_error_message();
    assert_eq!(answer.req_id, "d1");
    assert_eq!(answer.detail["path"], "nodes[1].input_map");
    assert_eq!(answer.detail["type"], "chain/req");
}

#[test]
fn unknown_types_are_refused_when_strict_and_kept_by_default() {
    let c = case("unknown_type_refused");
    assert!(!c.options.allow_unknown);
    assert!(c.kept_by_default);
    let bytes = c.bytes().expect("bytes");

    let err = decode_with(&bytes, &c.options).expect_err("strict refuses");
    assert_eq!(err.code(), ErrorCode::INVALID_MESSAGE);
    assert_eq!(err.req_id, "m2");

    let Message::Unknown(map) = decode(&bytes).expect("kept") else {
        panic!("not kept as unknown")
    };
    assert_eq!(map["type"], "memory/store/req");
    assert_eq!(map["value"]["n"][1], 2.5);
    assert_eq!(Message::Unknown(map).to_json(), bytes);

    let suite = Suite::load().expect("suite loads");
    let kept = suite
        .run_negative()
        .into_iter()
        .find(|o| o.name == "negative/unknown_type_refused/kept_by_default")
        .expect("run_negative checks the lenient side");
    assert!(kept.passed, "{kept}");
}

#[test]
fn generated_lines_fail_only_because_of_their_size_or_depth() {
    let big = negative::generate("line_20_mib").expect("generates");
    assert_eq!(big.len(), 20 * 1024 * 1024);
    let roomy = DecodeOptions {
        max_bytes: big.len(),
        ..DecodeOptions::default()
    };
    assert!(matches!(
        decode_with(&big, &roomy),
        Ok(Message::ToolCallRequest(_))
    ));

    let limit = negative::generate("one_byte_over_the_limit").expect("generates");
    assert_eq!(limit.len(), DEFAULT_MAX_BYTES + 1);
    assert!(decode(&limit[..limit.len() - 1]).is_err(), "cut JSON");

    let deep = negative::generate("nested_10000_deep_arrays").expect("generates");
    assert_eq!(deep.iter().filter(|b| **b == b'[').count(), 10_000);
    let deep = negative::generate("nested_10000_deep_objects").expect("generates");
    assert_eq!(deep.iter().filter(|b| **b == b'{').count(), 10_001);

    let over = negative::generate("nested_one_over_the_limit").expect("generates");
    let one_more = DecodeOptions {
        max_depth: DEFAULT_MAX_DEPTH + 1,
        ..DecodeOptions::default()
    };
    assert!(decode(&over).is_err());
    assert!(matches!(
        decode_with(&over, &one_more),
        Ok(Message::ToolCallRequest(_))
    ));
}

#[test]
fn hex_cases_are_not_utf8_text() {
    for c in cases() {
        if let Input::Hex(_) = c.input {
            let bytes = c.bytes().expect("hex decodes");
            let is_text = std::str::from_utf8(&bytes).is_ok_and(|s| !s.starts_with('\u{feff}'));
            assert!(!is_text, "{}: give it as a line", c.name);
        }
    }
}

#[test]
fn a_table_with_a_broken_case_is_refused() {
    let both = serde_json::json!({"cases": [
        {"name": "x", "line": "{}", "hex": "7b7d", "code": "parse_error", "path": null}
    ]});
    assert!(negative::parse(&both).is_err());
    let bad_code = serde_json::json!({"cases": [
        {"name": "x", "line": "{}", "code": "no_such_code", "path": null}
    ]});
    assert!(negative::parse(&bad_code).is_err());
    let duplicate = serde_json::json!({"cases": [
        {"name": "x", "line": "{}", "code": "parse_error", "path": null},
        {"name": "x", "line": "[]", "code": "parse_error", "path": null}
    ]});
    assert!(negative::parse(&duplicate).is_err());
}

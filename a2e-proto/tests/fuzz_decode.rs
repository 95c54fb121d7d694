//! The decoder under hostile input: every message type, mutations of every
//! conformance fixture (deep nesting, huge numbers, long strings, wrong
//! types, duplicate members, random bytes). Nothing panics; every refusal
//! carries one of the decoder's codes.
#![cfg(feature = "arbitrary")]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use a2e_proto::{DecodeOptions, ErrorCode, Message, arb, decode, decode_with};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/fixtures")
}

/// Every message fixture (`spec/**`, `edge/**`) and every negative line that
/// is JSON: the seeds the mutations start from.
fn seeds() -> Vec<Value> {
    let mut out = Vec::new();
    let mut dirs = vec![fixtures_dir().join("spec"), fixtures_dir().join("edge")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push(serde_json::from_str(&text).unwrap());
            }
        }
    }
    let negative: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures_dir().join("negative.json")).unwrap(),
    )
    .unwrap();
    for case in negative["cases"].as_array().unwrap() {
        if let Some(v) = case["line"]
            .as_str()
            .and_then(|l| serde_json::from_str(l).ok())
        {
            out.push(v);
        }
    }
    assert!(out.len() > 30, "fixtures found: {}", out.len());
    out
}

const CODES: [ErrorCode; 4] = [
    ErrorCode::PARSE_ERROR,
    ErrorCode::INVALID_MESSAGE,
    ErrorCode::VERSION_MISMATCH,
    ErrorCode::SCHEMA_VIOLATION,
];

/// Decodes `line`; a panic or an error without a decoder code fails.
fn check(line: &[u8]) -> Result<(), TestCaseError> {
    let decoded = catch_unwind(AssertUnwindSafe(|| decode(line)));
    let Ok(decoded) = decoded else {
        return Err(TestCaseError::fail(format!(
            "decode panicked on {}",
            String::from_utf8_lossy(line)
        )));
    };
    match decoded {
        Ok(message) => {
            // What was accepted encodes, and the encoding decodes again.
            let again = decode(&message.to_json());
            prop_assert!(again.is_ok(), "re-decoding failed: {:?}", again.err());
        }
        Err(e) => {
            prop_assert!(CODES.contains(&e.code()), "unexpected code {}", e.code());
            let answer = e.to_error_message();
            prop_assert_eq!(answer.code, e.code());
            prop_assert!(!answer.message.is_empty());
            // The answer does not amplify the line.
            prop_assert!(
                answer.message.len() <= line.len() + 512,
                "{} bytes of message for {} bytes of line",
                answer.message.len(),
                line.len()
            );
        }
    }
    Ok(())
}

/// Fails with the (shrunk) failing line, cut to a readable length.
fn report<T: AsRef<[u8]> + std::fmt::Debug>(
    result: Result<(), proptest::test_runner::TestError<T>>,
) {
    match result {
        Ok(()) => {}
        Err(proptest::test_runner::TestError::Fail(why, value)) => {
            let text = format!("{value:?}");
            let cut: String = text.chars().take(2_000).collect();
            let why: String = why.to_string().chars().take(2_000).collect();
            panic!("{why}\nfailing input ({} chars): {cut}", text.len());
        }
        Err(e) => panic!("{}", e.to_string().chars().take(2_000).collect::<String>()),
    }
}

/// A line, shown as text when a case fails.
#[derive(Clone)]
struct Line(Vec<u8>);

impl std::fmt::Debug for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", String::from_utf8_lossy(&self.0))
    }
}

impl AsRef<[u8]> for Line {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

fn seed() -> u64 {
    std::env::var("A2E_FUZZ_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn cases() -> u32 {
    std::env::var("A2E_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3_000)
}

/// A runner of `cases` cases, with a fixed seed in CI (`cargo xtask fuzz
/// --seed S` explores others).
fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config {
        cases,
        failure_persistence: None,
        rng_seed: proptest::test_runner::RngSeed::Fixed(seed()),
        ..Config::default()
    })
}

#[test]
fn hostile_lines_decode_or_get_a_coded_error() {
    let mut runner = runner(cases());
    let strategy = arb::hostile_line(seeds()).prop_map(Line);
    report(runner.run(&strategy, |line| check(&line.0)));
}

#[test]
fn every_known_message_survives_every_kind_of_mutation() {
    let mut runner = runner(cases() / 3);
    let strategy = arb::message()
        .prop_flat_map(|m| arb::mutated(serde_json::to_value(&m).unwrap()))
        .prop_map(Line);
    report(runner.run(&strategy, |line| check(&line.0)));
}

/// Deep JSON is refused by the depth scan before the parser, and past the
/// parser's own limit (128) the parser refuses it: on a stack half the size
/// of a tokio worker's, in a debug build, never an abort.
#[test]
fn deep_nesting_is_a_clean_error_on_a_small_stack() {
    std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(|| {
            for n in [65, 129, 10_000, 1_000_000] {
                for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
                    let inner = format!("{}1{}", open.repeat(n), close.repeat(n));
                    let line = format!("{{\"type\":\"ping\",\"id\":\"d\",\"x\":{inner}}}");
                    let e = decode(line.as_bytes()).unwrap_err();
                    assert_eq!(e.code(), ErrorCode::INVALID_MESSAGE, "{n}");
                    // Limits above the parser's: its own recursion limit.
                    let loose = DecodeOptions {
                        max_depth: 100_000_000,
                        ..DecodeOptions::default()
                    };
                    // (An ignored member is skipped without recursion, so
                    // it may even decode; what matters is that it returns.)
                    if let Err(e) = decode_with(line.as_bytes(), &loose) {
                        assert!(CODES.contains(&e.code()), "{n}: {}", e.code());
                    }
                    // Where the value is read, the parser's limit applies.
                    let read = format!("{{\"type\":\"tool/call/req\",\"id\":\"d\",\"tool_name\":\"t\",\"arguments\":{{\"a\":{inner}}}}}");
                    if let Err(e) = decode_with(read.as_bytes(), &loose) {
                        assert!(CODES.contains(&e.code()), "{n}: {}", e.code());
                    } else {
                        assert!(n < 127, "{n} levels read whole");
                    }
                }
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn the_seeds_decode_as_the_fixtures_say() {
    // The mutation base is sound: every message fixture decodes.
    for seed in seeds().iter().take(40) {
        let line = serde_json::to_vec(seed).unwrap();
        let _ = check(&line);
    }
    assert!(matches!(
        decode(br#"{"type":"ping","id":"p"}"#),
        Ok(Message::Ping(_))
    ));
}

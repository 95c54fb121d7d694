//! The JSON repair and the document parser under hostile input: JSON-like
//! noise, arbitrary text, mutated example documents and deep nesting. Nothing
//! panics or overflows the stack; a repair that succeeds yields JSON. (The
//! repair's own cases and its value-keeping properties: `repair.rs`.)
//!
//! `cargo xtask fuzz --only decode` runs it with `A2E_FUZZ_CASES` cases from
//! `A2E_FUZZ_SEED`; `cargo test` runs 1,000 cases from seed 0.

use std::path::Path;

use ontheia::repair::{extract_json, parse_lenient, repair};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::Value;

fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn run<S: Strategy>(strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(Config {
        cases: env_number("A2E_FUZZ_CASES", 1_000),
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(env_number("A2E_FUZZ_SEED", 0)),
        ..Config::default()
    });
    if let Err(e) = runner.run(&strategy, test) {
        let text = e.to_string();
        panic!("{}", text.chars().take(4_000).collect::<String>());
    }
}

/// Repairs `text` every way the engine does; a repair must be JSON.
fn check_repair(text: &str) -> Result<(), TestCaseError> {
    if let Ok(out) = repair(text) {
        prop_assert!(
            serde_json::from_str::<Value>(&out).is_ok(),
            "{text:?} repaired to {out:?}, which is not JSON"
        );
    }
    let _ = extract_json(text);
    let _ = parse_lenient(text);
    Ok(())
}

/// The example documents, as text.
fn documents() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/ontheia");
    let docs: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(!docs.is_empty());
    docs
}

#[test]
fn json_like_noise_repairs_to_json_or_is_refused() {
    run(
        "[\\[\\]{}:,\"'a-cenu0-9E .\\\\/*+\\n\\r\\t()#`;“”‘’\u{a0}-]{0,120}",
        |text| check_repair(&text),
    );
}

#[test]
fn arbitrary_text_repairs_to_json_or_is_refused() {
    run("\\PC{0,200}", |text| {
        check_repair(&text)?;
        let _ = ontheia::parse(&text);
        Ok(())
    });
}

#[test]
fn cut_and_spliced_examples_repair_or_are_refused() {
    let strategy = proptest::sample::select(documents()).prop_flat_map(|doc| {
        let n = doc.chars().count();
        (Just(doc), 0..=n, 0..=n, "[\\[\\]{}\"',:\\\\]{0,4}")
    });
    run(strategy, |(doc, a, b, splice)| {
        let (a, b) = (a.min(b), a.max(b));
        let chars: Vec<char> = doc.chars().collect();
        let text: String = chars[..a]
            .iter()
            .chain(splice.chars().collect::<Vec<_>>().iter())
            .chain(&chars[b..])
            .collect();
        check_repair(&text)?;
        let _ = ontheia::parse(&text);
        Ok(())
    });
}

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    let strategy = (1usize..5_000, "[\\[{\"'(a:,]{1,3}");
    run(strategy, |(n, unit)| {
        let text = unit.repeat(n);
        check_repair(&text)?;
        let _ = ontheia::parse(&text);
        Ok(())
    });
}

#[test]
fn a_hundred_thousand_levels_are_refused_at_the_depth_limit() {
    for unit in ["[", "{a:", "a(", "[{a:", "f({a:"] {
        let text = unit.repeat(100_000);
        let err = repair(&text).expect_err(unit);
        assert!(
            err.message.contains("nesting deeper than 127"),
            "{unit}: {err}"
        );
    }
    // `{{` is refused at once: an object key cannot be an object.
    let err = repair(&"{".repeat(100_000)).unwrap_err();
    assert_eq!(err.position, 1, "{err}");
}

#[test]
fn the_deepest_repair_still_parses() {
    let deepest = format!("{}1", "[".repeat(ontheia::repair::MAX_DEPTH));
    let out = repair(&deepest).unwrap();
    serde_json::from_str::<Value>(&out).unwrap();
    let err = repair(&format!("[{deepest}")).unwrap_err();
    assert!(err.message.contains("nesting deeper"), "{err}");
    // Newline-delimited values are wrapped in a list: one level more.
    let err = repair(&format!("1\n{deepest}")).unwrap_err();
    assert!(err.message.contains("nesting deeper"), "{err}");
    let shallower = format!("1\n{}1", "[".repeat(ontheia::repair::MAX_DEPTH - 1));
    serde_json::from_str::<Value>(&repair(&shallower).unwrap()).unwrap();
}

//! The decoders and validators under hostile input: mutations of every
//! fixture (deep nesting, huge numbers, long strings, wrong types, duplicate
//! members, random bytes) and arbitrary field paths. Nothing panics; every
//! refusal says what is wrong.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use a2e_proto::arb;
use acmp_dag::decode::from_json_str;
use acmp_dag::jsonrpc::Request;
use acmp_dag::path::FieldPath;
use acmp_dag::validate::check;
use acmp_dag::{Dag, InvokeParams, InvokeResult, Task, ValidatedDag, ValidationLimits};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::Value;

fn seeds() -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out: Vec<Value> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| serde_json::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap())
        .collect();
    // The request's params alone, and a DAG's tasks alone, as documents too.
    let more: Vec<Value> = out
        .iter()
        .filter_map(|v| v.get("params").or_else(|| v.get("tasks")).cloned())
        .collect();
    out.extend(more);
    assert!(out.len() >= 6);
    out
}

/// Feeds `text` to every decoder and, when it decodes, to the validators.
fn check_text(text: &str) -> Result<(), TestCaseError> {
    let run = catch_unwind(AssertUnwindSafe(|| {
        let mut errors = Vec::new();
        match from_json_str::<Dag>(text) {
            Ok(dag) => {
                let report = check(&dag, &ValidationLimits::default());
                errors.extend(report.errors.iter().map(ToString::to_string));
                let _ = ValidatedDag::new(dag, &ValidationLimits::default());
            }
            Err(e) => errors.push(e.to_string()),
        }
        match from_json_str::<Task>(text) {
            Ok(_) => {}
            Err(e) => errors.push(e.to_string()),
        }
        match from_json_str::<InvokeParams>(text) {
            Ok(p) => {
                if let Err(e) = p.check() {
                    errors.push(e.to_string());
                }
            }
            Err(e) => errors.push(e.to_string()),
        }
        if let Err(e) = from_json_str::<InvokeResult>(text) {
            errors.push(e.to_string());
        }
        if let Err(e) = from_json_str::<Request<InvokeParams>>(text) {
            errors.push(e.to_string());
        }
        errors
    }));
    match run {
        Ok(errors) => {
            for e in errors {
                prop_assert!(!e.is_empty(), "an error without a message");
            }
            Ok(())
        }
        Err(_) => Err(TestCaseError::fail("a decoder or validator panicked")),
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
        .unwrap_or(1_000)
}

fn run<S: Strategy>(strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        // A fixed seed in CI; `cargo xtask fuzz --seed S` explores others.
        rng_seed: proptest::test_runner::RngSeed::Fixed(seed()),
        ..Config::default()
    });
    if let Err(e) = runner.run(&strategy, test) {
        let text = e.to_string();
        panic!("{}", text.chars().take(4_000).collect::<String>());
    }
}

#[test]
fn mutated_fixtures_decode_or_are_refused() {
    let strategy = proptest::sample::select(seeds())
        .prop_flat_map(arb::mutated)
        .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
    run(strategy, |text| check_text(&text));
}

#[test]
fn field_paths_parse_or_name_the_offset() {
    let strategy = prop_oneof![
        "data(\\.[a-z_0-9-]{0,6}|\\[[0-9]{0,4}\\]|[*$?:,'\\[\\]\\.]){0,12}",
        ".{0,40}",
        (1usize..200_000).prop_map(|n| format!("data{}", ".a".repeat(n))),
        (1usize..200_000).prop_map(|n| format!("data{}", "[".repeat(n))),
        Just("data[18446744073709551616]".to_owned()),
        Just("data[99999999999999999999999999]".to_owned()),
    ];
    run(strategy, |path| {
        let parsed = catch_unwind(|| FieldPath::parse(&path));
        let Ok(parsed) = parsed else {
            return Err(TestCaseError::fail("FieldPath::parse panicked"));
        };
        if let Err(e) = parsed {
            prop_assert!(!e.to_string().is_empty());
        }
        Ok(())
    });
}

/// Deep JSON ends in a decode error on a stack half a tokio worker's size.
#[test]
fn deep_documents_are_refused_cleanly() {
    std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(|| {
            for n in [129, 10_000, 1_000_000] {
                let deep = format!("{}1{}", "[".repeat(n), "]".repeat(n));
                let doc = format!(
                    r#"{{"dag_id":"d","tasks":[{{"task_id":"a","capability":"c","input":{{"type":"json","data":{deep}}}}}]}}"#
                );
                let e = from_json_str::<Dag>(&doc).unwrap_err();
                assert!(e.message.contains("recursion limit"), "{n}: {e}");
            }
        })
        .unwrap()
        .join()
        .unwrap();
}

/// A task's `timeout_ms` as large as it gets still makes a deadline (no
/// overflow): the run finishes when the provider answers.
#[tokio::test]
async fn the_largest_timeout_does_not_overflow() {
    let dag: Dag = from_json_str(
        r#"{"dag_id":"d","tasks":[{"task_id":"a","capability":"c","input":{"type":"text","data":"x"},"timeout_ms":18446744073709551615}],"edges":[]}"#,
    )
    .unwrap();
    let provider = acmp_dag::from_fn(|inv: acmp_dag::Invocation| async move {
        Ok(acmp_dag::InvokeResult::new(
            inv.params.task_id.clone(),
            acmp_dag::Payload::text("done"),
        ))
    });
    let router = acmp_dag::CapabilityRouter::new()
        .with("c", provider)
        .unwrap();
    let outcome = acmp_dag::Orchestrator::new(router).run(dag).await.unwrap();
    assert_eq!(
        outcome.status,
        acmp_dag::DagStatus::Completed,
        "{outcome:?}"
    );
}

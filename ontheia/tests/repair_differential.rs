//! Differential test: our repairer against the npm `jsonrepair` package (the
//! library the reference engine uses) over the committed corpus of malformed
//! model output. Agreement means both parse to the same JSON value (numbers
//! compared as doubles, as JavaScript has them), or both fail. Fails under
//! 95 %, listing every disagreement; prints the agreement figure.

use crate::skip;

use std::process::Command;

use serde_json::Value;

const CORPUS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/repair_corpus/inputs.jsonl"
);
const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/repair_corpus/npm_jsonrepair.cjs"
);

/// Numbers as doubles, so that `1.0` and `1` (and a 20-digit integer and its
/// double) compare equal, as they do after `JSON.parse`.
fn normalize(v: &Value) -> Value {
    match v {
        Value::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        Value::Array(items) => Value::Array(items.iter().map(normalize).collect()),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), normalize(v))).collect())
        }
        other => other.clone(),
    }
}

fn ours(input: &str) -> Option<Value> {
    let repaired = ontheia::repair::repair(input).ok()?;
    serde_json::from_str(&repaired).ok()
}

#[test]
fn repair_agrees_with_npm_jsonrepair() {
    let node_modules = a2e_test_kit::ci_tools::dir()
        .join("node")
        .join("node_modules");
    let installed = node_modules
        .join("jsonrepair")
        .join("package.json")
        .exists();
    let node = Command::new("node").arg("--version").output().is_ok();
    if !installed || !node {
        let what = if node {
            "the npm package jsonrepair"
        } else {
            "node and the npm package jsonrepair"
        };
        if std::env::var_os("CI").is_some() {
            panic!("repair_agrees_with_npm_jsonrepair needs {what} (run .ci/install-ontheia.sh)");
        }
        skip::skipped(&format!(
            "repair_agrees_with_npm_jsonrepair needs {what} (run .ci/install-ontheia.sh)"
        ));
        return;
    }
    let corpus = std::fs::read_to_string(CORPUS).expect("corpus");
    let inputs: Vec<String> = corpus
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).expect("corpus line is a JSON string"))
        .collect();
    assert!(
        inputs.len() >= 200,
        "the corpus has {} inputs, needs 200",
        inputs.len()
    );

    let out = Command::new("node")
        .arg(SCRIPT)
        .arg(CORPUS)
        .env("NODE_PATH", &node_modules)
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "node failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Vec<Option<Value>> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("node output line");
            (v["ok"] == true).then(|| v["value"].clone())
        })
        .collect();
    assert_eq!(theirs.len(), inputs.len(), "one npm answer per input");

    let mut disagreements = Vec::new();
    for (i, (input, npm)) in inputs.iter().zip(&theirs).enumerate() {
        let mine = ours(input);
        if mine.as_ref().map(normalize) != npm.as_ref().map(normalize) {
            disagreements.push(format!(
                "  #{i} {input:?}\n    ours: {}\n    npm:  {}",
                mine.map_or("(fails)".into(), |v| v.to_string()),
                npm.as_ref().map_or("(fails)".into(), |v| v.to_string()),
            ));
        }
    }
    let agree = inputs.len() - disagreements.len();
    let pct = 100.0 * agree as f64 / inputs.len() as f64;
    eprintln!(
        "repair agreement with npm jsonrepair: {agree}/{} = {pct:.1}%",
        inputs.len()
    );
    for d in &disagreements {
        eprintln!("{d}");
    }
    assert!(
        pct >= 95.0,
        "agreement {pct:.1}% is under 95%; disagreements:\n{}",
        disagreements.join("\n")
    );
}

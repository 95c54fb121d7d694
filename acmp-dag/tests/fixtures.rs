//! The spec's JSON examples as conformance fixtures: each decodes, re-encodes with every
//! original field and value intact, is snapshotted, and validates against the generated
//! schema.

use acmp_dag::jsonrpc::{Request, Response};
use acmp_dag::{Dag, InvokeParams, InvokeResult, Task, TaskInput, ValidatedDag, ValidationLimits};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn fixture(name: &str) -> (String, Value) {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let value = serde_json::from_str(&text).unwrap();
    (text, value)
}

/// Every field of `original` is in `encoded` with the same value, at any depth.
fn assert_fields_survive(original: &Value, encoded: &Value, at: &str) {
    match (original, encoded) {
        (Value::Object(o), Value::Object(e)) => {
            for (key, value) in o {
                let here = format!("{at}.{key}");
                let other = e.get(key).unwrap_or_else(|| panic!("{here} lost"));
                assert_fields_survive(value, other, &here);
            }
        }
        (Value::Array(o), Value::Array(e)) => {
            assert_eq!(o.len(), e.len(), "{at}: length");
            for (i, (a, b)) in o.iter().zip(e).enumerate() {
                assert_fields_survive(a, b, &format!("{at}[{i}]"));
            }
        }
        _ => assert_eq!(original, encoded, "{at}"),
    }
}

fn round_trip<T: Serialize + DeserializeOwned>(name: &str) -> (Value, T) {
    let (text, original) = fixture(name);
    let decoded: T = acmp_dag::decode::from_json_str(&text).unwrap();
    let encoded = serde_json::to_value(&decoded).unwrap();
    assert_fields_survive(&original, &encoded, "$");
    assert_eq!(original, encoded, "{name}: nothing added either");
    (encoded, decoded)
}

#[test]
fn task_fixture_round_trips() {
    let (encoded, task) = round_trip::<Task>("task.json");
    assert_eq!(task.task_id, "task_a7c923f1");
    assert_eq!(
        task.input,
        TaskInput::text("The product quality has declined significantly.")
    );
    assert_eq!(task.max_price_cu, Some(0.005));
    insta::assert_json_snapshot!("task", encoded);
}

#[test]
fn input_forms_round_trip() {
    let (encoded, input) = round_trip::<TaskInput>("literal_input.json");
    assert!(matches!(input, TaskInput::Literal(_)));
    insta::assert_json_snapshot!("literal_input", encoded);
    let (encoded, input) = round_trip::<TaskInput>("input_reference.json");
    assert_eq!(
        input,
        TaskInput::from_task_field("task_split_01", "data.chunks[0]")
    );
    insta::assert_json_snapshot!("input_reference", encoded);
}

#[test]
fn dag_fixture_round_trips_and_is_valid() {
    let (encoded, dag) = round_trip::<Dag>("dag.json");
    assert_eq!(dag.tasks.len(), 4);
    assert_eq!(dag.edges.len(), 4);
    assert_eq!(
        dag.tasks[3].input,
        TaskInput::from_tasks(["task_sent_02a", "task_sent_02b"])
    );
    let valid = ValidatedDag::new(dag, &ValidationLimits::default()).unwrap();
    assert_eq!(valid.roots().collect::<Vec<_>>(), ["task_split_01"]);
    assert_eq!(valid.leaves().collect::<Vec<_>>(), ["task_agg_03"]);
    assert_eq!((valid.depth(), valid.breadth()), (3, 2));
    assert!(valid.warnings().is_empty());
    insta::assert_json_snapshot!("dag", encoded);
}

#[test]
fn invoke_fixture_round_trips() {
    let (encoded, request) = round_trip::<Request<InvokeParams>>("invoke.json");
    assert_eq!(request.method, acmp_dag::layer1::methods::INVOKE);
    assert_eq!(request.params.timeout_ms, Some(800));
    assert_eq!(request.params.escrow_id.as_deref(), Some("esc_a3f9c2"));
    request.params.check().unwrap();
    insta::assert_json_snapshot!("invoke", encoded);
}

#[test]
fn result_fixture_round_trips() {
    let (encoded, response) = round_trip::<Response<InvokeResult>>("result.json");
    let result = response.result;
    assert_eq!(result.tokens_used, 115);
    assert_eq!(result.cost_cu, 0.003);
    let proof = result.proof.unwrap();
    assert_eq!(proof.method, "result-hash");
    assert_eq!(proof.fields["hash"], "sha256:a1b2c3d4e5f6...");
    insta::assert_json_snapshot!("result", encoded);
}

#[test]
fn jsonrpc_version_is_checked() {
    let (_, mut value) = fixture("invoke.json");
    value["jsonrpc"] = "1.0".into();
    let err = acmp_dag::decode::from_value::<Request<InvokeParams>>(&value).unwrap_err();
    assert_eq!(err.path, "jsonrpc");
    assert_eq!(err.task_id, None);
}

#[cfg(feature = "schema")]
mod schema {
    use super::*;

    fn schema(stem: &str) -> Value {
        acmp_dag::schema::schemas()
            .into_iter()
            .find(|(s, _)| *s == stem)
            .unwrap_or_else(|| panic!("no schema {stem}"))
            .1
    }

    fn errors(stem: &str, instance: &Value) -> Vec<String> {
        let schema = schema(stem);
        let validator = jsonschema::validator_for(&schema).unwrap();
        validator
            .iter_errors(instance)
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn fixtures_validate_against_their_schema() {
        assert_eq!(
            errors("acmp.task", &fixture("task.json").1),
            Vec::<String>::new()
        );
        assert_eq!(
            errors("acmp.dag", &fixture("dag.json").1),
            Vec::<String>::new()
        );
        let invoke = fixture("invoke.json").1;
        assert_eq!(
            errors("acmp.invoke", &invoke["params"]),
            Vec::<String>::new()
        );
        let result = fixture("result.json").1;
        assert_eq!(
            errors("acmp.result", &result["result"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn schema_rejects_mixed_or_empty_inputs() {
        let mut task = fixture("task.json").1;
        task["input"]["source"] = serde_json::json!({"from_task": "a"});
        assert!(
            !errors("acmp.task", &task).is_empty(),
            "literal and reference at once"
        );
        task["input"] = serde_json::json!({});
        assert!(!errors("acmp.task", &task).is_empty(), "neither form");
        task["input"] = serde_json::json!({"source": {"from_task": "a", "from_tasks": ["b"]}});
        assert!(
            !errors("acmp.task", &task).is_empty(),
            "from_task and from_tasks"
        );
        task["input"] = serde_json::json!({"source": {"from_tasks": ["a"], "field": "data.x"}});
        assert_eq!(errors("acmp.task", &task), Vec::<String>::new());
    }

    #[test]
    fn every_schema_is_a_valid_2020_12_schema_with_a_unique_stem() {
        let all = acmp_dag::schema::schemas();
        let mut stems: Vec<_> = all.iter().map(|(s, _)| *s).collect();
        stems.sort_unstable();
        stems.dedup();
        assert_eq!(stems.len(), all.len());
        for (stem, schema) in &all {
            assert!(stem.starts_with("acmp."), "{stem}");
            assert_eq!(
                schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{stem}"
            );
            jsonschema::validator_for(schema).unwrap();
        }
    }
}

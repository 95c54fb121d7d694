//! The documents in `examples/ontheia/` validate, match the generated JSON
//! Schema, and the offline ones run.

use crate::common;

use common::{Host, engine, run};
use ontheia::{Globals, LlmReply, StepStatus};
use serde_json::{Map, json};

fn example(name: &str) -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/ontheia/");
    std::fs::read_to_string(format!("{path}{name}")).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn all_examples_validate_and_fit_the_schema() {
    let schema = ontheia::schema::document_schema();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    for name in ["memory.json", "control-flow.json", "model.json"] {
        let text = example(name);
        ontheia::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
    }
    // The schema rejects what the format does not have.
    assert!(!validator.is_valid(&json!({"steps": [{"id": "a", "type": "python"}]})));
    assert!(!validator.is_valid(&json!({"steps": [{"id": "a", "type": "llm", "extra": 1}]})));
    assert!(!validator.is_valid(&json!({"steps": []})));
}

#[tokio::test(start_paused = true)]
async fn control_flow_example_runs_offline() {
    let doc = ontheia::parse(&example("control-flow.json")).unwrap();
    let (out, events) = run(
        &engine(Host::default()),
        &doc,
        &Globals::with_input("weather"),
    )
    .await;
    assert!(!out.any_failed(), "{:?}", out.to_value());
    assert_eq!(out.result("route").unwrap().data["executedBranchIndex"], 0);
    assert_eq!(out.result("settle_retry").unwrap().data["attempts"], 2);
    assert_eq!(out.result("check").unwrap().data["executedBranchIndex"], 0);
    assert_eq!(
        out.outputs["summary"],
        json!({"topic": "weather", "a": "radar says: mild", "b": "station says: windy", "last_tick": "round 3 of 3",
               "retry": "settled after 2 attempts", "date": "Dienstag, 1. Dezember 2026"})
    );
    assert_eq!(events.iter().filter(|e| *e == "tick:done").count(), 3);
    assert!(events.contains(&"summary:message".to_owned()));
    // Another input takes the default route.
    let (out, _) = run(
        &engine(Host::default()),
        &doc,
        &Globals::with_input("cooking"),
    )
    .await;
    assert_eq!(
        out.result("route").unwrap().data["executedBranchIndex"],
        999
    );
    assert_eq!(out.result("topic_other").unwrap().data["topic"], "other");
    assert!(out.result("topic").is_none());
}

#[tokio::test]
async fn memory_example_runs_with_an_in_test_host() {
    let doc = ontheia::parse(&example("memory.json")).unwrap();
    let host = Host::with_llm(|req| Ok(LlmReply::text(format!("answered: {}", req.prompt))));
    host.memory.lock().unwrap().push((
        "vector.user.u1.debug".into(),
        "User Input: earlier tea".into(),
        Map::new(),
    ));
    let g = Globals {
        user_id: Some("u1".into()),
        ..Globals::with_input("tea")
    };
    let e = engine(host);
    let (out, _) = run(&e, &doc, &g).await;
    for id in ["read_mem", "write_mem", "transform_mem", "final_output"] {
        assert_eq!(out.result(id).unwrap().status, StepStatus::Success, "{id}");
    }
    let listed = out
        .result("transform_mem")
        .unwrap()
        .output
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        listed.contains("\"content\": \"User Input: earlier tea\""),
        "{listed}"
    );
    let prompt = &e.backend().llm_calls()[0].prompt;
    assert!(
        prompt.starts_with("Answer tea using Format this memory JSON"),
        "{prompt}"
    );
    assert_eq!(e.backend().memory.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn model_example_runs_with_a_messy_model() {
    let doc = ontheia::parse(&example("model.json")).unwrap();
    let host = Host::with_llm(|req| {
        Ok(LlmReply::text(if req.step_id == "classify" {
            "Sure! ```json\n{intent: 'weather', 'city': 'Munich',}\n```".to_owned()
        } else {
            format!("reply to: {}", req.prompt)
        }))
    });
    let (out, _) = run(
        &engine(host),
        &doc,
        &Globals::with_input("Wetter in München?"),
    )
    .await;
    assert_eq!(
        out.result("weather").unwrap().output,
        "reply to: Write one sentence about the weather in Munich."
    );
    assert_eq!(
        out.outputs["record"],
        json!({"intent": "weather", "branch": 0, "parsed": "success"})
    );
}

#[test]
fn the_schema_names_the_limits() {
    let schema = ontheia::schema::document_schema();
    let text = schema.to_string();
    assert_eq!(schema["title"], "Ontheia chain document");
    assert_eq!(schema["properties"]["steps"]["maxItems"], 50);
    assert_eq!(schema["properties"]["edges"]["maxItems"], 200);
    assert_eq!(schema["additionalProperties"], false);
    for name in ontheia::StepType::ALL {
        assert!(text.contains(&format!("\"{}\"", name.as_str())), "{name}");
    }
    assert!(text.contains("600000"), "delay_ms maximum");
}

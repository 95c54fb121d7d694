//! `examples/ontheia/model.json` against a real local model: an
//! OpenAI-compatible server (llama.cpp with SmolLM2-135M, started by
//! `.ci/install-llm.sh`, announced in `A2E_TEST_LOCAL_LLM_URL`). A small
//! model's messy answers put extraction and repair to a real test.

use crate::skip;

use crate::common;

use common::http_request;
use ontheia::{
    Backend, BackendError, Engine, Globals, LlmReply, LlmRequest, RestRequest, StepStatus,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The llm backend of a host: Chat Completions over HTTP.
struct ModelHost {
    url: String,
    model: String,
}

impl Backend for ModelHost {
    async fn llm(
        &self,
        req: LlmRequest,
        _cancel: CancellationToken,
    ) -> Result<LlmReply, BackendError> {
        let mut messages = Vec::new();
        if let Some(system) = &req.system_prompt {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": req.prompt}));
        let mut body = json!({
            "model": req.model.clone().unwrap_or_else(|| self.model.clone()),
            "messages": messages,
            "temperature": req.temperature.unwrap_or(0.0),
            "max_tokens": req.params.get("max_tokens").cloned().unwrap_or(json!(80)),
        });
        if req.model.is_some() {
            body["model"] = json!(self.model);
        }
        let resp = http_request(&RestRequest {
            step_id: req.step_id.clone(),
            method: "POST".into(),
            url: format!("{}/chat/completions", self.url.trim_end_matches('/')),
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Some(body),
        })
        .await?;
        if resp.status != 200 {
            return Err(BackendError::failed(format!(
                "model server answered {}: {}",
                resp.status, resp.body
            )));
        }
        let v: Value =
            serde_json::from_str(&resp.body).map_err(|e| BackendError::failed(e.to_string()))?;
        let text = v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        Ok(LlmReply::text(text))
    }
}

fn model_host() -> Option<ModelHost> {
    let url = std::env::var("A2E_TEST_LOCAL_LLM_URL").ok();
    match url {
        Some(url) => Some(ModelHost {
            url,
            model: std::env::var("A2E_TEST_LOCAL_LLM_MODEL")
                .unwrap_or_else(|_| "smollm2-135m".into()),
        }),
        None if std::env::var_os("CI").is_some() => {
            panic!(
                "model_example_against_a_local_model needs the local model server (A2E_TEST_LOCAL_LLM_URL; run .ci/install-llm.sh)"
            )
        }
        None => {
            skip::skipped(
                "model_example_against_a_local_model needs the local model server (run .ci/install-llm.sh)",
            );
            None
        }
    }
}

#[tokio::test]
async fn model_example_against_a_local_model() {
    let Some(host) = model_host() else { return };
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../examples/ontheia/model.json"
    );
    let doc = ontheia::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    let engine = Engine::with_config(host, common::config());
    for input in [
        "What is the weather in Berlin?",
        "Tell me a joke about cats.",
    ] {
        let out = engine
            .run(
                &doc,
                &Globals::with_input(input),
                (),
                CancellationToken::new(),
            )
            .await
            .expect("run");
        let classify = out.result("classify").unwrap();
        assert_eq!(classify.status, StepStatus::Success, "{:?}", classify.error);
        let text = classify.output.as_str().unwrap().to_owned();
        eprintln!(
            "model answered {input:?} with {text:?} → data {}",
            classify.data
        );
        assert!(!text.trim().is_empty());
        if let (Some(a), Some(b)) = (text.find(['{', '[']), text.rfind(['}', ']']))
            && a < b
        {
            assert_ne!(
                classify.data,
                Value::Null,
                "JSON in {text:?} was extracted and repaired"
            );
        }
        let branch = out.result("route").unwrap().data["executedBranchIndex"].clone();
        assert!(branch == json!(0) || branch == json!(999), "{branch}");
        let answered = if branch == json!(0) {
            "weather"
        } else {
            "general"
        };
        assert_eq!(out.result(answered).unwrap().status, StepStatus::Success);
        assert_eq!(out.outputs["record"]["branch"], branch);
    }
}

#[tokio::test]
async fn messy_model_json_is_repaired() {
    let Some(host) = model_host() else { return };
    // Ask for JSON the way chains do; whatever the model wraps around it, the
    // extracted part must repair into a value.
    let prompts = [
        "Return a JSON object with keys name and age for a person called Ada who is 36.",
        "List three colours as a JSON array.",
        "Answer in JSON: {\"ok\": true or false} — is water wet?",
    ];
    let mut repaired = 0;
    for prompt in prompts {
        let reply = host
            .llm(
                LlmRequest {
                    step_id: "p".into(),
                    prompt: prompt.into(),
                    system_prompt: Some("Answer only with JSON.".into()),
                    model: None,
                    temperature: Some(0.0),
                    silent: true,
                    params: Default::default(),
                    chain_state: String::new(),
                    agent_id: None,
                    depth: 0,
                },
                CancellationToken::new(),
            )
            .await
            .expect("model answers");
        let data = ontheia::repair::extract_json(&reply.text);
        eprintln!("{prompt:?} → {:?} → {data:?}", reply.text);
        if reply.text.contains(['{', '[']) && reply.text.contains(['}', ']']) {
            assert!(data.is_some(), "{:?} did not repair", reply.text);
            repaired += 1;
        }
    }
    assert!(repaired >= 1, "the model answered JSON at least once");
}

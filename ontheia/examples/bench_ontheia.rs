//! Engine overhead per step: a 50-step document (every leaf kind, templates
//! reading earlier steps, `when`, a branch, a loop) over no-op backends,
//! validation included. The peer, measured in the same run, makes the same
//! 50 backend calls directly without the engine.
//!
//! `cargo xtask bench ontheia` (or `cargo run --release -p ontheia --example
//! bench_ontheia [-- TRIALS]`). One JSON line; figures are medians.

use std::hint::black_box;
use std::time::Instant;

use a2e_bench::report::{emit, round};
use a2e_bench::stats::median;
use ontheia::{
    AgentPlan, AgentRequest, Backend, BackendError, Document, Engine, Globals, LlmReply,
    LlmRequest, MemorySearch, MemoryWrite, RestRequest, RestResponse, ToolStepCall,
};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// Answers everything at once with small fixed values.
struct NoOp;

impl Backend for NoOp {
    async fn llm(&self, req: LlmRequest, _: CancellationToken) -> Result<LlmReply, BackendError> {
        black_box(&req);
        Ok(LlmReply::text("{\"ok\": true, \"n\": 1}"))
    }
    async fn tool(&self, call: ToolStepCall, _: CancellationToken) -> Result<Value, BackendError> {
        black_box(&call);
        Ok(json!({"content": [{"type": "text", "text": "{\"value\": 42}"}]}))
    }
    async fn memory_search(
        &self,
        req: MemorySearch,
        _: CancellationToken,
    ) -> Result<Vec<Value>, BackendError> {
        black_box(&req);
        Ok(vec![json!({"content": "note", "score": 0.9})])
    }
    async fn memory_write(
        &self,
        req: MemoryWrite,
        _: CancellationToken,
    ) -> Result<u64, BackendError> {
        black_box(&req);
        Ok(1)
    }
    async fn rest_call(
        &self,
        req: RestRequest,
        _: CancellationToken,
    ) -> Result<RestResponse, BackendError> {
        black_box(&req);
        Ok(RestResponse {
            status: 200,
            body: "{\"status\": \"up\"}".into(),
        })
    }
    async fn agent(
        &self,
        req: AgentRequest,
        _: CancellationToken,
    ) -> Result<AgentPlan, BackendError> {
        black_box(&req);
        Ok(AgentPlan::Reply(LlmReply::text("done")))
    }
}

/// 50 top-level steps: 40 leaves of every kind, 5 transforms, a branch and a
/// loop (their one sub-step each is counted in the 50), conditions.
fn document() -> Document {
    let mut steps = Vec::new();
    for i in 0..40 {
        let prev = if i == 0 {
            "input".to_owned()
        } else {
            format!("steps.s{}.output", i - 1)
        };
        let step = match i % 6 {
            0 => {
                json!({"id": format!("s{i}"), "type": "llm", "prompt": format!("Step {i}: ${{{prev}}} for ${{user_name}}"), "params": {"silent": true}})
            }
            1 => {
                json!({"id": format!("s{i}"), "type": "tool", "server": "srv", "tool": "t", "args": {"q": format!("${{{prev}}}"), "n": i}})
            }
            2 => {
                json!({"id": format!("s{i}"), "type": "memory_search", "params": {"namespaces": ["vector.user.${user_id}.notes"], "query": "${input}"}})
            }
            3 => {
                json!({"id": format!("s{i}"), "type": "memory_write", "params": {"namespace": "vector.user.${user_id}.notes", "content": format!("${{{prev}}}")}})
            }
            4 => {
                json!({"id": format!("s{i}"), "type": "rest_call", "url": "http://127.0.0.1/x?q=${input}", "when": "${user_id} != ''"})
            }
            _ => {
                json!({"id": format!("s{i}"), "type": "agent", "agent_id": "helper", "input": format!("${{{prev}}}"), "params": {"silent": true}})
            }
        };
        steps.push(step);
    }
    for i in 40..46 {
        steps.push(json!({"id": format!("s{i}"), "type": "transform", "prompt": "{\"v\": \"${steps.s1.data.value}\", \"d\": \"${current_date}\"}", "params": {"silent": true}}));
    }
    steps.push(json!({"id": "b", "type": "branch", "cases": [
        {"when": "${steps.s0.data.ok} == 'true'", "steps": [{"id": "b1", "type": "transform", "prompt": "yes", "params": {"silent": true}}]}
    ]}));
    steps.push(json!({"id": "l", "type": "loop", "count": 1, "steps": [
        {"id": "l1", "type": "transform", "prompt": "${loop.index}", "params": {"silent": true}}
    ]}));
    ontheia::parse_value(&json!({ "steps": steps })).unwrap_or_else(|e| {
        eprintln!("bench_ontheia: {e}");
        std::process::exit(1)
    })
}

fn main() {
    let trials: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(201);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("bench_ontheia: {e}");
            std::process::exit(1)
        });
    let doc = document();
    let steps_run = 50; // 48 top-level (46 leaves and transforms, branch, loop) + 2 sub-steps
    let globals = Globals {
        user_id: Some("u1".into()),
        user_name: Some("Ada".into()),
        ..Globals::with_input("what is the weather?")
    };
    let engine = Engine::new(NoOp);
    let backend = NoOp;
    let mut t_validate = Vec::with_capacity(trials);
    let (mut t_engine, mut t_direct) = rt.block_on(async {
        let mut t_engine = Vec::with_capacity(trials);
        let mut t_direct = Vec::with_capacity(trials);
        for _ in 0..trials {
            let start = Instant::now();
            let out = engine
                .run(&doc, &globals, (), CancellationToken::new())
                .await
                .unwrap_or_else(|e| {
                    eprintln!("bench_ontheia: {e}");
                    std::process::exit(1)
                });
            black_box(&out);
            t_engine.push(start.elapsed().as_nanos() as f64);
            assert_eq!(out.results.len(), steps_run, "every step ran");

            // The peer: the same 40 backend calls (and nothing else), direct.
            let start = Instant::now();
            for i in 0..40 {
                let cancel = CancellationToken::new();
                match i % 6 {
                    0 => drop(black_box(
                        backend
                            .llm(
                                LlmRequest {
                                    step_id: format!("s{i}"),
                                    prompt: "p".into(),
                                    system_prompt: None,
                                    model: None,
                                    temperature: None,
                                    silent: true,
                                    params: Map::new(),
                                    chain_state: String::new(),
                                    agent_id: None,
                                    depth: 0,
                                },
                                cancel,
                            )
                            .await,
                    )),
                    1 => drop(black_box(
                        backend
                            .tool(
                                ToolStepCall {
                                    step_id: format!("s{i}"),
                                    key: format!("s{i}"),
                                    attempt: 1,
                                    server: "srv".into(),
                                    tool: "t".into(),
                                    args: Map::new(),
                                },
                                cancel,
                            )
                            .await,
                    )),
                    2 => drop(black_box(
                        backend
                            .memory_search(
                                MemorySearch {
                                    step_id: format!("s{i}"),
                                    namespaces: vec!["n".into()],
                                    query: "q".into(),
                                    top_k: 5,
                                },
                                cancel,
                            )
                            .await,
                    )),
                    3 => drop(black_box(
                        backend
                            .memory_write(
                                MemoryWrite {
                                    step_id: format!("s{i}"),
                                    namespace: "n".into(),
                                    content: "c".into(),
                                    metadata: Map::new(),
                                },
                                cancel,
                            )
                            .await,
                    )),
                    4 => drop(black_box(
                        backend
                            .rest_call(
                                RestRequest {
                                    step_id: format!("s{i}"),
                                    method: "GET".into(),
                                    url: "u".into(),
                                    headers: Vec::new(),
                                    body: None,
                                },
                                cancel,
                            )
                            .await,
                    )),
                    _ => drop(black_box(
                        backend
                            .agent(
                                AgentRequest {
                                    step_id: format!("s{i}"),
                                    agent_id: "a".into(),
                                    task_id: None,
                                    chain_id: None,
                                    input: "i".into(),
                                    depth: 1,
                                },
                                cancel,
                            )
                            .await,
                    )),
                }
            }
            t_direct.push(start.elapsed().as_nanos() as f64);

            // Validation alone (part of every run).
            let start = Instant::now();
            black_box(ontheia::validate(black_box(&doc)).is_ok());
            t_validate.push(start.elapsed().as_nanos() as f64);
        }
        (t_engine, t_direct)
    });
    let validate_us = median(&mut t_validate) / 1e3;
    let engine_us = median(&mut t_engine) / 1e3;
    let direct_us = median(&mut t_direct) / 1e3;
    emit(&json!({
        "bench": "ontheia",
        "steps": steps_run,
        "samples": trials,
        "run_us": round(engine_us, 1),
        "us_per_step": round(engine_us / steps_run as f64, 2),
        "overhead_us_per_step": round((engine_us - direct_us) / steps_run as f64, 2),
        "validate_us": round(validate_us, 1),
        "vs": "the same backend calls made directly",
        "vs_run_us": round(direct_us, 1),
        "ratio": round(engine_us / direct_us, 1),
    }));
}

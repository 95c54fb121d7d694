//! Client-side cost of a2e-llm against an in-process OpenAI-compatible server, next to a
//! bare `reqwest` + `serde_json` peer reading the same bytes in the same run.
//!
//! `cargo run --release -p a2e-llm --example bench_llm` prints one JSON line per case:
//! * `stream`: one streamed answer of N text chunks, parsed into deltas and the final
//!   text (ours: `ChatProvider::chat`; peer: POST, split on blank lines, parse each
//!   `data:` line to a `serde_json::Value`, append the content).
//! * `loop`: a two-turn tool loop (tool call, tool run, final answer) through `run_loop`
//!   against two bare non-streamed POSTs parsed to `Value` by the peer.
//!
//! Figures are medians of nine trials; `ratio` is ours / peer.

use std::time::Instant;

use a2e_bench::report::emit;
use a2e_bench::stats::median;
use a2e_llm::{
    CancellationToken, ChatProvider, LoopEvent, LoopEventSink, LoopOptions, Message, NoDeltas,
    ProviderConfig, ProviderKind, Providers, RetryPolicy, ToolExecutor, ToolSpec, run_loop,
};
use axum::body::{Body, Bytes};
use axum::http::Response;
use serde_json::{Value, json};

const TRIALS: usize = 9;

fn stream_body(chunks: usize) -> String {
    let mut out = String::new();
    for i in 0..chunks {
        let delta = json!({"id": "b", "object": "chat.completion.chunk", "model": "bench",
            "choices": [{"index": 0, "delta": {"content": format!("w{i} ")}, "finish_reason": null}]});
        out.push_str(&format!("data: {delta}\n\n"));
    }
    out.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n");
    out.push_str("data: [DONE]\n\n");
    out
}

fn serve(chunks: usize) -> String {
    let body = Bytes::from(stream_body(chunks));
    let tool_call = json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "echo", "arguments": "{\"text\": \"hi\"}"}}]},
        "finish_reason": "tool_calls"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    .to_string();
    let answer =
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": "done"},
        "finish_reason": "stop"}], "usage": {"prompt_tokens": 20, "completion_tokens": 2}})
        .to_string();
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let body = body.clone();
        let tool_call = tool_call.clone();
        let answer = answer.clone();
        async move {
            let bytes = axum::body::to_bytes(req.into_body(), usize::MAX)
                .await
                .unwrap_or_default();
            let request: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            let (mime, out) = if request["stream"] == true {
                ("text/event-stream", body)
            } else if request["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"))
            {
                ("application/json", Bytes::from(answer))
            } else {
                ("application/json", Bytes::from(tool_call))
            };
            Response::builder()
                .header("content-type", mime)
                .body(Body::from(out))
                .unwrap()
        }
    });
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let l = tokio::net::TcpListener::from_std(listener).unwrap();
                axum::serve(l, app).await.unwrap();
            })
    });
    format!("http://{addr}/v1")
}

struct Echo;

impl ToolExecutor for Echo {
    fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec::new(
            "echo",
            "Echoes.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        )]
    }

    async fn call_tool(&self, _name: &str, arguments: Value) -> Result<Value, String> {
        Ok(arguments["text"].clone())
    }
}

struct Quiet;

impl LoopEventSink for Quiet {
    fn event(&self, _event: LoopEvent) {}
}

async fn peer_stream(client: &reqwest::Client, url: &str) -> String {
    let body =
        json!({"model": "bench", "stream": true, "messages": [{"role": "user", "content": "go"}]});
    let mut response = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let mut buffer = Vec::new();
    let mut text = String::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = buffer.drain(..end + 2).collect();
            let line = std::str::from_utf8(&block).unwrap().trim();
            if let Some(data) = line.strip_prefix("data: ") {
                if data == "[DONE]" {
                    return text;
                }
                let v: Value = serde_json::from_str(data).unwrap();
                if let Some(c) = v["choices"][0]["delta"]["content"].as_str() {
                    text.push_str(c);
                }
            }
        }
    }
    text
}

async fn peer_post(client: &reqwest::Client, url: &str, body: &Value) -> Value {
    let bytes = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let chunks: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(5_000);
    let base = serve(chunks);
    let mut config = ProviderConfig::new("bench", ProviderKind::OpenAi, &base, "bench");
    config.retry = RetryPolicy::none();
    let model = Providers::new(vec![config])
        .unwrap()
        .resolve(None, None)
        .unwrap();
    // The peer: a plain reqwest client (same crate and features, default pool settings).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let peer = reqwest::Client::builder().build().unwrap();
    let url = format!("{base}/chat/completions");
    let cancel = CancellationToken::new();

    // stream
    let mut request = model.request(vec![Message::user("go")], vec![]);
    request.stream = true;
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for _ in 0..TRIALS {
        let t = Instant::now();
        let mut deltas = 0usize;
        let answer = model
            .client
            .chat(&request, &mut |_d| deltas += 1, &cancel)
            .await
            .unwrap();
        ours.push(t.elapsed().as_secs_f64());
        assert_eq!(deltas, chunks);
        let t = Instant::now();
        let text = peer_stream(&peer, &url).await;
        theirs.push(t.elapsed().as_secs_f64());
        assert_eq!(text, answer.content);
    }
    let (o, p) = (median(&mut ours), median(&mut theirs));
    emit(&json!({"bench": "llm", "case": "stream", "chunks": chunks,
        "ours_ms": o * 1e3, "peer_ms": p * 1e3,
        "ours_chunks_per_s": (chunks as f64 / o).round(),
        "ratio": o / p}));

    // loop
    const LOOPS: usize = 200;
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let _ = model
        .client
        .chat(
            &model.request(vec![Message::user("warm")], vec![]),
            &mut NoDeltas,
            &cancel,
        )
        .await;
    for _ in 0..TRIALS {
        let t = Instant::now();
        for _ in 0..LOOPS {
            let outcome = run_loop(
                &model.client,
                model.request(vec![Message::user("go")], vec![]),
                &Echo,
                &Quiet,
                &LoopOptions::default(),
                &cancel,
            )
            .await
            .unwrap();
            assert_eq!(outcome.turns, 2);
        }
        ours.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        for _ in 0..LOOPS {
            let first = json!({"model": "bench", "messages": [{"role": "user", "content": "go"}]});
            let a = peer_post(&peer, &url, &first).await;
            let call = &a["choices"][0]["message"]["tool_calls"][0];
            let second = json!({"model": "bench", "messages": [
                {"role": "user", "content": "go"},
                a["choices"][0]["message"].clone(),
                {"role": "tool", "tool_call_id": call["id"], "content": "hi"}]});
            let b = peer_post(&peer, &url, &second).await;
            assert_eq!(b["choices"][0]["message"]["content"], "done");
        }
        theirs.push(t.elapsed().as_secs_f64());
    }
    let (o, p) = (median(&mut ours), median(&mut theirs));
    emit(
        &json!({"bench": "llm", "case": "loop", "loops": LOOPS, "turns_per_loop": 2,
        "ours_us_per_loop": o * 1e6 / LOOPS as f64,
        "peer_us_per_loop": p * 1e6 / LOOPS as f64,
        "ratio": o / p}),
    );
}

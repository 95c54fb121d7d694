//! Runs an Ontheia chain document offline and prints its events and results.
//!
//! ```text
//! cargo run -p ontheia --example run_chain -- examples/ontheia/control-flow.json --input weather
//! ```
//!
//! The backend here has no model, tools, memory, HTTP or agents: steps of
//! those kinds fail (and the chain goes on); the engine's own steps run.

use ontheia::{Backend, Engine, Event, Globals};
use tokio_util::sync::CancellationToken;

struct Offline;
impl Backend for Offline {}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: run_chain FILE [--input TEXT]");
        std::process::exit(2);
    };
    let input = args
        .iter()
        .position(|a| a == "--input")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_default();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    let doc = match ontheia::parse(&text) {
        Ok(d) => d,
        Err(errors) => {
            for e in errors.errors() {
                eprintln!("{path}: {e}");
            }
            std::process::exit(1);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("runtime: {e}");
            std::process::exit(1);
        }
    };
    let outcome = runtime.block_on(Engine::new(Offline).run(
        &doc,
        &Globals::with_input(input),
        |e: &Event<'_>| {
            let detail = e.error.or(e.output).unwrap_or("");
            println!(
                "{:>3} {:<14} {:<8} {}",
                e.seq,
                e.step_id,
                e.kind.as_str(),
                detail.replace('\n', " ")
            );
        },
        CancellationToken::new(),
    ));
    match outcome {
        Ok(out) => {
            println!(
                "outputs: {}",
                serde_json::Value::Object(out.outputs.clone())
            );
            if let Some(last) = out.last_result() {
                println!("last: {}", last.to_value());
            }
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}

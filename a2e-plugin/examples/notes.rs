//! A plugin binary's whole `main.rs`: two typed tools served over stdio.
//!
//! The argument types derive with the plugin crate's own `serde` and
//! `schemars` (see the crate's README for its `Cargo.toml`). Run it as an A2E
//! host (`cargo run -p a2e-plugin --example notes`) and send it NDJSON lines,
//! mount it in the `a2e` host with a `[[plugins]]` entry, or start it from an
//! agent with `a2e_client::Client::stdio`.

use a2e_plugin::serde_json::json;
use a2e_plugin::{Error, Toolbox};
use schemars::JsonSchema;
use serde::Deserialize;

/// What `repeat` takes.
#[derive(Deserialize, JsonSchema)]
struct RepeatArgs {
    /// The text to repeat.
    text: String,
    /// How often (at most 100).
    times: u32,
}

/// What `count_words` takes.
#[derive(Deserialize, JsonSchema)]
struct CountArgs {
    /// The text whose words are counted.
    text: String,
}

fn main() -> std::io::Result<()> {
    let notes = Toolbox::new("notes")
        .tool(
            "repeat",
            "Repeat a text",
            |args: RepeatArgs, cx| async move {
                if args.times > 100 {
                    return Err(Error::invalid_argument("$.times", "at most 100"));
                }
                cx.progress(50, "repeating").await;
                Ok(args.text.repeat(args.times as usize))
            },
        )
        .tool(
            "count_words",
            "Count the words of a text",
            |args: CountArgs, _cx| async move {
                Ok(json!({"words": args.text.split_whitespace().count()}))
            },
        );
    a2e_plugin::serve(notes)
}

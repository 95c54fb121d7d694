//! A plugin process for the host's `[[plugins]]` tests: tools that echo with
//! events, sleep, fail, and end the process, served over stdio.
//!
//! ```toml
//! [[plugins]]
//! name = "sample"
//! command = ["target/debug/examples/plugin_process"]
//! ```

use std::time::Duration;

use a2e_plugin::schemars::JsonSchema;
use a2e_plugin::serde::Deserialize;
use a2e_plugin::serde_json::json;
use a2e_plugin::{Error, Toolbox};

/// What `echo` takes.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "a2e_plugin::serde")]
#[schemars(crate = "a2e_plugin::schemars")]
struct EchoArgs {
    /// The text to send back.
    text: String,
    /// How many progress events to send first.
    #[serde(default)]
    events: u32,
}

/// What `sleep` takes.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "a2e_plugin::serde")]
#[schemars(crate = "a2e_plugin::schemars")]
struct SleepArgs {
    /// Milliseconds to sleep.
    ms: u64,
    /// A file to append a line to when the sleep ends (not when it is cut short).
    #[serde(default)]
    done_file: Option<String>,
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "a2e_plugin::serde")]
#[schemars(crate = "a2e_plugin::schemars")]
struct Nothing {}

fn main() -> std::io::Result<()> {
    let tools = Toolbox::new("sample")
        .tool(
            "echo",
            "Send the text back",
            |args: EchoArgs, cx| async move {
                for i in 0..args.events {
                    cx.progress(i64::from(i), format!("event {i}")).await;
                }
                Ok(json!({"text": args.text, "pid": std::process::id()}))
            },
        )
        .tool(
            "sleep",
            "Sleep a while",
            |args: SleepArgs, _cx| async move {
                tokio::time::sleep(Duration::from_millis(args.ms)).await;
                if let Some(path) = args.done_file {
                    use std::io::Write;
                    let mut file = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)
                        .map_err(|e| Error::io("open the done file", e))?;
                    writeln!(file, "done").map_err(|e| Error::io("write the done file", e))?;
                }
                Ok(json!({"slept_ms": args.ms}))
            },
        )
        .tool("fail", "Fail", |_args: Nothing, _cx| async move {
            Err::<String, _>(Error::failed("failed on purpose"))
        })
        .tool(
            "exit",
            "End the plugin process",
            |_args: Nothing, _cx| async move {
                if std::env::var_os("NEVER_SET_BY_ANYONE").is_none() {
                    std::process::exit(3);
                }
                Ok("still here")
            },
        );
    a2e_plugin::serve(tools)
}

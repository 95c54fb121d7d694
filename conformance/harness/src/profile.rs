//! The fixture profile: tools, skills and processes a host under test may
//! offer so that the checks needing host-side behaviour can run. A scenario
//! that needs something the host lacks is reported `skipped (needs …)`.
//!
//! | fixture | what it does |
//! |---|---|
//! | tool `conformance_echo` | `{text: string (required), …}` → its arguments unchanged; tags `conformance`, `conformance-echo`; `idempotent: true` |
//! | tool `conformance_sleep` | `{ms: integer (required), group?: string}` → sleeps `ms`, stops when cancelled; `{slept: ms, concurrent: n}`, `n` the calls of its `group` in flight when it started |
//! | tool `conformance_stream` | `{count: integer (required, ≤ 1000), delay_ms?: integer}` → `count` `progress` events, then `{events: count}` |
//! | tool `conformance_fail` | `{message?: string}` → runs and fails (`tool_error`) |
//! | tool `conformance_large` | `{bytes: integer (required, ≤ 16 MiB)}` → a string of `bytes` `x` |
//! | tool `conformance_deferred` | no arguments, `defer_loading: true` → `{found: true}` |
//! | skill `conformance_skill` | Published, category `conformance`, tags `conformance`, `conformance-skill`; `input_schema` requires `text` (string); runs `conformance_echo` twice, emitting at least one `skill/event`; its output is `{text}` |
//! | skill `conformance_skill_fail` | Published, category `conformance`; runs `conformance_fail`: fails (`skill_error`) |
//! | skill `conformance_skill_slow` | Published, category `conformance`; `{ms}` → runs `conformance_sleep` |
//! | skill `conformance_skill_blocked` | status `Blocked`, category `conformance` |
//! | proc | the session may spawn `sh`, `cat` and `sleep` (and not `conformance-not-allowed`) |
//!
//! Every tool is declared with `streaming: true`, `idempotent: false` (but
//! the echo tool), `defer_loading: false` (but the deferred tool), version
//! `1.0.0`, no output parameters and no toolkit: [`declared_tools`] is each
//! definition as the profile declares it, which the checks hold a host's
//! listing to.
//!
//! [`fixture_plugin`] is the profile's tools as an A2E plugin (served over
//! stdio by `a2e-conformance fixture-plugin`); the skills are chain skills in
//! `conformance/fixture/skills/`, and `conformance/fixture-host.toml` mounts
//! both in the `a2e` host.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::Duration;

use a2e_plugin::{CallContext, Error, FnTool, Toolbox};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The echo tool.
pub const ECHO: &str = "conformance_echo";
/// The sleeping tool.
pub const SLEEP: &str = "conformance_sleep";
/// The streaming tool.
pub const STREAM: &str = "conformance_stream";
/// The failing tool.
pub const FAIL: &str = "conformance_fail";
/// The tool with a large result.
pub const LARGE: &str = "conformance_large";
/// The deferred tool.
pub const DEFERRED: &str = "conformance_deferred";
/// The echo skill.
pub const SKILL: &str = "conformance_skill";
/// The failing skill.
pub const SKILL_FAIL: &str = "conformance_skill_fail";
/// The slow skill.
pub const SKILL_SLOW: &str = "conformance_skill_slow";
/// The blocked skill.
pub const SKILL_BLOCKED: &str = "conformance_skill_blocked";

/// Every tool of the profile.
pub const TOOLS: &[&str] = &[ECHO, SLEEP, STREAM, FAIL, LARGE, DEFERRED];
/// Every skill of the profile.
pub const SKILLS: &[&str] = &[SKILL, SKILL_FAIL, SKILL_SLOW, SKILL_BLOCKED];
/// The toolkit a host may name the profile's tools by: the plugin's name.
pub const TOOLKIT: &str = "conformance";

/// Longest sleep, in milliseconds.
const MAX_SLEEP_MS: u64 = 10 * 60 * 1000;
/// Most events of one stream call.
const MAX_EVENTS: u32 = 1000;
/// Largest result, in bytes.
const MAX_LARGE: usize = 16 * 1024 * 1024;

/// What `conformance_echo` takes.
#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to return.
    text: String,
    /// Any other arguments, returned as they are.
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// What `conformance_sleep` takes.
#[derive(Deserialize, JsonSchema)]
struct SleepArgs {
    /// How long to sleep, in milliseconds.
    ms: u64,
    /// Calls of one group count each other as concurrent.
    #[serde(default)]
    group: Option<String>,
}

/// What `conformance_stream` takes.
#[derive(Deserialize, JsonSchema)]
struct StreamArgs {
    /// How many progress events to emit.
    count: u32,
    /// Milliseconds between events.
    #[serde(default)]
    delay_ms: Option<u64>,
}

/// What `conformance_fail` takes.
#[derive(Deserialize, JsonSchema)]
struct FailArgs {
    /// The error message.
    #[serde(default)]
    message: Option<String>,
}

/// What `conformance_large` takes.
#[derive(Deserialize, JsonSchema)]
struct LargeArgs {
    /// How many bytes the result has.
    bytes: u64,
}

/// `conformance_deferred` takes nothing.
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// Calls of `conformance_sleep` in flight, per group.
static IN_FLIGHT: LazyLock<Mutex<HashMap<String, u64>>> = LazyLock::new(Mutex::default);

/// Counts a sleeping call in flight while it lives.
struct InFlight(String);

impl InFlight {
    fn enter(group: String) -> (Self, u64) {
        let mut map = IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner);
        let n = map.entry(group.clone()).or_default();
        *n += 1;
        let now = *n;
        (Self(group), now)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut map = IN_FLIGHT.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = map.get_mut(&self.0) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(&self.0);
            }
        }
    }
}

fn tagged(
    tags: &'static [&'static str],
) -> impl FnOnce(a2e_proto::ToolDefinition) -> a2e_proto::ToolDefinition {
    move |d| d.tags(tags)
}

async fn echo(args: EchoArgs, _cx: CallContext) -> Result<Value, Error> {
    let mut out = Map::new();
    out.insert("text".into(), Value::String(args.text));
    out.extend(args.rest);
    Ok(Value::Object(out))
}

async fn sleep(args: SleepArgs, cx: CallContext) -> Result<Value, Error> {
    if args.ms > MAX_SLEEP_MS {
        return Err(Error::invalid_argument(
            "$.ms",
            format!("at most {MAX_SLEEP_MS}"),
        ));
    }
    let (_guard, concurrent) = InFlight::enter(args.group.unwrap_or_default());
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(args.ms)) => {}
        () = cx.cancel.cancelled() => return Err(Error::Cancelled),
    }
    Ok(json!({"slept": args.ms, "concurrent": concurrent}))
}

async fn stream(args: StreamArgs, cx: CallContext) -> Result<Value, Error> {
    if args.count > MAX_EVENTS {
        return Err(Error::invalid_argument(
            "$.count",
            format!("at most {MAX_EVENTS}"),
        ));
    }
    for i in 0..args.count {
        let pct = i64::from((i + 1) * 100 / args.count.max(1));
        cx.progress(pct, format!("event {i}")).await;
        if let Some(ms) = args.delay_ms {
            tokio::time::sleep(Duration::from_millis(ms.min(MAX_SLEEP_MS))).await;
        }
    }
    Ok(json!({"events": args.count}))
}

async fn fail(args: FailArgs, _cx: CallContext) -> Result<Value, Error> {
    Err(Error::failed(
        args.message.unwrap_or_else(|| "failed as asked".into()),
    ))
}

async fn large(args: LargeArgs, _cx: CallContext) -> Result<Value, Error> {
    let bytes = usize::try_from(args.bytes).unwrap_or(usize::MAX);
    if bytes > MAX_LARGE {
        return Err(Error::invalid_argument(
            "$.bytes",
            format!("at most {MAX_LARGE}"),
        ));
    }
    Ok(Value::String("x".repeat(bytes)))
}

async fn deferred(_args: NoArgs, _cx: CallContext) -> Result<Value, Error> {
    Ok(json!({"found": true}))
}

/// The profile's tools as one plugin named `conformance`.
pub fn fixture_plugin() -> Toolbox {
    Toolbox::new("conformance")
        .with(
            FnTool::new(ECHO, "Returns its arguments unchanged (conformance fixture)", echo)
                // Echoing is safe to retry: a flag away from its default, so a
                // host that drops or rewrites flags shows it.
                .define(|d| tagged(&["conformance", "conformance-echo"])(d).idempotent()),
        )
        .with(
            FnTool::new(SLEEP, "Sleeps for ms milliseconds, then reports how many calls of its group ran at once (conformance fixture)", sleep)
                .define(tagged(&["conformance", "conformance-sleep"])),
        )
        .with(
            FnTool::new(STREAM, "Emits count progress events (conformance fixture)", stream)
                .define(tagged(&["conformance", "conformance-stream"])),
        )
        .with(
            FnTool::new(FAIL, "Runs and fails with the given message (conformance fixture)", fail)
                .define(tagged(&["conformance", "conformance-fail"])),
        )
        .with(
            FnTool::new(LARGE, "Returns a string of the given number of bytes (conformance fixture)", large)
                .define(tagged(&["conformance", "conformance-large"])),
        )
        .with(
            FnTool::new(DEFERRED, "Found only by a search with include_deferred (conformance fixture)", deferred)
                .define(|d| {
                    let mut d = d.tags(&["conformance", "conformance-deferred"]);
                    d.defer_loading = true;
                    d
                }),
        )
}

/// The definition of every tool of the profile, as the profile declares it.
pub fn declared_tools() -> Vec<a2e_proto::ToolDefinition> {
    a2e_plugin::ToolPlugin::tools(&fixture_plugin())
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2e_plugin::{DynToolPlugin, ToolPlugin};

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[tokio::test]
    async fn the_tools_do_what_the_profile_says() {
        let p = fixture_plugin();
        let names: Vec<String> = ToolPlugin::tools(&p).into_iter().map(|t| t.name).collect();
        assert_eq!(names, TOOLS);
        let declared = declared_tools();
        assert!(declared.iter().all(|d| d.streaming && d.toolkit.is_none()));
        let idempotent: Vec<&str> = declared
            .iter()
            .filter(|d| d.idempotent)
            .map(|d| d.name.as_str())
            .collect();
        assert_eq!(idempotent, [ECHO]);
        let echo = p
            .call_dyn(
                ECHO,
                args(json!({"text": "a", "n": 1})),
                CallContext::detached(),
            )
            .await
            .unwrap();
        assert_eq!(echo.data, json!({"text": "a", "n": 1}));
        let err = p
            .call_dyn(FAIL, Map::new(), CallContext::detached())
            .await
            .unwrap_err();
        assert!(!err.is_refusal());
        let big = p
            .call_dyn(LARGE, args(json!({"bytes": 10})), CallContext::detached())
            .await
            .unwrap();
        assert_eq!(big.data, json!("xxxxxxxxxx"));
        let deferred = ToolPlugin::tools(&p)
            .into_iter()
            .find(|t| t.name == DEFERRED)
            .unwrap();
        assert!(deferred.defer_loading);
    }

    #[tokio::test]
    async fn sleeping_calls_count_their_group() {
        let p = std::sync::Arc::new(fixture_plugin());
        let call = |p: std::sync::Arc<Toolbox>| async move {
            p.call_dyn(
                SLEEP,
                args(json!({"ms": 100, "group": "t"})),
                CallContext::detached(),
            )
            .await
            .unwrap()
            .data["concurrent"]
                .as_u64()
                .unwrap()
        };
        let (a, b) = tokio::join!(call(p.clone()), call(p.clone()));
        assert_eq!(a.max(b), 2);
        assert_eq!(call(p).await, 1);
    }
}

//! The plugin suite: a plugin process (what a `[[plugins]]` entry of the
//! `a2e` host starts, in any language) checked against the plugin protocol
//! of `docs/plugin-protocol.md`, as `a2e-conformance plugin -- CMD…` runs it.
//!
//! One process is started and driven the way the host drives it: the
//! handshake, a ping, `tool/list`, a call of one listed tool (the first, or
//! the one `--tool` names) with arguments built from its required parameters
//! (or `--arguments`), then what the host never sends but a plugin must
//! survive or refuse: an unknown tool, arguments its parameters refuse, a
//! line that is not JSON. Last its stdin is closed and it must exit. Every
//! line it wrote is held to the wire rules.

mod args;
mod probe;

use std::time::Duration;

use a2e_proto::ToolDefinition;
use serde_json::{Value, json};

use crate::check::{CheckDef, CheckResult, Recorder, must, should};
use crate::link::stdio::Stderr;
use crate::report::Entry;
use crate::scenario::{Abort, Area, On, Outcome, Scenario};
use crate::wire::{Field as _, Rule, report_rules, s, show, ty};
use probe::{EXIT_WAIT, Probe};

/// How a plugin run behaves.
#[derive(Debug, Clone)]
pub struct PluginOptions {
    /// The tool to call (default: the first one listed).
    pub tool: Option<String>,
    /// The arguments of that call (default: built from its required parameters).
    pub arguments: Option<Value>,
    /// How long one answer may take.
    pub answer_timeout: Duration,
    /// What becomes of the plugin's stderr.
    pub stderr: Stderr,
}

impl Default for PluginOptions {
    fn default() -> Self {
        Self {
            tool: None,
            arguments: None,
            answer_timeout: Duration::from_secs(10),
            stderr: Stderr::Discard,
        }
    }
}

/// What a plugin scenario works with.
pub struct PluginCx {
    probe: Probe,
    rec: Recorder,
    opts: PluginOptions,
    /// The tools the plugin listed, decoded.
    tools: Vec<ToolDefinition>,
}

#[rustfmt::skip]
const HANDSHAKE: &[CheckDef] = &[
    must("plugin.handshake.answered", "a2e-core §2", "handshake/req is answered with handshake/resp naming it in req_id"),
    must("plugin.handshake.ok", "a2e-core §2", "the handshake is accepted: ok: true and a non-empty session_id"),
    should("plugin.handshake.tools", "a2e-core §2", "accepted_caps holds `tools`, enabled"),
    should("plugin.ping.pong", "a2e-core §2", "a ping is answered with pong naming it in req_id"),
];

#[rustfmt::skip]
const LIST: &[CheckDef] = &[
    must("plugin.list.answered", "tools: tool/list/resp", "tool/list/req is answered with tool/list/resp naming it in req_id"),
    must("plugin.list.tools", "tools: tool/list/resp", "the list holds at least one tool"),
    must("plugin.list.definitions", "tools: ToolDefinition", "every tool is a valid ToolDefinition: a name, a description, parameters with a name, a JSON Schema type and a description, no name twice"),
];

#[rustfmt::skip]
const CALL: &[CheckDef] = &[
    must("plugin.call.answered", "tools: tool/call/resp", "tool/call/req is answered, with tool/call/resp or error, naming it in req_id"),
    must("plugin.call.result", "tools: ToolResult", "the answer's data is a ToolResult of the called tool (success, tool_name, duration_ms)"),
    should("plugin.call.events", "a2e-core §4", "a streaming call's tool/events name it in req_id, count seq 0, 1, 2, … and come before its answer"),
];

#[rustfmt::skip]
const REFUSALS: &[CheckDef] = &[
    must("plugin.call.unknown-tool", "a2e-core §3", "a call of a tool it does not list is refused with error, code unknown_tool, naming the request"),
    must("plugin.call.invalid-arguments", "a2e-core §3", "a call whose arguments its parameters refuse is refused with error, code schema_violation, naming the request"),
];

#[rustfmt::skip]
const GARBAGE: &[CheckDef] = &[
    should("plugin.garbage.answered", "a2e-core §3", "a line that is not JSON is answered with error, code parse_error, req_id empty"),
    must("plugin.garbage.survives", "a2e-core §3", "after a line that is not JSON the plugin still answers requests"),
];

#[rustfmt::skip]
const EXIT: &[CheckDef] = &[must(
    "plugin.exit.stdin-closed",
    "a2e-core §7",
    "the plugin exits within 3 s of its stdin closing (the host then sends SIGTERM, and SIGKILL)",
)];

#[rustfmt::skip]
const WIRE: &[CheckDef] = &[
    must("plugin.wire.object", "a2e-core §1", "every line on its stdout is one JSON object (logs go to stderr)"),
    must("plugin.wire.compact", "a2e-core §1", "every line is compact JSON, one message a line"),
    must("plugin.wire.type", "a2e-core §1", "every message has a string type"),
    should("plugin.wire.known-type", "a2e-core §1", "every type is one the specs define"),
    must("plugin.wire.schema", "a2e-core §2", "every message validates against its type's schema"),
    should("plugin.wire.id", "a2e-core §1", "every message has a non-empty id, none twice"),
    should("plugin.wire.version", "a2e-core §1", "every message carries version 1.x"),
    should("plugin.wire.ts", "a2e-core §1", "every message carries ts, Unix seconds of about now"),
];

/// The rule of each [`WIRE`] check (`plugin.wire.id` holds two).
const WIRE_RULES: &[(&str, Rule)] = &[
    ("plugin.wire.object", Rule::Object),
    ("plugin.wire.compact", Rule::Compact),
    ("plugin.wire.type", Rule::Type),
    ("plugin.wire.known-type", Rule::KnownType),
    ("plugin.wire.schema", Rule::Schema),
    ("plugin.wire.id", Rule::Id),
    ("plugin.wire.id", Rule::IdUnique),
    ("plugin.wire.version", Rule::Version),
    ("plugin.wire.ts", Rule::Ts),
];

macro_rules! scenario {
    ($name:literal, $about:literal, $checks:ident, $run:path) => {
        Scenario {
            name: $name,
            area: Area::Plugin,
            about: $about,
            needs: &[],
            on: On::Stdio,
            checks: $checks,
            run: crate::run_fn!(PluginCx, $run),
        }
    };
}

/// Every plugin scenario, in the order a run takes them.
static SCENARIOS: &[Scenario<PluginCx>] = &[
    scenario!(
        "plugin/handshake",
        "Opens the session asking for [\"tools\"], then pings.",
        HANDSHAKE,
        handshake
    ),
    scenario!("plugin/list", "Lists the plugin's tools.", LIST, list),
    scenario!(
        "plugin/call",
        "Calls one listed tool (the first, or --tool) with streaming, arguments from its required parameters (or --arguments).",
        CALL,
        call
    ),
    scenario!(
        "plugin/refusals",
        "Calls a tool it does not list, and a listed one with arguments its parameters refuse.",
        REFUSALS,
        refusals
    ),
    scenario!(
        "plugin/garbage",
        "Writes a line that is not JSON, then lists the tools again.",
        GARBAGE,
        garbage
    ),
    scenario!(
        "plugin/exit",
        "Closes the plugin's stdin and waits for it to exit.",
        EXIT,
        exit
    ),
    scenario!(
        "plugin/wire",
        "Reports on every line the plugin wrote in the run.",
        WIRE,
        wire
    ),
];

/// Every plugin scenario as the catalog lists it.
pub fn entries() -> Vec<Entry> {
    SCENARIOS
        .iter()
        .map(|s| Entry {
            name: s.name,
            area: s.area,
            about: s.about,
            on: s.on,
            needs: s.needs,
            checks: s.checks,
        })
        .collect()
}

/// Runs every plugin scenario against `command`, handing each result to
/// `seen` as it comes; every result, or why the plugin could not be started.
pub async fn run(
    command: &[String],
    opts: PluginOptions,
    mut seen: impl FnMut(&CheckResult),
) -> Result<Vec<CheckResult>, String> {
    let probe = Probe::start(command, opts.stderr, opts.answer_timeout)?;
    let mut cx = PluginCx {
        probe,
        rec: Recorder::new("", &[]),
        opts,
        tools: Vec::new(),
    };
    let mut out = Vec::new();
    for scenario in SCENARIOS {
        cx.rec = Recorder::new(scenario.name, scenario.checks);
        let outcome = (scenario.run)(&mut cx).await;
        let rec = std::mem::replace(&mut cx.rec, Recorder::new("", &[]));
        for r in rec.finish(outcome.err().as_ref().map(|a| a.0.as_str())) {
            seen(&r);
            out.push(r);
        }
    }
    Ok(out)
}

/// Whether `answer` is an `error` refusing request `id` with `code`.
fn refused(answer: &Value, id: &str, code: &str) -> bool {
    ty(answer) == "error" && s(answer, "/req_id") == id && s(answer, "/code") == code
}

async fn handshake(cx: &mut PluginCx) -> Outcome {
    let id = cx.probe.id("handshake");
    let req = json!({"type": "handshake/req", "id": id, "agent_id": "a2e-conformance",
        "agent_caps": ["tools"], "auth_token": ""});
    cx.probe.send(req).await?;
    let hs = cx.probe.answer(&id).await?.answer;
    let expected = "handshake/resp";
    cx.rec.check(
        "plugin.handshake.answered",
        ty(&hs) == expected,
        expected,
        show(&hs),
    );
    let ok = hs.field("ok") == &Value::Bool(true) && !s(&hs, "/session_id").is_empty();
    cx.rec.check(
        "plugin.handshake.ok",
        ok,
        "ok: true, a session_id",
        show(&hs),
    );
    let tools = hs.field("accepted_caps").as_array().is_some_and(|caps| {
        caps.iter()
            .any(|c| s(c, "/capability") == "tools" && c.field("enabled") != &Value::Bool(false))
    });
    cx.rec
        .check("plugin.handshake.tools", tools, "tools, enabled", show(&hs));
    let id = cx.probe.id("ping");
    cx.probe.send(json!({"type": "ping", "id": id})).await?;
    let pong = cx.probe.answer(&id).await?.answer;
    cx.rec
        .check("plugin.ping.pong", ty(&pong) == "pong", "pong", show(&pong));
    Ok(())
}

/// Lists the tools; the answer.
async fn list_tools(cx: &mut PluginCx) -> Result<Value, Abort> {
    let id = cx.probe.id("list");
    cx.probe
        .send(json!({"type": "tool/list/req", "id": id}))
        .await?;
    Ok(cx.probe.answer(&id).await?.answer)
}

async fn list(cx: &mut PluginCx) -> Outcome {
    let resp = list_tools(cx).await?;
    let answered = ty(&resp) == "tool/list/resp";
    cx.rec.check(
        "plugin.list.answered",
        answered,
        "tool/list/resp",
        show(&resp),
    );
    let listed = resp.field("tools").as_array().cloned().unwrap_or_default();
    cx.rec.check(
        "plugin.list.tools",
        !listed.is_empty(),
        "at least one tool",
        show(&resp),
    );
    let schemas = cx.probe.schemas();
    let problems: Vec<String> = listed
        .iter()
        .filter_map(|t| args::definition_problem(t, schemas))
        .collect();
    cx.rec.check(
        "plugin.list.definitions",
        problems.is_empty(),
        "valid definitions",
        problems.join("; "),
    );
    cx.tools = listed
        .into_iter()
        .filter_map(|t| serde_json::from_value(t).ok())
        .collect();
    Ok(())
}

async fn call(cx: &mut PluginCx) -> Outcome {
    let name = match &cx.opts.tool {
        Some(name) => name.clone(),
        None => match cx.tools.first() {
            Some(tool) => tool.name.clone(),
            None => {
                cx.rec
                    .skip_all("it lists no tool to call (plugin.list.tools)");
                return Ok(());
            }
        },
    };
    let arguments = match &cx.opts.arguments {
        Some(given) => given.clone(),
        None => match cx.tools.iter().find(|t| t.name == name) {
            Some(tool) => args::valid(tool),
            None => json!({}),
        },
    };
    let id = cx.probe.id("call");
    let timeout = cx.opts.answer_timeout.as_secs().max(1);
    let req = json!({"type": "tool/call/req", "id": id, "tool_name": name,
        "arguments": arguments, "streaming": true, "timeout": timeout});
    cx.probe.send(req).await?;
    let reply = cx.probe.answer(&id).await?;
    let answer = &reply.answer;
    let answered = matches!(ty(answer), "tool/call/resp" | "error");
    cx.rec.check(
        "plugin.call.answered",
        answered,
        "tool/call/resp or error",
        show(answer),
    );
    if ty(answer) == "error" {
        let why = format!(
            "the call was refused ({}): name a tool and arguments it runs with --tool and --arguments",
            s(answer, "/code")
        );
        cx.rec.skip("plugin.call.result", why);
    } else {
        let result = a2e_proto::decode(answer.to_string().as_bytes());
        let ok = match &result {
            Ok(a2e_proto::Message::ToolCallResponse(resp)) => resp.data.tool_name == name,
            _ => false,
        };
        let got = match result {
            Err(e) => format!("{e}: {}", show(answer)),
            Ok(_) => show(answer),
        };
        cx.rec.check(
            "plugin.call.result",
            ok,
            format!("a ToolResult of `{name}`"),
            got,
        );
    }
    let seqs: Vec<Option<u64>> = reply
        .events
        .iter()
        .map(|e| e.field("seq").as_u64())
        .collect();
    let in_order = seqs
        .iter()
        .enumerate()
        .all(|(i, seq)| *seq == Some(i as u64));
    let got = format!("{} events, seq {seqs:?}", reply.events.len());
    cx.rec
        .check("plugin.call.events", in_order, "seq 0, 1, 2, …", got);
    Ok(())
}

async fn refusals(cx: &mut PluginCx) -> Outcome {
    let id = cx.probe.id("unknown");
    let unknown = "conformance_no_such_tool";
    let req = json!({"type": "tool/call/req", "id": id, "tool_name": unknown, "arguments": {}});
    cx.probe.send(req).await?;
    let answer = cx.probe.answer(&id).await?.answer;
    let ok = refused(&answer, &id, "unknown_tool");
    cx.rec.check(
        "plugin.call.unknown-tool",
        ok,
        "error unknown_tool",
        show(&answer),
    );
    let Some((tool, arguments, how)) = args::invalid(&cx.tools) else {
        cx.rec.skip(
            "plugin.call.invalid-arguments",
            "no listed tool takes a parameter",
        );
        return Ok(());
    };
    let id = cx.probe.id("invalid");
    let req = json!({"type": "tool/call/req", "id": id, "tool_name": tool, "arguments": arguments});
    cx.probe.send(req).await?;
    let answer = cx.probe.answer(&id).await?.answer;
    let ok = refused(&answer, &id, "schema_violation");
    let expected = format!("error schema_violation for `{tool}` {how}");
    cx.rec
        .check("plugin.call.invalid-arguments", ok, expected, show(&answer));
    Ok(())
}

async fn garbage(cx: &mut PluginCx) -> Outcome {
    cx.probe.send_line("this line is not JSON").await?;
    let id = cx.probe.id("list");
    cx.probe
        .send(json!({"type": "tool/list/req", "id": id}))
        .await?;
    let reply = match cx.probe.answer(&id).await {
        Ok(reply) => reply,
        Err(Abort(why)) => {
            cx.rec
                .fail("plugin.garbage.survives", "tool/list/resp", why);
            return Err(Abort("the plugin stopped answering".into()));
        }
    };
    let answer = &reply.answer;
    let survives = ty(answer) == "tool/list/resp";
    cx.rec.check(
        "plugin.garbage.survives",
        survives,
        "tool/list/resp",
        show(answer),
    );
    let parse_error = reply.others.iter().find(|m| refused(m, "", "parse_error"));
    let got = match reply.others.first() {
        Some(first) => show(first),
        None => "no answer before the next request's".into(),
    };
    cx.rec.check(
        "plugin.garbage.answered",
        parse_error.is_some(),
        "error parse_error, req_id \"\"",
        got,
    );
    Ok(())
}

async fn exit(cx: &mut PluginCx) -> Outcome {
    let exited = cx.probe.close_and_wait(EXIT_WAIT).await;
    let got = if exited { "it exited" } else { "it still runs" };
    cx.rec.check(
        "plugin.exit.stdin-closed",
        exited,
        "an exit within 3 s",
        got,
    );
    Ok(())
}

async fn wire(cx: &mut PluginCx) -> Outcome {
    report_rules(&mut cx.rec, &cx.probe.wire, WIRE_RULES);
    Ok(())
}

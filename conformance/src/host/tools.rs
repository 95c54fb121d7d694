//! Tools: list, search, call, argument validation (tools spec).

use serde_json::{Value, json};

use super::{Cx, HostScenario};
use crate::check::{CheckDef, must, should};
use crate::profile::{DEFERRED, ECHO, FAIL};
use crate::scenario::{Area, Fixture, On, Outcome, Scenario};
use crate::session::Reply;
use crate::wire::Field as _;
use crate::wire::show;

pub(super) const SCENARIOS: &[HostScenario] = &[
    Scenario {
        name: "tools/list",
        area: Area::Tools,
        about: "Lists tools, searches them (with and without deferred ones) and filters by tags.",
        needs: &[
            Fixture::Cap("tools"),
            Fixture::Tool(ECHO),
            Fixture::Tool(DEFERRED),
        ],
        on: On::All,
        checks: LIST,
        run: crate::run_fn!(Cx, list),
    },
    Scenario {
        name: "tools/call",
        area: Area::Tools,
        about: "Calls the echo tool, an unknown tool and the failing tool.",
        needs: &[
            Fixture::Cap("tools"),
            Fixture::Tool(ECHO),
            Fixture::Tool(FAIL),
        ],
        on: On::All,
        checks: CALL,
        run: crate::run_fn!(Cx, call),
    },
    Scenario {
        name: "tools/schema",
        area: Area::Tools,
        about: "Calls with arguments that break the tool's schema, and requests missing required fields.",
        needs: &[Fixture::Cap("tools"), Fixture::Tool(ECHO)],
        on: On::All,
        checks: SCHEMA,
        run: crate::run_fn!(Cx, schema),
    },
];

#[rustfmt::skip]
const LIST: &[CheckDef] = &[
    must("tools.list.answered", "tools: tool/list/resp", "tool/list/req is answered with tool/list/resp naming it in req_id"),
    must("tools.list.minimal", "tools: tool/list/req", "a tool/list/req with only type and id (every field defaulted) is answered with the list"),
    must("tools.list.definitions", "tools: ToolDefinition", "every tool has a non-empty name and a string description"),
    must("tools.list.parameters", "tools: ToolParameter", "every input parameter has a name, a JSON Schema type and a description"),
    must("tools.list.unique", "tools: ToolDefinition", "tool names are unique"),
    must("tools.list.fixture", "tools: ToolParameter", "the echo tool is listed with its required string parameter `text`"),
    must("tools.list.deferred-hidden", "tools: tool/list/req", "a list without a query leaves out tools with defer_loading"),
    must("tools.list.search", "tools: tool/list/req", "a query finds a tool by its name"),
    must("tools.list.search-description", "tools: tool/list/req", "a query finds a tool by a word of its description"),
    must("tools.list.search-deferred", "tools: tool/list/req", "a query with include_deferred finds deferred tools"),
    must("tools.list.search-no-deferred", "tools: tool/list/req", "a query without include_deferred leaves deferred tools out"),
    must("tools.list.filter-tags", "tools: tool/list/req", "filter_tags keeps only tools carrying the tag"),
    must("tools.list.filter-tags-and", "tools: tool/list/req", "filter_tags with several tags keeps only tools carrying all of them"),
];

#[rustfmt::skip]
const CALL: &[CheckDef] = &[
    must("tools.call.answered", "tools: tool/call/resp", "tool/call/req is answered with tool/call/resp naming it in req_id"),
    must("tools.call.success", "tools: ToolResult", "a tool that ran is answered with data.success: true"),
    must("tools.call.tool-name", "tools: ToolResult", "data.tool_name names the tool"),
    must("tools.call.data", "tools: ToolResult", "data.data carries the tool's output"),
    must("tools.call.duration", "tools: ToolResult", "data.duration_ms is an integer ≥ 0"),
    must("tools.call.minimal", "tools: tool/call/req", "a call with only tool_name and arguments (session_id, streaming, timeout defaulted) is served"),
    should("tools.call.no-events", "tools: tool/call/req", "a call with streaming: false gets no tool/event"),
    must("tools.call.unknown-tool", "a2e-core §3", "a call of an unknown tool is refused: an error, code unknown_tool, naming the call in req_id"),
    should("tools.call.unknown-tool-not-retryable", "tools: Error Codes", "unknown_tool has retryable: false"),
    must("tools.call.failed", "a2e-core §3", "a tool that ran and failed is answered with tool/call/resp and data.success: false"),
    must("tools.call.failed-code", "tools: Error Codes", "that result has error_code tool_error"),
    should("tools.call.failed-error", "tools: ToolResult", "that result has a non-empty error message"),
];

#[rustfmt::skip]
const SCHEMA: &[CheckDef] = &[
    must("tools.schema.missing-required", "tools: Security 4", "a call missing a required argument is refused with schema_violation"),
    must("tools.schema.wrong-type", "tools: Security 4", "a call with an argument of the wrong type is refused with schema_violation"),
    must("tools.schema.req-id", "a2e-core §3", "the refusal is an error message naming the call in req_id"),
    must("tools.schema.no-tool-name", "tools: tool/call/req", "a tool/call/req without tool_name is refused with schema_violation"),
    must("tools.schema.no-arguments", "tools: tool/call/req", "a tool/call/req without arguments is refused with schema_violation"),
    must("tools.schema.arguments-not-object", "tools: tool/call/req", "a tool/call/req whose arguments are no object is refused with schema_violation"),
];

fn names(r: &Reply) -> Vec<String> {
    r.at("/tools")
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

fn answered(r: &Reply, ty: &str, id: &Value) -> bool {
    r.ty() == ty && r.msg.field("req_id") == id
}

async fn list(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let full = s.req(
        "tool/list/req",
        json!({"filter_kind": "", "filter_tags": [], "query": "", "include_deferred": false}),
    );
    let r = s.request(full.clone()).await?;
    cx.check(
        "tools.list.answered",
        answered(&r, "tool/list/resp", full.field("id")),
        "tool/list/resp with the request's req_id",
        r.show(),
    );
    let minimal = s.req("tool/list/req", json!({}));
    let r = s.request(minimal).await?;
    let all = names(&r);
    cx.check(
        "tools.list.minimal",
        r.ty() == "tool/list/resp" && all.contains(&ECHO.to_owned()),
        format!("tool/list/resp listing {ECHO}"),
        r.show(),
    );
    let tools = r.at("/tools").as_array().cloned().unwrap_or_default();
    for t in &tools {
        let ok = t
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty())
            && t.get("description").is_some_and(Value::is_string);
        cx.check(
            "tools.list.definitions",
            ok,
            "name and description",
            show(t),
        );
        for p in t
            .get("input_parameters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let ty = p.get("type").and_then(Value::as_str).unwrap_or_default();
            let ok = p
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty())
                && [
                    "string", "integer", "number", "boolean", "object", "array", "null",
                ]
                .contains(&ty)
                && p.get("description").is_some_and(Value::is_string);
            cx.check(
                "tools.list.parameters",
                ok,
                "name, a JSON Schema type, description",
                show(p),
            );
        }
    }
    // The echo tool declares the parameter `text`: a list without any
    // parameter breaks the profile, it is no reason to skip.
    if !cx.rec.has("tools.list.parameters") {
        cx.fail(
            "tools.list.parameters",
            format!("the parameters of {ECHO} among them"),
            "no tool has input parameters",
        );
    }
    let mut sorted = all.clone();
    sorted.sort();
    sorted.dedup();
    cx.check(
        "tools.list.unique",
        sorted.len() == all.len(),
        "no name twice",
        format!("{all:?}"),
    );
    let echo = tools
        .iter()
        .find(|t| t["name"] == ECHO)
        .cloned()
        .unwrap_or_default();
    let text = echo
        .get("input_parameters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "text")
        .cloned()
        .unwrap_or_default();
    cx.check(
        "tools.list.fixture",
        text.field("type") == "string" && text.field("required") == true,
        "a parameter `text` of type string, required",
        show(&echo),
    );
    cx.check(
        "tools.list.deferred-hidden",
        all.contains(&ECHO.to_owned()) && !all.contains(&DEFERRED.to_owned()),
        format!("no {DEFERRED}"),
        format!("{all:?}"),
    );

    let q = s.req("tool/list/req", json!({"query": ECHO}));
    let r = s.request(q).await?;
    cx.check(
        "tools.list.search",
        names(&r).contains(&ECHO.to_owned()),
        format!("{ECHO} found"),
        r.show(),
    );
    let q = s.req("tool/list/req", json!({"query": "unchanged"}));
    let r = s.request(q).await?;
    cx.check(
        "tools.list.search-description",
        names(&r).contains(&ECHO.to_owned()),
        format!("{ECHO} found by `unchanged`"),
        r.show(),
    );
    let q = s.req(
        "tool/list/req",
        json!({"query": DEFERRED, "include_deferred": true}),
    );
    let r = s.request(q).await?;
    cx.check(
        "tools.list.search-deferred",
        names(&r).contains(&DEFERRED.to_owned()),
        format!("{DEFERRED} found"),
        r.show(),
    );
    let q = s.req("tool/list/req", json!({"query": DEFERRED}));
    let r = s.request(q).await?;
    cx.check(
        "tools.list.search-no-deferred",
        r.ty() == "tool/list/resp" && !names(&r).contains(&DEFERRED.to_owned()),
        format!("no {DEFERRED}"),
        r.show(),
    );

    let q = s.req(
        "tool/list/req",
        json!({"filter_tags": ["conformance-echo"]}),
    );
    let r = s.request(q).await?;
    let got = names(&r);
    cx.check(
        "tools.list.filter-tags",
        got == [ECHO],
        format!("[{ECHO}]"),
        format!("{got:?}"),
    );
    let q = s.req(
        "tool/list/req",
        json!({"filter_tags": ["conformance", "conformance-echo"]}),
    );
    let r = s.request(q).await?;
    let both = names(&r);
    let q = s.req(
        "tool/list/req",
        json!({"filter_tags": ["conformance-echo", "conformance-stream"]}),
    );
    let r = s.request(q).await?;
    let none = names(&r);
    cx.check(
        "tools.list.filter-tags-and",
        both == [ECHO] && none.is_empty() && r.ty() == "tool/list/resp",
        format!("[{ECHO}] for [conformance, conformance-echo]; [] for [conformance-echo, conformance-stream]"),
        format!("{both:?}; {none:?}"),
    );
    Ok(())
}

async fn call(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let sid = s.session_id.clone();
    let full = s.req(
        "tool/call/req",
        json!({"session_id": sid, "tool_name": ECHO, "arguments": {"text": "hello"},
               "correlation_id": "turn-1", "streaming": false, "timeout": 30}),
    );
    let r = s.request(full.clone()).await?;
    cx.check(
        "tools.call.answered",
        answered(&r, "tool/call/resp", full.field("id")),
        "tool/call/resp with the request's req_id",
        r.show(),
    );
    cx.check(
        "tools.call.success",
        r.at("/data/success") == &json!(true),
        "data.success: true",
        r.show(),
    );
    cx.check(
        "tools.call.tool-name",
        r.s("/data/tool_name") == ECHO,
        format!("data.tool_name {ECHO}"),
        r.show(),
    );
    cx.check(
        "tools.call.data",
        r.at("/data/data") == &json!({"text": "hello"}),
        "data.data {\"text\":\"hello\"}",
        r.show(),
    );
    cx.check(
        "tools.call.duration",
        r.at("/data/duration_ms").is_u64(),
        "an integer duration_ms",
        r.show(),
    );
    s.settle().await?;
    let id = full.field("id").as_str().unwrap_or_default();
    let stray = s.late(id).len() + r.events.len();
    cx.check(
        "tools.call.no-events",
        r.at("/data/success") == &json!(true) && stray == 0,
        "a result without tool/event",
        format!("{stray} event(s)"),
    );

    let minimal = s.req(
        "tool/call/req",
        json!({"tool_name": ECHO, "arguments": {"text": "min"}}),
    );
    let r = s.request(minimal).await?;
    cx.check(
        "tools.call.minimal",
        r.ty() == "tool/call/resp" && r.at("/data/success") == &json!(true),
        "tool/call/resp, success: true",
        r.show(),
    );

    let unknown = s.req(
        "tool/call/req",
        json!({"tool_name": "conformance_no_such_tool", "arguments": {}}),
    );
    let r = s.request(unknown.clone()).await?;
    cx.check(
        "tools.call.unknown-tool",
        r.is_error() && r.code() == "unknown_tool" && r.msg.field("req_id") == unknown.field("id"),
        "an error, code unknown_tool, with the call's req_id",
        r.show(),
    );
    cx.check(
        "tools.call.unknown-tool-not-retryable",
        r.at("/retryable") != &json!(true),
        "retryable: false",
        r.show(),
    );

    let fail = s.req(
        "tool/call/req",
        json!({"tool_name": FAIL, "arguments": {"message": "as asked"}}),
    );
    let r = s.request(fail).await?;
    cx.check(
        "tools.call.failed",
        r.ty() == "tool/call/resp" && r.at("/data/success") == &json!(false),
        "tool/call/resp with data.success: false",
        r.show(),
    );
    cx.check(
        "tools.call.failed-code",
        r.s("/data/error_code") == "tool_error",
        "error_code tool_error",
        r.show(),
    );
    cx.check(
        "tools.call.failed-error",
        !r.s("/data/error").is_empty(),
        "a non-empty error",
        r.show(),
    );
    Ok(())
}

fn refused(cx: &mut Cx, check: &str, r: &Reply) {
    cx.check(
        check,
        r.is_error() && r.code() == "schema_violation",
        "an error, code schema_violation",
        r.show(),
    );
}

async fn schema(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let missing = s.req("tool/call/req", json!({"tool_name": ECHO, "arguments": {}}));
    let r = s.request(missing.clone()).await?;
    refused(cx, "tools.schema.missing-required", &r);
    cx.check(
        "tools.schema.req-id",
        r.msg.field("req_id") == missing.field("id"),
        format!("req_id {}", missing.field("id")),
        r.show(),
    );
    let wrong = s.req(
        "tool/call/req",
        json!({"tool_name": ECHO, "arguments": {"text": 5}}),
    );
    let r = s.request(wrong.clone()).await?;
    refused(cx, "tools.schema.wrong-type", &r);
    cx.check(
        "tools.schema.req-id",
        r.msg.field("req_id") == wrong.field("id"),
        format!("req_id {}", wrong.field("id")),
        r.show(),
    );
    let no_name = s.req("tool/call/req", json!({"arguments": {"text": "x"}}));
    let r = s.request(no_name).await?;
    refused(cx, "tools.schema.no-tool-name", &r);
    let no_args = s.req("tool/call/req", json!({"tool_name": ECHO}));
    let r = s.request(no_args).await?;
    refused(cx, "tools.schema.no-arguments", &r);
    let not_object = s.req(
        "tool/call/req",
        json!({"tool_name": ECHO, "arguments": ["text"]}),
    );
    let r = s.request(not_object).await?;
    refused(cx, "tools.schema.arguments-not-object", &r);
    Ok(())
}

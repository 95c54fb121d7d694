//! Tools: every field of a tool result (tools spec, ToolResult and
//! tool/call/resp), each of the spec's types, and for the fixture profile's
//! tools what the tool returned, carried unchanged.

use std::time::Instant;

use serde_json::{Value, json};

use super::tools_defs::FieldRule;
use super::{Cx, HostScenario};
use crate::check::{CheckDef, must};
use crate::profile::{ECHO, FAIL, SLEEP};
use crate::scenario::{Area, Fixture, On, Outcome, Scenario};
use crate::session::Reply;
use crate::wire::show;

pub(super) const SCENARIOS: &[HostScenario] = &[Scenario {
    name: "tools/results",
    area: Area::Tools,
    about: "Calls the echo tool with arguments of every JSON kind, the failing tool, and the sleeping tool for 300 ms, and reads every field of their results.",
    needs: &[
        Fixture::Cap("tools"),
        Fixture::Tool(ECHO),
        Fixture::Tool(FAIL),
        Fixture::Tool(SLEEP),
    ],
    on: On::All,
    checks: RESULTS,
    run: crate::run_fn!(Cx, results),
}];

#[rustfmt::skip]
const RESULTS: &[CheckDef] = &[
    must("tools.result.fields", "tools: ToolResult", "every result's fields have the spec's types: boolean success and truncated, string tool_name, integer duration_ms ≥ 0, integer or null exit_code, string or null error and error_code, a list of tool/events; created_at a number"),
    must("tools.result.echo-unchanged", "tools: ToolResult", "the echo tool's data is its arguments (nested objects, lists, null, booleans, numbers, unicode) unchanged and unwrapped"),
    must("tools.result.echo-as-returned", "tools: ToolResult", "the echo tool's result adds nothing the tool did not return: truncated false, no exit_code, error, error_code or summary, no events"),
    must("tools.result.failure-as-returned", "tools: ToolResult", "the failing tool's result carries its message in error, and no data; truncated false"),
    must("tools.result.duration", "tools: ToolResult", "duration_ms measures the call: a 300 ms sleep reports at least 300 and no more than the round trip"),
];

/// Arguments of every JSON kind, for the echo tool to return unchanged.
pub(crate) fn echo_arguments() -> Value {
    json!({
        "text": "héllo ✓ \"quoted\"\n\ttab",
        "int": -3,
        "big": 9_007_199_254_740_991_i64,
        "float": 1.5,
        "yes": true,
        "no": false,
        "nil": null,
        "empty_text": "",
        "list": [1, "a", null, [true], {}],
        "obj": {"nested": {"deep": [], "empty": {}}, "data": {"text": "inner"}}
    })
}

/// What is wrong with the types of a `tool/call/resp`'s result, if anything.
pub(crate) fn result_problem(msg: &Value) -> Option<String> {
    if let Some(at) = msg.get("created_at")
        && !at.is_number()
    {
        return Some(format!("created_at is {}, not a number", show(at)));
    }
    let Some(data) = msg.get("data").and_then(Value::as_object) else {
        return Some("data is not an object".into());
    };
    let required: [FieldRule; 3] = [
        ("success", Value::is_boolean, "a boolean"),
        ("tool_name", Value::is_string, "a string"),
        ("duration_ms", Value::is_u64, "an integer ≥ 0"),
    ];
    for (name, ok, what) in required {
        match data.get(name) {
            Some(v) if ok(v) => {}
            Some(v) => return Some(format!("{name} is {}, not {what}", show(v))),
            None => return Some(format!("no {name}")),
        }
    }
    let events_ok = |v: &Value| {
        v.as_array().is_some_and(|a| {
            a.iter()
                .all(|e| e.get("type") == Some(&json!("tool/event")))
        })
    };
    let optional: [FieldRule; 5] = [
        ("truncated", Value::is_boolean, "a boolean"),
        (
            "exit_code",
            |v| v.is_i64() || v.is_null(),
            "an integer or null",
        ),
        (
            "error",
            |v| v.is_string() || v.is_null(),
            "a string or null",
        ),
        (
            "error_code",
            |v| v.is_string() || v.is_null(),
            "a string or null",
        ),
        ("events", events_ok, "a list of tool/events"),
    ];
    for (name, ok, what) in optional {
        if let Some(v) = data.get(name)
            && !ok(v)
        {
            return Some(format!("{name} is {}, not {what}", show(v)));
        }
    }
    None
}

/// Whether the result's `field` is absent or null.
fn none(r: &Reply, field: &str) -> bool {
    r.at(&format!("/data/{field}")).is_null()
}

/// Whether the result's `truncated` is false or absent.
fn not_truncated(r: &Reply) -> bool {
    matches!(r.at("/data/truncated"), Value::Null | Value::Bool(false))
}

/// Whether the result's `events` are empty or absent.
fn no_events(r: &Reply) -> bool {
    r.at("/data/events").as_array().is_none_or(Vec::is_empty) && r.events.is_empty()
}

fn fields(cx: &mut Cx, r: &Reply) {
    let problem = result_problem(&r.msg);
    cx.check(
        "tools.result.fields",
        r.ty() == "tool/call/resp" && problem.is_none(),
        "tool/call/resp with the spec's field types",
        format!("{}: {}", problem.unwrap_or_default(), r.show()),
    );
}

async fn results(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let args = echo_arguments();
    let echo = s.req(
        "tool/call/req",
        json!({"tool_name": ECHO, "arguments": args, "streaming": false}),
    );
    let r = s.request(echo).await?;
    fields(cx, &r);
    cx.check(
        "tools.result.echo-unchanged",
        r.at("/data/success") == &json!(true) && r.at("/data/data") == &args,
        format!("data.data {}", show(&args)),
        r.show(),
    );
    let as_returned = r.at("/data/success") == &json!(true)
        && not_truncated(&r)
        && ["exit_code", "error", "error_code", "summary"]
            .iter()
            .all(|f| none(&r, f))
        && no_events(&r);
    cx.check(
        "tools.result.echo-as-returned",
        as_returned,
        "truncated false; exit_code, error, error_code and summary null or absent; no events",
        r.show(),
    );

    let message = "failed as the conformance suite asked";
    let fail = s.req(
        "tool/call/req",
        json!({"tool_name": FAIL, "arguments": {"message": message}}),
    );
    let r = s.request(fail).await?;
    fields(cx, &r);
    cx.check(
        "tools.result.failure-as-returned",
        r.at("/data/success") == &json!(false)
            && r.s("/data/error").contains(message)
            && none(&r, "data")
            && not_truncated(&r),
        format!("success false, error containing `{message}`, no data, truncated false"),
        r.show(),
    );

    let ms = 300;
    let sleep = s.req(
        "tool/call/req",
        json!({"tool_name": SLEEP, "arguments": {"ms": ms}}),
    );
    let started = Instant::now();
    let r = s.request(sleep).await?;
    let round_trip = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    fields(cx, &r);
    let took = r.at("/data/duration_ms").as_u64();
    // The host's clock and the suite's may tick a few milliseconds apart.
    cx.check(
        "tools.result.duration",
        took.is_some_and(|d| d >= ms && d <= round_trip + 5),
        format!("duration_ms between {ms} and the round trip, {round_trip} ms"),
        r.show(),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(data: Value) -> Value {
        json!({"type": "tool/call/resp", "req_id": "r", "data": data, "created_at": 1.5})
    }

    #[test]
    fn a_result_of_the_spec_types_passes_and_each_wrong_type_is_named() {
        let ok = json!({"success": true, "tool_name": ECHO, "data": {"x": 1}, "duration_ms": 3,
                        "truncated": false, "exit_code": null, "error": null, "events": []});
        assert_eq!(result_problem(&resp(ok.clone())), None);
        for (field, bad) in [
            ("success", json!("true")),
            ("duration_ms", json!(-1)),
            ("truncated", json!(null)),
            ("exit_code", json!("0")),
            ("error", json!(1)),
            ("events", json!([{"kind": "progress"}])),
        ] {
            let mut data = ok.clone();
            data[field] = bad;
            let problem = result_problem(&resp(data)).unwrap_or_default();
            assert!(problem.contains(field), "{field}: {problem}");
        }
        let mut no_name = ok.clone();
        no_name.as_object_mut().unwrap().remove("tool_name");
        assert_eq!(result_problem(&resp(no_name)).unwrap(), "no tool_name");
        let mut at = resp(ok);
        at["created_at"] = json!("now");
        assert!(result_problem(&at).unwrap().contains("created_at"));
    }
}

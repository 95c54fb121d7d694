//! Tools at run time: streaming events, timeouts, concurrent calls, large
//! results (tools spec, a2e-core §1, §3, §4).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Cx, HostScenario};
use crate::check::{CheckDef, must, should};
use crate::profile::{ECHO, LARGE, SLEEP, STREAM};
use crate::scenario::{Area, Fixture, On, Outcome, Scenario};
use crate::session::Reply;
use crate::wire::show;

pub(super) const SCENARIOS: &[HostScenario] = &[
    Scenario {
        name: "tools/streaming",
        area: Area::Tools,
        about: "Calls the streaming tool with and without streaming, and twice at once.",
        needs: &[Fixture::Cap("tools"), Fixture::Tool(STREAM)],
        on: On::All,
        checks: STREAMING,
        run: crate::run_fn!(Cx, streaming),
    },
    Scenario {
        name: "tools/timeout",
        area: Area::Tools,
        about: "Calls the sleeping tool for 5 s with a timeout of 1 s.",
        needs: &[Fixture::Cap("tools"), Fixture::Tool(SLEEP)],
        on: On::All,
        checks: TIMEOUT,
        run: crate::run_fn!(Cx, timeout),
    },
    Scenario {
        name: "tools/concurrent",
        area: Area::Tools,
        about: "Sends a slow call, then a fast one.",
        needs: &[
            Fixture::Cap("tools"),
            Fixture::Tool(SLEEP),
            Fixture::Tool(ECHO),
        ],
        on: On::All,
        checks: CONCURRENT,
        run: crate::run_fn!(Cx, concurrent),
    },
    Scenario {
        name: "tools/large",
        area: Area::Tools,
        about: "Asks for a result of 4 MiB.",
        needs: &[Fixture::Cap("tools"), Fixture::Tool(LARGE)],
        on: On::All,
        checks: LARGE_RESULT,
        run: crate::run_fn!(Cx, large),
    },
];

const STREAMING: &[CheckDef] = &[
    must(
        "tools.stream.events",
        "tools: tool/event",
        "a streaming call of a tool that emits 3 events gets 3 tool/events",
    ),
    must(
        "tools.stream.seq",
        "a2e-core §1",
        "a request's events carry seq 0, 1, 2, …",
    ),
    must(
        "tools.stream.before-answer",
        "a2e-core §4",
        "every event of a call comes before its tool/call/resp",
    ),
    must(
        "tools.stream.kind",
        "a2e-core §4",
        "a progress event has kind progress and data {pct, message}",
    ),
    should(
        "tools.stream.collected",
        "tools: ToolResult",
        "the result lists the call's events in data.events",
    ),
    must(
        "tools.stream.per-request",
        "a2e-core §1",
        "two concurrent streaming calls each number their events from 0",
    ),
    should(
        "tools.stream.off",
        "tools: tool/call/req",
        "the same call with streaming: false gets no tool/event",
    ),
];

const TIMEOUT: &[CheckDef] = &[
    must(
        "tools.timeout.in-band",
        "a2e-core §3",
        "a call past its timeout is answered with tool/call/resp, success: false, error_code timeout",
    ),
    must(
        "tools.timeout.bounded",
        "tools: Security 3",
        "that answer comes within the timeout plus 5 s",
    ),
    must(
        "tools.timeout.session-goes-on",
        "a2e-core §3",
        "after a timed-out call the session still serves calls",
    ),
];

const CONCURRENT: &[CheckDef] = &[
    should(
        "tools.concurrent.out-of-order",
        "a2e-core §2",
        "a fast call sent after a slow one is answered first",
    ),
    must(
        "tools.concurrent.correlated",
        "a2e-core §1",
        "each answer names its own request in req_id and its own tool",
    ),
];

const LARGE_RESULT: &[CheckDef] = &[must(
    "tools.large.whole",
    "a2e-core §1",
    "a result of 4 MiB arrives whole, in one message",
)];

fn seqs_from_zero(r: &Reply) -> bool {
    r.events
        .iter()
        .enumerate()
        .all(|(i, e)| e.get("seq").and_then(Value::as_u64) == Some(i as u64))
}

async fn streaming(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let call = s.req(
        "tool/call/req",
        json!({"tool_name": STREAM, "arguments": {"count": 3}, "streaming": true}),
    );
    let id = call["id"].as_str().unwrap_or_default().to_owned();
    let r = s.request(call).await?;
    let types: Vec<&str> = r
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default())
        .collect();
    cx.check(
        "tools.stream.events",
        types == ["tool/event"; 3],
        "3 tool/events",
        format!("{types:?} then {}", r.show()),
    );
    cx.check(
        "tools.stream.seq",
        !r.events.is_empty() && seqs_from_zero(&r),
        "seq 0, 1, 2",
        format!("{:?}", r.seqs()),
    );
    s.settle().await?;
    let late = s.late(&id).len();
    cx.check(
        "tools.stream.before-answer",
        !r.events.is_empty() && late == 0,
        "events, none after the answer",
        format!("{} before, {late} after", r.events.len()),
    );
    let shaped = !r.events.is_empty()
        && r.events.iter().all(|e| {
            e["kind"] == "progress"
                && e.pointer("/data/pct").is_some_and(Value::is_number)
                && e.pointer("/data/message").is_some_and(Value::is_string)
        });
    let first = r.events.first().map(show).unwrap_or_default();
    cx.check(
        "tools.stream.kind",
        shaped,
        "kind progress, data {pct, message}",
        first,
    );
    let listed = r.at("/data/events").as_array().map_or(0, Vec::len);
    cx.check(
        "tools.stream.collected",
        listed == 3,
        "3 events in data.events",
        r.show(),
    );

    let a = s.req(
        "tool/call/req",
        json!({"tool_name": STREAM, "arguments": {"count": 3, "delay_ms": 20}, "streaming": true}),
    );
    let b = s.req(
        "tool/call/req",
        json!({"tool_name": STREAM, "arguments": {"count": 3, "delay_ms": 20}, "streaming": true}),
    );
    s.send(&a).await?;
    s.send(&b).await?;
    let ra = s.answer(a["id"].as_str().unwrap_or_default()).await?;
    let rb = s.answer(b["id"].as_str().unwrap_or_default()).await?;
    cx.check(
        "tools.stream.per-request",
        ra.events.len() == 3 && rb.events.len() == 3 && seqs_from_zero(&ra) && seqs_from_zero(&rb),
        "seq 0, 1, 2 for each call",
        format!("{:?} and {:?}", ra.seqs(), rb.seqs()),
    );
    cx.check(
        "tools.stream.seq",
        seqs_from_zero(&ra) && seqs_from_zero(&rb),
        "seq 0, 1, 2",
        format!("{:?} and {:?}", ra.seqs(), rb.seqs()),
    );

    let off = s.req(
        "tool/call/req",
        json!({"tool_name": STREAM, "arguments": {"count": 3}, "streaming": false}),
    );
    let off_id = off["id"].as_str().unwrap_or_default().to_owned();
    let r = s.request(off).await?;
    s.settle().await?;
    let n = r.events.len() + s.late(&off_id).len();
    cx.check(
        "tools.stream.off",
        r.at("/data/success") == &json!(true) && n == 0,
        "a result without tool/event",
        format!("{n} event(s) and {}", r.show()),
    );
    Ok(())
}

async fn timeout(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let call = s.req(
        "tool/call/req",
        json!({"tool_name": SLEEP, "arguments": {"ms": 5000}, "timeout": 1}),
    );
    let started = Instant::now();
    let r = s.request_within(call, Duration::from_secs(15)).await?;
    let took = started.elapsed();
    cx.check(
        "tools.timeout.in-band",
        r.ty() == "tool/call/resp"
            && r.at("/data/success") == &json!(false)
            && r.s("/data/error_code") == "timeout",
        "tool/call/resp, success: false, error_code timeout",
        r.show(),
    );
    cx.check(
        "tools.timeout.bounded",
        r.ty() == "tool/call/resp" && took <= Duration::from_secs(6),
        "tool/call/resp within 6 s",
        format!("{} after {took:?}", r.ty()),
    );
    let again = s.req(
        "tool/call/req",
        json!({"tool_name": SLEEP, "arguments": {"ms": 10}}),
    );
    let r = s.request(again).await?;
    cx.check(
        "tools.timeout.session-goes-on",
        r.at("/data/success") == &json!(true),
        "success: true",
        r.show(),
    );
    Ok(())
}

async fn concurrent(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let slow = s.req(
        "tool/call/req",
        json!({"tool_name": SLEEP, "arguments": {"ms": 1500}}),
    );
    let fast = s.req(
        "tool/call/req",
        json!({"tool_name": ECHO, "arguments": {"text": "fast"}}),
    );
    s.send(&slow).await?;
    s.send(&fast).await?;
    let (slow_id, fast_id) = (slow["id"].clone(), fast["id"].clone());
    let first = loop {
        match s.next(s.wait).await? {
            Some(m) if m["req_id"] == slow_id || m["req_id"] == fast_id => break m,
            Some(_) => {}
            None => return Err("no answer to either call".into()),
        }
    };
    cx.check(
        "tools.concurrent.out-of-order",
        first["req_id"] == fast_id,
        format!("the answer to {fast_id} first"),
        show(&first),
    );
    let (f, sl) = if first["req_id"] == fast_id {
        let rest = s.answer(slow_id.as_str().unwrap_or_default()).await?;
        (first, rest.msg)
    } else {
        let rest = s.answer(fast_id.as_str().unwrap_or_default()).await?;
        (rest.msg, first)
    };
    let ok = f["req_id"] == fast_id
        && f.pointer("/data/tool_name") == Some(&json!(ECHO))
        && f.pointer("/data/data/text") == Some(&json!("fast"))
        && sl["req_id"] == slow_id
        && sl.pointer("/data/tool_name") == Some(&json!(SLEEP));
    cx.check(
        "tools.concurrent.correlated",
        ok,
        "each answer with its own req_id, tool_name and data",
        format!("{} / {}", show(&f), show(&sl)),
    );
    Ok(())
}

async fn large(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let bytes = 4 * 1024 * 1024;
    let call = s.req(
        "tool/call/req",
        json!({"tool_name": LARGE, "arguments": {"bytes": bytes}}),
    );
    let r = s.request_within(call, Duration::from_secs(30)).await?;
    let got = r.at("/data/data").as_str().map(str::len);
    cx.check(
        "tools.large.whole",
        got == Some(bytes) && r.at("/data/success") == &json!(true),
        format!("data.data a string of {bytes} bytes"),
        format!("{got:?} ({})", r.s("/type")),
    );
    Ok(())
}

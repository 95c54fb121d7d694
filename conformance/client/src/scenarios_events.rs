//! Client scenarios on events: a streaming call's events in order, and two
//! concurrent calls whose events and answers arrive interleaved.
use std::time::Duration;

use serde_json::{Value, json};

use super::peer::result;
use super::script::{done, judge, open};
use super::{ClientCx, ClientRun};
use conformance_harness::check::{CheckDef, Recorder, must, should};
use conformance_harness::scenario::Outcome;
use conformance_harness::wire::Field as _;
use conformance_harness::wire::{s, show, ty};

#[rustfmt::skip]
pub(super) const STREAMING: &[CheckDef] = &[
    must("client.stream.requested", "tools: tool/call/req", "a streaming call sets streaming: true"),
    must("client.stream.events", "tools: tool/event", "every event reaches the caller, in the order received"),
    must("client.stream.fields", "a2e-core §4", "an event's seq, kind and data reach the caller as sent"),
    must("client.stream.result", "tools: tool/call/resp", "the result follows the events"),
];

#[rustfmt::skip]
pub(super) const INTERLEAVED: &[CheckDef] = &[
    should("client.concurrent.sent", "a2e-core §2", "the client sends a second request while the first is in flight"),
    must("client.concurrent.events", "a2e-core §1", "events reach the call whose req_id they carry"),
    must("client.concurrent.results", "a2e-core §1", "each answer reaches its own call, whatever their order"),
];

fn event(ty: &str, req_id: &str, seq: u64, kind: &str, data: Value) -> Value {
    json!({"type": ty, "req_id": req_id, "seq": seq, "kind": kind, "data": data})
}

/// The events the streaming scenario sends.
fn stream_events() -> [(u64, &'static str, Value); 3] {
    [
        (0, "progress", json!({"pct": 50, "message": "half"})),
        (1, "log", json!({"level": "info", "message": "a line"})),
        (2, "status", json!({"message": "nearly"})),
    ]
}

pub(super) async fn streaming(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let call = cx.peer.expect("tool/call/req").await?;
    cx.rec.check(
        "client.stream.requested",
        call.field("streaming") == true,
        "streaming: true",
        show(&call),
    );
    let id = s(&call, "/id").to_owned();
    for (seq, kind, data) in stream_events() {
        cx.peer
            .send(event("tool/event", &id, seq, kind, data))
            .await?;
    }
    cx.peer
        .answer(
            &call,
            "tool/call/resp",
            json!({"data": result("stream", json!({"done": true}))}),
        )
        .await?;
    done(cx).await;
    Ok(())
}

pub(super) fn judge_streaming(run: &ClientRun, rec: &mut Recorder) {
    let got = run.get("events").as_array().cloned().unwrap_or_default();
    let seqs: Vec<Value> = got.iter().map(|e| e["seq"].clone()).collect();
    judge(
        rec,
        run,
        "client.stream.events",
        seqs == [json!(0), json!(1), json!(2)],
        "3 events, seq 0, 1, 2 in order",
    );
    let fields_ok = got.len() == 3
        && got
            .iter()
            .zip(stream_events())
            .all(|(e, (_, kind, data))| e["kind"] == kind && e["data"] == data);
    judge(
        rec,
        run,
        "client.stream.fields",
        fields_ok,
        "each event's kind and data as sent",
    );
    judge(
        rec,
        run,
        "client.stream.result",
        run.get("result") == &json!({"done": true}),
        "result {\"done\":true}",
    );
}

pub(super) async fn interleaved(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let a = cx.peer.expect("tool/call/req").await?;
    let b = cx.peer.next_within(Duration::from_secs(5)).await?;
    let both = b.as_ref().is_some_and(|m| ty(m) == "tool/call/req");
    cx.rec.check(
        "client.concurrent.sent",
        both,
        "a second tool/call/req before any answer",
        format!("{b:?}"),
    );
    let Some(b) = b.filter(|_| both) else {
        return Err("the client did not send its second call before the first was answered".into());
    };
    let (slow, fast) = if a.field("tool_name") == "slow" {
        (a, b)
    } else {
        (b, a)
    };
    let (sid, fid) = (s(&slow, "/id").to_owned(), s(&fast, "/id").to_owned());
    for i in 0..2u64 {
        cx.peer
            .send(event(
                "tool/event",
                &sid,
                i,
                "progress",
                json!({"call": "slow", "i": i}),
            ))
            .await?;
        cx.peer
            .send(event(
                "tool/event",
                &fid,
                i,
                "progress",
                json!({"call": "fast", "i": i}),
            ))
            .await?;
    }
    cx.peer
        .answer(
            &fast,
            "tool/call/resp",
            json!({"data": result("fast", json!({"n": 2}))}),
        )
        .await?;
    cx.peer
        .answer(
            &slow,
            "tool/call/resp",
            json!({"data": result("slow", json!({"n": 1}))}),
        )
        .await?;
    done(cx).await;
    Ok(())
}

pub(super) fn judge_interleaved(run: &ClientRun, rec: &mut Recorder) {
    let events = |call: &str| run.get(call).get("events").cloned().unwrap_or(Value::Null);
    let want = |call: &str| json!([{"call": call, "i": 0}, {"call": call, "i": 1}]);
    judge(
        rec,
        run,
        "client.concurrent.events",
        events("slow") == want("slow") && events("fast") == want("fast"),
        "each call's own two events, in order",
    );
    let res = |call: &str| run.get(call).get("result").cloned().unwrap_or(Value::Null);
    judge(
        rec,
        run,
        "client.concurrent.results",
        res("slow") == json!({"n": 1}) && res("fast") == json!({"n": 2}),
        "slow {\"n\":1}, fast {\"n\":2}",
    );
}

//! Client scenarios: a host that misbehaves (closes, skips a seq, sends
//! large or unknown things, pings), and skills, chains, processes, shutdown.

use std::time::Duration;

use serde_json::{Value, json};

use super::peer::result;
use super::script::{done, judge, open};
use super::{ClientCx, ClientRun, ClientScenario};
use conformance_harness::check::{CheckDef, Recorder, must, should};
use conformance_harness::scenario::{Area, On, Outcome, Scenario};
use conformance_harness::wire::Field as _;
use conformance_harness::wire::{s, show, ty};

/// Bytes of the large result.
const LARGE: usize = 4 * 1024 * 1024;

macro_rules! scenario {
    ($name:literal, $about:literal, $on:expr, $checks:ident, $run:path, $asks:literal, $judge:expr) => {
        ClientScenario {
            scenario: Scenario {
                name: $name,
                area: Area::Client,
                about: $about,
                needs: &[],
                on: $on,
                checks: $checks,
                run: conformance_harness::run_fn!(ClientCx, $run),
            },
            asks: $asks,
            judge: $judge,
            auth: false,
        }
    };
}

pub(super) const SCENARIOS: &[ClientScenario] = &[
    scenario!(
        "client/host-closes",
        "Closes the connection when the call arrives.",
        On::All,
        CLOSES,
        host_closes,
        "Call `hang` with {} (client-side limit 30 s or more); report {\"error\": what the call failed with}.",
        judge_closes
    ),
    scenario!(
        "client/seq-gap",
        "Sends events with seq 0 and 2, then the result.",
        On::All,
        GAP,
        seq_gap,
        "Call `gappy` with {} and streaming on; report {\"seqs\": [the events' seq in the order received], \"result\": data}.",
        judge_gap
    ),
    scenario!(
        "client/large",
        "Answers the call with a 4 MiB string.",
        On::All,
        LARGE_CHECKS,
        large,
        "Call `large` with {}; report {\"length\": the length of the result's data, a string}.",
        judge_large
    ),
    scenario!(
        "client/unknown",
        "Sends a message of an unknown type and a result with fields no spec defines.",
        On::All,
        UNKNOWN,
        unknown,
        "Call `echo` with {\"text\": \"u\"}; report {\"result\": data}.",
        judge_unknown
    ),
    scenario!(
        "client/unknown-answer",
        "Sends a message of an unknown type naming the call in req_id before the result.",
        On::All,
        UNKNOWN_ANSWER,
        unknown_answer,
        "Call `echo` with {\"text\": \"v\"}; report {\"result\": data}.",
        judge_unknown_answer
    ),
    scenario!(
        "client/host-ping",
        "Pings the client before answering its call.",
        On::All,
        HOST_PING,
        host_ping,
        "Call `echo` with {\"text\": \"p\"}; report {\"result\": data}.",
        |_, _| {}
    ),
    scenario!(
        "client/skills",
        "Lists one skill and answers its call with two skill/events and a result.",
        On::All,
        SKILLS,
        skills,
        "Discover skills, call `summarise` with {\"text\": \"abc\"} with the spec's defaults; report {\"skills\": [names], \"seqs\": [event seqs], \"result\": data}.",
        judge_skills
    ),
    scenario!(
        "client/chain",
        "Answers a chain with start and done events and its chain/resp.",
        On::All,
        CHAIN,
        chain,
        "Run the chain [{\"node_id\": \"a\", \"kind\": \"tool\", \"name\": \"echo\", \"input\": {\"text\": \"c\"}}] from `a`; report {\"phases\": [\"node:phase\"…], \"success\", \"final_output\"}.",
        judge_chain
    ),
    scenario!(
        "client/proc",
        "Answers a spawn, then sends the process's output and its end.",
        On::All,
        PROC,
        proc,
        "Spawn [\"sh\", \"-c\", \"echo hi\"] and read its output to the end; report {\"stdout\": the lines joined, \"code\": the exit code}.",
        judge_proc
    ),
    scenario!(
        "client/shutdown",
        "Reads the shutdown, then closes.",
        On::All,
        SHUTDOWN,
        shutdown,
        "Connect, send shutdown with a timeout of 2 s, close; report {}.",
        judge_shutdown
    ),
];

#[rustfmt::skip]
const CLOSES: &[CheckDef] = &[
    must("client.closed.reported", "a2e-core §7", "when the host closes, the pending call fails with an error"),
    must("client.closed.bounded", "a2e-core §7", "it fails at once, not at its timeout: the client ends within 20 s"),
];
#[rustfmt::skip]
const GAP: &[CheckDef] = &[
    must("client.seq-gap.completes", "a2e-core §1", "a gap in seq does not stop the call: its result is delivered"),
    should("client.seq-gap.events", "a2e-core §1", "the events that came are delivered in the order they came"),
];
#[rustfmt::skip]
const LARGE_CHECKS: &[CheckDef] = &[must("client.large.delivered", "a2e-core §1", "a result of 4 MiB is delivered whole")];
#[rustfmt::skip]
const UNKNOWN: &[CheckDef] = &[
    must("client.unknown.type", "protocol-decisions: Envelope", "a message of an unknown type without req_id does not disturb the client"),
    must("client.unknown.fields", "protocol-decisions: Envelope", "fields no spec defines are ignored: the result is delivered"),
];
#[rustfmt::skip]
const UNKNOWN_ANSWER: &[CheckDef] = &[should(
    "client.unknown.not-an-answer",
    "protocol-decisions: Envelope",
    "a message of an unknown type is not taken as the answer of the call it names",
)];
#[rustfmt::skip]
const HOST_PING: &[CheckDef] = &[
    must("client.ping.answered", "a2e-core §2", "the client answers the host's ping with pong"),
    must("client.ping.req-id", "a2e-core §2", "that pong names the ping in req_id"),
];
#[rustfmt::skip]
const SKILLS: &[CheckDef] = &[
    must("client.skills.discover-request", "skills: skill/discover/req", "discovering sends skill/discover/req"),
    must("client.skills.discovered", "skills: Client API", "the client hands its caller the skills"),
    must("client.skills.call-request", "skills: skill/call/req", "a call sends skill/call/req with name and the arguments as an object"),
    should("client.skills.streaming-default", "skills: skill/call/req", "a call with the spec's defaults leaves streaming on"),
    must("client.skills.events", "skills: skill/event", "the skill's events reach the caller in order"),
    must("client.skills.result", "skills: skill/call/resp", "the result's data reaches the caller"),
];
#[rustfmt::skip]
const CHAIN: &[CheckDef] = &[
    must("client.chain.request", "chains: chain/req", "running a chain sends chain/req with its nodes and entry_node"),
    must("client.chain.events", "chains: chain/event", "the chain's events reach the caller in order"),
    must("client.chain.result", "chains: chain/resp", "chain/resp reaches the caller"),
];
#[rustfmt::skip]
const PROC: &[CheckDef] = &[
    must("client.proc.spawn-request", "a2e-core §5", "spawning sends proc/spawn/req with cmd as a list"),
    must("client.proc.output", "a2e-core §5", "the process's output reaches the caller"),
    must("client.proc.exit", "a2e-core §5", "the exit code of the killed event reaches the caller"),
];
#[rustfmt::skip]
const SHUTDOWN: &[CheckDef] = &[
    must("client.shutdown.message", "a2e-core §2", "shutdown is sent with timeout, an integer of seconds"),
    should("client.shutdown.ends", "a2e-core §2", "after shutdown the client ends"),
];

async fn host_closes(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    cx.peer.expect("tool/call/req").await?;
    cx.peer.close();
    Ok(())
}

fn judge_closes(run: &ClientRun, rec: &mut Recorder) {
    let error = run.get("error").as_str().unwrap_or_default();
    judge(
        rec,
        run,
        "client.closed.reported",
        !error.is_empty(),
        "a non-empty error",
    );
    rec.check(
        "client.closed.bounded",
        run.finished && run.elapsed < Duration::from_secs(20),
        "the client ended within 20 s",
        format!("{:?} (ended: {})", run.elapsed, run.finished),
    );
}

async fn seq_gap(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let call = cx.peer.expect("tool/call/req").await?;
    let id = s(&call, "/id").to_owned();
    for seq in [0, 2] {
        let ev = json!({"type": "tool/event", "req_id": id, "seq": seq, "kind": "status", "data": {"message": seq}});
        cx.peer.send(ev).await?;
    }
    cx.peer
        .answer(
            &call,
            "tool/call/resp",
            json!({"data": result("gappy", json!("ok"))}),
        )
        .await?;
    done(cx).await;
    Ok(())
}

fn judge_gap(run: &ClientRun, rec: &mut Recorder) {
    judge(
        rec,
        run,
        "client.seq-gap.completes",
        run.get("result") == "ok",
        "result \"ok\"",
    );
    judge(
        rec,
        run,
        "client.seq-gap.events",
        run.get("seqs") == &json!([0, 2]),
        "seqs [0, 2]",
    );
}

async fn large(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let call = cx.peer.expect("tool/call/req").await?;
    let data = Value::String("x".repeat(LARGE));
    cx.peer
        .answer(
            &call,
            "tool/call/resp",
            json!({"data": result("large", data)}),
        )
        .await?;
    done(cx).await;
    Ok(())
}

fn judge_large(run: &ClientRun, rec: &mut Recorder) {
    judge(
        rec,
        run,
        "client.large.delivered",
        run.get("length") == LARGE,
        "length 4194304",
    );
}

async fn unknown(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let call = cx.peer.expect("tool/call/req").await?;
    cx.peer
        .send(json!({"type": "conformance/notice", "note": "a message of a later version"}))
        .await?;
    let mut data = result("echo", json!({"text": "u"}));
    conformance_harness::wire::set(&mut data, "x_later", json!({"nested": [1, 2]}));
    cx.peer
        .answer(
            &call,
            "tool/call/resp",
            json!({"data": data, "x_later_field": true}),
        )
        .await?;
    done(cx).await;
    Ok(())
}

fn judge_unknown(run: &ClientRun, rec: &mut Recorder) {
    let ok = run.get("result") == &json!({"text": "u"});
    judge(
        rec,
        run,
        "client.unknown.type",
        ok,
        "result {\"text\":\"u\"}",
    );
    judge(
        rec,
        run,
        "client.unknown.fields",
        ok,
        "result {\"text\":\"u\"}",
    );
}

async fn unknown_answer(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let call = cx.peer.expect("tool/call/req").await?;
    cx.peer
        .send(
            json!({"type": "conformance/hint", "req_id": s(&call, "/id"), "note": "not an answer"}),
        )
        .await?;
    cx.peer
        .answer(
            &call,
            "tool/call/resp",
            json!({"data": result("echo", json!({"text": "v"}))}),
        )
        .await?;
    done(cx).await;
    Ok(())
}

fn judge_unknown_answer(run: &ClientRun, rec: &mut Recorder) {
    let ok = run.get("result") == &json!({"text": "v"});
    judge(
        rec,
        run,
        "client.unknown.not-an-answer",
        ok,
        "result {\"text\":\"v\"}",
    );
}

async fn host_ping(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let call = cx.peer.expect("tool/call/req").await?;
    cx.peer
        .send(json!({"type": "ping", "id": "cf-host-ping"}))
        .await?;
    let pong = cx.peer.next_within(Duration::from_secs(5)).await?;
    let got = pong.clone().unwrap_or_default();
    cx.rec.check(
        "client.ping.answered",
        ty(&got) == "pong",
        "pong",
        format!("{pong:?}"),
    );
    cx.rec.check(
        "client.ping.req-id",
        got.field("req_id") == "cf-host-ping",
        "req_id cf-host-ping",
        format!("{pong:?}"),
    );
    cx.peer
        .answer(
            &call,
            "tool/call/resp",
            json!({"data": result("echo", json!({"text": "p"}))}),
        )
        .await?;
    done(cx).await;
    Ok(())
}

async fn skills(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let discover = cx.peer.expect("skill/discover/req").await?;
    cx.rec.pass("client.skills.discover-request");
    let skill = json!({"name": "summarise", "version": "1.0.0", "description": "Summarises a text",
        "triggers": ["summarise"], "status": "Published", "when_to_use": "Always", "argument_hint": "`text`",
        "source": "system", "input_schema": {"type": "object"}});
    cx.peer
        .answer(&discover, "skill/discover/resp", json!({"skills": [skill]}))
        .await?;
    let call = cx.peer.expect("skill/call/req").await?;
    cx.rec.check(
        "client.skills.call-request",
        call.field("name") == "summarise" && *call.field("arguments") == json!({"text": "abc"}),
        "name summarise, arguments {\"text\":\"abc\"}",
        show(&call),
    );
    cx.rec.check(
        "client.skills.streaming-default",
        call.get("streaming").is_none_or(|v| v == true),
        "streaming true or left out",
        show(&call),
    );
    let id = s(&call, "/id").to_owned();
    for seq in 0..2u64 {
        let ev = json!({"type": "skill/event", "req_id": id, "seq": seq, "kind": "progress", "data": {"pct": 50 * (seq + 1), "message": "working"}});
        cx.peer.send(ev).await?;
    }
    let data = json!({"success": true, "data": {"summary": "a"}, "duration_ms": 3});
    cx.peer
        .answer(
            &call,
            "skill/call/resp",
            json!({"name": "summarise", "data": data}),
        )
        .await?;
    done(cx).await;
    Ok(())
}

fn judge_skills(run: &ClientRun, rec: &mut Recorder) {
    judge(
        rec,
        run,
        "client.skills.discovered",
        run.get("skills") == &json!(["summarise"]),
        "skills [\"summarise\"]",
    );
    judge(
        rec,
        run,
        "client.skills.events",
        run.get("seqs") == &json!([0, 1]),
        "seqs [0, 1]",
    );
    judge(
        rec,
        run,
        "client.skills.result",
        run.get("result") == &json!({"summary": "a"}),
        "result {\"summary\":\"a\"}",
    );
}

async fn chain(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let req = cx.peer.expect("chain/req").await?;
    let nodes_ok = req
        .field("nodes")
        .as_array()
        .is_some_and(|n| match n.as_slice() {
            [node] => node.field("node_id") == "a" && node.field("name") == "echo",
            _ => false,
        });
    cx.rec.check(
        "client.chain.request",
        nodes_ok && req.field("entry_node") == "a",
        "nodes [a], entry_node a",
        show(&req),
    );
    let id = s(&req, "/id").to_owned();
    let out = json!({"text": "c"});
    for (seq, phase) in [(0, "start"), (1, "done")] {
        let output = if phase == "done" {
            out.clone()
        } else {
            Value::Null
        };
        let ev = json!({"type": "chain/event", "req_id": id, "node_id": "a", "phase": phase, "output": output, "error": "", "seq": seq});
        cx.peer.send(ev).await?;
    }
    let resp = json!({"chain_id": "cf-chain", "success": true, "outputs": {"a": out}, "final_output": out,
        "duration_ms": 2, "nodes_run": 1, "error": null});
    cx.peer.answer(&req, "chain/resp", resp).await?;
    done(cx).await;
    Ok(())
}

fn judge_chain(run: &ClientRun, rec: &mut Recorder) {
    judge(
        rec,
        run,
        "client.chain.events",
        run.get("phases") == &json!(["a:start", "a:done"]),
        "phases [a:start, a:done]",
    );
    judge(
        rec,
        run,
        "client.chain.result",
        run.get("success") == true && run.get("final_output") == &json!({"text": "c"}),
        "success, final_output {\"text\":\"c\"}",
    );
}

async fn proc(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let spawn = cx.peer.expect("proc/spawn/req").await?;
    cx.rec.check(
        "client.proc.spawn-request",
        *spawn.field("cmd") == json!(["sh", "-c", "echo hi"]),
        "cmd [sh, -c, echo hi]",
        show(&spawn),
    );
    let id = s(&spawn, "/id").to_owned();
    cx.peer
        .answer(
            &spawn,
            "proc/spawn/resp",
            json!({"proc_id": "p-1", "ok": true, "pid": 4242, "error": ""}),
        )
        .await?;
    let out = json!({"type": "proc/read/event", "req_id": id, "proc_id": "p-1", "stream_type": "stdout", "kind": "status", "data": {"text": "hi"}, "seq": 0});
    cx.peer.send(out).await?;
    let end = json!({"type": "proc/read/event", "req_id": id, "proc_id": "p-1", "stream_type": "killed", "kind": "status", "data": {"code": 0, "state": "stopped"}, "seq": 1});
    cx.peer.send(end).await?;
    done(cx).await;
    Ok(())
}

fn judge_proc(run: &ClientRun, rec: &mut Recorder) {
    judge(
        rec,
        run,
        "client.proc.output",
        run.get("stdout") == "hi",
        "stdout hi",
    );
    judge(rec, run, "client.proc.exit", run.get("code") == 0, "code 0");
}

async fn shutdown(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let bye = cx.peer.expect("shutdown").await?;
    cx.rec.check(
        "client.shutdown.message",
        bye.field("timeout").is_u64(),
        "an integer timeout",
        show(&bye),
    );
    cx.peer.close();
    Ok(())
}

fn judge_shutdown(run: &ClientRun, rec: &mut Recorder) {
    rec.check(
        "client.shutdown.ends",
        run.finished && run.exit == Some(0),
        "the client ended with exit code 0",
        format!("ended: {}, exit {:?}", run.finished, run.exit),
    );
}

//! Client scenarios: the handshake, authentication, tool calls, events,
//! concurrent calls, refusals and failures.

use std::time::Duration;

use serde_json::{Value, json};

use super::peer::{SESSION_ID, result, tool_def};
use super::scenarios_events::{
    INTERLEAVED, STREAMING, interleaved, judge_interleaved, judge_streaming, streaming,
};
use super::script::{done, judge, open};
use super::{ClientCx, ClientRun, ClientScenario};
use conformance_harness::check::{CheckDef, Recorder, must, should};
use conformance_harness::scenario::{Area, On, Outcome, Scenario};
use conformance_harness::wire::Field as _;
use conformance_harness::wire::{s, show, ty};

pub(super) const SCENARIOS: &[ClientScenario] = &[
    ClientScenario {
        scenario: Scenario {
            name: "client/handshake",
            area: Area::Client,
            about: "Accepts the handshake (session cf-session-1, max_parallel 3), answers a ping, waits for the close.",
            needs: &[],
            on: On::All,
            checks: HANDSHAKE,
            run: conformance_harness::run_fn!(ClientCx, handshake),
        },
        asks: "Connect as agent `conformance-client` asking for [\"tools\"], ping, close; report {\"session_id\", \"max_parallel\"}.",
        judge: judge_handshake,
        auth: false,
    },
    ClientScenario {
        scenario: Scenario {
            name: "client/handshake-refused",
            area: Area::Client,
            about: "Refuses the handshake (ok: false, reason auth_failed) and watches what comes after.",
            needs: &[],
            on: On::All,
            checks: REFUSED_HANDSHAKE,
            run: conformance_harness::run_fn!(ClientCx, handshake_refused),
        },
        asks: "Connect asking for [\"tools\"]; the host refuses; report {\"reason\"} (the reason the host gave) and exit.",
        judge: judge_handshake_refused,
        auth: false,
    },
    ClientScenario {
        scenario: Scenario {
            name: "client/auth",
            area: Area::Client,
            about: "Reads the handshake's auth_token.",
            needs: &[],
            on: On::All,
            checks: AUTH,
            run: conformance_harness::run_fn!(ClientCx, auth),
        },
        asks: "Connect with the token of A2E_CONFORMANCE_AUTH_TOKEN, ping, close; report {}.",
        judge: |_, _| {},
        auth: true,
    },
    ClientScenario {
        scenario: Scenario {
            name: "client/auth-bearer",
            area: Area::Client,
            about: "Reads the Authorization header of the upgrade or of POST /session.",
            needs: &[],
            on: On::Network,
            checks: BEARER,
            run: conformance_harness::run_fn!(ClientCx, bearer),
        },
        asks: "Connect with the token of A2E_CONFORMANCE_AUTH_TOKEN, ping, close; report {}.",
        judge: |_, _| {},
        auth: true,
    },
    ClientScenario {
        scenario: Scenario {
            name: "client/tools",
            area: Area::Client,
            about: "Lists one tool, `echo`, and answers its call with the arguments.",
            needs: &[],
            on: On::All,
            checks: TOOLS,
            run: conformance_harness::run_fn!(ClientCx, tools),
        },
        asks: "List the tools, call `echo` with {\"text\": \"hello\"}; report {\"tools\": [names], \"result\": the result's data}.",
        judge: judge_tools,
        auth: false,
    },
    ClientScenario {
        scenario: Scenario {
            name: "client/streaming",
            area: Area::Client,
            about: "Answers a streaming call with three tool/events (progress, log, status), then the result.",
            needs: &[],
            on: On::All,
            checks: STREAMING,
            run: conformance_harness::run_fn!(ClientCx, streaming),
        },
        asks: "Call `stream` with {} and streaming on; report {\"events\": [{\"seq\", \"kind\", \"data\"}…] in the order received, \"result\": data}.",
        judge: judge_streaming,
        auth: false,
    },
    ClientScenario {
        scenario: Scenario {
            name: "client/interleaved",
            area: Area::Client,
            about: "Waits for two calls, then sends their events interleaved and answers the second first.",
            needs: &[],
            on: On::All,
            checks: INTERLEAVED,
            run: conformance_harness::run_fn!(ClientCx, interleaved),
        },
        asks: "Call `slow` with {\"n\": 1} and `fast` with {\"n\": 2} at once, both streaming; report {\"slow\": {\"events\": [data…], \"result\": data}, \"fast\": {…}}.",
        judge: judge_interleaved,
        auth: false,
    },
    ClientScenario {
        scenario: Scenario {
            name: "client/refused",
            area: Area::Client,
            about: "Refuses the first call with an `error` (unknown_tool), answers the second.",
            needs: &[],
            on: On::All,
            checks: REFUSED,
            run: conformance_harness::run_fn!(ClientCx, refused),
        },
        asks: "Call `missing` with {}, then `echo` with {\"text\": \"after\"}; report {\"error_code\": the first call's error code, \"after\": the second's data}.",
        judge: judge_refused,
        auth: false,
    },
    ClientScenario {
        scenario: Scenario {
            name: "client/failed",
            area: Area::Client,
            about: "Answers the call with success: false, error_code tool_error.",
            needs: &[],
            on: On::All,
            checks: FAILED,
            run: conformance_harness::run_fn!(ClientCx, failed),
        },
        asks: "Call `flaky` with {}; report {\"success\", \"error_code\", \"error\"} of its result.",
        judge: judge_failed,
        auth: false,
    },
];

#[rustfmt::skip]
const HANDSHAKE: &[CheckDef] = &[
    must("client.handshake.first", "a2e-core §2", "the client's first message is handshake/req"),
    must("client.handshake.caps", "a2e-core §2", "agent_caps lists the capabilities asked for, by name"),
    should("client.handshake.agent-id", "a2e-core §2", "agent_id is the agent's name"),
    must("client.handshake.waits", "a2e-core §2", "the client sends no request before handshake/resp"),
    must("client.handshake.session-id", "a2e-core §2", "the client takes its session id from handshake/resp"),
    should("client.handshake.max-parallel", "a2e-core §2", "the client takes max_parallel from handshake/resp"),
    must("client.ping.request", "a2e-core §2", "a ping has an id for the pong to name"),
    should("client.close.clean", "a2e-core §7", "a client that is done closes the connection (end of input, a close frame, DELETE /session)"),
];

#[rustfmt::skip]
const REFUSED_HANDSHAKE: &[CheckDef] = &[
    must("client.refused-handshake.no-requests", "a2e-core §2", "after a refused handshake the client sends no request"),
    must("client.refused-handshake.reason", "a2e-core §2", "the client reports the refusal with its reason"),
];

#[rustfmt::skip]
const AUTH: &[CheckDef] = &[must(
    "client.auth.token",
    "a2e-core §2",
    "a client given a token sends it as the handshake's auth_token",
)];

#[rustfmt::skip]
const BEARER: &[CheckDef] = &[must(
    "client.auth.bearer",
    "protocol-decisions: Network transports",
    "on WebSocket and HTTP+SSE a client given a token sends Authorization: Bearer <token>",
)];

#[rustfmt::skip]
const TOOLS: &[CheckDef] = &[
    must("client.tools.list-request", "tools: tool/list/req", "listing tools sends tool/list/req"),
    must("client.tools.listed", "tools: Client API", "the client hands its caller the listed tools"),
    must("client.tools.call-request", "tools: tool/call/req", "a call sends tool/call/req with tool_name and the arguments as an object"),
    should("client.tools.session-id", "tools: tool/call/req", "tool/call/req carries the session_id of the handshake"),
    must("client.tools.result", "tools: Client API", "the client hands its caller the result's data"),
];

#[rustfmt::skip]
const REFUSED: &[CheckDef] = &[
    must("client.refused.code", "a2e-core §3", "a refusal (an error message) reaches the caller as an error with its code"),
    must("client.refused.goes-on", "a2e-core §3", "after a refusal the session goes on"),
];

#[rustfmt::skip]
const FAILED: &[CheckDef] = &[must(
    "client.failed.in-band",
    "a2e-core §3",
    "a result with success: false reaches the caller as a result with its error_code, not as a transport error",
)];

async fn handshake(cx: &mut ClientCx) -> Outcome {
    let hs = cx.peer.recv("handshake/req").await?;
    let first = ty(&hs) == "handshake/req";
    cx.rec
        .check("client.handshake.first", first, "handshake/req", show(&hs));
    if !first {
        return Err("the first message is not a handshake".into());
    }
    let caps = hs.get("agent_caps").and_then(Value::as_array);
    cx.rec.check(
        "client.handshake.caps",
        caps.is_some_and(|c| c.contains(&json!("tools"))),
        "agent_caps with \"tools\"",
        show(&hs),
    );
    cx.rec.check(
        "client.handshake.agent-id",
        hs.field("agent_id") == "conformance-client",
        "agent_id conformance-client",
        show(&hs),
    );
    // Anything before our answer would be a request without a session.
    let early = cx.peer.next_within(Duration::from_millis(300)).await?;
    cx.rec.check(
        "client.handshake.waits",
        early.is_none(),
        "nothing before handshake/resp",
        format!("{early:?}"),
    );
    cx.peer.accept(&hs).await?;
    let ping = cx.peer.recv("ping").await?;
    cx.rec.check(
        "client.ping.request",
        ty(&ping) == "ping" && !s(&ping, "/id").is_empty(),
        "a ping with an id",
        show(&ping),
    );
    cx.peer.pong(&ping).await?;
    let closed = done(cx).await;
    cx.rec.check(
        "client.close.clean",
        closed,
        "the connection closed",
        "still open after 10 s",
    );
    Ok(())
}

fn judge_handshake(run: &ClientRun, rec: &mut Recorder) {
    judge(
        rec,
        run,
        "client.handshake.session-id",
        run.get("session_id") == SESSION_ID,
        "session_id cf-session-1",
    );
    judge(
        rec,
        run,
        "client.handshake.max-parallel",
        run.get("max_parallel") == 3,
        "max_parallel 3",
    );
}

async fn handshake_refused(cx: &mut ClientCx) -> Outcome {
    let hs = cx.peer.recv("handshake/req").await?;
    cx.peer
        .answer(
            &hs,
            "handshake/resp",
            json!({"session_id": "", "accepted_caps": [], "ok": false, "reason": "auth_failed"}),
        )
        .await?;
    let mut extra = Vec::new();
    cx.peer
        .closed_within(Duration::from_secs(5), &mut extra)
        .await;
    let requests: Vec<String> = extra
        .iter()
        .filter(|m| ty(m) != "handshake/req" && ty(m) != "pong" && ty(m) != "error")
        .map(show)
        .collect();
    cx.rec.check(
        "client.refused-handshake.no-requests",
        requests.is_empty(),
        "no request",
        format!("{requests:?}"),
    );
    Ok(())
}

fn judge_handshake_refused(run: &ClientRun, rec: &mut Recorder) {
    judge(
        rec,
        run,
        "client.refused-handshake.reason",
        run.get("reason") == "auth_failed",
        "reason auth_failed",
    );
}

async fn auth(cx: &mut ClientCx) -> Outcome {
    let hs = open(cx).await?;
    let token = cx.token.clone().unwrap_or_default();
    cx.rec.check(
        "client.auth.token",
        hs.field("auth_token") == token.as_str(),
        format!("auth_token `{token}`"),
        show(&hs),
    );
    done(cx).await;
    Ok(())
}

async fn bearer(cx: &mut ClientCx) -> Outcome {
    let want = format!("Bearer {}", cx.token.clone().unwrap_or_default());
    let got = cx.peer.facts.authorization.clone();
    cx.rec.check(
        "client.auth.bearer",
        got.as_deref() == Some(want.as_str()),
        want,
        format!("{got:?}"),
    );
    open(cx).await?;
    done(cx).await;
    Ok(())
}

async fn tools(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let list = cx.peer.recv("tool/list/req").await?;
    cx.rec.check(
        "client.tools.list-request",
        ty(&list) == "tool/list/req",
        "tool/list/req",
        show(&list),
    );
    cx.peer
        .answer(
            &list,
            "tool/list/resp",
            json!({"tools": [tool_def("echo")]}),
        )
        .await?;
    let call = cx.peer.expect("tool/call/req").await?;
    cx.rec.check(
        "client.tools.call-request",
        call.field("tool_name") == "echo" && *call.field("arguments") == json!({"text": "hello"}),
        "tool_name echo, arguments {\"text\":\"hello\"}",
        show(&call),
    );
    cx.rec.check(
        "client.tools.session-id",
        call.field("session_id") == SESSION_ID,
        "session_id cf-session-1",
        show(&call),
    );
    cx.peer
        .answer(
            &call,
            "tool/call/resp",
            json!({"data": result("echo", json!({"text": "hello"}))}),
        )
        .await?;
    done(cx).await;
    Ok(())
}

fn judge_tools(run: &ClientRun, rec: &mut Recorder) {
    judge(
        rec,
        run,
        "client.tools.listed",
        run.get("tools") == &json!(["echo"]),
        "tools [\"echo\"]",
    );
    judge(
        rec,
        run,
        "client.tools.result",
        run.get("result") == &json!({"text": "hello"}),
        "result {\"text\":\"hello\"}",
    );
}

async fn refused(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let call = cx.peer.expect("tool/call/req").await?;
    cx.peer
        .answer(
            &call,
            "error",
            json!({"code": "unknown_tool", "message": "no tool `missing`", "retryable": false}),
        )
        .await?;
    let call = cx.peer.expect("tool/call/req").await?;
    cx.peer
        .answer(
            &call,
            "tool/call/resp",
            json!({"data": result("echo", json!({"text": "after"}))}),
        )
        .await?;
    done(cx).await;
    Ok(())
}

fn judge_refused(run: &ClientRun, rec: &mut Recorder) {
    judge(
        rec,
        run,
        "client.refused.code",
        run.get("error_code") == "unknown_tool",
        "error_code unknown_tool",
    );
    judge(
        rec,
        run,
        "client.refused.goes-on",
        run.get("after") == &json!({"text": "after"}),
        "after {\"text\":\"after\"}",
    );
}

async fn failed(cx: &mut ClientCx) -> Outcome {
    open(cx).await?;
    let call = cx.peer.expect("tool/call/req").await?;
    let data = json!({"success": false, "tool_name": "flaky", "error": "boom", "error_code": "tool_error", "duration_ms": 1});
    cx.peer
        .answer(&call, "tool/call/resp", json!({"data": data}))
        .await?;
    done(cx).await;
    Ok(())
}

fn judge_failed(run: &ClientRun, rec: &mut Recorder) {
    judge(
        rec,
        run,
        "client.failed.in-band",
        run.get("success") == false
            && run.get("error_code") == "tool_error"
            && run.get("error") == "boom",
        "success false, error_code tool_error, error boom",
    );
}

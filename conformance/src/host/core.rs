//! Core: the handshake, authentication, ping, capability gating and
//! `max_parallel` (a2e-core §1–§2).

use std::time::Duration;

use serde_json::{Value, json};

use super::{Cx, HostScenario};
use crate::check::{CheckDef, must, should};
use crate::profile;
use crate::scenario::{Area, Fixture, On, Outcome, Scenario};
use crate::wire::show;

pub(super) const SCENARIOS: &[HostScenario] = &[
    Scenario {
        name: "core/handshake",
        area: Area::Core,
        about: "Opens two sessions and reads the handshake responses.",
        needs: &[],
        on: On::All,
        checks: HANDSHAKE,
        run: crate::run_fn!(Cx, handshake),
    },
    Scenario {
        name: "core/caps",
        area: Area::Core,
        about: "Asks for some capabilities, and one no host has, and uses one it did not ask for.",
        needs: &[],
        on: On::All,
        checks: CAPS,
        run: crate::run_fn!(Cx, caps),
    },
    Scenario {
        name: "core/auth",
        area: Area::Core,
        about: "Handshakes with a wrong token, none, then the right one.",
        needs: &[Fixture::AuthToken],
        on: On::All,
        checks: AUTH,
        run: crate::run_fn!(Cx, auth),
    },
    Scenario {
        name: "core/before-handshake",
        area: Area::Core,
        about: "Sends a request and a ping before the handshake.",
        needs: &[],
        on: On::All,
        checks: BEFORE,
        run: crate::run_fn!(Cx, before_handshake),
    },
    Scenario {
        name: "core/ping",
        area: Area::Core,
        about: "Pings twice.",
        needs: &[],
        on: On::All,
        checks: PING,
        run: crate::run_fn!(Cx, ping),
    },
    Scenario {
        name: "core/max-parallel",
        area: Area::Core,
        about: "Sends 2 × max_parallel + 1 sleeping calls at once and reads how many ran together.",
        needs: &[Fixture::Tool(profile::SLEEP)],
        on: On::All,
        checks: PARALLEL,
        run: crate::run_fn!(Cx, max_parallel),
    },
];

const HANDSHAKE: &[CheckDef] = &[
    must(
        "core.handshake.answered",
        "a2e-core §2",
        "handshake/req is answered with handshake/resp",
    ),
    must(
        "core.handshake.req-id",
        "a2e-core §1",
        "the handshake response names the request in req_id",
    ),
    must(
        "core.handshake.ok",
        "a2e-core §2",
        "a valid handshake is answered with ok: true",
    ),
    must(
        "core.handshake.session-id",
        "a2e-core §2",
        "handshake/resp carries a non-empty session_id",
    ),
    must(
        "core.handshake.session-id-fresh",
        "a2e-core §2",
        "every session gets a new session_id",
    ),
    must(
        "core.handshake.max-parallel",
        "a2e-core §2",
        "max_parallel is an integer of at least 1",
    ),
    must(
        "core.handshake.caps-shape",
        "a2e-core §2",
        "accepted_caps is a list of {capability, enabled, metadata} objects",
    ),
    must(
        "core.handshake.caps-asked",
        "a2e-core §2",
        "every capability accepted enabled was asked for (accepted_caps is an intersection)",
    ),
];

const CAPS: &[CheckDef] = &[
    must(
        "core.caps.unknown-not-enabled",
        "a2e-core §2",
        "a capability the host does not have is not accepted enabled",
    ),
    should(
        "core.caps.unknown-reason",
        "a2e-core §2",
        "an unavailable capability comes back with enabled: false and metadata.reason",
    ),
    must(
        "core.caps.gated",
        "tools: Security 1",
        "a tool request in a session that did not negotiate `tools` is refused with an error",
    ),
    should(
        "core.caps.gated-code",
        "a2e-core §3",
        "that refusal has code unauthorized",
    ),
    should(
        "core.caps.gated-name",
        "a2e-core §2",
        "that refusal names the capability in capability_name",
    ),
];

const AUTH: &[CheckDef] = &[
    must(
        "core.auth.wrong-token",
        "a2e-core §2",
        "a handshake with a wrong auth_token is answered ok: false, reason auth_failed",
    ),
    must(
        "core.auth.no-token",
        "a2e-core §2",
        "a handshake without auth_token is answered ok: false, reason auth_failed",
    ),
    must(
        "core.auth.stays-closed",
        "a2e-core §2",
        "after a refused handshake, requests are still refused",
    ),
    should(
        "core.auth.retry",
        "a2e-core §2",
        "a handshake with the right token after a refused one is accepted",
    ),
];

const BEFORE: &[CheckDef] = &[
    must(
        "core.session.handshake-first",
        "tools: Security 1",
        "a request before the handshake is refused with an error naming it in req_id",
    ),
    should(
        "core.session.handshake-first-code",
        "a2e-core §3",
        "that refusal has code unauthorized",
    ),
    should(
        "core.ping.any-time",
        "a2e-core §2",
        "ping is answered with pong before the handshake too",
    ),
];

const PING: &[CheckDef] = &[
    must(
        "core.ping.pong",
        "a2e-core §2",
        "ping is answered with pong",
    ),
    must(
        "core.ping.req-id",
        "a2e-core §2",
        "pong names the ping in req_id",
    ),
    must(
        "core.ping.uptime",
        "a2e-core §2",
        "pong carries uptime_seconds, a number ≥ 0",
    ),
    should(
        "core.ping.uptime-grows",
        "a2e-core §2",
        "uptime_seconds does not go backwards",
    ),
];

const PARALLEL: &[CheckDef] = &[
    must(
        "core.parallel.limit",
        "a2e-core §2",
        "no more than max_parallel requests of a session run at once",
    ),
    must(
        "core.parallel.all-answered",
        "a2e-core §3",
        "each of many concurrent requests is answered (a result, or a refusal)",
    ),
    should(
        "core.parallel.concurrent",
        "a2e-core §2",
        "with max_parallel > 1, requests run concurrently",
    ),
];

async fn handshake(cx: &mut Cx) -> Outcome {
    let mut s = cx.connect().await?;
    let hs = cx.handshake_req(&mut s, &["tools"]);
    let id = hs["id"].as_str().unwrap_or_default().to_owned();
    let r = s.request(hs).await?;
    cx.check(
        "core.handshake.answered",
        r.ty() == "handshake/resp",
        "handshake/resp",
        r.show(),
    );
    cx.check(
        "core.handshake.req-id",
        r.s("/req_id") == id,
        format!("req_id `{id}`"),
        r.show(),
    );
    cx.check(
        "core.handshake.ok",
        r.at("/ok") == &json!(true),
        "ok: true",
        r.show(),
    );
    let sid = r.s("/session_id").to_owned();
    cx.check(
        "core.handshake.session-id",
        !sid.is_empty(),
        "a non-empty session_id",
        r.show(),
    );
    let mp = r.at("/max_parallel");
    cx.check(
        "core.handshake.max-parallel",
        mp.as_u64().is_some_and(|n| n >= 1),
        "an integer ≥ 1",
        show(mp),
    );
    let caps = r.at("/accepted_caps");
    let shaped = caps.as_array().is_some_and(|list| {
        list.iter().all(|c| {
            c.get("capability").is_some_and(Value::is_string)
                && c.get("enabled").is_none_or(Value::is_boolean)
                && c.get("metadata").is_none_or(Value::is_object)
        })
    });
    cx.check(
        "core.handshake.caps-shape",
        shaped,
        "a list of Capability objects",
        show(caps),
    );
    let extra: Vec<&Value> = caps
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c.get("enabled") != Some(&json!(false)) && c["capability"] != "tools")
        .collect();
    cx.check(
        "core.handshake.caps-asked",
        extra.is_empty(),
        "only `tools` enabled (asked for [\"tools\"])",
        format!("also enabled: {extra:?}"),
    );
    drop(s);
    let other = cx.session().await?;
    cx.check(
        "core.handshake.session-id-fresh",
        !other.session_id.is_empty() && other.session_id != sid,
        format!("a session_id other than `{sid}`"),
        format!("`{}`", other.session_id),
    );
    Ok(())
}

async fn caps(cx: &mut Cx) -> Outcome {
    let mut s = cx.connect().await?;
    let hs = cx.handshake_req(&mut s, &["chains", "test"]);
    let r = s.request(hs).await?;
    let test = r
        .at("/accepted_caps")
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["capability"] == "test")
        .cloned();
    let enabled = test
        .as_ref()
        .is_some_and(|c| c.get("enabled") != Some(&json!(false)));
    cx.check(
        "core.caps.unknown-not-enabled",
        !enabled,
        "`test` absent or enabled: false",
        format!("{test:?}"),
    );
    let reason = test
        .as_ref()
        .and_then(|c| c.pointer("/metadata/reason"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    cx.check(
        "core.caps.unknown-reason",
        test.is_some() && !enabled && !reason.is_empty(),
        "`test` with enabled: false and metadata.reason",
        format!("{test:?}"),
    );
    let list = s.req("tool/list/req", json!({}));
    let id = list["id"].as_str().unwrap_or_default().to_owned();
    let r = s.request(list).await?;
    cx.check(
        "core.caps.gated",
        r.is_error() && r.s("/req_id") == id,
        format!("an error with req_id `{id}`"),
        r.show(),
    );
    cx.check(
        "core.caps.gated-code",
        r.code() == "unauthorized",
        "code unauthorized",
        r.show(),
    );
    cx.check(
        "core.caps.gated-name",
        r.s("/capability_name") == "tools",
        "capability_name \"tools\"",
        r.show(),
    );
    Ok(())
}

fn refused_auth(r: &crate::session::Reply) -> bool {
    r.ty() == "handshake/resp" && r.at("/ok") == &json!(false) && r.s("/reason") == "auth_failed"
}

async fn auth(cx: &mut Cx) -> Outcome {
    let token = cx.token().unwrap_or_default().to_owned();
    let mut s = cx.connect().await?;
    let wrong = s.req(
        "handshake/req",
        json!({"agent_id": "a2e-conformance", "agent_caps": ["tools"], "auth_token": format!("{token}-wrong")}),
    );
    let r = s.request(wrong).await?;
    cx.check(
        "core.auth.wrong-token",
        refused_auth(&r),
        "ok: false, reason auth_failed",
        r.show(),
    );
    let list = s.req("tool/list/req", json!({}));
    let r = s.request(list).await?;
    cx.check(
        "core.auth.stays-closed",
        r.is_error(),
        "an error (the session is not open)",
        r.show(),
    );
    let right = s.req(
        "handshake/req",
        json!({"agent_id": "a2e-conformance", "agent_caps": ["tools"], "auth_token": token}),
    );
    let r = s.request(right).await?;
    cx.check(
        "core.auth.retry",
        r.ty() == "handshake/resp" && r.at("/ok") == &json!(true),
        "ok: true",
        r.show(),
    );
    let mut s = cx.connect().await?;
    let none = s.req(
        "handshake/req",
        json!({"agent_id": "a2e-conformance", "agent_caps": ["tools"]}),
    );
    let r = s.request(none).await?;
    cx.check(
        "core.auth.no-token",
        refused_auth(&r),
        "ok: false, reason auth_failed",
        r.show(),
    );
    Ok(())
}

async fn before_handshake(cx: &mut Cx) -> Outcome {
    let mut s = cx.connect().await?;
    let list = s.req("tool/list/req", json!({}));
    let id = list["id"].as_str().unwrap_or_default().to_owned();
    let r = s.request(list).await?;
    cx.check(
        "core.session.handshake-first",
        r.is_error() && r.s("/req_id") == id,
        format!("an error with req_id `{id}`"),
        r.show(),
    );
    cx.check(
        "core.session.handshake-first-code",
        r.code() == "unauthorized",
        "code unauthorized",
        r.show(),
    );
    let ping = s.req("ping", json!({}));
    let r = s.request(ping).await?;
    cx.check("core.ping.any-time", r.ty() == "pong", "pong", r.show());
    Ok(())
}

async fn ping(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let mut uptimes = Vec::new();
    for _ in 0..2 {
        let ping = s.req("ping", json!({}));
        let id = ping["id"].as_str().unwrap_or_default().to_owned();
        s.send(&ping).await?;
        // Not matched by req_id: that is what is checked.
        let got = loop {
            match s.next(s.wait).await? {
                Some(m) if m["type"] == "pong" || m["type"] == "error" => break m,
                Some(_) => {}
                None => return Err("no pong within the answer timeout".into()),
            }
        };
        cx.check("core.ping.pong", got["type"] == "pong", "pong", show(&got));
        cx.check(
            "core.ping.req-id",
            got["req_id"] == id.as_str(),
            format!("req_id `{id}`"),
            show(&got),
        );
        let up = got.get("uptime_seconds").and_then(Value::as_f64);
        cx.check(
            "core.ping.uptime",
            up.is_some_and(|u| u >= 0.0),
            "uptime_seconds ≥ 0",
            show(&got),
        );
        uptimes.push(up.unwrap_or(-1.0));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    cx.check(
        "core.ping.uptime-grows",
        uptimes.windows(2).all(|w| w[1] >= w[0]),
        "non-decreasing uptime_seconds",
        format!("{uptimes:?}"),
    );
    Ok(())
}

async fn max_parallel(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let mp = s.max_parallel.clamp(1, 8);
    let n = mp * 2 + 1;
    let group = format!("parallel-{}", s.session_id);
    let mut ids = Vec::new();
    for _ in 0..n {
        let call = s.req(
            "tool/call/req",
            json!({"tool_name": profile::SLEEP, "arguments": {"ms": 400, "group": group}, "timeout": 60}),
        );
        ids.push(call["id"].as_str().unwrap_or_default().to_owned());
        s.send(&call).await?;
    }
    let wait = Duration::from_millis(400 * (n + 1)) + s.wait;
    let mut peak = 0;
    let mut ran = 0;
    let mut unanswered = Vec::new();
    for id in &ids {
        match s.answer_within(id, wait).await {
            Ok(r) => {
                if let Some(c) = r.at("/data/data/concurrent").as_u64() {
                    ran += 1;
                    peak = peak.max(c);
                }
            }
            Err(e) => unanswered.push(e.0),
        }
    }
    s.settle().await?;
    cx.check(
        "core.parallel.all-answered",
        unanswered.is_empty(),
        format!("an answer to each of {n} requests"),
        format!("{unanswered:?}"),
    );
    cx.check(
        "core.parallel.limit",
        ran > 0 && peak <= s.max_parallel,
        format!("at most {} at once", s.max_parallel),
        format!("{peak} at once"),
    );
    cx.check(
        "core.parallel.concurrent",
        ran > 0 && (s.max_parallel < 2 || peak >= 2),
        "at least 2 at once",
        format!("{peak} at once"),
    );
    Ok(())
}

//! Core: `shutdown` — draining calls in flight, then ending the session
//! (a2e-core §2).

use std::time::{Duration, Instant};

use serde_json::json;

use super::{Cx, HostScenario};
use crate::check::{CheckDef, must};
use crate::profile::SLEEP;
use crate::scenario::{Area, Fixture, On, Outcome, Scenario, Transport};
use crate::session::Session;

pub(super) const SCENARIOS: &[HostScenario] = &[
    Scenario {
        name: "core/shutdown",
        area: Area::Core,
        about: "Sends shutdown (timeout 5 s) while a 1 s call runs.",
        needs: &[Fixture::Tool(SLEEP)],
        on: On::All,
        checks: DRAIN,
        run: crate::run_fn!(Cx, drain),
    },
    Scenario {
        name: "core/shutdown-cancels",
        area: Area::Core,
        about: "Sends shutdown (timeout 1 s) while a 30 s call runs.",
        needs: &[Fixture::Tool(SLEEP)],
        on: On::All,
        checks: CANCEL,
        run: crate::run_fn!(Cx, cancel),
    },
];

const DRAIN: &[CheckDef] = &[
    must(
        "core.shutdown.drains",
        "a2e-core §2",
        "a call in flight when shutdown arrives still gets its answer within shutdown's timeout",
    ),
    must(
        "core.shutdown.ends",
        "a2e-core §2",
        "after shutdown the session ends: a stdio host exits, a network connection closes",
    ),
];

const CANCEL: &[CheckDef] = &[must(
    "core.shutdown.bounded",
    "a2e-core §2",
    "work still running when shutdown's timeout is over is stopped: the session ends within the timeout plus 5 s",
)];

/// Whether the session ended within `within`: the process exited (stdio) or
/// the connection closed (network).
async fn ended(s: &mut Session, within: Duration) -> bool {
    if s.transport() == Transport::Stdio {
        s.exited_within(within).await == Some(true)
    } else {
        s.closed_within(within).await.is_some()
    }
}

async fn drain(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let call = s.req(
        "tool/call/req",
        json!({"tool_name": SLEEP, "arguments": {"ms": 1000}}),
    );
    s.send(&call).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let bye = s.req("shutdown", json!({"timeout": 5}));
    s.send(&bye).await?;
    let id = call["id"].as_str().unwrap_or_default();
    match s.answer_within(id, Duration::from_secs(8)).await {
        Ok(r) => cx.check(
            "core.shutdown.drains",
            r.at("/data/success") == &json!(true),
            "tool/call/resp, success: true",
            r.show(),
        ),
        Err(e) => cx.fail("core.shutdown.drains", "the call's answer", e.0),
    }
    let done = ended(&mut s, Duration::from_secs(10)).await;
    cx.check(
        "core.shutdown.ends",
        done,
        "the session ends within 10 s",
        "it did not",
    );
    Ok(())
}

async fn cancel(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let call = s.req(
        "tool/call/req",
        json!({"tool_name": SLEEP, "arguments": {"ms": 30000}, "timeout": 60}),
    );
    s.send(&call).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let bye = s.req("shutdown", json!({"timeout": 1}));
    s.send(&bye).await?;
    let started = Instant::now();
    let done = ended(&mut s, Duration::from_secs(6)).await;
    cx.check(
        "core.shutdown.bounded",
        done,
        "the session ends within 6 s",
        format!("still open after {:?}", started.elapsed()),
    );
    Ok(())
}

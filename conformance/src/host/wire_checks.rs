//! What every message of the run was: the rules of [`crate::wire`], reported
//! after the other scenarios (a2e-core §1, §3, §4).

use serde_json::json;

use super::{Cx, HostScenario};
use crate::check::{CheckDef, must, should};
use crate::scenario::{Area, On, Outcome, Scenario};
use crate::wire::Rule;

pub(super) const SCENARIOS: &[HostScenario] = &[
    Scenario {
        name: "core/wire",
        area: Area::Core,
        about: "Reports on every message the host sent in the run (after a handshake, ping, list and discover of its own).",
        needs: &[],
        on: On::All,
        checks: WIRE,
        run: crate::run_fn!(Cx, wire),
    },
    Scenario {
        name: "transport/stdio-framing",
        area: Area::Transport,
        about: "Reports on every line the host wrote in the run.",
        needs: &[],
        on: On::Stdio,
        checks: FRAMING,
        run: crate::run_fn!(Cx, framing),
    },
];

const WIRE: &[CheckDef] = &[
    must(
        "core.wire.object",
        "a2e-core §1",
        "every message is one JSON object",
    ),
    must(
        "core.wire.type",
        "a2e-core §1",
        "every message has a string type",
    ),
    should(
        "core.wire.known-type",
        "a2e-core §1",
        "a host sends only message types the specs define",
    ),
    must(
        "core.wire.id",
        "a2e-core §1",
        "every message has a non-empty string id",
    ),
    must(
        "core.wire.id-unique",
        "a2e-core §1",
        "no message id repeats within a session",
    ),
    must(
        "core.wire.version",
        "a2e-core §1",
        "every message carries version 1.x",
    ),
    should(
        "core.wire.ts",
        "a2e-core §1",
        "every message carries ts, Unix seconds of about now",
    ),
    must(
        "core.wire.schema",
        "a2e-core §2",
        "every message validates against its type's schema (the specs' field tables)",
    ),
    must(
        "core.wire.answer-once",
        "a2e-core §3",
        "no request gets two final answers",
    ),
    must(
        "core.wire.events-first",
        "a2e-core §4",
        "no event comes after its request's final answer",
    ),
];

const FRAMING: &[CheckDef] = &[must(
    "transport.stdio.compact",
    "a2e-core §1",
    "every line on stdout is one compact JSON message (NDJSON)",
)];

const RULES: &[(&str, Rule)] = &[
    ("core.wire.object", Rule::Object),
    ("core.wire.type", Rule::Type),
    ("core.wire.known-type", Rule::KnownType),
    ("core.wire.id", Rule::Id),
    ("core.wire.id-unique", Rule::IdUnique),
    ("core.wire.version", Rule::Version),
    ("core.wire.ts", Rule::Ts),
    ("core.wire.schema", Rule::Schema),
    ("core.wire.answer-once", Rule::AnswerOnce),
    ("core.wire.events-first", Rule::EventsFirst),
];

fn report(cx: &mut Cx, rules: &[(&str, Rule)]) {
    let log = cx
        .env
        .wire
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    crate::wire::report_rules(&mut cx.rec, &log, rules);
}

async fn wire(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    for (ty, fields) in [
        ("ping", json!({})),
        ("tool/list/req", json!({})),
        ("skill/discover/req", json!({})),
    ] {
        let req = s.req(ty, fields);
        s.request(req).await?;
    }
    drop(s);
    report(cx, RULES);
    Ok(())
}

async fn framing(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    s.settle().await?;
    drop(s);
    report(cx, &[("transport.stdio.compact", Rule::Compact)]);
    Ok(())
}

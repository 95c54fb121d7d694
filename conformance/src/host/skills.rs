//! Skills: discover, statuses, call, events, argument validation, timeout
//! (skills spec).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Cx, HostScenario};
use crate::check::{CheckDef, must, should};
use crate::profile::{SKILL, SKILL_BLOCKED, SKILL_FAIL, SKILL_SLOW};
use crate::scenario::{Area, Fixture, On, Outcome, Scenario};
use crate::session::Reply;
use crate::wire::show;

pub(super) const SCENARIOS: &[HostScenario] = &[
    Scenario {
        name: "skills/discover",
        area: Area::Skills,
        about: "Discovers skills, filtered by tags and categories.",
        needs: &[Fixture::Cap("skill"), Fixture::Skill(SKILL)],
        on: On::All,
        checks: DISCOVER,
        run: crate::run_fn!(Cx, discover),
    },
    Scenario {
        name: "skills/call",
        area: Area::Skills,
        about: "Calls the echo skill, an unknown one, one with bad arguments, the failing one and the blocked one.",
        needs: &[
            Fixture::Cap("skill"),
            Fixture::Skill(SKILL),
            Fixture::Skill(SKILL_FAIL),
            Fixture::Skill(SKILL_BLOCKED),
        ],
        on: On::All,
        checks: CALL,
        run: crate::run_fn!(Cx, call),
    },
    Scenario {
        name: "skills/events",
        area: Area::Skills,
        about: "Calls the echo skill with streaming left out, on, and off.",
        needs: &[Fixture::Cap("skill"), Fixture::Skill(SKILL)],
        on: On::All,
        checks: EVENTS,
        run: crate::run_fn!(Cx, events),
    },
    Scenario {
        name: "skills/timeout",
        area: Area::Skills,
        about: "Calls the slow skill for 5 s with a timeout of 1 s.",
        needs: &[Fixture::Cap("skill"), Fixture::Skill(SKILL_SLOW)],
        on: On::All,
        checks: TIMEOUT,
        run: crate::run_fn!(Cx, timeout),
    },
];

const DISCOVER: &[CheckDef] = &[
    must(
        "skills.discover.answered",
        "skills: skill/discover/resp",
        "skill/discover/req is answered with skill/discover/resp naming it in req_id",
    ),
    must(
        "skills.discover.minimal",
        "skills: skill/discover/req",
        "a discover request with only type and id lists the skills",
    ),
    must(
        "skills.discover.required-fields",
        "skills: SkillDefinition",
        "every skill has name, version, description, triggers, status, when_to_use, argument_hint and source",
    ),
    must(
        "skills.discover.status",
        "skills: SkillStatus",
        "every status is Created, Blocked, Published or Archived",
    ),
    must(
        "skills.discover.input-schema",
        "skills: SkillDefinition",
        "input_schema, when present, is an object",
    ),
    must(
        "skills.discover.fixture",
        "skills: SkillDefinition",
        "the echo skill is listed Published, its input_schema requiring `text`",
    ),
    must(
        "skills.discover.filter-tags",
        "skills: skill/discover/req",
        "filter_tags keeps the skills carrying any of the tags",
    ),
    must(
        "skills.discover.filter-tags-none",
        "skills: skill/discover/req",
        "filter_tags no skill carries lists none",
    ),
    must(
        "skills.discover.filter-categories",
        "skills: skill/discover/req",
        "filter_categories keeps only skills of those categories",
    ),
    should(
        "skills.discover.no-credentials",
        "skills: Security 4",
        "no provider_credentials value is shown",
    ),
];

const CALL: &[CheckDef] = &[
    must(
        "skills.call.answered",
        "skills: skill/call/resp",
        "skill/call/req is answered with skill/call/resp naming it in req_id",
    ),
    must(
        "skills.call.name",
        "skills: skill/call/resp",
        "the response's name names the skill",
    ),
    must(
        "skills.call.success",
        "skills: SkillResult",
        "a skill that ran is answered with data.success: true",
    ),
    must(
        "skills.call.data",
        "skills: SkillResult",
        "data.data carries the skill's output",
    ),
    must(
        "skills.call.duration",
        "skills: SkillResult",
        "data.duration_ms is an integer ≥ 0",
    ),
    must(
        "skills.call.minimal",
        "skills: skill/call/req",
        "a call with only name and arguments is served",
    ),
    must(
        "skills.call.unknown",
        "a2e-core §3",
        "a call of an unknown skill is refused: an error, code unknown_skill, naming the call in req_id",
    ),
    must(
        "skills.call.schema",
        "skills: Security 5",
        "arguments that break the skill's input_schema are refused with schema_violation",
    ),
    must(
        "skills.call.failed",
        "a2e-core §3",
        "a skill that ran and failed is answered with skill/call/resp and data.success: false",
    ),
    must(
        "skills.call.failed-code",
        "skills: Error Codes",
        "that result has error_code skill_error",
    ),
    should(
        "skills.call.not-published",
        "skills: SkillStatus",
        "a Blocked skill does not run: the call is refused or fails",
    ),
];

const EVENTS: &[CheckDef] = &[
    must(
        "skills.events.default-streaming",
        "skills: skill/call/req",
        "a call that leaves streaming out gets skill/events (the default is true)",
    ),
    must(
        "skills.events.seq",
        "a2e-core §1",
        "a call's events carry seq 0, 1, 2, …",
    ),
    must(
        "skills.events.before-answer",
        "a2e-core §4",
        "every event of a call comes before its skill/call/resp",
    ),
    must(
        "skills.events.shape",
        "a2e-core §4",
        "every skill/event has a string kind and a data object",
    ),
    should(
        "skills.events.off",
        "skills: skill/call/req",
        "a call with streaming: false gets no skill/event",
    ),
];

const TIMEOUT: &[CheckDef] = &[
    must(
        "skills.timeout.in-band",
        "a2e-core §3",
        "a skill call past its timeout is answered with skill/call/resp, success: false, error_code timeout",
    ),
    must(
        "skills.timeout.bounded",
        "skills: Security 3",
        "that answer comes within the timeout plus 5 s",
    ),
];

fn names(r: &Reply) -> Vec<String> {
    r.at("/skills")
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

const REQUIRED: &[(&str, fn(&Value) -> bool)] = &[
    ("name", Value::is_string),
    ("version", Value::is_string),
    ("description", Value::is_string),
    ("triggers", Value::is_array),
    ("status", Value::is_string),
    ("when_to_use", Value::is_string),
    ("argument_hint", Value::is_string),
    ("source", Value::is_string),
];

fn shows_credentials(skill: &Value) -> bool {
    let creds = |v: Option<&Value>| {
        v.and_then(Value::as_object).is_some_and(|m| {
            m.values().any(|x| {
                x.as_str()
                    .is_some_and(|s| !s.is_empty() && !s.contains("REDACTED") && s != "***")
            })
        })
    };
    creds(skill.pointer("/llm_config/provider_credentials"))
}

async fn discover(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let full = s.req(
        "skill/discover/req",
        json!({"filter_tags": [], "filter_categories": []}),
    );
    let r = s.request(full.clone()).await?;
    cx.check(
        "skills.discover.answered",
        r.ty() == "skill/discover/resp" && r.msg["req_id"] == full["id"],
        "skill/discover/resp with the request's req_id",
        r.show(),
    );
    let min = s.req("skill/discover/req", json!({}));
    let r = s.request(min).await?;
    let all = names(&r);
    cx.check(
        "skills.discover.minimal",
        all.contains(&SKILL.to_owned()),
        format!("a list with {SKILL}"),
        r.show(),
    );
    let skills = r.at("/skills").as_array().cloned().unwrap_or_default();
    for skill in &skills {
        let missing: Vec<&str> = REQUIRED
            .iter()
            .filter(|(field, is)| !skill.get(*field).is_some_and(is))
            .map(|(field, _)| *field)
            .collect();
        cx.check(
            "skills.discover.required-fields",
            missing.is_empty(),
            "every required field",
            format!("{} lacks {missing:?}", skill["name"]),
        );
        let status = skill["status"].as_str().unwrap_or_default();
        cx.check(
            "skills.discover.status",
            ["Created", "Blocked", "Published", "Archived"].contains(&status),
            "Created, Blocked, Published or Archived",
            format!("{} has {}", skill["name"], skill["status"]),
        );
        let schema = skill.get("input_schema");
        cx.check(
            "skills.discover.input-schema",
            schema.is_none_or(|v| v.is_object() || v.is_null()),
            "an object",
            format!("{} has {schema:?}", skill["name"]),
        );
        cx.check(
            "skills.discover.no-credentials",
            !shows_credentials(skill),
            "no credentials shown",
            format!("{}", skill["name"]),
        );
    }
    let echo = skills
        .iter()
        .find(|k| k["name"] == SKILL)
        .cloned()
        .unwrap_or_default();
    let requires_text = echo
        .pointer("/input_schema/required")
        .and_then(Value::as_array)
        .is_some_and(|r| r.contains(&json!("text")));
    cx.check(
        "skills.discover.fixture",
        echo["status"] == "Published" && requires_text,
        "status Published, input_schema.required [\"text\"]",
        show(&echo),
    );

    let q = s.req(
        "skill/discover/req",
        json!({"filter_tags": ["conformance-skill", "conformance-no-such-tag"]}),
    );
    let r = s.request(q).await?;
    let got = names(&r);
    cx.check(
        "skills.discover.filter-tags",
        got == [SKILL],
        format!("[{SKILL}]"),
        format!("{got:?}"),
    );
    let q = s.req(
        "skill/discover/req",
        json!({"filter_tags": ["conformance-no-such-tag"]}),
    );
    let r = s.request(q).await?;
    let got = names(&r);
    cx.check(
        "skills.discover.filter-tags-none",
        r.ty() == "skill/discover/resp" && got.is_empty(),
        "skill/discover/resp with []",
        r.show(),
    );
    let q = s.req(
        "skill/discover/req",
        json!({"filter_categories": ["conformance"]}),
    );
    let r = s.request(q).await?;
    let got = names(&r);
    let of_others = r
        .at("/skills")
        .as_array()
        .into_iter()
        .flatten()
        .filter(|k| k["category"] != "conformance")
        .count();
    cx.check(
        "skills.discover.filter-categories",
        got.contains(&SKILL.to_owned()) && of_others == 0,
        format!("only skills of category conformance, {SKILL} among them"),
        format!("{got:?}"),
    );
    Ok(())
}

async fn call(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let full = s.req(
        "skill/call/req",
        json!({"name": SKILL, "arguments": {"text": "hi"}, "correlation_id": "turn-1",
               "timeout": 60, "streaming": false, "llm_override": null, "metadata": {}}),
    );
    let r = s.request(full.clone()).await?;
    cx.check(
        "skills.call.answered",
        r.ty() == "skill/call/resp" && r.msg["req_id"] == full["id"],
        "skill/call/resp with the request's req_id",
        r.show(),
    );
    cx.check(
        "skills.call.name",
        r.s("/name") == SKILL,
        format!("name {SKILL}"),
        r.show(),
    );
    cx.check(
        "skills.call.success",
        r.at("/data/success") == &json!(true),
        "data.success: true",
        r.show(),
    );
    cx.check(
        "skills.call.data",
        r.at("/data/data") == &json!({"text": "hi"}),
        "data.data {\"text\":\"hi\"}",
        r.show(),
    );
    cx.check(
        "skills.call.duration",
        r.at("/data/duration_ms").is_u64(),
        "an integer duration_ms",
        r.show(),
    );
    let min = s.req(
        "skill/call/req",
        json!({"name": SKILL, "arguments": {"text": "min"}}),
    );
    let r = s.request(min).await?;
    cx.check(
        "skills.call.minimal",
        r.ty() == "skill/call/resp" && r.at("/data/success") == &json!(true),
        "skill/call/resp, success: true",
        r.show(),
    );
    let unknown = s.req(
        "skill/call/req",
        json!({"name": "conformance_no_such_skill", "arguments": {}}),
    );
    let r = s.request(unknown.clone()).await?;
    cx.check(
        "skills.call.unknown",
        r.is_error() && r.code() == "unknown_skill" && r.msg["req_id"] == unknown["id"],
        "an error, code unknown_skill, with the call's req_id",
        r.show(),
    );
    let bad = s.req(
        "skill/call/req",
        json!({"name": SKILL, "arguments": {"text": 5}}),
    );
    let r = s.request(bad).await?;
    cx.check(
        "skills.call.schema",
        r.is_error() && r.code() == "schema_violation",
        "an error, code schema_violation",
        r.show(),
    );
    let fail = s.req(
        "skill/call/req",
        json!({"name": SKILL_FAIL, "arguments": {}, "streaming": false}),
    );
    let r = s.request(fail).await?;
    cx.check(
        "skills.call.failed",
        r.ty() == "skill/call/resp" && r.at("/data/success") == &json!(false),
        "skill/call/resp with data.success: false",
        r.show(),
    );
    cx.check(
        "skills.call.failed-code",
        r.s("/data/error_code") == "skill_error",
        "error_code skill_error",
        r.show(),
    );
    let blocked = s.req(
        "skill/call/req",
        json!({"name": SKILL_BLOCKED, "arguments": {"text": "x"}, "streaming": false}),
    );
    let r = s.request(blocked).await?;
    let not_run =
        r.is_error() || r.at("/data/success") == &json!(false) || !r.at("/error").is_null();
    cx.check(
        "skills.call.not-published",
        not_run,
        "an error, or a result with success: false",
        r.show(),
    );
    Ok(())
}

async fn events(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let default = s.req(
        "skill/call/req",
        json!({"name": SKILL, "arguments": {"text": "default"}}),
    );
    let r = s.request(default).await?;
    let skill_events = r
        .events
        .iter()
        .filter(|e| e["type"] == "skill/event")
        .count();
    cx.check(
        "skills.events.default-streaming",
        skill_events > 0 && skill_events == r.events.len(),
        "at least one skill/event",
        format!(
            "{:?}",
            r.events
                .iter()
                .map(|e| e["type"].clone())
                .collect::<Vec<_>>()
        ),
    );
    let call = s.req(
        "skill/call/req",
        json!({"name": SKILL, "arguments": {"text": "events"}, "streaming": true}),
    );
    let id = call["id"].as_str().unwrap_or_default().to_owned();
    let r = s.request(call).await?;
    let in_order = r
        .events
        .iter()
        .enumerate()
        .all(|(i, e)| e.get("seq").and_then(Value::as_u64) == Some(i as u64));
    cx.check(
        "skills.events.seq",
        !r.events.is_empty() && in_order,
        "seq 0, 1, 2, …",
        format!("{:?}", r.seqs()),
    );
    let shaped = !r.events.is_empty()
        && r.events
            .iter()
            .all(|e| e["kind"].is_string() && e["data"].is_object());
    cx.check(
        "skills.events.shape",
        shaped,
        "kind and data",
        r.events.first().map(show).unwrap_or_default(),
    );
    s.settle().await?;
    let late = s.late(&id).len();
    cx.check(
        "skills.events.before-answer",
        !r.events.is_empty() && late == 0,
        "events, none after the answer",
        format!("{} before, {late} after", r.events.len()),
    );
    let off = s.req(
        "skill/call/req",
        json!({"name": SKILL, "arguments": {"text": "quiet"}, "streaming": false}),
    );
    let off_id = off["id"].as_str().unwrap_or_default().to_owned();
    let r = s.request(off).await?;
    s.settle().await?;
    let n = r.events.len() + s.late(&off_id).len();
    cx.check(
        "skills.events.off",
        r.at("/data/success") == &json!(true) && n == 0,
        "a result without skill/event",
        format!("{n} event(s) and {}", r.show()),
    );
    Ok(())
}

async fn timeout(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let call = s.req(
        "skill/call/req",
        json!({"name": SKILL_SLOW, "arguments": {"ms": 5000}, "timeout": 1, "streaming": false}),
    );
    let started = Instant::now();
    let r = s.request_within(call, Duration::from_secs(15)).await?;
    let took = started.elapsed();
    cx.check(
        "skills.timeout.in-band",
        r.ty() == "skill/call/resp"
            && r.at("/data/success") == &json!(false)
            && r.s("/data/error_code") == "timeout",
        "skill/call/resp, success: false, error_code timeout",
        r.show(),
    );
    cx.check(
        "skills.timeout.bounded",
        r.ty() == "skill/call/resp" && took <= Duration::from_secs(6),
        "skill/call/resp within 6 s",
        format!("{} after {took:?}", r.ty()),
    );
    Ok(())
}

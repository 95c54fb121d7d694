//! Core: malformed and unexpected input, and the `error` messages it gets
//! (a2e-core §1, §3).

use serde_json::{Value, json};

use super::{Cx, HostScenario};
use crate::check::{CheckDef, must, should};
use crate::scenario::{Abort, Area, On, Outcome, Scenario};
use crate::session::Session;
use crate::wire::show;

pub(super) const SCENARIOS: &[HostScenario] = &[Scenario {
    name: "core/errors",
    area: Area::Core,
    about: "Sends malformed lines, unknown types, other versions and wrong shapes, then pings.",
    needs: &[],
    on: On::All,
    checks: ERRORS,
    run: crate::run_fn!(Cx, errors),
}];

const ERRORS: &[CheckDef] = &[
    must(
        "core.error.parse-error",
        "a2e-core §3",
        "a line that is not JSON is answered with an error, code parse_error",
    ),
    must(
        "core.error.parse-error-req-id",
        "a2e-core §3",
        "an error for a message whose id could not be read has req_id \"\"",
    ),
    should(
        "core.error.not-object",
        "a2e-core §3",
        "a JSON value that is no object is answered with invalid_message",
    ),
    should(
        "core.error.no-type",
        "a2e-core §3",
        "an object without a type is answered with invalid_message",
    ),
    must(
        "core.error.unknown-type",
        "skills: Error Codes",
        "an unknown message type is answered with invalid_message",
    ),
    must(
        "core.error.unknown-type-req-id",
        "a2e-core §3",
        "a refusal names the refused message's id in req_id",
    ),
    must(
        "core.error.version-major",
        "a2e-core §1",
        "a message of version 2.0 is refused with version_mismatch",
    ),
    should(
        "core.error.version-minor",
        "a2e-core §1",
        "a message of version 1.1 is accepted",
    ),
    must(
        "core.error.a2e-alias",
        "a2e-core §1",
        "`a2e` is accepted in place of `version` on input",
    ),
    must(
        "core.error.wrong-shape",
        "a2e-core §3",
        "a known type with a field of the wrong type is refused with schema_violation",
    ),
    must(
        "core.error.shape",
        "a2e-core §2",
        "every error has a non-empty string code, and retryable (when present) is a boolean",
    ),
    should(
        "core.error.not-retryable",
        "a2e-core §3",
        "parse_error, invalid_message, version_mismatch and schema_violation have retryable: false",
    ),
    should(
        "core.error.agent-response",
        "a2e-core §2",
        "a host → agent message sent by the agent is not run: it is refused or ignored",
    ),
    must(
        "core.error.session-survives",
        "a2e-core §3",
        "after refused input the session still answers ping",
    ),
];

/// The next `error` message (others are dropped); when none comes, a
/// stand-in saying so, which fails the checks made on it.
async fn next_error(s: &mut Session) -> Result<Value, Abort> {
    loop {
        match s.next(s.wait).await? {
            Some(m) if m["type"] == "error" => return Ok(m),
            Some(_) => {}
            None => return Ok(json!({"nothing": "no error message within the answer timeout"})),
        }
    }
}

/// Sends `req` and reads its answer; when none comes, a stand-in saying so.
async fn ask(s: &mut Session, req: Value) -> Result<Value, Abort> {
    let id = req["id"].as_str().unwrap_or_default().to_owned();
    s.send(&req).await?;
    match s.answer(&id).await {
        Ok(r) => Ok(r.msg),
        Err(e) if s.is_closed() => Err(e),
        Err(e) => Ok(json!({"nothing": e.0})),
    }
}

fn is_error(m: &Value, code: &str) -> bool {
    m["type"] == "error" && m["code"] == code
}

/// Checks the shape of an error and notes whether it is retryable.
fn shape(cx: &mut Cx, e: &Value) {
    if e["type"] != "error" {
        return;
    }
    let code_ok = e
        .get("code")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty());
    let retry_ok = e.get("retryable").is_none_or(Value::is_boolean);
    cx.check(
        "core.error.shape",
        code_ok && retry_ok,
        "a non-empty code, a boolean retryable",
        show(e),
    );
    cx.check(
        "core.error.not-retryable",
        e.get("retryable") != Some(&json!(true)),
        "retryable: false",
        show(e),
    );
}

async fn errors(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;

    s.send_raw("{\"type\":\"ping\"").await?;
    let e = next_error(&mut s).await?;
    cx.check(
        "core.error.parse-error",
        e["code"] == "parse_error",
        "code parse_error",
        show(&e),
    );
    cx.check(
        "core.error.parse-error-req-id",
        e["type"] == "error" && e["req_id"] == "",
        "req_id \"\"",
        show(&e),
    );
    shape(cx, &e);

    s.send_raw("[1,2,3]").await?;
    let e = next_error(&mut s).await?;
    cx.check(
        "core.error.not-object",
        e["code"] == "invalid_message",
        "code invalid_message",
        show(&e),
    );
    shape(cx, &e);

    s.send_raw("{\"id\":\"cf-errors-notype\"}").await?;
    let e = next_error(&mut s).await?;
    cx.check(
        "core.error.no-type",
        e["code"] == "invalid_message",
        "code invalid_message",
        show(&e),
    );

    // Read as the next error, not by req_id: whether it names the request is checked.
    let unknown = s.req("conformance/nothing/req", json!({}));
    s.send(&unknown).await?;
    let e = next_error(&mut s).await?;
    cx.check(
        "core.error.unknown-type",
        e["code"] == "invalid_message",
        "an error, code invalid_message",
        show(&e),
    );
    cx.check(
        "core.error.unknown-type-req-id",
        e["type"] == "error" && e["req_id"] == unknown["id"],
        format!("req_id {}", unknown["id"]),
        show(&e),
    );
    shape(cx, &e);

    let v2 = s.req("ping", json!({"version": "2.0"}));
    let r = ask(&mut s, v2).await?;
    cx.check(
        "core.error.version-major",
        is_error(&r, "version_mismatch"),
        "an error, code version_mismatch",
        show(&r),
    );
    shape(cx, &r);

    let v11 = s.req("ping", json!({"version": "1.1"}));
    let r = ask(&mut s, v11).await?;
    cx.check(
        "core.error.version-minor",
        r["type"] == "pong",
        "pong",
        show(&r),
    );

    let alias = s.req("ping", json!({"a2e": "1.0"}));
    let r = ask(&mut s, alias).await?;
    cx.check(
        "core.error.a2e-alias",
        r["type"] == "pong",
        "pong",
        show(&r),
    );

    let wrong = s.req("tool/call/req", json!({"tool_name": 7, "arguments": {}}));
    let r = ask(&mut s, wrong).await?;
    cx.check(
        "core.error.wrong-shape",
        is_error(&r, "schema_violation"),
        "an error, code schema_violation",
        show(&r),
    );
    shape(cx, &r);

    // A response, as if the agent were a host: it must not run anything.
    let resp = s.req(
        "tool/list/resp",
        json!({"req_id": "cf-nothing", "tools": []}),
    );
    let id = resp["id"].as_str().unwrap_or_default().to_owned();
    s.send(&resp).await?;
    s.settle().await?;
    let answers = s.take_waiting(&id);
    let ok = answers.iter().all(|m| m["type"] == "error");
    cx.check(
        "core.error.agent-response",
        ok,
        "an error or nothing",
        format!("{answers:?}"),
    );

    let ping = s.req("ping", json!({}));
    let r = ask(&mut s, ping).await?;
    cx.check(
        "core.error.session-survives",
        r["type"] == "pong",
        "pong",
        show(&r),
    );
    Ok(())
}

//! `a2e runs waiting | approve | deny`: the calls that wait for a person's
//! decision, decided from any process that reaches the run journal.

use std::process::ExitCode;

use a2e_host::approvals::{DecideError, Pending, Verdict, decide, pending};
use a2e_host::config::Decider;
use a2e_journal::{Journal, RunId, now_ms};
use serde_json::{Map, Value, json};

use super::run::print_out;
use super::runs_view::age;

/// Exit code of a decision that could not be made, or a journal that fails.
const FAILED: u8 = 1;
/// Exit code of invalid input.
const INVALID: u8 = 2;

fn fail(code: u8, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("a2e: {message}");
    ExitCode::from(code)
}

/// Who decides from this command line: `operator:` and the user's login
/// name.
fn operator() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "unknown".into());
    format!("operator:{user}")
}

/// `a2e runs approve ID [--node N] [--args JSON]`.
pub async fn approve(
    journal: &dyn Journal,
    id: &str,
    node: Option<&str>,
    args: Option<&str>,
) -> ExitCode {
    let args: Option<Map<String, Value>> = match args.map(serde_json::from_str::<Value>) {
        None => None,
        Some(Ok(Value::Object(map))) => Some(map),
        Some(Ok(_)) => return fail(INVALID, DecideError::ArgsNotObject),
        Some(Err(e)) => return fail(INVALID, format!("--args is not JSON: {e}")),
    };
    let verdict = Verdict {
        approved: true,
        args,
        reason: String::new(),
        by: operator(),
        decider: Decider::Operator,
    };
    decided(journal, id, node, verdict).await
}

/// `a2e runs deny ID [--node N] --reason TEXT`.
pub async fn deny(journal: &dyn Journal, id: &str, node: Option<&str>, reason: &str) -> ExitCode {
    if reason.trim().is_empty() {
        return fail(INVALID, "--reason is empty: say why the call is denied");
    }
    let verdict = Verdict {
        approved: false,
        args: None,
        reason: reason.to_owned(),
        by: operator(),
        decider: Decider::Operator,
    };
    decided(journal, id, node, verdict).await
}

async fn decided(
    journal: &dyn Journal,
    id: &str,
    node: Option<&str>,
    verdict: Verdict,
) -> ExitCode {
    let run = match RunId::parse(id) {
        Ok(r) => r,
        Err(e) => return fail(INVALID, e),
    };
    match decide(journal, &run, node, verdict).await {
        Ok(done) => {
            let what = if done.decision.approved {
                "approved"
            } else {
                "denied"
            };
            print_out(&format!(
                "{what}: run {} node {} (by {})",
                done.run_id, done.node_id, done.decision.by
            ));
            ExitCode::SUCCESS
        }
        Err(e) => fail(FAILED, e),
    }
}

/// `a2e runs waiting [--json]`.
pub async fn waiting(journal: &dyn Journal, json_lines: bool) -> ExitCode {
    let list = match pending(journal).await {
        Ok(list) => list,
        Err(e) => return fail(FAILED, e),
    };
    if json_lines {
        for p in &list {
            print_out(&row_json(p).to_string());
        }
        return ExitCode::SUCCESS;
    }
    print_out("RUN  NODE  CALL  WAITED  DECIDES  ARGUMENTS");
    for p in &list {
        let (call, args, deciders, left) = match &p.waiting {
            Some(w) => (
                format!("{} {}", w.target, w.name),
                Value::Object(w.args.clone()).to_string(),
                w.deciders.join(","),
                w.deadline_ms.saturating_sub(now_ms()) / 1000,
            ),
            None => ("?".into(), "?".into(), "?".into(), 0),
        };
        print_out(&format!(
            "{}  {}  {call}  {} (ends in {left}s)  {deciders}  {args}",
            p.run_id,
            p.node_id,
            age(p.since_ms),
        ));
    }
    ExitCode::SUCCESS
}

/// One waiting call as JSON.
pub(crate) fn row_json(p: &Pending) -> Value {
    json!({
        "run_id": p.run_id.as_str(),
        "kind": p.kind.as_str(),
        "node_id": p.node_id,
        "attempt": p.attempt,
        "since_ms": p.since_ms,
        "waited_ms": now_ms().saturating_sub(p.since_ms),
        "waiting": p.waiting.as_ref().map(|w| serde_json::to_value(w).unwrap_or_default()),
    })
}

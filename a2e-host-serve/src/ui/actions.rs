//! The view's actions: approve or deny a call that waits for a decision,
//! cancel a run; and the list of what waits. Every `POST` passes
//! [`checked`]: the token, the same origin, the CSRF token of the page's
//! session.

use std::sync::Arc;

use a2e_host_approvals::{DecideError, Verdict, decide, pending};
use a2e_host_core::config::Decider;
use a2e_journal::{Journal, RunId, now_ms};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{SESSION_COOKIE, allowed, cookie, guarded, unauthorized};
use crate::transport::net::NetState;

/// The header that carries the page's CSRF token.
const CSRF_HEADER: &str = "x-csrf-token";

/// Who decides from the view.
const BY: &str = "ui";

fn answer(status: StatusCode, body: Value) -> Response {
    guarded((status, Json(body)).into_response())
}

fn failed(status: StatusCode, message: impl std::fmt::Display) -> Response {
    answer(status, json!({ "error": message.to_string() }))
}

/// The CSRF token of page session `session`.
fn token_of(state: &NetState, session: &str) -> String {
    let tag = ring::hmac::sign(&state.ui_key, session.as_bytes());
    tag.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `origin` names the listener the request came to (`Host`).
fn same_origin(headers: &HeaderMap) -> bool {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let (Some(origin), Some(host)) = (text(header::ORIGIN), text(header::HOST)) else {
        return false;
    };
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|rest| rest == host)
}

/// A `POST` of the view may act: the token (401), the same origin and the
/// CSRF token bound to the page's session (403).
fn checked(state: &NetState, headers: &HeaderMap) -> Result<(), Box<Response>> {
    if !allowed(state, headers) {
        return Err(Box::new(unauthorized()));
    }
    if !same_origin(headers) {
        return Err(Box::new(failed(
            StatusCode::FORBIDDEN,
            "refused: the request's Origin is not this listener",
        )));
    }
    let presented = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
    let expected = cookie(headers, SESSION_COOKIE).map(|session| token_of(state, session));
    match (presented, expected) {
        (Some(p), Some(e)) if subtle::ConstantTimeEq::ct_eq(p.as_bytes(), e.as_bytes()).into() => {
            Ok(())
        }
        _ => Err(Box::new(failed(
            StatusCode::FORBIDDEN,
            "refused: missing or wrong CSRF token for this page (reload the page)",
        ))),
    }
}

/// The host's journal, or why the view cannot act.
fn journal_of(state: &NetState) -> Result<&Arc<dyn Journal>, Box<Response>> {
    state.host.journal().ok_or_else(|| {
        Box::new(failed(
            StatusCode::NOT_FOUND,
            "this host keeps no runs ([journal] enabled = false, and no live view memory)",
        ))
    })
}

fn run_id(id: &str) -> Result<RunId, Box<Response>> {
    RunId::parse(id).map_err(|e| Box::new(failed(StatusCode::BAD_REQUEST, e)))
}

/// `GET /ui/api/csrf`: the CSRF token of the page's session.
pub(super) async fn csrf(State(state): State<Arc<NetState>>, headers: HeaderMap) -> Response {
    if !allowed(&state, &headers) {
        return unauthorized();
    }
    match cookie(&headers, SESSION_COOKIE) {
        Some(session) => answer(StatusCode::OK, json!({"csrf": token_of(&state, session)})),
        None => failed(StatusCode::FORBIDDEN, "no page session: open /ui first"),
    }
}

/// `GET /ui/api/waiting`: every call that waits for a decision, newest
/// first, with how long it has waited.
pub(super) async fn waiting(State(state): State<Arc<NetState>>, headers: HeaderMap) -> Response {
    if !allowed(&state, &headers) {
        return unauthorized();
    }
    let journal = match journal_of(&state) {
        Ok(j) => j,
        Err(resp) => return *resp,
    };
    match pending(&**journal).await {
        Ok(list) => {
            let now = now_ms();
            let items: Vec<Value> = list
                .iter()
                .map(|p| {
                    json!({
                        "run_id": p.run_id.as_str(), "kind": p.kind.as_str(),
                        "node_id": p.node_id, "attempt": p.attempt, "since_ms": p.since_ms,
                        "waited_ms": now.saturating_sub(p.since_ms), "waiting": p.waiting
                            .as_ref()
                            .map(|w| serde_json::to_value(w).unwrap_or_default()),
                    })
                })
                .collect();
            answer(StatusCode::OK, json!({ "waiting": items }))
        }
        Err(e) => failed(StatusCode::SERVICE_UNAVAILABLE, format!("run journal: {e}")),
    }
}

/// The body of an approval.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Approve {
    /// The node whose call (needed when several wait).
    #[serde(default)]
    node: Option<String>,
    /// Arguments to run with instead.
    #[serde(default)]
    args: Option<Map<String, Value>>,
}

/// The body of a denial.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Deny {
    /// The node whose call (needed when several wait).
    #[serde(default)]
    node: Option<String>,
    /// Why.
    reason: String,
}

/// `POST /ui/api/runs/{id}/approve`.
pub(super) async fn approve(
    State(state): State<Arc<NetState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Option<Json<Approve>>,
) -> Response {
    let Json(body) = body.unwrap_or_default();
    let verdict = Verdict {
        approved: true,
        args: body.args,
        reason: String::new(),
        by: BY.into(),
        decider: Decider::Operator,
    };
    decided(&state, &headers, &id, body.node.as_deref(), verdict).await
}

/// `POST /ui/api/runs/{id}/deny`.
pub(super) async fn deny(
    State(state): State<Arc<NetState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Option<Json<Deny>>,
) -> Response {
    let Some(Json(body)) = body else {
        return failed(
            StatusCode::BAD_REQUEST,
            "a denial needs a JSON body with its `reason`",
        );
    };
    if body.reason.trim().is_empty() {
        return failed(StatusCode::BAD_REQUEST, "`reason` is empty: say why");
    }
    let verdict = Verdict {
        approved: false,
        args: None,
        reason: body.reason,
        by: BY.into(),
        decider: Decider::Operator,
    };
    decided(&state, &headers, &id, body.node.as_deref(), verdict).await
}

async fn decided(
    state: &NetState,
    headers: &HeaderMap,
    id: &str,
    node: Option<&str>,
    verdict: Verdict,
) -> Response {
    if let Err(resp) = checked(state, headers) {
        return *resp;
    }
    let journal = match journal_of(state) {
        Ok(j) => j,
        Err(resp) => return *resp,
    };
    let run = match run_id(id) {
        Ok(r) => r,
        Err(resp) => return *resp,
    };
    match decide(&**journal, &run, node, verdict).await {
        Ok(done) => answer(
            StatusCode::OK,
            json!({"run_id": done.run_id.as_str(), "node_id": done.node_id,
                   "decision": done.decision}),
        ),
        Err(e) => {
            let status = match &e {
                DecideError::UnknownRun(_) => StatusCode::NOT_FOUND,
                DecideError::Journal(_) => StatusCode::SERVICE_UNAVAILABLE,
                DecideError::NotAllowed { .. } => StatusCode::FORBIDDEN,
                _ => StatusCode::CONFLICT,
            };
            failed(status, e)
        }
    }
}

/// The body of a fork.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ForkBody {
    /// The node to run again from.
    from: String,
    /// Keys merged into its `input`.
    #[serde(default)]
    input: Option<Map<String, Value>>,
}

/// `POST /ui/api/runs/{id}/fork`: journals the fork and starts it on the
/// host (it runs as long as the listener serves); answers with the new
/// run's id at once.
pub(super) async fn fork(
    State(state): State<Arc<NetState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Option<Json<ForkBody>>,
) -> Response {
    if let Err(resp) = checked(&state, &headers) {
        return *resp;
    }
    let Some(Json(body)) = body else {
        return failed(
            StatusCode::BAD_REQUEST,
            "a fork needs a JSON body naming the node it runs `from`",
        );
    };
    let parent = match run_id(&id) {
        Ok(r) => r,
        Err(resp) => return *resp,
    };
    let fork = a2e_host_runs::fork::Fork {
        parent,
        from: body.from,
        input: body.input,
        req_id: format!("fork-{}", now_ms()),
        streaming: false,
        agent: None,
    };
    let prepared = match a2e_host_runs::fork::prepare(&state.host, fork).await {
        Ok(p) => p,
        Err(e) => {
            let status = match &e {
                a2e_host_runs::fork::ForkError::UnknownRun(_) => StatusCode::NOT_FOUND,
                a2e_host_runs::fork::ForkError::NoJournal
                | a2e_host_runs::fork::ForkError::Journal(_) => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::BAD_REQUEST,
            };
            return failed(status, e);
        }
    };
    let run = prepared.run_id.to_string();
    let copied = prepared.copied.len();
    let host = state.host.clone();
    let stop = state.shutdown.child_token();
    state.tasks.spawn(async move {
        let options = a2e_host_core::host::CallOptions::new().cancel(&stop);
        let _ = a2e_host_runs::fork::run_fork(&host, prepared, options).await;
    });
    answer(StatusCode::OK, json!({"run_id": run, "copied": copied}))
}

/// `POST /ui/api/runs/{id}/cancel`.
pub(super) async fn cancel(
    State(state): State<Arc<NetState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    if let Err(resp) = checked(&state, &headers) {
        return *resp;
    }
    let journal = match journal_of(&state) {
        Ok(j) => j,
        Err(resp) => return *resp,
    };
    let run = match run_id(&id) {
        Ok(r) => r,
        Err(resp) => return *resp,
    };
    match journal.request_cancel(&run).await {
        Ok(true) => answer(
            StatusCode::OK,
            json!({"run_id": run.as_str(), "cancel": true}),
        ),
        Ok(false) => failed(
            StatusCode::CONFLICT,
            format!("run `{run}` is unknown or has finished"),
        ),
        Err(e) => failed(StatusCode::SERVICE_UNAVAILABLE, format!("run journal: {e}")),
    }
}

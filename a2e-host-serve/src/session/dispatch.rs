//! Routing one message: authorisation, the request's task, its answer, its audit line.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;

use a2e_proto::{
    A2ECapability, ChainRequest, ErrorCode, HandshakeResponse, Message, Pong, ProcSpawnResponse,
    Response, SkillCallRequest, SkillCallResponse, SkillDiscoverResponse, ToolCallResponse,
    ToolListResponse,
};
use serde_json::Value;

use super::Session;
use a2e_host_core::audit::AuditRecord;
use a2e_host_core::error::HostError;
use a2e_host_core::host::{CallOptions, Host};
use a2e_host_core::outbound::EventStream;

/// What a finished request reports to the audit log.
struct Audited {
    name: String,
    success: bool,
    error_code: String,
    arguments: Value,
}

impl Audited {
    fn ok(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            success: true,
            error_code: String::new(),
            arguments: Value::Null,
        }
    }

    fn outcome(mut self, success: bool, code: Option<&ErrorCode>) -> Self {
        self.success = success;
        self.error_code = code.map(|c| c.to_string()).unwrap_or_default();
        self
    }
}

fn needed_capability(msg: &Message) -> Option<A2ECapability> {
    Some(match msg {
        Message::ToolListRequest(_) | Message::ToolCallRequest(_) => A2ECapability::TOOLS,
        Message::SkillDiscoverRequest(_) | Message::SkillCallRequest(_) => A2ECapability::SKILL,
        Message::ChainRequest(_)
        | Message::ChainAttach(_)
        | Message::ChainFork(_)
        | Message::DagRequest(_) => A2ECapability::CHAINS,
        Message::ProcSpawnRequest(_)
        | Message::ProcWriteRequest(_)
        | Message::ProcKillRequest(_)
        | Message::ProcStatusRequest(_) => A2ECapability::PROC,
        _ => return None,
    })
}

pub(super) async fn handle(session: &Arc<Session>, msg: Message) {
    match msg {
        Message::HandshakeRequest(req) => handshake(session, req).await,
        Message::Ping(ping) => {
            let mut pong = Pong::for_request(&ping);
            pong.uptime_seconds = session.host.uptime_seconds();
            session.send(pong).await;
        }
        Message::Pong(_) => {}
        Message::ErrorMessage(e) => {
            tracing::warn!(session = %session.id, code = %e.code, "agent reported: {}", e.message);
        }
        Message::Shutdown(req) => {
            let session = session.clone();
            // Drain in the background so the reader can notice the transport closing.
            tokio::spawn(async move {
                session.close(Duration::from_secs(req.timeout)).await;
            });
        }
        Message::Unknown(map) => {
            let id = map.get("id").and_then(Value::as_str).unwrap_or_default();
            let ty = map.get("type").and_then(Value::as_str).unwrap_or_default();
            let refusal = HostError::InvalidMessage(format!("unknown message type `{ty}`"));
            session.send(refusal.to_error_message(id)).await;
        }
        request => {
            let id = request.id().to_owned();
            let (handshaken, accepted, closing) = match session.state.lock() {
                Ok(s) => (
                    s.handshaken,
                    needed_capability(&request).map(|c| s.accepted.contains(&c)),
                    s.shutting_down,
                ),
                Err(_) => (false, None, true),
            };
            if !handshaken {
                let refusal = HostError::unauthorized("send handshake/req first");
                session.send(refusal.to_error_message(&id)).await;
                return;
            }
            let Some(accepted) = accepted else {
                let refusal = HostError::InvalidMessage(format!(
                    "`{}` is not a request an agent may send to a host",
                    request.type_str()
                ));
                session.send(refusal.to_error_message(&id)).await;
                return;
            };
            if !accepted {
                let cap = needed_capability(&request)
                    .map(|c| c.to_string())
                    .unwrap_or_default();
                let refusal = HostError::CapabilityNotAccepted(cap);
                session.send(refusal.to_error_message(&id)).await;
                return;
            }
            if closing {
                let refusal = HostError::Unavailable("the session is shutting down".into());
                session.send(refusal.to_error_message(&id)).await;
                return;
            }
            spawn_request(session, request).await;
        }
    }
}

async fn handshake(session: &Arc<Session>, req: a2e_proto::HandshakeRequest) {
    let host = &session.host;
    let mut resp = HandshakeResponse::for_request(&req);
    resp.session_id = session.id.clone();
    resp.max_parallel = host.config().max_parallel;
    let expected = &host.config().auth_token;
    if !expected.is_empty() && !super::token_matches(expected, &req.auth_token) {
        resp.ok = false;
        resp.reason = "auth_failed".into();
        tracing::warn!(session = %session.id, agent = %req.agent_id, "handshake refused: auth_failed");
        session.send(resp).await;
        return;
    }
    let caps = super::auth::negotiate(host, &req.agent_caps);
    if let Ok(mut s) = session.state.lock() {
        s.handshaken = true;
        s.agent_id = req.agent_id.clone();
        s.accepted = caps
            .iter()
            .filter(|c| c.enabled)
            .map(|c| c.capability.clone())
            .collect();
    }
    host.register_session(&session.id, &req.agent_id);
    resp.accepted_caps = caps;
    tracing::info!(session = %session.id, agent = %req.agent_id, "session opened");
    session.send(resp).await;
}

/// Runs a request once a slot is free. The reader waits only when too many
/// requests are already queued. The request is polled once right here: one
/// that finishes without waiting (an echo, a listing) costs no task and no
/// hand-off between threads; one that waits goes on to a task of its own.
///
/// That first poll gets a waker that does nothing. A request that waits
/// is polled again by its own task at once, where it registers that task's
/// waker; the reader's waker, given to it here, would stay behind in what
/// it waits on and wake the reader's task for nothing (a chain waiting for
/// its answer to be written woke the session's task while it ran, and tokio
/// answered that as a yield by waking an idle worker).
async fn spawn_request(session: &Arc<Session>, request: Message) {
    let Ok(queued) = session.queue.clone().acquire_owned().await else {
        return;
    };
    let mut work = Box::pin(request_task(session.clone(), request, queued));
    let mut first = std::task::Context::from_waker(futures::task::noop_waker_ref());
    if work.as_mut().poll(&mut first).is_pending() {
        session.tasks.spawn(work);
    }
}

/// A request from its slot to its audit record.
async fn request_task(
    session: Arc<Session>,
    request: Message,
    queued: tokio::sync::OwnedSemaphorePermit,
) {
    let _queued = queued;
    let permit = match session.slots.clone().try_acquire_owned() {
        Ok(permit) => Ok(permit),
        Err(_) => tokio::select! {
            p = session.slots.clone().acquire_owned() => p,
            _ = session.cancel.cancelled() => return,
        },
    };
    let Ok(_permit) = permit else { return };
    let started = std::time::Instant::now();
    let msg_type = request.type_str().to_owned();
    let req_id = request.id().to_owned();
    let correlation_id = match &request {
        Message::ToolCallRequest(r) => r.correlation_id.clone(),
        Message::SkillCallRequest(r) => r.correlation_id.clone(),
        Message::ChainRequest(r) => r.correlation_id.clone(),
        _ => String::new(),
    };
    let telemetry = session.host.telemetry();
    let op = request_span(&session, &request, &msg_type, &req_id);
    let work = run_request(&session, request);
    let audited = if op.is_recording() {
        tracing::Instrument::instrument(
            guarded(&session, &req_id, &msg_type, work),
            op.span().clone(),
        )
        .await
    } else {
        guarded(&session, &req_id, &msg_type, work).await
    };
    let outcome = if audited.success {
        a2e_telemetry::metrics::OK
    } else {
        audited.error_code.as_str()
    };
    if !audited.success {
        op.error(outcome, "");
    }
    telemetry.metrics().request(&msg_type, outcome);
    drop(op);
    let audit = session.host.audit();
    if !audit.is_on() {
        return;
    }
    let agent = session
        .state
        .lock()
        .map(|s| s.agent_id.clone())
        .unwrap_or_default();
    audit.record(&AuditRecord {
        ts: a2e_proto::now(),
        session: session.id.clone(),
        agent,
        msg_type,
        name: audited.name,
        duration_ms: started.elapsed().as_millis() as u64,
        success: audited.success,
        error_code: audited.error_code,
        arguments: audited.arguments,
        correlation_id,
    });
}

/// The span of one request (kind server), under the caller's trace when the
/// request carries a usable `traceparent` (an unusable one starts a new
/// trace, logged at debug level).
fn request_span(
    session: &Session,
    request: &Message,
    msg_type: &str,
    req_id: &str,
) -> a2e_telemetry::OpSpan {
    let telemetry = session.host.telemetry();
    if !telemetry.traces_enabled() {
        return a2e_telemetry::OpSpan::default();
    }
    let (parent, state) = match request {
        Message::ToolCallRequest(r) => (&r.traceparent, &r.tracestate),
        Message::SkillCallRequest(r) => (&r.traceparent, &r.tracestate),
        Message::ChainRequest(r) => (&r.traceparent, &r.tracestate),
        _ => (&String::new(), &String::new()),
    };
    let remote = if parent.is_empty() {
        None
    } else {
        let state = (!state.is_empty()).then_some(state.as_str());
        a2e_telemetry::TraceContext::parse(parent, state)
            .map_err(|e| tracing::debug!(session = %session.id, req_id, "traceparent ignored: {e}"))
            .ok()
    };
    let agent = session
        .state
        .lock()
        .map(|s| s.agent_id.clone())
        .unwrap_or_default();
    let mut builder = telemetry
        .request(a2e_telemetry::Protocol::A2e, msg_type)
        .session(&session.id)
        .request_id(req_id);
    if !agent.is_empty() {
        builder = builder.agent_id(&agent);
    }
    if let Some(remote) = &remote {
        builder = builder.parent(a2e_telemetry::Parent::Remote(remote));
    }
    builder.start()
}

/// The panic net: a panic anywhere in the work for a request still answers
/// it, once, with `runtime_error`, and is audited as a failure. Every arm of
/// `run_request` sends its answer last, so a panic means nothing was sent.
fn guarded<'a>(
    session: &'a Session,
    req_id: &'a str,
    msg_type: &'a str,
    work: impl Future<Output = Audited> + 'a,
) -> impl Future<Output = Audited> + 'a {
    // Built from combinators, not an `async fn`: the work is kept once (an
    // `async fn` would hold it as its argument and again inside the
    // unwind catcher, twice its size to move).
    AssertUnwindSafe(work)
        .catch_unwind()
        .then(move |outcome| async move {
            match outcome {
                Ok(audited) => audited,
                Err(panic) => {
                    let message = a2e_host_core::host::panic_message(panic.as_ref());
                    tracing::error!(session = %session.id, req_id = %req_id, r#type = %msg_type, "request panicked: {message}");
                    let error = HostError::Runtime(format!(
                        "internal error while handling `{msg_type}`: {message}"
                    ));
                    session.send(error.to_error_message(req_id)).await;
                    Audited::ok("").outcome(false, Some(&error.code()))
                }
            }
        })
}

async fn refuse(session: &Session, req_id: &str, error: &HostError) {
    session.send(error.to_error_message(req_id)).await;
}

/// Sends a response, or refuses the request with the error; audits under `name`.
async fn answer<R: Into<Message>>(
    session: &Session,
    req_id: &str,
    name: &str,
    result: Result<R, HostError>,
) -> Audited {
    let audited = Audited::ok(name);
    match result {
        Ok(resp) => {
            session.send(resp).await;
            audited
        }
        Err(e) => {
            refuse(session, req_id, &e).await;
            audited.outcome(false, Some(&e.code()))
        }
    }
}

/// Runs one request and answers it. The arms with large futures (listings,
/// skills, chains, procs) are boxed: a request's future is as large as its
/// largest arm, and a tool call's would be moved (copied) several times at
/// that size on its way to its task.
async fn run_request(session: &Arc<Session>, request: Message) -> Audited {
    let host = session.host.clone();
    let out = session.out.clone();
    let cancel = &session.cancel;
    match request {
        Message::ToolListRequest(req) => {
            Box::pin(async move {
                let mut resp = ToolListResponse::for_request(&req);
                // Tools that load on first use join the list now.
                let deferred_too = req.include_deferred && !req.query.trim().is_empty();
                host.registry().load_tools(deferred_too).await;
                resp.tools = host.list_tools(&req);
                session.send(resp).await;
                Audited::ok(req.query)
            })
            .await
        }
        Message::ToolCallRequest(req) => {
            let mut audited = Audited::ok(req.tool_name.clone());
            if host.audit().is_on() {
                audited.arguments = host.audit().arguments(&req.arguments);
            }
            let mut resp = ToolCallResponse::for_request(&req);
            match host
                .call_tool(
                    req,
                    CallOptions::new()
                        .session(&session.id)
                        .events(out)
                        .cancel(cancel),
                )
                .await
            {
                Ok(result) => {
                    let audited = audited.outcome(result.success, result.error_code.as_ref());
                    resp.data = result;
                    session.send(resp).await;
                    audited
                }
                Err(e) => {
                    refuse(session, &resp.req_id, &e).await;
                    audited.outcome(false, Some(&e.code()))
                }
            }
        }
        Message::SkillDiscoverRequest(req) => {
            Box::pin(async move {
                let mut resp = SkillDiscoverResponse::for_request(&req);
                host.load_tools_for_skills().await;
                resp.skills = host.discover_skills(&req);
                session.send(resp).await;
                Audited::ok("")
            })
            .await
        }
        Message::SkillCallRequest(req) => Box::pin(skill_request(session, host, req, out)).await,
        Message::ChainRequest(req) => Box::pin(chain_request(session, host, req, out)).await,
        Message::ProcSpawnRequest(req) => {
            Box::pin(async move {
                let audited = Audited::ok(req.cmd.first().cloned().unwrap_or_default());
                match host.procs().spawn(&session.id, &req, out).await {
                    Ok(resp) => {
                        let ok = resp.ok;
                        session.send(resp).await;
                        audited.outcome(ok, None)
                    }
                    Err(e) if e.is_refusal() || matches!(e, HostError::Proc { .. }) => {
                        refuse(session, &req.id, &e).await;
                        audited.outcome(false, Some(&e.code()))
                    }
                    Err(e) => {
                        let mut resp = ProcSpawnResponse::for_request(&req);
                        resp.error = e.to_string();
                        session.send(resp).await;
                        audited.outcome(false, Some(&e.code()))
                    }
                }
            })
            .await
        }
        Message::ProcWriteRequest(req) => {
            Box::pin(async move {
                let result = host.procs().write(&session.id, &req).await;
                answer(session, &req.id, &req.proc_id, result).await
            })
            .await
        }
        Message::ProcKillRequest(req) => {
            Box::pin(async move {
                let result = host.procs().kill(&session.id, &req).await;
                answer(session, &req.id, &req.proc_id, result).await
            })
            .await
        }
        Message::ProcStatusRequest(req) => {
            let result = host.procs().status(&session.id, &req);
            answer(session, &req.id, &req.proc_id, result).await
        }
        #[cfg(feature = "journal")]
        Message::ChainAttach(req) => Box::pin(attach::attach_request(session, req)).await,
        #[cfg(feature = "journal")]
        Message::ChainFork(req) => Box::pin(fork::fork_request(session, req, out)).await,
        #[cfg(not(feature = "journal"))]
        Message::ChainFork(req) => {
            not_built(
                session,
                &req.id,
                "`chain/fork` needs the run journal (feature `journal`)",
            )
            .await
        }
        #[cfg(all(feature = "acmp", feature = "journal"))]
        Message::DagRequest(req) => Box::pin(dag::dag_request(session, req)).await,
        #[cfg(not(feature = "journal"))]
        Message::ChainAttach(req) => {
            not_built(
                session,
                &req.id,
                "`chain/attach` needs the run journal (feature `journal`)",
            )
            .await
        }
        #[cfg(not(all(feature = "acmp", feature = "journal")))]
        Message::DagRequest(req) => {
            let needs =
                "`dag/req` needs ACMP DAGs and the run journal (features `acmp`, `journal`)";
            not_built(session, &req.id, needs).await
        }
        other => {
            let refusal =
                HostError::InvalidMessage(format!("`{}` is not a request", other.type_str()));
            session.send(refusal.to_error_message(other.id())).await;
            Audited::ok("").outcome(false, Some(&refusal.code()))
        }
    }
}

/// Refuses a wire extension whose features this host is built without: a
/// host built with them would serve it (`unavailable`, as a host that
/// journals no runs answers `chain/attach`).
#[cfg(not(all(feature = "acmp", feature = "journal")))]
async fn not_built(session: &Session, req_id: &str, needs: &str) -> Audited {
    let refusal = HostError::Unavailable(format!("{needs}, which this host is built without"));
    refuse(session, req_id, &refusal).await;
    Audited::ok("").outcome(false, Some(&refusal.code()))
}

/// `chain/req`: validates, runs, answers, then frees the plan.
async fn chain_request(
    session: &Arc<Session>,
    host: Arc<Host>,
    req: ChainRequest,
    out: EventStream,
) -> Audited {
    let cancel = &session.cancel;
    let audited = Audited::ok(req.chain_id.clone());
    match a2e_host_core::chains::plan(&host, &req) {
        Ok(plan) => {
            let options = CallOptions::new()
                .session(&session.id)
                .events(out)
                .cancel(cancel);
            #[cfg(feature = "journal")]
            let resp = {
                let agent = session
                    .state
                    .lock()
                    .map(|s| s.agent_id.clone())
                    .unwrap_or_default();
                a2e_host_runs::run_plan(&host, &plan, options, &agent).await
            };
            #[cfg(not(feature = "journal"))]
            let resp = a2e_host_core::chains::run_plan(&host, &plan, options).await;
            let code = resp
                .error
                .as_ref()
                .and_then(|e| e.get("code"))
                .and_then(Value::as_str)
                .map(ErrorCode::new);
            let audited = audited.outcome(resp.success, code.as_ref());
            session.send(resp).await;
            // The answer is written before this task frees the plan and the
            // request (a large chain's nodes take a while): it waits for the
            // writer rather than yield (see `Mark`).
            session.written().await;
            drop(plan);
            audited
        }
        Err(e) => {
            refuse(session, &req.id, &e).await;
            audited.outcome(false, Some(&e.code()))
        }
    }
}

/// `skill/call/req`.
async fn skill_request(
    session: &Arc<Session>,
    host: Arc<Host>,
    req: SkillCallRequest,
    out: EventStream,
) -> Audited {
    let cancel = &session.cancel;
    let mut audited = Audited::ok(req.name.clone());
    if host.audit().is_on() {
        audited.arguments = host.audit().arguments(&req.arguments);
    }
    let mut resp = SkillCallResponse::for_request(&req);
    resp.name = req.name.clone();
    match host
        .call_skill(
            req,
            CallOptions::new()
                .session(&session.id)
                .events(out)
                .cancel(cancel),
        )
        .await
    {
        Ok(result) => {
            let audited = audited.outcome(result.success, result.error_code.as_ref());
            resp.data = Some(result);
            session.send(resp).await;
            audited
        }
        Err(e) => {
            refuse(session, &resp.req_id, &e).await;
            audited.outcome(false, Some(&e.code()))
        }
    }
}

#[cfg(feature = "journal")]
mod attach;
#[cfg(all(feature = "acmp", feature = "journal"))]
mod dag;
#[cfg(feature = "journal")]
mod fork;

#[cfg(test)]
mod tests;

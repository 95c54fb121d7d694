//! The operations, whichever binding called them: a typed request in, a
//! JSON answer or a stream of events out.

use std::sync::Arc;
use std::time::Duration;

use a2a_proto::{A2aError, A2aRequest, ErrorKind, SendMessageResponse, StreamResponse, Validate};
use a2e_journal::RunStatus;
use futures::StreamExt;
use futures::stream::BoxStream;
use serde::Serialize;
use serde_json::Value;

use crate::A2aAgent;

/// How long `CancelTask` waits for the task to end before it answers with
/// the task as it is then (cancelling).
const CANCEL_WAIT: Duration = Duration::from_secs(10);

/// What an operation answers.
pub(crate) enum Answer {
    /// One JSON result.
    Json(Value),
    /// Events, as they happen.
    Stream(BoxStream<'static, StreamResponse>),
}

fn json(value: &impl Serialize) -> Result<Answer, A2aError> {
    serde_json::to_value(value)
        .map(Answer::Json)
        .map_err(|e| A2aError::new(ErrorKind::Internal, format!("answer not encoded: {e}")))
}

/// Runs `request`, under a request span (kind server) whose parent is the
/// `traceparent` of `headers` when they carry a usable one: the work a task
/// does, to its end, joins the client's trace.
pub(crate) async fn run(
    agent: &Arc<A2aAgent>,
    request: A2aRequest,
    headers: &axum::http::HeaderMap,
) -> Result<Answer, A2aError> {
    let telemetry = agent.host.telemetry();
    if !telemetry.traces_enabled() {
        return operate(agent, request).await;
    }
    let remote = a2e_telemetry::TraceContext::from_headers(headers).and_then(|parsed| {
        parsed
            .map_err(|e| tracing::debug!("a2a: traceparent ignored: {e}"))
            .ok()
    });
    let mut builder = telemetry.request(a2e_telemetry::Protocol::A2a, request.operation().name());
    if let Some(remote) = &remote {
        builder = builder.parent(a2e_telemetry::Parent::Remote(remote));
    }
    let op = builder.start();
    tracing::Instrument::instrument(operate(agent, request), op.span().clone()).await
}

async fn operate(agent: &Arc<A2aAgent>, request: A2aRequest) -> Result<Answer, A2aError> {
    let violations = request.violations();
    if !violations.is_empty() {
        return Err(A2aError::invalid_params(violations));
    }
    let host = &agent.host;
    match request {
        A2aRequest::SendMessage(req) => {
            let history = req.configuration.as_ref().and_then(|c| c.history_length);
            let immediately = req
                .configuration
                .as_ref()
                .is_some_and(|c| c.return_immediately);
            let started = crate::send::start(agent, &req).await?;
            if immediately {
                let task = crate::tasks::cut_history(started.task, history);
                return json(&SendMessageResponse::Task(task));
            }
            // Until the task ends, or waits for input: its task then, or
            // the message its skill answered with.
            let id = started.task.id.clone();
            let mut events = std::pin::pin!(crate::stream::started(agent.clone(), started));
            let mut last = None;
            while let Some(event) = events.next().await {
                last = Some(event);
            }
            if let Some(StreamResponse::Message(message)) = last {
                return json(&SendMessageResponse::Message(message));
            }
            let task = crate::tasks::get(host, &id, history).await?;
            json(&SendMessageResponse::Task(task))
        }
        A2aRequest::SendStreamingMessage(req) => {
            let started = crate::send::start(agent, &req).await?;
            Ok(Answer::Stream(
                crate::stream::started(agent.clone(), started).boxed(),
            ))
        }
        A2aRequest::GetTask(req) => {
            json(&crate::tasks::get(host, &req.id, req.history_length).await?)
        }
        A2aRequest::ListTasks(req) => json(&crate::tasks::list(host, &req).await?),
        A2aRequest::CancelTask(req) => json(&cancel(agent, &req.id).await?),
        A2aRequest::SubscribeToTask(req) => Ok(Answer::Stream(
            crate::stream::subscribe(agent.clone(), req.id)
                .await?
                .boxed(),
        )),
        A2aRequest::CreateTaskPushNotificationConfig(config) => {
            json(&crate::push::create(agent, config).await?)
        }
        A2aRequest::GetTaskPushNotificationConfig(req) => {
            json(&crate::push::get(host, &req.task_id, &req.id).await?)
        }
        A2aRequest::ListTaskPushNotificationConfigs(req) => {
            json(&crate::push::list(host, &req).await?)
        }
        A2aRequest::DeleteTaskPushNotificationConfig(req) => {
            crate::push::delete(host, &req.task_id, &req.id).await?;
            Ok(Answer::Json(serde_json::json!({})))
        }
        A2aRequest::GetExtendedAgentCard(_) => Err(A2aError::new(
            ErrorKind::ExtendedAgentCardNotConfigured,
            "this agent has no extended card: its public card says all",
        )),
    }
}

/// `CancelTask`: a cancel journaled for a task that has not ended (and the
/// task fired at once when it runs here), then the task once it ended (or
/// after [`CANCEL_WAIT`], as it is). A task that ended is not cancelable.
async fn cancel(agent: &Arc<A2aAgent>, id: &str) -> Result<a2a_proto::Task, A2aError> {
    let host = &agent.host;
    let state = crate::tasks::find(host, id).await?;
    if state.summary.status != RunStatus::Running {
        return Err(A2aError::new(
            ErrorKind::TaskNotCancelable,
            format!("task `{id}` has ended: it cannot be canceled"),
        ));
    }
    let running = agent.live.get(id);
    if let Some(running) = &running {
        running.cancel.cancel();
    }
    if let Some(journal) = host.journal() {
        journal
            .request_cancel(&state.summary.run_id)
            .await
            .map_err(|e| A2aError::new(ErrorKind::Internal, format!("run journal: {e}")))?;
    }
    let ended = async {
        match &running {
            Some(running) => running.done.cancelled().await,
            None => loop {
                match crate::tasks::find(host, id).await {
                    Ok(state) if state.summary.status != RunStatus::Running => break,
                    _ => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            },
        }
    };
    let _ = tokio::time::timeout(CANCEL_WAIT, ended).await;
    crate::tasks::get(host, id, None).await
}

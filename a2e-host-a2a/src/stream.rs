//! A task's events as a stream: its state first, then each event as it
//! happens, to its end (a status of a final state). A task running on
//! another host (or one whose events a slow reader missed) is followed in
//! the journal to its end.

use std::sync::Arc;
use std::time::Duration;

use a2a_proto::{A2aError, ErrorKind, StreamResponse, TaskStatusUpdateEvent};
use futures::Stream;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::A2aAgent;
use crate::send::Started;

/// How often a task running elsewhere is read from the journal.
const FOLLOW_EVERY: Duration = Duration::from_millis(500);

struct Follow {
    agent: Arc<A2aAgent>,
    id: String,
    first: Option<StreamResponse>,
    events: Option<broadcast::Receiver<StreamResponse>>,
    ended: bool,
}

/// Whether `event` is a task's last: a status in a final state.
fn is_final(event: &StreamResponse) -> bool {
    match event {
        StreamResponse::StatusUpdate(update) => update.status.state.is_terminal(),
        StreamResponse::Task(task) => task.status.state.is_terminal(),
        _ => false,
    }
}

async fn next(mut follow: Follow) -> Option<(StreamResponse, Follow)> {
    if let Some(first) = follow.first.take() {
        follow.ended = is_final(&first);
        return Some((first, follow));
    }
    if follow.ended {
        return None;
    }
    if let Some(events) = follow.events.as_mut() {
        loop {
            match events.recv().await {
                Ok(event) => {
                    follow.ended = is_final(&event);
                    return Some((event, follow));
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => break,
            }
        }
        follow.events = None;
    }
    loop {
        match crate::tasks::get(&follow.agent.host, &follow.id, Some(0)).await {
            Ok(task) if task.status.state.is_terminal() => {
                follow.ended = true;
                let update = TaskStatusUpdateEvent {
                    task_id: task.id,
                    context_id: task.context_id,
                    status: task.status,
                    metadata: None,
                };
                return Some((StreamResponse::StatusUpdate(update), follow));
            }
            Ok(_) => tokio::time::sleep(FOLLOW_EVERY).await,
            Err(e) => {
                tracing::warn!(task = %follow.id, "a2a: a followed task is unreadable: {e}");
                return None;
            }
        }
    }
}

/// The stream of a task that just started here.
pub(crate) fn started(
    agent: Arc<A2aAgent>,
    started: Started,
) -> impl Stream<Item = StreamResponse> + Send {
    let follow = Follow {
        agent,
        id: started.task.id.clone(),
        first: Some(StreamResponse::Task(started.task)),
        events: Some(started.events),
        ended: false,
    };
    futures::stream::unfold(follow, next)
}

/// `SubscribeToTask`: the stream of task `id`, which has not ended.
pub(crate) async fn subscribe(
    agent: Arc<A2aAgent>,
    id: String,
) -> Result<impl Stream<Item = StreamResponse> + Send, A2aError> {
    // Subscribed before the task is read: nothing between the two is lost.
    let events = agent
        .live
        .get(&id)
        .map(|running| running.events.subscribe());
    let task = crate::tasks::get(&agent.host, &id, None).await?;
    if task.status.state.is_terminal() {
        return Err(A2aError::new(
            ErrorKind::UnsupportedOperation,
            format!("task `{id}` has ended: there is nothing to subscribe to"),
        ));
    }
    let follow = Follow {
        agent,
        id,
        first: Some(StreamResponse::Task(task)),
        events,
        ended: false,
    };
    Ok(futures::stream::unfold(follow, next))
}

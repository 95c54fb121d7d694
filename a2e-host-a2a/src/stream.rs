//! A task's events as a stream: its state first, then each event as it
//! happens, to its end (a status of a final state; for the stream of a
//! message, of an interrupted state too: the task waits for input). A task running on
//! another host (or one whose events a slow reader missed) is followed in
//! the journal to its end.

use std::sync::Arc;
use std::time::Duration;

use a2a_proto::{A2aError, ErrorKind, StreamResponse, TaskState, TaskStatusUpdateEvent};
use futures::Stream;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::A2aAgent;
use crate::send::Started;

/// How often a task running elsewhere is read from the journal.
const FOLLOW_EVERY: Duration = Duration::from_millis(500);

struct Follow {
    agent: Arc<A2aAgent>,
    id: String,
    first: Option<StreamResponse>,
    events: Option<broadcast::Receiver<StreamResponse>>,
    /// Fires once the task's end is journaled (a task running here).
    done: Option<CancellationToken>,
    /// The stream of a message ends when its task waits for input too (the
    /// client answers with its next message); a subscriber's goes on.
    until_interrupted: bool,
    ended: bool,
}

impl Follow {
    /// Whether `state` is the last this stream tells.
    fn ends_at(&self, state: TaskState) -> bool {
        state.is_terminal() || (self.until_interrupted && state.is_interrupted())
    }

    /// Whether `event` is the last this stream tells.
    fn is_last(&self, event: &StreamResponse) -> bool {
        match event {
            StreamResponse::StatusUpdate(update) => self.ends_at(update.status.state),
            StreamResponse::Task(task) => self.ends_at(task.status.state),
            // A skill's direct answer ends its task.
            StreamResponse::Message(_) => true,
            StreamResponse::ArtifactUpdate(_) => false,
        }
    }
}

async fn next(mut follow: Follow) -> Option<(StreamResponse, Follow)> {
    if let Some(first) = follow.first.take() {
        follow.ended = follow.is_last(&first);
        return Some((first, follow));
    }
    if follow.ended {
        return None;
    }
    if let Some(events) = follow.events.as_mut() {
        let done = follow.done.clone().unwrap_or_default();
        loop {
            // Events sent before the end come first; once none is left and
            // the end is journaled, the journal tells it.
            let received = tokio::select! {
                biased;
                received = events.recv() => received,
                () = done.cancelled(), if follow.done.is_some() => Err(RecvError::Closed),
            };
            match received {
                Ok(event) => {
                    follow.ended = follow.is_last(&event);
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
            Ok(task) if follow.ends_at(task.status.state) => {
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
        events: started.events,
        done: started.done,
        until_interrupted: true,
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
    let running = agent.live.get(&id);
    let events = running.as_ref().map(|r| r.events.subscribe());
    let done = running.map(|r| r.done);
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
        done,
        until_interrupted: false,
        ended: false,
    };
    Ok(futures::stream::unfold(follow, next))
}

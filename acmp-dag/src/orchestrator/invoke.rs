//! Polling an invocation: catches panics, enforces the deadline, never fails to complete.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::time::Sleep;

use crate::orchestrator::msg::Msg;
use crate::{AcmpError, InvokeResult, TaskError};

fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// A provider's future.
pub(crate) type InvokeFuture = BoxFuture<'static, Result<InvokeResult, AcmpError>>;

/// Polls a provider's future once. A panic, in `invoke` itself or while polling its future,
/// becomes [`TaskError::Panicked`].
pub(crate) fn poll_guarded(
    future: &mut InvokeFuture,
    cx: &mut Context<'_>,
) -> Poll<Result<InvokeResult, TaskError>> {
    match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
        Ok(Poll::Ready(result)) => Poll::Ready(result.map_err(TaskError::Provider)),
        Ok(Poll::Pending) => Poll::Pending,
        Err(panic) => {
            let message = panic_message(&*panic);
            Poll::Ready(Err(TaskError::Panicked { message }))
        }
    }
}

/// The future of task `idx`'s provider after it did not answer on its first poll (by the
/// run loop), resolving to `(idx, result)`.
///
/// The deadline timer starts then: when it passes, [`Msg::TimedOut`] goes to the loop at
/// once (which fails the task and fires its token); the future still completes when the
/// provider returns.
pub(crate) struct Invoke {
    idx: u32,
    future: InvokeFuture,
    deadline: Option<Deadline>,
}

struct Deadline {
    sleep: Pin<Box<Sleep>>,
    tx: mpsc::UnboundedSender<Msg>,
    timeout_ms: u64,
}

impl Invoke {
    /// Must be called within a tokio runtime with the time driver when `timeout` is set.
    pub(crate) fn new(
        future: InvokeFuture,
        idx: u32,
        timeout: Option<Duration>,
        tx: &mpsc::UnboundedSender<Msg>,
    ) -> Self {
        let deadline = timeout.map(|limit| Deadline {
            sleep: Box::pin(tokio::time::sleep(limit)),
            tx: tx.clone(),
            timeout_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
        });
        Self {
            idx,
            future,
            deadline,
        }
    }
}

impl Future for Invoke {
    type Output = (u32, Result<InvokeResult, TaskError>);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Poll::Ready(result) = poll_guarded(&mut this.future, cx) {
            return Poll::Ready((this.idx, result));
        }
        if let Some(deadline) = &mut this.deadline
            && deadline.sleep.as_mut().poll(cx).is_ready()
        {
            // The loop fails the task, which fires its token.
            let _ = deadline.tx.send(Msg::TimedOut {
                idx: this.idx,
                timeout_ms: deadline.timeout_ms,
            });
            this.deadline = None;
        }
        Poll::Pending
    }
}

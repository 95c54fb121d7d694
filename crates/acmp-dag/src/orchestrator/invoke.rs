//! One invocation as a future polled by the run's loop: catches panics, enforces the
//! deadline, never fails to complete.

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
use crate::{AcmpError, Invocation, InvokeResult, ProviderRef, TaskError};

fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}

/// The provider's future for task `idx`, resolving to `(idx, result)`.
///
/// A panic, in `invoke` itself or while polling its future, becomes
/// [`TaskError::Panicked`]. When the deadline passes, [`Msg::TimedOut`] goes to the loop at
/// once (which fails the task and fires its token); the future still completes when the
/// provider returns. The deadline timer is only created if the provider does not answer on its first
/// poll.
pub(crate) struct Invoke {
    idx: u32,
    future: BoxFuture<'static, Result<InvokeResult, AcmpError>>,
    deadline: Deadline,
}

enum Deadline {
    None,
    Pending {
        limit: Duration,
        tx: mpsc::UnboundedSender<Msg>,
    },
    Armed {
        sleep: Pin<Box<Sleep>>,
        tx: mpsc::UnboundedSender<Msg>,
        timeout_ms: u64,
    },
    Passed,
}

impl Invoke {
    pub(crate) fn new(
        provider: ProviderRef,
        invocation: Invocation,
        idx: u32,
        timeout: Option<Duration>,
        tx: &mpsc::UnboundedSender<Msg>,
    ) -> Self {
        let deadline = match timeout {
            Some(limit) => Deadline::Pending {
                limit,
                tx: tx.clone(),
            },
            None => Deadline::None,
        };
        Self {
            idx,
            future: provider.invoke_owned(invocation),
            deadline,
        }
    }
}

impl Future for Invoke {
    type Output = (u32, Result<InvokeResult, TaskError>);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        match std::panic::catch_unwind(AssertUnwindSafe(|| this.future.as_mut().poll(cx))) {
            Ok(Poll::Ready(result)) => {
                return Poll::Ready((this.idx, result.map_err(TaskError::Provider)));
            }
            Err(panic) => {
                let message = panic_message(&*panic);
                return Poll::Ready((this.idx, Err(TaskError::Panicked { message })));
            }
            Ok(Poll::Pending) => {}
        }
        if let Deadline::Pending { limit, .. } = &this.deadline {
            let limit = *limit;
            if let Deadline::Pending { tx, .. } =
                std::mem::replace(&mut this.deadline, Deadline::Passed)
            {
                this.deadline = Deadline::Armed {
                    sleep: Box::pin(tokio::time::sleep(limit)),
                    tx,
                    timeout_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                };
            }
        }
        if let Deadline::Armed { sleep, .. } = &mut this.deadline {
            if sleep.as_mut().poll(cx).is_ready() {
                if let Deadline::Armed { tx, timeout_ms, .. } =
                    std::mem::replace(&mut this.deadline, Deadline::Passed)
                {
                    // The loop fails the task, which fires its token.
                    let _ = tx.send(Msg::TimedOut {
                        idx: this.idx,
                        timeout_ms,
                    });
                }
            }
        }
        Poll::Pending
    }
}

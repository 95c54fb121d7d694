//! One invocation, spawned: catches panics, enforces the deadline, reports to the loop.

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt as _;
use tokio::sync::mpsc;

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

fn settle(
    outcome: Result<Result<InvokeResult, AcmpError>, Box<dyn Any + Send>>,
) -> Result<InvokeResult, TaskError> {
    match outcome {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(error)) => Err(TaskError::Provider(error)),
        Err(panic) => Err(TaskError::Panicked {
            message: panic_message(&*panic),
        }),
    }
}

/// Runs the provider for task `idx` and always ends by sending [`Msg::Done`].
pub(crate) async fn invoke(
    provider: ProviderRef,
    invocation: Invocation,
    idx: u32,
    timeout: Option<Duration>,
    tx: mpsc::UnboundedSender<Msg>,
) {
    let token = timeout.map(|_| invocation.cancel.clone());
    let call = std::panic::catch_unwind(AssertUnwindSafe(|| provider.invoke_dyn(invocation)));
    let result = match call {
        Err(panic) => settle(Err(panic)),
        Ok(future) => {
            let mut future = AssertUnwindSafe(future).catch_unwind();
            match (timeout, token) {
                (Some(limit), Some(token)) => {
                    tokio::select! {
                        biased;
                        outcome = &mut future => settle(outcome),
                        () = tokio::time::sleep(limit) => {
                            token.cancel();
                            let timeout_ms = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
                            let _ = tx.send(Msg::TimedOut { idx, timeout_ms });
                            settle(future.await)
                        }
                    }
                }
                _ => settle(future.await),
            }
        }
    };
    let _ = tx.send(Msg::Done { idx, result });
}

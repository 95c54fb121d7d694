//! Starting a task: resolving its input, invoking its provider (observed when the run is
//! durable), opening its output stream to streaming dependents.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{RunLoop, satisfy};
use crate::orchestrator::durable::{TaskCall, TaskObserver};
use crate::orchestrator::invoke::{Invoke, poll_guarded};
use crate::orchestrator::outcome::{TaskEnd, TaskError};
use crate::orchestrator::resolve::resolve;
use crate::orchestrator::stream::OutStream;
use crate::{InputChunks, Invocation, InvokeParams, OutputSink, TaskState};

impl RunLoop {
    /// Resolves the input, invokes the provider, opens the output stream. The invocation is
    /// polled once here; only if it does not answer does it join `invocations`.
    pub(super) fn start(&mut self, idx: u32, cx: &mut Context<'_>) {
        let plan = Arc::clone(&self.plan);
        let (Some(task), Some(node)) = (
            plan.dag.dag().tasks.get(idx as usize),
            plan.dag.nodes.get(idx as usize),
        ) else {
            return;
        };
        let mut attempt = 1;
        if let Some(resume) = &mut self.resume
            && let Some(prior) = resume.tasks.get_mut(&*node.id)
        {
            attempt = prior.attempt;
            if let Some(result) = prior.result.take() {
                // Answered in the earlier run: not invoked again.
                self.transition(idx, TaskState::Running, None);
                self.finished(idx, result.map_err(TaskError::Provider));
                return;
            }
        }
        let Some(provider) = plan.provider(idx).cloned() else {
            let capability = task.capability.clone();
            self.fail(idx, TaskError::NoProvider { capability });
            return;
        };
        let in_stream = if self.in_streams.is_empty() {
            None
        } else {
            self.in_streams.remove(&idx)
        };
        let (input, input_chunks) = match in_stream {
            Some(rx) => (None, Some(InputChunks::from_receiver(rx))),
            None => {
                let ends = &self.ends;
                let resolved = resolve(
                    task,
                    &node.input,
                    &plan.dag.sources,
                    |src| match ends.get(src) {
                        Some(TaskEnd::Completed(r)) => r.output.as_ref(),
                        _ => None,
                    },
                    |src| plan.id(src).to_string(),
                );
                match resolved {
                    Ok(input) => (Some(input), None),
                    Err(error) => {
                        self.fail(idx, TaskError::Input(error));
                        return;
                    }
                }
            }
        };
        let streams = plan.streams(idx);
        let mut params = InvokeParams::for_task(task, input);
        if streams {
            params.stream = Some(true);
        }
        let token = CancellationToken::new();
        let invocation = Invocation {
            params,
            cancel: token.clone(),
            input: input_chunks,
            output: OutputSink::orchestrator(self.tx.clone(), idx, node.id.clone(), streams),
            attempt,
        };
        self.transition(idx, TaskState::Running, None);
        if let Some(slot) = self.slots.get_mut(idx as usize) {
            slot.token = Some(token);
        }
        if streams {
            self.open_stream(idx);
        }
        let mut future = match &self.observer {
            None => provider.invoke_owned(invocation),
            Some(observer) => observed(
                Arc::clone(observer),
                TaskCall {
                    task_id: node.id.clone(),
                    attempt,
                },
                provider,
                invocation,
            ),
        };
        match poll_guarded(&mut future, cx) {
            Poll::Ready(result) => {
                drop(future);
                self.finished(idx, result);
            }
            Poll::Pending => {
                let timeout = task
                    .timeout_ms
                    .map(Duration::from_millis)
                    .or(self.default_timeout);
                self.invocations
                    .push(Invoke::new(future, idx, timeout, &self.tx));
            }
        }
    }

    /// Connects a task invoked with `stream: true` to its streaming dependents, which may
    /// start now.
    pub(super) fn open_stream(&mut self, idx: u32) {
        let plan = Arc::clone(&self.plan);
        let Some(tos) = plan.stream_out.get(&idx) else {
            return;
        };
        let mut targets = Vec::with_capacity(tos.len());
        for &to in tos {
            let (tx, rx) = mpsc::unbounded_channel();
            targets.push((tx, plan.id(to)));
            self.in_streams.insert(to, rx);
            self.satisfy(to);
        }
        self.out_streams.insert(idx, OutStream::new(targets));
    }

    /// One incoming edge of `to` is satisfied.
    fn satisfy(&mut self, to: u32) {
        satisfy(&mut self.slots, &mut self.ready, to);
    }
}

/// The provider call between its observer's `started` and `finished`: the
/// provider is invoked once the start is observed, and its answer reaches
/// the run once that is.
fn observed(
    observer: Arc<dyn TaskObserver>,
    call: TaskCall,
    provider: crate::ProviderRef,
    invocation: Invocation,
) -> crate::orchestrator::invoke::InvokeFuture {
    Box::pin(async move {
        observer.started(&call, &invocation.params).await?;
        let result = provider.invoke_owned(invocation).await;
        observer.finished(&call, &result).await?;
        result
    })
}

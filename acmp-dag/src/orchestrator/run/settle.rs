//! Ending a task: the one-way state machine, results checked against the task, failures
//! with the failure policy, breadth-first cancellation downstream.

use std::collections::VecDeque;
use std::sync::Arc;

use super::{RunLoop, satisfy};
use crate::events::{EventKind, TransitionCause};
use crate::orchestrator::FailurePolicy;
use crate::orchestrator::durable::TaskCall;
use crate::orchestrator::outcome::{CancelReason, TaskEnd, TaskError};
use crate::orchestrator::plan::Plan;
use crate::{InvokeResult, TaskState};

impl RunLoop {
    /// Moves a task to `to`; refuses transitions the state machine does not allow.
    pub(super) fn transition(
        &mut self,
        idx: u32,
        to: TaskState,
        cause: Option<TransitionCause>,
    ) -> bool {
        let Some(slot) = self.slots.get_mut(idx as usize) else {
            return false;
        };
        let from = slot.state;
        if !from.can_transition_to(to) {
            return false;
        }
        slot.state = to;
        tracing::trace!(dag = %self.plan.dag_id, task = idx, %from, %to, "task transition");
        if to.is_terminal() {
            self.open -= 1;
            if let Some(token) = slot.token.take()
                && to != TaskState::Completed
            {
                token.cancel();
            }
            if !self.out_streams.is_empty() {
                self.out_streams.remove(&idx);
            }
            if !self.in_streams.is_empty() {
                self.in_streams.remove(&idx);
            }
        }
        if self.events.is_some() {
            let task_id = self.plan.id(idx);
            self.emit(|| EventKind::Transition {
                task_id,
                from,
                to,
                cause,
            });
        }
        true
    }

    pub(super) fn on_done(&mut self, idx: u32, result: Result<InvokeResult, TaskError>) {
        if self.state(idx) != Some(TaskState::Running) {
            return; // cancelled or timed out meanwhile: the answer is moot
        }
        match result {
            Ok(result) => self.on_result(idx, result),
            Err(error) => self.fail(idx, error),
        }
    }

    pub(super) fn on_result(&mut self, idx: u32, mut result: InvokeResult) {
        let expected = self.plan.dag.nodes.get(idx as usize).map(|n| &*n.id);
        if expected != Some(result.task_id.as_str()) {
            let message = format!("result for task \"{}\"", result.task_id);
            self.fail(idx, TaskError::Protocol { message });
            return;
        }
        let max_price = plan_max_price(&self.plan, idx);
        if let Some(max) = max_price.filter(|&max| result.cost_cu > max) {
            let message = format!("cost_cu {} exceeds max_price_cu {max}", result.cost_cu);
            self.fail(idx, TaskError::Protocol { message });
            return;
        }
        let stream = if self.out_streams.is_empty() {
            None
        } else {
            self.out_streams.remove(&idx)
        };
        if let Some(mut stream) = stream {
            match stream.finish(&result) {
                Ok(assembled) => {
                    if result.output.is_none() {
                        result.output = assembled;
                    }
                }
                Err(message) => {
                    self.fail(idx, TaskError::Protocol { message });
                    return;
                }
            }
        }
        if result.output.is_none() {
            let message = "result without output".to_owned();
            self.fail(idx, TaskError::Protocol { message });
            return;
        }
        if !self.transition(idx, TaskState::Completed, None) {
            return;
        }
        self.set_end(idx, TaskEnd::Completed(result));
        let Self {
            plan, slots, ready, ..
        } = self;
        for edge in plan.dag.outs(idx) {
            if !plan.is_streamed(idx, edge.to) {
                satisfy(slots, ready, edge.to);
            }
        }
    }

    pub(super) fn fail(&mut self, idx: u32, error: TaskError) {
        if matches!(
            error,
            TaskError::Panicked { .. } | TaskError::Protocol { .. }
        ) {
            tracing::warn!(dag = %self.plan.dag_id, task = %self.plan.id(idx), %error, "task failed");
        }
        if let Some(observer) = &self.observer
            && self.state(idx) == Some(TaskState::Running)
            && matches!(
                error,
                TaskError::TimedOut { .. }
                    | TaskError::Protocol { .. }
                    | TaskError::Panicked { .. }
            )
        {
            let task_id = self.plan.id(idx);
            let attempt = self
                .resume
                .as_ref()
                .and_then(|r| r.tasks.get(&*task_id))
                .map_or(1, |p| p.attempt);
            observer.failed(&TaskCall { task_id, attempt }, &error);
        }
        let cause = self
            .events
            .is_some()
            .then(|| TransitionCause::Failed(error.clone()));
        if !self.transition(idx, TaskState::Failed, cause) {
            return;
        }
        self.set_end(idx, TaskEnd::Failed(error));
        let task_id = self.plan.id(idx);
        self.cancel_downstream(
            idx,
            &CancelReason::UpstreamFailed {
                task_id: task_id.clone(),
            },
        );
        if self.policy == FailurePolicy::FailFast {
            self.cancel_all(&CancelReason::FailFast { failed: task_id });
        }
    }

    /// Cancels one task that is not terminal; fires its token if it runs.
    pub(super) fn cancel_one(&mut self, idx: u32, reason: CancelReason) -> bool {
        let cause = self
            .events
            .is_some()
            .then(|| TransitionCause::Cancelled(reason.clone()));
        if !self.transition(idx, TaskState::Cancelled, cause) {
            return false;
        }
        self.set_end(idx, TaskEnd::Cancelled(reason));
        true
    }

    pub(super) fn set_end(&mut self, idx: u32, end: TaskEnd) {
        self.ends.set(idx, end, &self.plan.dag.nodes);
    }

    /// Cancels every task reachable from `origin`, breadth first. Terminal tasks keep their
    /// end and are not walked through.
    pub(super) fn cancel_downstream(&mut self, origin: u32, reason: &CancelReason) {
        let plan = Arc::clone(&self.plan);
        let outs = |v: u32| plan.dag.outs(v);
        let mut queue: VecDeque<u32> = outs(origin).iter().map(|e| e.to).collect();
        while let Some(v) = queue.pop_front() {
            if self.cancel_one(v, reason.clone()) {
                queue.extend(outs(v).iter().map(|e| e.to));
            }
        }
    }

    pub(super) fn cancel_all(&mut self, reason: &CancelReason) {
        for idx in 0..self.slots.len() as u32 {
            self.cancel_one(idx, reason.clone());
        }
    }
}

/// The task's `max_price_cu`, which a result's `cost_cu` must not exceed.
fn plan_max_price(plan: &Plan, idx: u32) -> Option<f64> {
    plan.dag
        .dag()
        .tasks
        .get(idx as usize)
        .and_then(|t| t.max_price_cu)
}

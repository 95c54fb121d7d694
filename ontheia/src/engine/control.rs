//! The engine's own steps: `router`, `branch`, `parallel`, `loop`, `retry`,
//! `delay`.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Cx, Engine, Frame, Outcome, lock};
use crate::backend::Backend;
use crate::condition;
use crate::doc::Step;
use crate::error::StepError;
use crate::limits::DEFAULT_RETRY_COUNT;

/// `executedBranchIndex` when `default` ran.
pub const DEFAULT_BRANCH_INDEX: i64 = 999;
/// `executedBranchIndex` when nothing ran.
pub const NO_BRANCH_INDEX: i64 = -1;

/// `delay_ms` of a `retry` when absent.
const DEFAULT_RETRY_DELAY_MS: u64 = 1000;

impl<B: Backend> Engine<B> {
    pub(super) async fn branch(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
    ) -> Result<Outcome, StepError> {
        let chosen = {
            let st = lock(&cx.state);
            let mut ex = self.expander(cx, frame, &st);
            let mut chosen = None;
            for (i, case) in step.cases.iter().flatten().enumerate() {
                if condition::holds(case.when.as_ref(), &mut ex)? {
                    chosen = Some(i);
                    break;
                }
            }
            chosen
        };
        let index = self.run_case(cx, step, frame, chosen).await?;
        Ok(Outcome {
            data: json!({ "executedBranchIndex": index }),
            ..Outcome::default()
        })
    }

    pub(super) async fn router(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
    ) -> Result<Outcome, StepError> {
        let (value, chosen) = {
            let st = lock(&cx.state);
            let mut ex = self.expander(cx, frame, &st);
            let raw = step
                .param("input")
                .or_else(|| step.param("value"))
                .unwrap_or(Value::Null);
            let value = ex
                .expand(&crate::template::to_text(&raw))?
                .trim()
                .to_owned();
            let mut chosen = None;
            for (i, case) in step.cases.iter().flatten().enumerate() {
                if condition::case_matches(case.when.as_ref(), &value, &mut ex)? {
                    chosen = Some(i);
                    break;
                }
            }
            (value, chosen)
        };
        let index = self.run_case(cx, step, frame, chosen).await?;
        Ok(Outcome {
            output: Value::String(value.clone()),
            data: json!({ "value": value, "executedBranchIndex": index }),
            ..Outcome::default()
        })
    }

    /// Runs case `chosen`, else `default`; returns `executedBranchIndex`.
    async fn run_case(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
        chosen: Option<usize>,
    ) -> Result<i64, StepError> {
        if let Some(i) = chosen
            && let Some(case) = step.cases.as_ref().and_then(|c| c.get(i))
        {
            self.run_steps(cx, &case.steps, frame).await?;
            return Ok(i64::try_from(i).unwrap_or(i64::MAX));
        }
        match &step.default {
            Some(default) => {
                self.run_steps(cx, default, frame).await?;
                Ok(DEFAULT_BRANCH_INDEX)
            }
            None => Ok(NO_BRANCH_INDEX),
        }
    }

    pub(super) async fn parallel(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
    ) -> Result<Outcome, StepError> {
        let children = step.steps.as_deref().unwrap_or(&[]);
        let results =
            futures::future::join_all(children.iter().map(|c| self.run_step(cx, c, frame))).await;
        // Cancellation first, then the first failure (inside a retry).
        if results
            .iter()
            .any(|r| matches!(r, Err(StepError::Cancelled)))
        {
            return Err(StepError::Cancelled);
        }
        if let Some(Err(e)) = results.into_iter().find(|r| r.is_err()) {
            return Err(e);
        }
        Ok(Outcome {
            data: json!({ "status": "parallel_completed", "steps": children.len() }),
            ..Outcome::default()
        })
    }

    pub(super) async fn loop_step(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
    ) -> Result<Outcome, StepError> {
        let count = step
            .param_u64("count")
            .ok_or_else(|| StepError::Param("`count` is missing".into()))?;
        let children = step.steps.as_deref().unwrap_or(&[]);
        for i in 0..count {
            let mut inner = frame.clone();
            inner.path = format!("{}{}#{i}/", frame.path, step.id).into();
            inner.locals.insert(
                "loop".into(),
                json!({ "index": i, "number": i + 1, "count": count, "id": step.id }),
            );
            self.run_steps(cx, children, &inner).await?;
        }
        Ok(Outcome {
            data: json!({ "status": "loop_completed", "iterations": count }),
            ..Outcome::default()
        })
    }

    pub(super) async fn retry(
        &self,
        cx: &Cx<'_, '_>,
        step: &Step,
        frame: &Frame,
    ) -> Result<Outcome, StepError> {
        let count = step.param_u64("count").unwrap_or(DEFAULT_RETRY_COUNT);
        let delay_ms = step.param_u64("delay_ms").unwrap_or(DEFAULT_RETRY_DELAY_MS);
        let success_when = step
            .params
            .as_ref()
            .and_then(|p| p.get("success_when"))
            .cloned();
        let fail_on_warnings = step.flag("fail_on_warnings");
        let children = step.steps.as_deref().unwrap_or(&[]);
        let mut last = String::new();
        for attempt in 1..=count {
            let mut inner = frame.clone();
            inner.in_retry = true;
            inner.path = format!("{}{}@{attempt}/", frame.path, step.id).into();
            inner.attempt = u32::try_from(attempt).unwrap_or(u32::MAX);
            inner.locals.insert(
                "retry".into(),
                json!({ "attempt": attempt, "count": count, "id": step.id }),
            );
            let warnings_before = lock(&cx.warnings).len();
            let outcome = match self.run_steps(cx, children, &inner).await {
                Err(StepError::Cancelled) => return Err(StepError::Cancelled),
                Err(e) => Err(e),
                Ok(()) => self.attempt_verdict(
                    cx,
                    &inner,
                    warnings_before,
                    fail_on_warnings,
                    success_when.as_ref(),
                ),
            };
            match outcome {
                Ok(()) => {
                    return Ok(Outcome {
                        data: json!({ "status": "retry_completed", "attempts": attempt }),
                        ..Outcome::default()
                    });
                }
                Err(e) => {
                    tracing::debug!(step = %step.id, attempt, error = %e, "ontheia retry attempt failed");
                    last = e.to_string();
                }
            }
            if attempt < count && delay_ms > 0 {
                self.sleep(cx, delay_ms).await?;
            }
        }
        Err(StepError::RetryExhausted {
            attempts: count,
            last,
        })
    }

    /// After an attempt whose steps all succeeded: warnings (when they count)
    /// and `success_when`.
    fn attempt_verdict(
        &self,
        cx: &Cx<'_, '_>,
        frame: &Frame,
        warnings_before: usize,
        fail_on_warnings: bool,
        success_when: Option<&Value>,
    ) -> Result<(), StepError> {
        if fail_on_warnings {
            let w = lock(&cx.warnings);
            if let Some((step, warning)) = w.get(warnings_before..).and_then(|new| new.first()) {
                return Err(StepError::Warning {
                    step: step.clone(),
                    warning: warning.clone(),
                });
            }
        }
        if let Some(cond) = success_when {
            let st = lock(&cx.state);
            let mut ex = self.expander(cx, frame, &st);
            if !condition::holds_value(cond, &mut ex)? {
                return Err(StepError::SuccessNotMet(crate::template::to_text(cond)));
            }
        }
        Ok(())
    }

    pub(super) async fn delay(&self, cx: &Cx<'_, '_>, step: &Step) -> Result<Outcome, StepError> {
        let ms = step
            .param_u64("delay_ms")
            .ok_or_else(|| StepError::Param("`delay_ms` is missing".into()))?;
        if ms > 0 {
            self.sleep(cx, ms).await?;
        }
        Ok(Outcome {
            data: json!({ "status": "delayed", "ms": ms }),
            ..Outcome::default()
        })
    }

    async fn sleep(&self, cx: &Cx<'_, '_>, ms: u64) -> Result<(), StepError> {
        tokio::select! {
            biased;
            _ = cx.run.cancel.cancelled() => Err(StepError::Cancelled),
            _ = tokio::time::sleep(Duration::from_millis(ms)) => Ok(()),
        }
    }
}

//! Routing tasks over several providers: by capability, `preferred_tier`, price within
//! `max_price_cu` and the DAG's budget, and health; a retryable failure is retried on the
//! next provider with the same `task_id`; a local router as the last resort.

use std::sync::{Arc, Mutex};

use crate::serve::estimate_tokens;
use crate::{
    AcmpError, Dag, Invocation, InvokeParams, InvokeResult, Provider, ProviderFeatures,
    ProviderRef, Router, Task,
};

use super::provider::{RemoteProvider, is_retryable};

/// A DAG's budget in CU, shared by its tasks: each call reserves its price before it goes
/// out and settles at the result's `cost_cu`.
#[derive(Debug)]
pub struct Budget {
    limit: f64,
    committed: Mutex<f64>,
}

impl Budget {
    /// A budget of `limit` CU.
    pub fn new(limit: f64) -> Self {
        Self {
            limit,
            committed: Mutex::new(0.0),
        }
    }

    fn committed(&self) -> std::sync::MutexGuard<'_, f64> {
        self.committed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reserves `price`; false when it does not fit.
    pub fn reserve(&self, price: f64) -> bool {
        let mut c = self.committed();
        if *c + price > self.limit + f64::EPSILON {
            return false;
        }
        *c += price;
        true
    }

    /// Gives a reservation back.
    pub fn release(&self, price: f64) {
        *self.committed() -= price;
    }

    /// Replaces a reservation by the cost charged.
    pub fn settle(&self, reserved: f64, cost: f64) {
        *self.committed() += cost - reserved;
    }

    /// CU reserved or spent so far.
    pub fn spent(&self) -> f64 {
        *self.committed()
    }

    /// The limit.
    pub fn limit(&self) -> f64 {
        self.limit
    }
}

/// A DAG that cannot be afforded, found before any call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BudgetError {
    /// No provider of the task's capability asks at most its `max_price_cu`.
    #[error(
        "task \"{task_id}\": max_price_cu {max_price_cu} is below the cheapest offer of {capability} ({min_price_cu} CU)"
    )]
    TaskPrice {
        /// The task.
        task_id: String,
        /// Its capability.
        capability: String,
        /// Its limit.
        max_price_cu: f64,
        /// The cheapest offer.
        min_price_cu: f64,
    },
    /// The cheapest routes of all tasks together cost more than the budget.
    #[error(
        "budget exceeded: the cheapest routes cost {needed_cu} CU, the budget is {budget_cu} CU"
    )]
    Total {
        /// What the DAG costs at least.
        needed_cu: f64,
        /// The budget.
        budget_cu: f64,
    },
}

/// Routes tasks to remote providers (and a local router as the last resort).
#[derive(Clone, Default)]
pub struct PoolRouter {
    remotes: Vec<Arc<RemoteProvider>>,
    local: Option<Arc<dyn Router>>,
    budget: Option<Arc<Budget>>,
}

impl std::fmt::Debug for PoolRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolRouter")
            .field("remotes", &self.remotes)
            .field("local", &self.local.is_some())
            .field("budget", &self.budget)
            .finish()
    }
}

impl PoolRouter {
    /// A router over `remotes`, in order of preference where all else is equal.
    pub fn new(remotes: Vec<Arc<RemoteProvider>>) -> Self {
        Self {
            remotes,
            local: None,
            budget: None,
        }
    }

    /// Tasks no remote provider takes go to `local`.
    #[must_use]
    pub fn with_local(mut self, local: impl Router) -> Self {
        self.local = Some(Arc::new(local));
        self
    }

    /// Every call is paid from `budget`.
    #[must_use]
    pub fn with_budget(mut self, budget: Arc<Budget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The remote providers.
    pub fn remotes(&self) -> &[Arc<RemoteProvider>] {
        &self.remotes
    }

    /// Connects every remote provider (learning its offers); the errors of those that
    /// could not be reached.
    pub async fn connect_all(&self) -> Vec<String> {
        let tries = self.remotes.iter().map(|r| r.connection());
        futures::future::join_all(tries)
            .await
            .into_iter()
            .filter_map(Result::err)
            .map(|e| e.to_string())
            .collect()
    }

    /// Checks, before any call, that every task has an offer within its `max_price_cu` and
    /// that the cheapest routes fit the budget; the least the DAG costs.
    pub fn preflight(&self, dag: &Dag) -> Result<f64, BudgetError> {
        let mut needed = 0.0;
        for task in &dag.tasks {
            let tokens = task.input_tokens_est.unwrap_or_else(|| match &task.input {
                crate::TaskInput::Literal(p) => estimate_tokens(Some(p)),
                crate::TaskInput::Reference(_) => 0,
            });
            let prices: Vec<f64> = self
                .remotes
                .iter()
                .filter_map(|r| r.offer(&task.capability))
                .map(|o| o.price_for(tokens))
                .collect();
            let local = self.local.as_ref().is_some_and(|l| l.route(task).is_some());
            let Some(min) = prices.iter().copied().reduce(f64::min) else {
                continue; // local, or no provider at all (the task fails when it would start)
            };
            match task.max_price_cu {
                Some(max) if min > max && !local => {
                    return Err(BudgetError::TaskPrice {
                        task_id: task.task_id.clone(),
                        capability: task.capability.clone(),
                        max_price_cu: max,
                        min_price_cu: min,
                    });
                }
                _ => needed += if local { 0.0 } else { min },
            }
        }
        if let Some(budget) = &self.budget
            && needed > budget.limit() + f64::EPSILON
        {
            return Err(BudgetError::Total {
                needed_cu: needed,
                budget_cu: budget.limit(),
            });
        }
        Ok(needed)
    }
}

impl Router for PoolRouter {
    fn route(&self, task: &Task) -> Option<ProviderRef> {
        let candidates: Vec<Arc<RemoteProvider>> = self
            .remotes
            .iter()
            .filter(|r| r.offer(&task.capability).is_some())
            .cloned()
            .collect();
        let local = self.local.as_ref().and_then(|l| l.route(task));
        if candidates.is_empty() && local.is_none() {
            // No offer, but providers whose offers are unknown because they
            // could not be reached: the task fails saying why, not only
            // that no provider offers its capability.
            let why: Vec<String> = self
                .remotes
                .iter()
                .filter(|r| r.offers().is_empty())
                .filter_map(|r| r.unreachable())
                .map(|u| u.to_string())
                .collect();
            if why.is_empty() {
                return None;
            }
            return Some(Arc::new(Unroutable {
                why: why.join("; "),
            }));
        }
        Some(Arc::new(Routed {
            candidates,
            local,
            budget: self.budget.clone(),
        }))
    }
}

/// A task whose capability no reachable provider offers, while some could
/// not be reached: it fails naming them and why.
struct Unroutable {
    why: String,
}

impl Provider for Unroutable {
    async fn invoke(&self, invocation: Invocation) -> Result<InvokeResult, AcmpError> {
        Err(AcmpError::internal(
            &invocation.params.task_id,
            self.why.clone(),
        ))
    }
}

/// One task's providers, tried in order.
struct Routed {
    candidates: Vec<Arc<RemoteProvider>>,
    local: Option<ProviderRef>,
    budget: Option<Arc<Budget>>,
}

fn tier_rank(tier: Option<&str>) -> u8 {
    match tier {
        Some("S") => 0,
        Some("A") => 1,
        Some("B") => 2,
        _ => 3,
    }
}

impl Routed {
    /// The candidates in routing order: healthy first; then the preferred tier; then the
    /// lower price; then the better tier; then the lower latency; then configuration order.
    fn ordered(&self, params: &InvokeParams, tokens: u64) -> Vec<(Arc<RemoteProvider>, f64)> {
        let mut list: Vec<_> = self
            .candidates
            .iter()
            .enumerate()
            .filter_map(|(i, r)| r.offer(&params.capability).map(|o| (i, r, o)))
            .collect();
        let preferred = params.preferred_tier.as_deref();
        list.sort_by(|(ia, a, oa), (ib, b, ob)| {
            let key = |r: &RemoteProvider, o: &crate::serve::Offer| {
                (
                    !r.is_healthy(),
                    preferred.is_some() && o.tier.as_deref() != preferred,
                )
            };
            key(a, oa)
                .cmp(&key(b, ob))
                .then(oa.price_for(tokens).total_cmp(&ob.price_for(tokens)))
                .then(tier_rank(oa.tier.as_deref()).cmp(&tier_rank(ob.tier.as_deref())))
                .then(
                    oa.latency_ms
                        .unwrap_or(u64::MAX)
                        .cmp(&ob.latency_ms.unwrap_or(u64::MAX)),
                )
                .then(ia.cmp(ib))
        });
        list.into_iter()
            .map(|(_, r, o)| (Arc::clone(r), o.price_for(tokens)))
            .collect()
    }
}

impl Provider for Routed {
    fn features(&self) -> ProviderFeatures {
        if self.local.is_some() || self.candidates.is_empty() {
            return ProviderFeatures::default();
        }
        let mut all = ProviderFeatures::streaming();
        for c in &self.candidates {
            let f = Provider::features(&**c);
            all.output_streaming &= f.output_streaming;
            all.input_streaming &= f.input_streaming;
        }
        all
    }

    async fn invoke(&self, mut invocation: Invocation) -> Result<InvokeResult, AcmpError> {
        let params = invocation.params.clone();
        let task_id = params.task_id.clone();
        let tokens = params
            .input_tokens_est
            .unwrap_or_else(|| estimate_tokens(params.input.as_ref()));
        let mut last: Option<AcmpError> = None;
        for (remote, price) in self.ordered(&params, tokens) {
            if invocation.cancel.is_cancelled() {
                return Err(AcmpError::cancelled(&task_id));
            }
            if params.max_price_cu.is_some_and(|max| price > max) {
                last = Some(AcmpError::budget_exceeded(&task_id, price));
                continue;
            }
            if let Some(budget) = &self.budget
                && !budget.reserve(price)
            {
                last = Some(
                    AcmpError::budget_exceeded(&task_id, price)
                        .with_data("budget_cu", budget.limit())
                        .with_data("spent_cu", budget.spent()),
                );
                continue;
            }
            let attempt = remote
                .call(
                    &params,
                    &invocation.cancel,
                    invocation.input.as_mut(),
                    &mut invocation.output,
                )
                .await;
            match attempt.result {
                Ok(result) => {
                    if let Some(budget) = &self.budget {
                        budget.settle(price, result.cost_cu);
                    }
                    return Ok(result);
                }
                Err(error) => {
                    if let Some(budget) = &self.budget {
                        budget.release(price);
                    }
                    let again = is_retryable(&error)
                        && !attempt.streamed
                        && !attempt.consumed_input
                        && !invocation.cancel.is_cancelled();
                    if !again {
                        return Err(error);
                    }
                    tracing::warn!(task = %task_id, provider = remote.name(), %error, "retrying on another provider");
                    last = Some(error);
                }
            }
        }
        if let Some(local) = &self.local {
            return local.invoke_dyn(invocation).await;
        }
        Err(last.unwrap_or_else(|| AcmpError::capability_not_found(&task_id, &params.capability)))
    }
}

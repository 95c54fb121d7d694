//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acmp_dag::{
    AcmpError, CapabilityRouter, Dag, Edge, Event, EventKind, Invocation, InvokeResult, Payload,
    Provider, Task, TaskInput, TaskState,
};
use serde_json::json;

/// Generous bound for liveness only (never a timing assertion).
pub const LIVENESS: Duration = Duration::from_secs(20);

/// Collects every event of the runs it is attached to.
#[derive(Clone, Default)]
pub struct Recorder(pub Arc<Mutex<Vec<Event>>>);

impl Recorder {
    pub fn sink(&self) -> impl Fn(&Event) + Send + Sync + 'static {
        let events = Arc::clone(&self.0);
        move |e: &Event| events.lock().unwrap().push(e.clone())
    }

    pub fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }

    /// `(task, from, to)` for every transition, in order.
    pub fn transitions(&self) -> Vec<(String, TaskState, TaskState)> {
        self.events()
            .into_iter()
            .filter_map(|e| match e.kind {
                EventKind::Transition {
                    task_id, from, to, ..
                } => Some((task_id.to_string(), from, to)),
                _ => None,
            })
            .collect()
    }

    /// Position of the transition of `task` into `to`.
    pub fn position(&self, task: &str, to: TaskState) -> Option<usize> {
        self.transitions()
            .iter()
            .position(|(t, _, s)| t == task && *s == to)
    }
}

/// Runs `f` on a multi-thread runtime with a liveness bound.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(LIVENESS, f)
            .await
            .expect("liveness bound")
    })
}

/// A provider answering `{"echo": <input data>, "task": <id>}`.
pub fn echo() -> impl Provider {
    acmp_dag::from_fn(|inv: Invocation| async move {
        let data = inv.params.input.map(|p| p.data).unwrap_or_default();
        let task = inv.params.task_id.clone();
        Ok(InvokeResult::new(
            inv.params.task_id,
            Payload::json(json!({"echo": data, "task": task})),
        ))
    })
}

/// A provider that waits for its cancellation token, records it, and answers -33004.
pub fn blocker(
    cancelled: Arc<Mutex<Vec<String>>>,
    started: Arc<tokio::sync::Notify>,
) -> impl Provider {
    acmp_dag::from_fn(move |inv: Invocation| {
        let cancelled = Arc::clone(&cancelled);
        let started = Arc::clone(&started);
        async move {
            started.notify_one();
            inv.cancel.cancelled().await;
            cancelled.lock().unwrap().push(inv.params.task_id.clone());
            Err::<InvokeResult, _>(AcmpError::cancelled(inv.params.task_id))
        }
    })
}

/// A provider that always fails with -33099.
pub fn failing() -> impl Provider {
    acmp_dag::from_fn(|inv: Invocation| async move {
        Err::<InvokeResult, _>(AcmpError::internal(inv.params.task_id, "boom"))
    })
}

pub fn task(id: &str, capability: &str) -> Task {
    Task::new(id, capability, TaskInput::text(id))
}

pub fn dep(id: &str, capability: &str, from: &str) -> Task {
    Task::new(id, capability, TaskInput::from_task(from))
}

/// A DAG from `(id, capability, sources)`, with an edge per source; one source is a
/// `from_task`, several a `from_tasks`, none a literal.
pub fn dag(spec: &[(&str, &str, &[&str])]) -> Dag {
    let mut dag = Dag::new("dag_test");
    for (id, capability, sources) in spec {
        let input = match sources {
            [] => TaskInput::text(*id),
            [one] => TaskInput::from_task(*one),
            many => TaskInput::from_tasks(many.iter().copied()),
        };
        dag = dag.with_task(Task::new(*id, *capability, input));
        for s in *sources {
            dag = dag.with_edge(Edge::new(*s, *id));
        }
    }
    dag
}

pub fn router(entries: Vec<(&str, acmp_dag::ProviderRef)>) -> CapabilityRouter {
    let mut router = CapabilityRouter::new();
    for (capability, provider) in entries {
        router.register_ref(capability, provider).unwrap();
    }
    router
}

/// Runs `f` on a current-thread runtime (deterministic interleaving at await points) with
/// a liveness bound.
pub fn block_on_local<F: std::future::Future>(f: F) -> F::Output {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(LIVENESS, f)
            .await
            .expect("liveness bound")
    })
}

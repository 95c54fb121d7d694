//! Property tests on random DAGs: a task starts only after all its sources completed,
//! every task ends in exactly one terminal state, failures and cancellations never let a
//! dependent run, and references always resolve to the right upstream outputs.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use acmp_dag::{
    AcmpError, Dag, DagStatus, Edge, EventKind, FailurePolicy, Invocation, InvokeResult,
    Orchestrator, Payload, Task, TaskInput, TaskState, ValidationError, ValidationLimits, from_fn,
};
use common::{Recorder, router};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{Value, json};

#[derive(Debug, Clone)]
struct TaskSpec {
    sources: Vec<Index>,
    fails: bool,
    with_field: bool,
    yields: u8,
}

#[derive(Debug, Clone)]
struct Spec {
    tasks: Vec<TaskSpec>,
    policy: FailurePolicy,
    cancel: Option<Index>,
}

fn task_spec() -> impl Strategy<Value = TaskSpec> {
    (
        prop::collection::vec(any::<Index>(), 0..4),
        prop::bool::weighted(0.1),
        any::<bool>(),
        0..3_u8,
    )
        .prop_map(|(sources, fails, with_field, yields)| TaskSpec {
            sources,
            fails,
            with_field,
            yields,
        })
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop::collection::vec(task_spec(), 1..30),
        prop_oneof![
            Just(FailurePolicy::BestEffort),
            Just(FailurePolicy::FailFast)
        ],
        prop::option::weighted(0.3, any::<Index>()),
    )
        .prop_map(|(tasks, policy, cancel)| Spec {
            tasks,
            policy,
            cancel,
        })
}

fn id(i: usize) -> String {
    format!("task_{i}")
}

/// Sources of each task: distinct earlier tasks.
fn sources(spec: &Spec) -> Vec<Vec<usize>> {
    spec.tasks
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut s: Vec<usize> = if i == 0 {
                vec![]
            } else {
                t.sources.iter().map(|x| x.index(i)).collect()
            };
            s.sort_unstable();
            s.dedup();
            s
        })
        .collect()
}

fn build(spec: &Spec, sources: &[Vec<usize>]) -> Dag {
    let mut dag = Dag::new("dag_prop");
    for (i, (t, srcs)) in spec.tasks.iter().zip(sources).enumerate() {
        let field = t.with_field.then(|| "data.id".to_owned());
        let input = match srcs.as_slice() {
            [] => TaskInput::text(id(i)),
            [one] => match field {
                Some(f) => TaskInput::from_task_field(id(*one), f),
                None => TaskInput::from_task(id(*one)),
            },
            many => {
                let mut input = TaskInput::from_tasks(many.iter().map(|&s| id(s)));
                if let TaskInput::Reference(r) = &mut input {
                    r.source.field = field;
                }
                input
            }
        };
        let capability = if t.fails { "fail" } else { "ok" };
        dag = dag.with_task(Task::new(id(i), capability, input));
        for &s in srcs {
            dag = dag.with_edge(Edge::new(id(s), id(i)));
        }
    }
    dag
}

/// The input a task must receive, given its sources.
fn expected_input(i: usize, srcs: &[usize], with_field: bool) -> Payload {
    let whole = |s: usize| json!({"type": "json", "data": {"id": id(s)}});
    match srcs {
        [] => Payload::text(id(i)),
        [one] if with_field => Payload::text(id(*one)),
        [one] => Payload::json(json!({"id": id(*one)})),
        many if with_field => {
            Payload::json(Value::Array(many.iter().map(|&s| json!(id(s))).collect()))
        }
        many => Payload::json(Value::Array(many.iter().map(|&s| whole(s)).collect())),
    }
}

fn run(spec: &Spec) -> Result<(), TestCaseError> {
    let sources = sources(spec);
    let dag = build(spec, &sources);
    let expected: HashMap<String, Payload> = spec
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (id(i), expected_input(i, &sources[i], t.with_field)))
        .collect();
    let yields: HashMap<String, u8> = spec
        .tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (id(i), t.yields))
        .collect();
    let wrong_inputs: Arc<Mutex<Vec<String>>> = Arc::default();

    let (expected, yields, wrong) = (
        Arc::new(expected),
        Arc::new(yields),
        Arc::clone(&wrong_inputs),
    );
    let provider = move |fail: bool| {
        let (expected, yields, wrong) = (
            Arc::clone(&expected),
            Arc::clone(&yields),
            Arc::clone(&wrong),
        );
        Arc::new(from_fn(move |inv: Invocation| {
            let (expected, yields, wrong) = (
                Arc::clone(&expected),
                Arc::clone(&yields),
                Arc::clone(&wrong),
            );
            async move {
                let task = inv.params.task_id.clone();
                if inv.params.input.as_ref() != expected.get(&task) {
                    wrong.lock().unwrap().push(task.clone());
                }
                for _ in 0..yields[&task] {
                    tokio::task::yield_now().await;
                }
                if fail {
                    return Err(AcmpError::internal(task, "planned failure"));
                }
                Ok(InvokeResult::new(
                    task.clone(),
                    Payload::json(json!({"id": task})),
                ))
            }
        })) as acmp_dag::ProviderRef
    };
    let recorder = Recorder::default();
    let orchestrator = Orchestrator::new(router(vec![
        ("ok", provider(false)),
        ("fail", provider(true)),
    ]))
    .with_failure_policy(spec.policy)
    .with_event_sink(recorder.sink());
    let cancel = spec.cancel.map(|ix| id(ix.index(spec.tasks.len())));

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let outcome = rt.block_on(async {
        let run = orchestrator.start(orchestrator.validate(dag).unwrap());
        if let Some(c) = &cancel {
            run.cancel_task(c).unwrap();
        }
        tokio::time::timeout(common::LIVENESS, run.outcome())
            .await
            .unwrap()
            .unwrap()
    });

    prop_assert!(
        wrong_inputs.lock().unwrap().is_empty(),
        "wrong inputs: {:?}",
        wrong_inputs
    );

    // Event positions per task.
    let events = recorder.events();
    let mut positions: HashMap<(String, TaskState), usize> = HashMap::new();
    let mut per_task: HashMap<String, Vec<(TaskState, TaskState)>> = HashMap::new();
    for (pos, e) in events.iter().enumerate() {
        if let EventKind::Transition {
            task_id, from, to, ..
        } = &e.kind
        {
            positions.insert((task_id.to_string(), *to), pos);
            per_task
                .entry(task_id.to_string())
                .or_default()
                .push((*from, *to));
        }
    }
    let n = spec.tasks.len();
    let state = |i: usize| outcome.state(&id(i)).unwrap();
    for i in 0..n {
        // A legal chain from pending to exactly one terminal state, matching the outcome.
        let chain = &per_task[&id(i)];
        prop_assert!(chain.len() <= 2, "{}: {chain:?}", id(i));
        prop_assert_eq!(chain[0].0, TaskState::Pending);
        for w in chain.windows(2) {
            prop_assert_eq!(w[0].1, w[1].0);
        }
        for (from, to) in chain {
            prop_assert!(from.can_transition_to(*to));
        }
        let terminal: Vec<_> = chain.iter().filter(|(_, to)| to.is_terminal()).collect();
        prop_assert_eq!(terminal.len(), 1);
        prop_assert_eq!(terminal[0].1, state(i));

        // Started only after every source completed.
        if let Some(&started) = positions.get(&(id(i), TaskState::Running)) {
            for &s in &sources[i] {
                let done = positions.get(&(id(s), TaskState::Completed));
                prop_assert!(
                    done.is_some_and(|&d| d < started),
                    "{} started before {}",
                    id(i),
                    id(s)
                );
            }
        }
        // Failed tasks are exactly the failing ones that ran.
        if state(i) == TaskState::Failed {
            prop_assert!(spec.tasks[i].fails);
            prop_assert!(positions.contains_key(&(id(i), TaskState::Running)));
        }
        if spec.tasks[i].fails {
            prop_assert_ne!(state(i), TaskState::Completed);
        }
    }
    // A task that did not complete has only cancelled, never-started descendants.
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, srcs) in sources.iter().enumerate() {
        for &s in srcs {
            children[s].push(i);
        }
    }
    for i in (0..n).filter(|&i| state(i) != TaskState::Completed) {
        let mut stack = children[i].clone();
        let mut seen = HashSet::new();
        while let Some(c) = stack.pop() {
            if seen.insert(c) {
                prop_assert_eq!(state(c), TaskState::Cancelled, "{} below {}", id(c), id(i));
                prop_assert!(!positions.contains_key(&(id(c), TaskState::Running)));
                stack.extend(children[c].iter().copied());
            }
        }
    }
    // Best effort without cancellation: everything with no failing ancestor completes.
    if spec.policy == FailurePolicy::BestEffort && cancel.is_none() {
        let mut doomed = vec![false; n];
        for i in 0..n {
            doomed[i] = spec.tasks[i].fails || sources[i].iter().any(|&s| doomed[s]);
            if !doomed[i] {
                prop_assert_eq!(state(i), TaskState::Completed);
            }
        }
    }
    let any_failed = (0..n).any(|i| state(i) == TaskState::Failed);
    let any_cancelled = (0..n).any(|i| state(i) == TaskState::Cancelled);
    let status = match (any_failed, any_cancelled) {
        (true, _) => DagStatus::Failed,
        (false, true) => DagStatus::Cancelled,
        _ => DagStatus::Completed,
    };
    prop_assert_eq!(outcome.status, status);
    // The result is the outputs of the completed leaves.
    let leaves: Vec<String> = (0..n)
        .filter(|&i| children[i].is_empty() && state(i) == TaskState::Completed)
        .map(id)
        .collect();
    let result: Vec<String> = outcome
        .result()
        .into_iter()
        .map(|(t, _)| t.to_owned())
        .collect();
    prop_assert_eq!(result, leaves);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn random_dags_run_by_the_rules(spec in spec()) {
        run(&spec)?;
    }

    #[test]
    fn a_back_edge_is_reported_as_a_cycle_along_real_edges(
        spec in spec(),
        back in (any::<Index>(), any::<Index>()),
    ) {
        let sources = sources(&spec);
        let n = spec.tasks.len();
        // Add an edge from a task to one of its ancestors (or itself).
        let to_dependents = |from: usize| -> Vec<usize> {
            (0..n).filter(|&i| sources[i].contains(&from)).collect()
        };
        let start = back.0.index(n);
        let mut path = vec![start];
        while let Some(&next) = to_dependents(*path.last().unwrap()).first() {
            path.push(next);
        }
        let end = path[back.1.index(path.len())];
        let dag = build(&spec, &sources).with_edge(Edge::new(id(end), id(start)));
        let report = acmp_dag::validate::check(&dag, &ValidationLimits::unlimited());
        let cycles: Vec<_> = report.errors.iter().filter_map(|e| match e {
            ValidationError::Cycle { path } => Some(path.clone()),
            _ => None,
        }).collect();
        prop_assert!(!cycles.is_empty(), "{:?}", report.errors);
        let edges: HashSet<(String, String)> =
            dag.edges.iter().map(|e| (e.from.clone(), e.to.clone())).collect();
        for cycle in cycles {
            prop_assert_eq!(cycle.first(), cycle.last());
            for pair in cycle.windows(2) {
                prop_assert!(edges.contains(&(pair[0].clone(), pair[1].clone())));
            }
        }
    }
}

//! Property tests over random DAGs: each node runs at most once and never
//! before its dependencies settled; `seq` counts 0, 1, 2, …; outputs match
//! a sequential reference evaluator; cyclic graphs are always refused.

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use a2e_chain::{
    ChainConfig, Engine, Event, NodeCall, NodeError, NodeResult, ValidationError, runner_fn,
    validate,
};
use a2e_proto::{ChainNode, ChainRequest, ErrorCode};
use common::*;
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// The shape of one generated node.
#[derive(Debug, Clone)]
struct Spec {
    /// Upstream nodes whose `v` it adds up.
    reads: Vec<usize>,
    /// A later node this one names as `next_node`.
    next: Option<usize>,
    /// Branch instead of calc: (read node, threshold, true target, false target).
    branch: Option<(usize, i64, Option<usize>, Option<usize>)>,
    /// The runner fails for this node.
    fails: bool,
    /// `on_error`: skip (true) or abort (false).
    skip: bool,
    /// `on_error` names a fallback node of its own instead (declared after
    /// every regular node).
    fallback: bool,
    /// The runner waits once before answering (so calls interleave on tasks).
    yields: bool,
}

fn id(i: usize) -> String {
    format!("n{i}")
}

fn dag(max: usize) -> impl Strategy<Value = Vec<Spec>> {
    (1..=max).prop_flat_map(|n| {
        proptest::collection::vec(
            (
                proptest::collection::vec(any::<prop::sample::Index>(), 0..4),
                proptest::option::weighted(0.3, any::<prop::sample::Index>()),
                proptest::option::weighted(
                    0.1,
                    (
                        any::<prop::sample::Index>(),
                        0i64..1000,
                        any::<prop::sample::Index>(),
                        any::<prop::sample::Index>(),
                        any::<bool>(),
                    ),
                ),
                proptest::bool::weighted(0.1),
                proptest::bool::weighted(0.8),
                any::<bool>(),
                proptest::bool::weighted(0.3),
            ),
            n,
        )
        .prop_map(move |raw| {
            raw.into_iter()
                .enumerate()
                .map(
                    |(i, (reads, next, branch, fails, skip, yields, fallback))| {
                        let earlier = |x: &prop::sample::Index| (i > 0).then(|| x.index(i));
                        let later = |x: &prop::sample::Index| {
                            (i + 1 < n).then(|| i + 1 + x.index(n - i - 1))
                        };
                        let reads: BTreeSet<usize> = reads.iter().filter_map(earlier).collect();
                        let branch = branch.and_then(|(r, k, t, f, one_sided)| {
                            let r = earlier(&r)?;
                            let t = later(&t)?;
                            let f = later(&f).filter(|f| *f != t && !one_sided);
                            Some((r, k, Some(t), f))
                        });
                        Spec {
                            reads: if branch.is_some() {
                                Vec::new()
                            } else {
                                reads.into_iter().collect()
                            },
                            next: next.as_ref().and_then(later),
                            fails: fails && branch.is_none(),
                            branch,
                            skip,
                            yields,
                            fallback,
                        }
                    },
                )
                .collect()
        })
    })
}

fn build(specs: &[Spec]) -> ChainRequest {
    let nodes = specs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut n = match s.branch {
                Some((r, k, t, f)) => branch(
                    &id(i),
                    &format!("{}.output.v > `{k}`", id(r)),
                    &t.map(id).unwrap_or_default(),
                    &f.map(id).unwrap_or_default(),
                ),
                None => {
                    let mut n = with_input(
                        tool(&id(i), "calc"),
                        &[
                            ("seed", json!(i)),
                            ("fail", json!(s.fails)),
                            ("yield", json!(s.yields)),
                        ],
                    );
                    for r in &s.reads {
                        n.input_map
                            .insert(format!("d{r}"), json!(format!("{}.output.v", id(*r))));
                    }
                    n
                }
            };
            if let Some(x) = s.next {
                n.next_node = id(x);
            }
            n.on_error = match fallback_of(specs, i) {
                Some(f) => id(f),
                None if s.skip => "skip".into(),
                None => "abort".into(),
            };
            n
        })
        .collect::<Vec<_>>();
    let mut nodes = nodes;
    for (i, _) in specs.iter().enumerate() {
        if let Some(f) = fallback_of(specs, i) {
            // The fallback reads its node's error and stands in with `{"v": f}`.
            let n = with_input(
                tool(&id(f), "calc"),
                &[
                    ("seed", json!(f)),
                    ("fail", json!(false)),
                    ("yield", json!(false)),
                ],
            );
            nodes.push(with_map(n, &[("why", &format!("{}.error", id(i)))]));
        }
    }
    request(nodes, "n0", json!({}))
}

/// The index of node `i`'s fallback node, if it has one: fallbacks follow
/// the regular nodes, in the order of the nodes they serve.
fn fallback_of(specs: &[Spec], i: usize) -> Option<usize> {
    let has = |s: &Spec| s.fallback && s.branch.is_none();
    if !has(&specs[i]) {
        return None;
    }
    Some(specs.len() + specs[..i].iter().filter(|s| has(s)).count())
}

/// The node function both the runner and the reference use.
fn calc(input: &Map<String, Value>) -> Result<Value, NodeError> {
    if input["fail"] == json!(true) {
        return Err(NodeError::tool(format!("n{} failed", input["seed"])));
    }
    let mut v = input["seed"].as_i64().unwrap_or(0);
    for (k, x) in input {
        if k.starts_with('d') {
            v += x.as_i64().unwrap_or(0);
        }
    }
    Ok(json!({"v": v % 1000}))
}

/// What the reference evaluator predicts.
struct Expected {
    outputs: Map<String, Value>,
    ran: usize,
    /// A node with `on_error: abort` is reached and fails.
    aborts: bool,
    final_output: Value,
}

/// Sequential reference: nodes in index order (every edge points forward).
fn reference(specs: &[Spec]) -> Expected {
    #[derive(Clone, PartialEq)]
    enum St {
        Done(Value),
        Skipped,
    }
    let n = specs.len();
    // control[i]: (source, kind) with kind 0 = next, 1 = true side, 2 = false side.
    let mut control: Vec<Vec<(usize, u8)>> = vec![Vec::new(); n];
    let mut data: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    let mut depended: Vec<bool> = vec![false; n];
    for (i, s) in specs.iter().enumerate() {
        if let Some(x) = s.next {
            control[x].push((i, 0));
        }
        if let Some((r, _, t, f)) = s.branch {
            data[i].insert(r);
            if let Some(t) = t {
                control[t].push((i, 1));
            }
            if let Some(f) = f {
                control[f].push((i, 2));
            }
        }
        for &r in &s.reads {
            data[i].insert(r);
        }
    }
    for i in 0..n {
        for &(s, _) in &control[i] {
            depended[s] = true;
        }
        for &s in &data[i] {
            depended[s] = true;
        }
    }
    let mut st: Vec<St> = Vec::with_capacity(n);
    let mut taken: Vec<Option<bool>> = vec![None; n];
    let mut ran = 0;
    let mut aborts = false;
    let mut fallback_ran: Vec<(usize, Value)> = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let live = |j: usize| matches!(st[j], St::Done(_));
        let runs = if !control[i].is_empty() {
            control[i].iter().any(|&(j, k)| {
                live(j)
                    && match k {
                        0 => true,
                        1 => taken[j] == Some(true),
                        _ => taken[j] == Some(false),
                    }
            })
        } else if !data[i].is_empty() {
            data[i].iter().any(|&j| live(j))
        } else {
            true
        };
        if !runs {
            st.push(St::Skipped);
            continue;
        }
        ran += 1;
        let v_of = |j: usize| match &st[j] {
            St::Done(v) => v.get("v").cloned().unwrap_or(Value::Null),
            St::Skipped => Value::Null,
        };
        if let Some((r, k, t, f)) = s.branch {
            let holds = v_of(r).as_i64().is_some_and(|v| v > k);
            taken[i] = Some(holds);
            let target = if holds { t } else { f };
            st.push(St::Done(
                json!({"condition": holds, "taken": target.map(id)}),
            ));
            continue;
        }
        let mut input = Map::new();
        input.insert("seed".into(), json!(i));
        input.insert("fail".into(), json!(s.fails));
        for &r in &s.reads {
            input.insert(format!("d{r}"), v_of(r));
        }
        match calc(&input) {
            Ok(v) => st.push(St::Done(v)),
            Err(_) => match fallback_of(specs, i) {
                Some(f) => {
                    ran += 1;
                    let out = json!({"v": f % 1000});
                    fallback_ran.push((f, out.clone()));
                    st.push(St::Done(out));
                }
                None => {
                    if !s.skip {
                        aborts = true;
                    }
                    st.push(St::Done(Value::Null));
                }
            },
        }
    }
    let mut outputs = Map::new();
    let mut final_output = Value::Null;
    for (i, s) in st.iter().enumerate() {
        if let St::Done(v) = s {
            outputs.insert(id(i), v.clone());
            if !depended[i] {
                final_output = v.clone();
            }
        }
    }
    // Fallbacks are declared last and nothing depends on them.
    fallback_ran.sort_by_key(|(f, _)| *f);
    for (f, v) in fallback_ran {
        outputs.insert(id(f), v.clone());
        final_output = v;
    }
    Expected {
        outputs,
        ran,
        aborts,
        final_output,
    }
}

fn deps_of(specs: &[Spec], i: usize) -> BTreeSet<usize> {
    if i >= specs.len() {
        // A fallback depends on the node it serves.
        return (0..specs.len())
            .filter(|&o| fallback_of(specs, o) == Some(i))
            .collect();
    }
    let mut d: BTreeSet<usize> = specs[i].reads.iter().copied().collect();
    if let Some((r, ..)) = specs[i].branch {
        d.insert(r);
    }
    for (j, s) in specs.iter().enumerate() {
        if s.next == Some(i) {
            d.insert(j);
        }
        if let Some((_, _, t, f)) = s.branch
            && (t == Some(i) || f == Some(i))
        {
            d.insert(j);
        }
    }
    d
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_dags_match_the_reference(specs in dag(300), max_conc in 1usize..64) {
        let req = build(&specs);
        let expected = reference(&specs);
        let calls: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let seen = calls.clone();
        let runner = runner_fn(move |call: NodeCall| {
            let seen = seen.clone();
            async move {
                *seen.lock().unwrap().entry(call.node_id.to_string()).or_default() += 1;
                if call.input["yield"] == json!(true) {
                    tokio::task::yield_now().await;
                }
                calc(&call.input.to_map())
            }
        });
        let config = ChainConfig { max_concurrency: max_conc, ..ChainConfig::default() };
        let mut events: Vec<(u64, String, String)> = Vec::new();
        let resp = runtime().block_on(async {
            Engine::new(runner).with_config(config)
                .run(&req, |e: &Event<'_>| events.push((e.seq, e.node_id.to_owned(), e.phase.to_string())), CancellationToken::new())
                .await
        }).unwrap();

        // seq: 0, 1, 2, …
        for (k, e) in events.iter().enumerate() {
            prop_assert_eq!(e.0, k as u64);
        }
        // Each node is called at most once.
        for (node, count) in calls.lock().unwrap().iter() {
            prop_assert_eq!(*count, 1, "{} called {} times", node, count);
        }
        // A node starts only after each dependency's terminal event.
        let mut terminal_at: HashMap<&str, u64> = HashMap::new();
        for (seq, node, phase) in &events {
            if phase == "start" {
                let i: usize = node[1..].parse().unwrap();
                for d in deps_of(&specs, i) {
                    let at = terminal_at.get(id(d).as_str());
                    prop_assert!(at.is_some_and(|t| t < seq), "{} started before n{} settled", node, d);
                }
                prop_assert!(!terminal_at.contains_key(node.as_str()), "{} started after settling", node);
            } else {
                prop_assert!(terminal_at.insert(node, *seq).is_none(), "{} settled twice", node);
            }
        }
        prop_assert_eq!(resp.success, !expected.aborts, "{:?}", resp.error);
        if resp.success {
            prop_assert_eq!(&resp.outputs, &expected.outputs);
            prop_assert_eq!(resp.nodes_run as usize, expected.ran);
            prop_assert_eq!(&resp.final_output, &expected.final_output);
            let fallbacks = (0..specs.len()).filter(|&i| fallback_of(&specs, i).is_some()).count();
            prop_assert_eq!(terminal_at.len(), specs.len() + fallbacks);
        } else {
            let err = resp.error.unwrap();
            prop_assert_eq!(&err["code"], "chain_node_error");
            let culprit: usize = err["node_id"].as_str().unwrap()[1..].parse().unwrap();
            prop_assert!(specs[culprit].fails && !specs[culprit].skip && fallback_of(&specs, culprit).is_none());
        }
    }

    #[test]
    fn cyclic_graphs_are_always_refused(n in 1usize..40, raw in proptest::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<bool>()), 0..80)) {
        // Random edges in any direction, as input_map reads or next_node.
        let mut adj: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
        let mut nodes: Vec<ChainNode> = (0..n).map(|i| tool(&id(i), "x")).collect();
        for (a, b, as_next) in &raw {
            let (a, b) = (a.index(n), b.index(n));
            if *as_next && nodes[a].next_node.is_empty() {
                nodes[a].next_node = id(b);
                adj[a].insert(b);
            } else if !*as_next {
                nodes[b].input_map.insert(format!("from{a}"), json!(format!("{}.output", id(a))));
                adj[a].insert(b);
            }
        }
        // Reference: a graph is acyclic iff repeatedly removing sources empties it.
        let mut indeg = vec![0; n];
        for s in &adj { for &t in s { indeg[t] += 1; } }
        let sources: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
        let mut stack = sources.clone();
        let mut removed = 0;
        while let Some(i) = stack.pop() {
            removed += 1;
            for &t in &adj[i] { indeg[t] -= 1; if indeg[t] == 0 { stack.push(t); } }
        }
        let cyclic = removed < n;
        let entry = sources.first().copied().unwrap_or(0);
        let req = request(nodes, &id(entry), json!({}));
        match validate(&req, &ChainConfig::default()) {
            Err(ValidationError::Cycle { path }) => {
                prop_assert!(cyclic, "refused an acyclic graph");
                prop_assert!(path.len() >= 2 && path.first() == path.last());
                for w in path.windows(2) {
                    let a: usize = w[0][1..].parse().unwrap();
                    let b: usize = w[1][1..].parse().unwrap();
                    prop_assert!(adj[a].contains(&b), "no edge {} -> {}", w[0], w[1]);
                }
            }
            Err(other) => prop_assert!(false, "unexpected error {other}"),
            Ok(_) => prop_assert!(!cyclic, "accepted a cyclic graph"),
        }
        let _ = ErrorCode::CHAIN_CYCLE;
    }
}

#[test]
fn the_reference_agrees_with_a_hand_checked_case() {
    // n0 -> n1 (reads n0) ; n2 is a branch on n1 (v = 1 + 0 = 1 > 5? no) -> false side n4.
    let specs = vec![
        Spec {
            reads: vec![],
            next: None,
            branch: None,
            fails: false,
            skip: true,
            yields: false,
            fallback: false,
        },
        Spec {
            reads: vec![0],
            next: None,
            branch: None,
            fails: false,
            skip: true,
            yields: false,
            fallback: false,
        },
        Spec {
            reads: vec![],
            next: None,
            branch: Some((1, 5, Some(3), Some(4))),
            fails: false,
            skip: true,
            yields: false,
            fallback: false,
        },
        Spec {
            reads: vec![],
            next: None,
            branch: None,
            fails: false,
            skip: true,
            yields: false,
            fallback: false,
        },
        Spec {
            reads: vec![],
            next: None,
            branch: None,
            fails: false,
            skip: true,
            yields: false,
            fallback: false,
        },
    ];
    let e = reference(&specs);
    assert_eq!(e.outputs["n1"], json!({"v": 1}));
    assert!(!e.outputs.contains_key("n3"));
    assert_eq!(e.outputs["n4"], json!({"v": 4}));
    assert_eq!(e.ran, 4);
    let _: NodeResult = Ok(Value::Null);
}

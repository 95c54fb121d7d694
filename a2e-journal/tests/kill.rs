//! What survives SIGKILL: a child process (this test binary, run again as
//! `child_entry`) writes to a journal and is killed mid-write; the file is
//! reopened and checked, and a chain killed while its third node runs is
//! resumed without running its finished nodes again.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use a2e_chain::{Engine, NodeCall, NodeError, RunOptions, runner_fn};
use a2e_journal::{
    Durability, Journal, NewRun, NodeKey, NodeOutcome, RunId, RunItem, RunKind, RunStatus,
    SqliteJournal, SqliteOptions,
};
use a2e_proto::{ChainNode, ChainRequest, NodeKind};
use common::chain::{JournalObserver, JournalSink, resume_of};
use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const CHILD: &str = "A2E_JOURNAL_TEST_CHILD";

/// Starts this binary again as `child_entry` with `args`.
fn spawn_child(args: &str) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env(CHILD, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// The lines the child printed after `CHILD `, until `n` were read.
fn read_child_lines(
    child: &mut Child,
    n: usize,
) -> (Vec<String>, impl Iterator<Item = String> + use<>) {
    let mut lines = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        // libtest may print `test child_entry ... ` before the first line.
        .filter_map(|l| l.find("CHILD ").map(|at| l[at + 6..].to_owned()));
    let mut got = Vec::new();
    while got.len() < n {
        got.push(lines.next().expect("the child stopped early"));
    }
    (got, lines)
}

fn options(durability: &str) -> SqliteOptions {
    SqliteOptions {
        durability: match durability {
            "full" => Durability::PowerLoss,
            _ => Durability::ProcessCrash,
        },
        ..SqliteOptions::default()
    }
}

/// Not a test of its own: the child process's entry point, doing nothing
/// unless the parent set `A2E_JOURNAL_TEST_CHILD`.
#[test]
fn child_entry() {
    let Ok(args) = std::env::var(CHILD) else {
        return;
    };
    let args: Vec<&str> = args.split(' ').collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    match args.as_slice() {
        ["writer", root, durability] => rt.block_on(writer(Path::new(root), durability)),
        ["chain", root] => rt.block_on(chain_child(Path::new(root))),
        other => panic!("unknown child mode {other:?}"),
    }
}

/// Journals nodes one after another, printing each once its result is
/// acknowledged, until killed.
async fn writer(root: &Path, durability: &str) {
    let j = SqliteJournal::open_in(root, options(durability))
        .await
        .unwrap();
    let run = RunId::parse("w").unwrap();
    j.create_run(NewRun {
        run_id: run.clone(),
        kind: RunKind::Chain,
        agent: "a".into(),
        request: json!({}),
    })
    .await
    .unwrap();
    let mut out = std::io::stdout().lock();
    for i in 0u64.. {
        let key = NodeKey::new(run.clone(), &format!("n{i}"), 1).unwrap();
        j.node_started(&key).await.unwrap();
        drop(j.append_event(&run, i, &json!({"i": i})));
        j.node_finished(&key, &NodeOutcome::output(json!(i)))
            .await
            .unwrap();
        writeln!(out, "CHILD {i}").unwrap();
        out.flush().unwrap();
    }
}

async fn kill_and_check(durability: &str) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let mut child = spawn_child(&format!("writer {root} {durability}"));
    let (mut acked, rest) = read_child_lines(&mut child, 40);
    // SIGKILL while it is in the middle of further writes.
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success());
    acked.extend(rest);

    let j = SqliteJournal::open_in(dir.path(), SqliteOptions::default())
        .await
        .unwrap();
    let state = j
        .show_run(&RunId::parse("w").unwrap())
        .await
        .unwrap()
        .unwrap();
    for i in &acked {
        let (_, outcome) = state
            .result_of(&format!("n{i}"))
            .unwrap_or_else(|| panic!("acknowledged result n{i} lost"));
        assert_eq!(
            outcome,
            &NodeOutcome::output(json!(i.parse::<u64>().unwrap()))
        );
    }
    let finished = state.nodes.iter().filter(|n| n.outcome.is_some()).count();
    assert!(
        finished <= acked.len() + 1,
        "{finished} results for {} acknowledgements",
        acked.len()
    );
    // At most the one being written when the kill came has no result.
    assert!(state.interrupted().count() <= 1);
    // Every acknowledged node's event precedes its result in the queue.
    assert!(state.summary.next_seq >= acked.len() as u64);
}

#[tokio::test]
async fn acknowledged_results_survive_sigkill() {
    kill_and_check("normal").await;
}

#[tokio::test]
async fn acknowledged_results_survive_sigkill_with_full_sync() {
    kill_and_check("full").await;
}

/// a -> b -> c -> d -> e; each node appends `<id> <attempt>` to
/// `root/effects` (its side effect) and returns `{"n": …}`; `c` sleeps a
/// minute the first time.
fn chain_request() -> ChainRequest {
    let ids = ["a", "b", "c", "d", "e"];
    let nodes = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let mut n = ChainNode::new(id, NodeKind::TOOL, "effect");
            if let Some(prev) = i.checked_sub(1).map(|p| ids[p]) {
                n.input_map
                    .insert("prev".into(), json!(format!("{prev}.output.n")));
            }
            if let Some(next) = ids.get(i + 1) {
                n.next_node = (*next).into();
            }
            n
        })
        .collect();
    ChainRequest {
        id: "req-1".into(),
        nodes,
        entry_node: "a".into(),
        ..ChainRequest::default()
    }
}

fn effect_runner(root: &Path, sleep_in_c: bool) -> impl a2e_chain::NodeRunner {
    let effects = root.join("effects");
    runner_fn(move |call: NodeCall| {
        let effects = effects.clone();
        async move {
            let id = call.wire_id();
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&effects)
                .map_err(|e| NodeError::tool(e.to_string()))?;
            writeln!(f, "{id} {}", call.attempt).map_err(|e| NodeError::tool(e.to_string()))?;
            if id == "c" && sleep_in_c {
                println!("CHILD c running");
                std::io::stdout().flush().unwrap();
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            let prev = call.input.get("prev").and_then(|v| v.as_u64()).unwrap_or(0);
            Ok(json!({"n": prev + 1}))
        }
    })
}

/// Runs `req` durably on `journal` as run `run`, resumed from `options`.
async fn run_journaled(
    journal: Arc<dyn Journal>,
    run: &RunId,
    req: &ChainRequest,
    root: &Path,
    sleep_in_c: bool,
    resume: Option<a2e_chain::Resume>,
) -> a2e_proto::ChainResponse {
    let engine = Engine::new(effect_runner(root, sleep_in_c));
    let plan = engine.validate(req).unwrap();
    let sink = JournalSink {
        journal: journal.clone(),
        run: run.clone(),
        req_id: req.id.clone(),
    };
    let observer = Arc::new(JournalObserver {
        journal: journal.clone(),
        run: run.clone(),
        await_start: true,
        defer_results: false,
        pending: Default::default(),
    });
    let resp = engine
        .run_plan_with(
            &plan,
            sink,
            CancellationToken::new(),
            RunOptions {
                resume,
                observer: Some(observer),
            },
        )
        .await;
    let status = if resp.success {
        RunStatus::Succeeded
    } else {
        RunStatus::Failed
    };
    journal
        .finish_run(run, status, &serde_json::to_value(&resp).unwrap())
        .await
        .unwrap();
    resp
}

async fn chain_child(root: &Path) {
    let j: Arc<dyn Journal> = Arc::new(
        SqliteJournal::open_in(root, SqliteOptions::default())
            .await
            .unwrap(),
    );
    let run = RunId::parse("chain1").unwrap();
    let req = chain_request();
    j.create_run(NewRun {
        run_id: run.clone(),
        kind: RunKind::Chain,
        agent: "agent-1".into(),
        request: serde_json::to_value(&req).unwrap(),
    })
    .await
    .unwrap();
    run_journaled(j, &run, &req, root, true, None).await;
}

/// The child runs the chain until `c` is running and is killed there; the
/// parent resumes it from the journal.
async fn kill_chain_and_resume(
    c_is_idempotent: bool,
) -> (tempfile::TempDir, Vec<String>, Vec<RunItem>) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_child(&format!("chain {}", dir.path().display()));
    let (lines, _) = read_child_lines(&mut child, 1);
    assert_eq!(lines, ["c running"]);
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success());

    let journal: Arc<dyn Journal> = Arc::new(
        SqliteJournal::open_in(dir.path(), SqliteOptions::default())
            .await
            .unwrap(),
    );
    let loaded = journal.load_unfinished().await.unwrap();
    assert!(loaded.corrupt.is_empty());
    assert_eq!(loaded.items.len(), 1);
    let state = &loaded.items[0];
    assert_eq!(state.summary.run_id.as_str(), "chain1");
    let req: ChainRequest = serde_json::from_value(state.request.clone()).unwrap();
    assert_eq!(req.nodes, chain_request().nodes);
    // a and b finished; c started and left no result.
    assert!(state.result_of("a").is_some() && state.result_of("b").is_some());
    let interrupted: Vec<_> = state.interrupted().map(|n| n.node_id.clone()).collect();
    assert_eq!(interrupted, ["c"]);

    let resume = resume_of(&*journal, state, |_| c_is_idempotent).await;
    run_journaled(
        journal.clone(),
        &state.summary.run_id,
        &req,
        dir.path(),
        false,
        Some(resume),
    )
    .await;

    let effects: Vec<String> = std::fs::read_to_string(dir.path().join("effects"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let items: Vec<RunItem> = journal
        .subscribe(&state.summary.run_id, 0)
        .map(|i| i.unwrap())
        .collect()
        .await;
    (dir, effects, items)
}

fn phases(items: &[RunItem]) -> Vec<String> {
    items
        .iter()
        .filter_map(|i| match i {
            RunItem::Event(e) => Some(format!(
                "{}:{}",
                e.event["node_id"].as_str().unwrap(),
                e.event["phase"].as_str().unwrap()
            )),
            RunItem::Finished { .. } => None,
        })
        .collect()
}

#[tokio::test]
async fn a_chain_killed_mid_run_resumes_without_running_finished_nodes_again() {
    let (_dir, effects, items) = kill_chain_and_resume(true).await;
    // a and b ran once; c, which may have run, ran again with the same
    // idempotency key (attempt 1); d and e once.
    assert_eq!(effects, ["a 1", "b 1", "c 1", "c 1", "d 1", "e 1"]);
    // The re-attached client: every seq once, each start and end once, then the answer.
    let seqs: Vec<u64> = items
        .iter()
        .filter_map(|i| match i {
            RunItem::Event(e) => Some(e.seq),
            RunItem::Finished { .. } => None,
        })
        .collect();
    assert_eq!(seqs, (0..10).collect::<Vec<_>>());
    assert_eq!(
        phases(&items),
        [
            "a:start", "a:done", "b:start", "b:done", "c:start", "c:done", "d:start", "d:done",
            "e:start", "e:done"
        ]
    );
    match items.last().unwrap() {
        RunItem::Finished { status, answer } => {
            assert_eq!(*status, RunStatus::Succeeded);
            assert_eq!(answer["final_output"], json!({"n": 5}));
            assert_eq!(answer["outputs"]["b"], json!({"n": 2}));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_node_that_must_not_repeat_fails_as_interrupted() {
    let (_dir, effects, items) = kill_chain_and_resume(false).await;
    assert_eq!(effects, ["a 1", "b 1", "c 1"]);
    assert_eq!(
        phases(&items),
        [
            "a:start", "a:done", "b:start", "b:done", "c:start", "c:error"
        ]
    );
    match items.last().unwrap() {
        RunItem::Finished { status, answer } => {
            assert_eq!(*status, RunStatus::Failed);
            assert_eq!(answer["error"]["node_code"], "interrupted");
            assert_eq!(answer["error"]["node_id"], "c");
        }
        other => panic!("{other:?}"),
    }
}

//! Event sinks that batch: when the engine flushes them, and the events they encode.

use crate::common;

use a2e_chain::{ChainEventSink, Engine, Event};
use a2e_proto::{Message, decode};
use common::*;
use serde_json::json;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// What a [`Batching`] sink saw.
#[derive(Default)]
struct Log {
    pending: Vec<String>,
    batches: Vec<Vec<String>>,
    wire: Vec<a2e_proto::ChainEvent>,
}

/// Encodes each event and keeps the events seen between flushes as one batch.
#[derive(Clone, Default)]
struct Batching(Arc<Mutex<Log>>);

impl ChainEventSink for Batching {
    fn event(&mut self, event: &Event<'_>) {
        self.0.lock().unwrap().event(event);
    }

    fn flush(&mut self) {
        self.0.lock().unwrap().flush();
    }
}

impl Log {
    fn event(&mut self, event: &Event<'_>) {
        let line = event.with_wire("req-1", |wire| serde_json::to_vec(wire).unwrap());
        let Ok(Message::ChainEvent(got)) = decode(&line) else {
            panic!("not a chain/event: {}", String::from_utf8_lossy(&line));
        };
        // The borrowed event is the message `to_wire` makes, but for its
        // own id and clock.
        let mut expected = event.to_wire("req-1");
        expected.id.clone_from(&got.id);
        expected.ts = got.ts;
        assert_eq!(got, expected);
        self.pending.push(format!("{}:{}", got.node_id, got.phase));
        self.wire.push(got);
    }

    fn flush(&mut self) {
        if !self.pending.is_empty() {
            self.batches.push(std::mem::take(&mut self.pending));
        }
    }
}

#[tokio::test]
async fn a_batching_sink_is_flushed_before_each_wait_and_at_the_end() {
    let req = request(
        vec![
            then(with_input(tool("a", "echo"), &[("x", json!(1))]), "b"),
            then(with_input(tool("b", "sleep"), &[("ms", json!(5))]), "c"),
            with_map(tool("c", "echo"), &[("from_b", "b.output.ms")]),
        ],
        "a",
        json!({}),
    );
    let engine = Engine::new(Script::default());
    let sink = Batching::default();
    let resp = engine
        .run(&req, sink.clone(), CancellationToken::new())
        .await
        .unwrap();
    let sink = sink.0.lock().unwrap();
    assert!(resp.success, "{:?}", resp.error);
    assert!(
        sink.pending.is_empty(),
        "events left unflushed: {:?}",
        sink.pending
    );
    assert_eq!(
        sink.batches,
        [
            // `a` ran on its first poll; `b` sleeps: the engine waits.
            vec!["a:start", "a:done", "b:start"],
            // `b` came back; `c` ran at once; the run ended.
            vec!["b:done", "c:start", "c:done"],
        ]
    );
    assert_eq!(sink.wire[5].output, json!({"from_b": 5}));
    let seqs: Vec<u64> = sink.wire.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4, 5]);
}

#[tokio::test]
async fn a_map_item_event_names_the_item() {
    let req = request(
        vec![map("m", "input.xs", "t"), tool("t", "echo")],
        "m",
        json!({"xs": [10, 20]}),
    );
    let sink = Batching::default();
    let resp = Engine::new(Script::default())
        .run(&req, sink.clone(), CancellationToken::new())
        .await
        .unwrap();
    let sink = sink.0.lock().unwrap();
    assert!(resp.success, "{:?}", resp.error);
    let all: Vec<String> = sink.batches.concat();
    assert!(all.contains(&"t[0]:done".to_owned()), "{all:?}");
    assert!(all.contains(&"t[1]:done".to_owned()), "{all:?}");
}

/// Counts events and, every `every` of them, says it handed them on; it
/// records, per event, how often a task beside the chain has run.
struct Handing {
    every: usize,
    seen: usize,
    handed: bool,
    beside: Arc<std::sync::atomic::AtomicUsize>,
    beside_at: Arc<Mutex<Vec<usize>>>,
}

impl ChainEventSink for Handing {
    fn event(&mut self, _: &Event<'_>) {
        self.seen += 1;
        if self.seen.is_multiple_of(self.every) {
            self.handed = true;
        }
        let now = self.beside.load(std::sync::atomic::Ordering::SeqCst);
        self.beside_at.lock().unwrap().push(now);
    }

    fn handed_on(&mut self) -> bool {
        std::mem::take(&mut self.handed)
    }
}

/// On one thread, a run of nodes that all finish without waiting lets
/// other tasks run when its sink handed events on (a writer woken there
/// writes them while the chain goes on), and not otherwise.
#[test]
fn a_sink_that_handed_events_on_lets_other_tasks_run_during_the_chain() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let nodes: Vec<_> = (0..300)
        .map(|i| {
            let node = tool(&format!("n{i}"), "echo");
            if i < 299 {
                then(node, &format!("n{}", i + 1))
            } else {
                node
            }
        })
        .collect();
    let req = request(nodes, "n0", json!({}));
    for every in [100, usize::MAX] {
        let beside = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let beside_at = Arc::new(Mutex::new(Vec::new()));
        let sink = Handing {
            every,
            seen: 0,
            handed: false,
            beside: beside.clone(),
            beside_at: beside_at.clone(),
        };
        rt.block_on(async {
            let counter = beside.clone();
            let stop = CancellationToken::new();
            let stopped = stop.clone();
            let other = tokio::spawn(async move {
                while !stopped.is_cancelled() {
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    tokio::task::yield_now().await;
                }
            });
            // The spawned task has not run yet: the chain starts first.
            let resp = Engine::new(Script::default())
                .run(&req, sink, CancellationToken::new())
                .await
                .unwrap();
            assert!(resp.success, "{:?}", resp.error);
            stop.cancel();
            other.await.unwrap();
        });
        let at = beside_at.lock().unwrap();
        assert_eq!(at.len(), 600);
        let last = at.last().copied().unwrap();
        if every == usize::MAX {
            assert_eq!(last, 0, "the chain yielded with nothing handed on");
        } else {
            // Handed on after events 100, 200, … 500: five chances to run.
            assert!(last >= 5, "the task beside ran {last} times");
        }
    }
}

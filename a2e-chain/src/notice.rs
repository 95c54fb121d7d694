//! Notices: what a runner call tells its chain while it runs, beside its
//! result — a call that waits for a person's decision says so — emitted as
//! an event of its node (with its own phase, its data as the event's
//! `output`) in the chain's `seq` order.

use std::sync::Arc;

use a2e_proto::ChainPhase;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;

/// A notice on its way to the chain's events.
#[derive(Debug)]
pub(crate) struct Notice {
    pub node_id: Arc<str>,
    pub item: Option<usize>,
    pub phase: ChainPhase,
    pub data: Value,
}

/// A runner call's handle to its chain's events (see the module docs), in
/// [`NodeCall::notices`](crate::NodeCall::notices) when the engine's
/// [`ChainConfig::notices`](crate::ChainConfig::notices) is on. Cheap to
/// clone; a notice sent after the chain ended is dropped.
#[derive(Debug, Clone)]
pub struct Notices {
    pub(crate) tx: UnboundedSender<Notice>,
    pub(crate) node_id: Arc<str>,
    pub(crate) item: Option<usize>,
}

impl Notices {
    /// Emits an event of the call's node (or map item) in `phase`, with
    /// `data` as its `output`.
    pub fn notify(&self, phase: ChainPhase, data: Value) {
        let _ = self.tx.send(Notice {
            node_id: self.node_id.clone(),
            item: self.item,
            phase,
            data,
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use a2e_proto::{ChainPhase, ChainRequest};
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use crate::{ChainConfig, Engine, Event, NodeCall, runner_fn};

    fn chain() -> ChainRequest {
        serde_json::from_value(json!({"type": "chain/req", "id": "r", "entry_node": "a",
            "nodes": [{"node_id": "a", "kind": "tool", "name": "t", "next_node": "b"},
                      {"node_id": "b", "kind": "tool", "name": "t"}]}))
        .unwrap()
    }

    /// Runs the chain with notices `on`; each event as `node:phase:seq`.
    async fn events(on: bool) -> Vec<String> {
        let engine = Engine::new(runner_fn(|call: NodeCall| async move {
            if let Some(notices) = &call.notices {
                notices.notify(
                    ChainPhase::new("waiting"),
                    json!({"why": call.node_id.as_ref()}),
                );
            }
            Ok(json!(null))
        }))
        .with_config(ChainConfig {
            notices: on,
            ..ChainConfig::default()
        });
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = {
            let seen = seen.clone();
            move |e: &Event<'_>| {
                seen.lock()
                    .unwrap()
                    .push(format!("{}:{}:{}", e.node_id, e.phase, e.seq));
            }
        };
        let resp = engine
            .run(&chain(), sink, CancellationToken::new())
            .await
            .unwrap();
        assert!(resp.success);
        seen.lock().unwrap().clone()
    }

    #[tokio::test]
    async fn a_calls_notice_is_an_event_of_its_node_in_seq_order() {
        let on = events(true).await;
        assert_eq!(
            on,
            [
                "a:start:0",
                "a:waiting:1",
                "a:done:2",
                "b:start:3",
                "b:waiting:4",
                "b:done:5"
            ]
        );
        let off = events(false).await;
        assert_eq!(off, ["a:start:0", "a:done:1", "b:start:2", "b:done:3"]);
    }
}

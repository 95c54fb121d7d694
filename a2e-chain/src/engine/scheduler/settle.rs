//! Results and their consequences: `on_error`, settling, skipping,
//! fallbacks standing in, and stopping the chain.

use a2e_proto::{ChainPhase, ErrorCode};
use serde_json::{Map, Value};

use super::{Run, Stop, Work};
use crate::engine::state::Status;
use crate::events::ChainEventSink;
use crate::graph::{ANY_CONTROL, CONTROL, DATA, FALLBACK, ON_FALSE, ON_TRUE, Policy, Spec};
use crate::prefetch::prefetch;
use crate::runner::NodeResult;

impl<S: ChainEventSink> Run<'_, '_, S> {
    pub(super) fn finish_node(&mut self, i: u32, result: NodeResult) {
        let plan = self.plan;
        let Some(node) = plan.nodes.get(i as usize) else {
            return;
        };
        let (Some(slot), Some(out)) = (
            self.slots.get_mut(i as usize),
            self.outs.get_mut(i as usize),
        ) else {
            return;
        };
        if slot.status != Status::Running {
            return;
        }
        match result {
            Ok(output) => {
                out.output = output;
                out.readable = true;
                slot.status = Status::Done;
                self.ev.progress.settled += 1;
                self.ev
                    .emit(&node.id, None, ChainPhase::DONE, Some(&out.output), None);
                self.settle(i);
            }
            Err(error) => {
                if node.policy == Policy::Skip {
                    // Settled by this very event.
                    self.ev.progress.settled += 1;
                }
                self.ev.emit(
                    &node.id,
                    None,
                    ChainPhase::ERROR,
                    None,
                    Some(&error.message),
                );
                match node.policy {
                    Policy::Abort => {
                        slot.status = Status::Cancelled;
                        let mut detail = Map::new();
                        detail.insert(
                            "code".into(),
                            Value::from(ErrorCode::CHAIN_NODE_ERROR.as_str()),
                        );
                        detail.insert(
                            "message".into(),
                            Value::from(format!("node `{}` failed: {}", node.id, error.message)),
                        );
                        detail.insert("node_id".into(), Value::from(&*node.id));
                        detail.insert("node_code".into(), Value::from(error.code.as_str()));
                        self.fail(detail, "chain aborted");
                    }
                    Policy::Skip => {
                        slot.status = Status::Done;
                        slot.failed = true;
                        out.readable = true;
                        out.output = Value::Null;
                        out.error = Some(Box::new(error));
                        self.settle(i);
                    }
                    Policy::Fallback(f) => {
                        slot.status = Status::Failed;
                        slot.failed = true;
                        out.readable = true;
                        out.error = Some(Box::new(error));
                        self.signal(f, true, true);
                        self.drain_settles();
                    }
                }
            }
        }
    }

    /// One dependency of `t` settled.
    pub(super) fn signal(&mut self, t: u32, ctrl_live: bool, data_live: bool) {
        let Some(slot) = self.slots.get_mut(t as usize) else {
            return;
        };
        slot.pending = slot.pending.saturating_sub(1);
        slot.ctrl_live += u32::from(ctrl_live);
        slot.data_live += u32::from(data_live);
        if slot.pending > 0 || slot.status != Status::Waiting {
            return;
        }
        let runs = if slot.ctrl_in > 0 {
            slot.ctrl_live > 0
        } else if slot.data_in > 0 {
            slot.data_live > 0
        } else {
            true
        };
        if runs {
            self.ready.push(Work::Node(t));
        } else {
            slot.status = Status::Skipped;
            self.ev.progress.settled += 1;
            let id = self.plan.nodes.get(t as usize).map_or("", |n| &*n.id);
            self.ev.emit(id, None, ChainPhase::SKIP, None, None);
            self.settle_stack.push(t);
        }
    }

    /// Node `i` settled: tell its dependents.
    pub(super) fn settle(&mut self, i: u32) {
        self.settle_stack.push(i);
        self.drain_settles();
    }

    pub(super) fn drain_settles(&mut self) {
        let plan = self.plan;
        while let Some(i) = self.settle_stack.pop() {
            let Some(slot) = self.slots.get(i as usize) else {
                continue;
            };
            let completed = slot.status == Status::Done;
            let failed = slot.failed;
            let is_fallback = slot.fallback;
            // A branch whose condition failed takes neither side (whatever
            // stands in for its output).
            let holds = if slot.branch && !failed {
                self.outs
                    .get(i as usize)
                    .and_then(|o| o.output.get("condition"))
                    .and_then(Value::as_bool)
            } else {
                None
            };
            // The dependents' slots are scattered: ask for all of them
            // before touching the first.
            for e in plan.out_edges(i) {
                prefetch(self.slots.get(e.to as usize));
            }
            for e in plan.out_edges(i) {
                if e.flags & FALLBACK != 0 && failed {
                    continue; // signalled when the node failed
                }
                let ctrl = completed
                    && (e.flags & CONTROL != 0
                        || (e.flags & ON_TRUE != 0 && holds == Some(true))
                        || (e.flags & ON_FALSE != 0 && holds == Some(false)));
                let ctrl = ctrl && e.flags & ANY_CONTROL != 0;
                let data = completed && e.flags & DATA != 0;
                self.signal(e.to, ctrl, data);
            }
            if is_fallback {
                let Some(o) = plan.nodes.get(i as usize).and_then(|n| n.owner) else {
                    continue;
                };
                let stand_in = match self.outs.get(i as usize) {
                    Some(out) if completed => out.output.clone(),
                    _ => Value::Null,
                };
                if let (Some(owner), Some(out)) = (
                    self.slots.get_mut(o as usize),
                    self.outs.get_mut(o as usize),
                ) && owner.status == Status::Failed
                {
                    out.output = stand_in;
                    out.readable = true;
                    owner.status = Status::Done;
                    self.ev.progress.settled += 1;
                    self.settle_stack.push(o);
                }
            }
        }
    }

    pub(super) fn stop(&mut self, why: Stop) {
        let (code, message) = match why {
            Stop::Timeout => (
                ErrorCode::TIMEOUT,
                format!("chain exceeded its timeout of {} s", self.timeout_secs),
            ),
            Stop::Cancelled => (ErrorCode::CANCELLED, "chain cancelled".to_owned()),
            Stop::Stuck => (
                ErrorCode::RUNTIME_ERROR,
                "internal error: no node can make progress".to_owned(),
            ),
        };
        let mut detail = Map::new();
        detail.insert("code".into(), Value::from(code.as_str()));
        detail.insert("message".into(), Value::from(message.clone()));
        detail.insert("node_id".into(), Value::from(""));
        self.fail(detail, &message);
    }

    /// The chain failed: record why, cancel every runner, and close every
    /// started node and item with an `error` event.
    pub(super) fn fail(&mut self, detail: Map<String, Value>, why: &str) {
        if self.failure.is_some() {
            return;
        }
        self.failure = Some(detail);
        self.cancel.cancel();
        let plan = self.plan;
        let why = format!("cancelled: {why}");
        for (node, slot) in plan.nodes.iter().zip(self.slots.iter_mut()) {
            if slot.status == Status::Running {
                slot.status = Status::Cancelled;
                self.ev
                    .emit(&node.id, None, ChainPhase::ERROR, None, Some(&why));
            }
        }
        for (m, run) in std::mem::take(&mut self.maps) {
            if let Some(Spec::Map(map)) = plan.nodes.get(m as usize).map(|n| &n.spec)
                && let Some(t) = plan.nodes.get(map.template as usize)
            {
                self.cancel_items(&t.id, run, &why);
            }
        }
        self.ready.clear();
    }
}

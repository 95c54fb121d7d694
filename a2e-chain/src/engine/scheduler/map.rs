//! Map nodes: fan-out over the items, bounded, results in item order.

use std::sync::Arc;

use a2e_proto::{ChainPhase, ErrorCode};
use serde_json::Value;

use super::{Run, Tag, Work, timeout_of};
use crate::context::Expr;
use crate::engine::resolve::Env;
use crate::engine::state::{Item, MapRun};
use crate::error::NodeError;
use crate::events::ChainEventSink;
use crate::graph::{Policy, Spec};
use crate::runner::{NodeCall, NodeResult};

impl<S: ChainEventSink> Run<'_, '_, S> {
    pub(super) fn start_map(&mut self, i: u32, items: &Expr) {
        let mut env = Env::new(
            &self.slots,
            &mut self.outs,
            &self.input,
            &mut self.input_var,
        );
        let list = match env.eval(items) {
            Ok(Value::Array(list)) => list,
            Ok(other) => {
                let what = a2e_proto::json_kind(&other);
                let e = NodeError::runtime(format!("items_path: expected a list, got {what}"));
                return self.finish_node(i, Err(e));
            }
            Err(e) => {
                return self.finish_node(i, Err(NodeError::runtime(format!("items_path: {e}"))));
            }
        };
        if list.len() > self.cfg.max_map_items {
            let e = NodeError::new(
                ErrorCode::SCHEMA_VIOLATION,
                format!(
                    "items_path yields {} items; the limit is {}",
                    list.len(),
                    self.cfg.max_map_items
                ),
            );
            return self.finish_node(i, Err(e));
        }
        if list.is_empty() {
            return self.finish_node(i, Ok(Value::Array(Vec::new())));
        }
        let results = list.iter().map(|_| Item::Waiting).collect();
        self.maps.insert(
            i,
            MapRun {
                items: list,
                results,
                next: 0,
                running: 0,
                done: 0,
                queued: true,
                cancel: Arc::new(self.cancel.child_token()),
            },
        );
        self.ready.push(Work::Items(i));
    }

    pub(super) fn start_items(&mut self, m: u32) {
        let plan = self.plan;
        let Some(Spec::Map(map)) = plan.nodes.get(m as usize).map(|n| &n.spec) else {
            return;
        };
        let Some(tnode) = plan.nodes.get(map.template as usize) else {
            return;
        };
        let max = self.cfg.max_concurrency.max(1);
        let per_map = self.cfg.map_concurrency.max(1);
        loop {
            let Some(run) = self.maps.get_mut(&m) else {
                return;
            };
            if run.next >= run.items.len() || run.running >= per_map {
                run.queued = false;
                return;
            }
            if self.tasks.len() >= max {
                // The global bound stopped us: stay queued.
                self.ready.push(Work::Items(m));
                return;
            }
            let k = run.next;
            run.next += 1;
            run.running += 1;
            if let Some(slot) = run.results.get_mut(k) {
                *slot = Item::Running;
            }
            let cancel = run.cancel.clone();
            self.nodes_run += 1;
            self.ev
                .emit(&tnode.id, Some(k), ChainPhase::START, None, None);
            let Some(item) = self.maps.get(&m).and_then(|r| r.items.get(k)) else {
                return;
            };
            let mut env = Env {
                item: Some((item, k)),
                ..Env::new(
                    &self.slots,
                    &mut self.outs,
                    &self.input,
                    &mut self.input_var,
                )
            };
            match env
                .input_of(tnode, plan.input_map(tnode), plan.shape(tnode))
                .and_then(|input| Ok((timeout_of(tnode, &input)?, input)))
            {
                Ok((timeout, input)) => {
                    let call = NodeCall {
                        node_id: tnode.id.clone(),
                        item: Some(k),
                        kind: tnode.kind().clone(),
                        name: tnode.name.clone(),
                        input,
                        cancel,
                        deadline: None,
                        attempt: 1,
                        notices: None,
                    };
                    self.launch(Tag::Item(m, k), call, timeout);
                }
                Err(e) => self.finish_item(m, k, Err(e)),
            }
        }
    }

    pub(super) fn finish_item(&mut self, m: u32, k: usize, result: NodeResult) {
        let plan = self.plan;
        let Some(Spec::Map(map)) = plan.nodes.get(m as usize).map(|n| &n.spec) else {
            return;
        };
        let Some(tnode) = plan.nodes.get(map.template as usize) else {
            return;
        };
        let Some(run) = self.maps.get_mut(&m) else {
            return;
        };
        let Some(slot) = run.results.get_mut(k) else {
            return;
        };
        if !matches!(slot, Item::Running) {
            return;
        }
        run.running -= 1;
        match result {
            Ok(output) => {
                *slot = Item::Done(output);
                run.done += 1;
                let output = match slot {
                    Item::Done(v) => Some(&*v),
                    _ => None,
                };
                self.ev
                    .emit(&tnode.id, Some(k), ChainPhase::DONE, output, None);
            }
            Err(error) => {
                self.ev.emit(
                    &tnode.id,
                    Some(k),
                    ChainPhase::ERROR,
                    None,
                    Some(&error.message),
                );
                if tnode.policy == Policy::Skip {
                    *slot = Item::Done(Value::Null);
                    run.done += 1;
                } else {
                    *slot = Item::Done(Value::Null);
                    if let Some(run) = self.maps.remove(&m) {
                        self.cancel_items(
                            &tnode.id,
                            run,
                            &format!(
                                "cancelled: map `{}` failed",
                                plan.nodes.get(m as usize).map_or("", |n| &*n.id)
                            ),
                        );
                    }
                    let e = NodeError::new(error.code, format!("item {k}: {}", error.message));
                    return self.finish_node(m, Err(e));
                }
            }
        }
        let Some(run) = self.maps.get_mut(&m) else {
            return;
        };
        if run.done == run.items.len() {
            if let Some(run) = self.maps.remove(&m) {
                let list = run
                    .results
                    .into_iter()
                    .map(|item| match item {
                        Item::Done(v) => v,
                        Item::Waiting | Item::Running => Value::Null,
                    })
                    .collect();
                self.finish_node(m, Ok(Value::Array(list)));
            }
        } else if run.next < run.items.len() && !run.queued {
            run.queued = true;
            self.ready.push(Work::Items(m));
        }
    }

    /// Emits `error` for a stopped map's running items and cancels them.
    pub(super) fn cancel_items(&mut self, template_id: &str, run: MapRun, why: &str) {
        run.cancel.cancel();
        for (k, item) in run.results.iter().enumerate() {
            if matches!(item, Item::Running) {
                self.ev
                    .emit(template_id, Some(k), ChainPhase::ERROR, None, Some(why));
            }
        }
    }
}

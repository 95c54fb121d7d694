//! Input resolution: expressions evaluated against the run's state, looking
//! each root up directly (see [`crate::context`]).

use a2e_proto::ErrorCode;
use jmespath::Rcvar;
use serde_json::Value;

use super::state::{Out, Slot, Status};
use crate::context::path::{self, RootRef};
use crate::context::{Expr, Root, jmes};
use crate::error::NodeError;
use crate::graph::Node;
use crate::input::{Keys, NodeInput};
use crate::prefetch::prefetch;

/// What expressions of one node see.
pub(crate) struct Env<'a> {
    pub slots: &'a [Slot],
    pub outs: &'a mut [Out],
    pub input: &'a Value,
    pub input_var: &'a mut Option<Rcvar>,
    /// `item` and `index`, in a map template.
    pub item: Option<(&'a Value, usize)>,
    /// The branch's upstream node, for `output`.
    pub upstream: Option<u32>,
}

impl<'a> Env<'a> {
    /// What expressions outside a map template and a branch condition see.
    pub(crate) fn new(
        slots: &'a [Slot],
        outs: &'a mut [Out],
        input: &'a Value,
        input_var: &'a mut Option<Rcvar>,
    ) -> Self {
        Self {
            slots,
            outs,
            input,
            input_var,
            item: None,
            upstream: None,
        }
    }
}

impl Env<'_> {
    fn root_ref(&self, root: Root) -> RootRef<'_> {
        match root {
            Root::Input => RootRef::Value(self.input),
            Root::Item => self
                .item
                .map_or(RootRef::Absent, |(v, _)| RootRef::Value(v)),
            Root::Index => self
                .item
                .map_or(RootRef::Absent, |(_, i)| RootRef::Index(i)),
            Root::Node(i) => match self.outs.get(i as usize) {
                Some(s) if s.readable => RootRef::Node {
                    output: &s.output,
                    error: s.error.as_deref().map(|e| e.message.as_str()),
                },
                _ => RootRef::Absent,
            },
            Root::Upstream => {
                let u = self.upstream.map_or(usize::MAX, |u| u as usize);
                match (self.slots.get(u), self.outs.get(u)) {
                    (Some(slot), Some(s)) if slot.status == Status::Done => {
                        RootRef::Value(&s.output)
                    }
                    _ => RootRef::Absent,
                }
            }
        }
    }

    fn root_var(&mut self, root: Root) -> Rcvar {
        match root {
            Root::Input => self
                .input_var
                .get_or_insert_with(|| jmes::to_var(self.input))
                .clone(),
            Root::Node(i) => match self.outs.get_mut(i as usize) {
                Some(s) if s.readable => s
                    .var
                    .get_or_insert_with(|| {
                        let err = s.error.as_deref().map(|e| e.message.as_str());
                        jmes::node_var(jmes::to_var(&s.output), err)
                    })
                    .clone(),
                _ => jmes::null_var(),
            },
            Root::Item | Root::Index | Root::Upstream => match self.root_ref(root) {
                RootRef::Value(v) => jmes::to_var(v),
                RootRef::Index(i) => jmes::to_var(&Value::from(i)),
                RootRef::Node { .. } | RootRef::Absent => jmes::null_var(),
            },
        }
    }

    /// Evaluates `expr` to JSON.
    pub(crate) fn eval(&mut self, expr: &Expr) -> Result<Value, String> {
        match expr {
            Expr::Path {
                root,
                output,
                steps,
            } => Ok(path::eval(self.root_ref(*root), *output, steps)),
            Expr::General(g) => jmes::eval(g, |r| self.root_var(r)).map(|v| jmes::to_value(&v)),
        }
    }

    /// Evaluates `expr` for its truth (JMESPath truthiness).
    pub(crate) fn truth(&mut self, expr: &Expr) -> Result<bool, String> {
        match expr {
            Expr::Path {
                root,
                output,
                steps,
            } => Ok(path::truthy(&path::eval(
                self.root_ref(*root),
                *output,
                steps,
            ))),
            Expr::General(g) => jmes::eval(g, |r| self.root_var(r)).map(|v| v.is_truthy()),
        }
    }

    /// The node's input: static `input` merged with `input_map` results,
    /// under `keys` (the static keys, then the `input_map` keys not among
    /// them).
    pub(crate) fn input_of(
        &mut self,
        node: &Node<'_>,
        input_map: &[(&str, Expr)],
        keys: Keys,
    ) -> Result<NodeInput, NodeError> {
        let fail = |key: &str, e: String| {
            NodeError::new(ErrorCode::RUNTIME_ERROR, format!("input_map.{key}: {e}"))
        };
        // The upstream outputs are scattered: ask for all of them before
        // reading the first.
        for (_, expr) in input_map {
            if let Expr::Path {
                root: Root::Node(j),
                ..
            } = expr
            {
                prefetch(self.outs.get(*j as usize));
            }
        }
        let mut values = Vec::with_capacity(keys.len());
        if node.has_input {
            values.extend(node.src.input.values().cloned());
            values.resize(keys.len(), Value::Null);
            for (key, expr) in input_map {
                let value = self.eval(expr).map_err(|e| fail(key, e))?;
                if let Some(at) = keys.iter().position(|k| **k == **key)
                    && let Some(slot) = values.get_mut(at)
                {
                    *slot = value;
                }
            }
        } else {
            // The keys are the `input_map` keys, in order.
            for (key, expr) in input_map {
                let value = match expr {
                    // `node.output`, the usual entry: the output itself.
                    Expr::Path {
                        root: Root::Node(j),
                        output: true,
                        steps,
                    } if steps.is_empty() => match self.outs.get(*j as usize) {
                        Some(out) if out.readable => out.output.clone(),
                        _ => Value::Null,
                    },
                    _ => self.eval(expr).map_err(|e| fail(key, e))?,
                };
                values.push(value);
            }
        }
        Ok(NodeInput::new(keys, values))
    }
}

/// Evaluates an expression that reads only `input` (validation time).
pub(crate) fn eval_static(expr: &Expr, input: &Value) -> Value {
    let mut var = None;
    let mut env = Env::new(&[], &mut [], input, &mut var);
    env.eval(expr).unwrap_or(Value::Null)
}

//! An Ontheia chain as a graph.
//!
//! - one node per step, nested ones included, captioned with its type (and
//!   for a `tool` its server and tool, an `agent` its agent, a `loop` or
//!   `retry` its count, a `delay` its pause);
//! - steps of one list run in order: [`EdgeKind::Next`] from each to the next
//!   (the top-level list, a `loop`'s or `retry`'s body, a case's steps);
//! - nested blocks: a `parallel` → each of its steps, a `loop` / `retry` →
//!   the first step of its body ([`EdgeKind::Nested`]); a `branch` / `router`
//!   → the first step of each case, labelled with its `when`
//!   ([`EdgeKind::Case`]), and of its `default` ([`EdgeKind::Default`]);
//! - each nested block's steps (a `parallel`, `loop` or `retry` body, a
//!   case, a `default`) form a [`crate::Cluster`], inside the cluster of the
//!   block they sit in;
//! - data: each entry of `edges` (labelled `path → key` for its `map`) and
//!   each `${steps.<id>.…}` a step's fields read (labelled with the field),
//!   one [`EdgeKind::Data`] edge per pair; `input` and `output` are nodes of
//!   their own when an edge names them.

use ontheia::{Document, Step, StepType, When};
use serde_json::Value;

use crate::error::GraphError;
use crate::model::{Builder, EdgeKind, Graph, Shape, Source};

/// Validates `doc` with every rule of the Ontheia spec (as `a2e validate`
/// does) and draws it.
pub fn ontheia_graph(doc: &Document) -> Result<Graph, GraphError> {
    ontheia::validate(doc)?;
    Ok(from_document(doc))
}

/// Draws a validated Ontheia document.
pub fn from_document(doc: &Document) -> Graph {
    let mut b = Builder::new(Source::Ontheia, "");
    if doc.edges.iter().any(|e| e.from == "input") {
        b.node("input", "input", "chain input".into(), Shape::Stadium);
    }
    let steps = doc.all_steps();
    for step in &steps {
        let (caption, shape) = caption(step);
        b.node(&step.id, step.kind.as_str(), caption, shape);
    }
    if doc.edges.iter().any(|e| e.to == "output") {
        b.node("output", "output", "chain outputs".into(), Shape::Stadium);
    }
    sequence(&mut b, &doc.steps, None);
    for edge in &doc.edges {
        let label = edge
            .map
            .iter()
            .flatten()
            .map(|(path, key)| match key {
                Value::String(key) => format!("{path} → {key}"),
                other => format!("{path} → {other}"),
            })
            .collect::<Vec<_>>()
            .join(", ");
        b.data(&edge.from, &edge.to, &label);
    }
    for step in &steps {
        for (field, id) in template_reads(step) {
            b.data(&id, &step.id, &field);
        }
    }
    b.finish()
}

/// A step's caption and outline.
fn caption(step: &Step) -> (String, Shape) {
    let kind = step.kind.as_str();
    let count = step.param_u64("count");
    match step.kind {
        StepType::Branch | StepType::Router => (kind.to_owned(), Shape::Diamond),
        StepType::Parallel => (kind.to_owned(), Shape::Hexagon),
        StepType::Loop | StepType::Retry => (
            match count {
                Some(n) => format!("{kind} ×{n}"),
                None => kind.to_owned(),
            },
            Shape::Hexagon,
        ),
        StepType::Tool => {
            let server = step.param_str("server").unwrap_or_default();
            let tool = step.param_str("tool").unwrap_or_default();
            (format!("{kind} {server}/{tool}"), Shape::Box)
        }
        StepType::Agent => match step.param_str("agent_id") {
            Some(agent) => (format!("{kind} {agent}"), Shape::Box),
            None => (kind.to_owned(), Shape::Box),
        },
        StepType::Delay => match step.param_u64("delay_ms") {
            Some(ms) => (format!("{kind} {ms} ms"), Shape::Box),
            None => (kind.to_owned(), Shape::Box),
        },
        _ => (kind.to_owned(), Shape::Box),
    }
}

/// The edges of one list of steps and of the blocks inside them; the steps
/// go in cluster `within` (none for the top-level list), and each nested
/// block's steps in a cluster of its own inside it.
fn sequence(b: &mut Builder, steps: &[Step], within: Option<usize>) {
    for pair in steps.windows(2) {
        if let [a, c] = pair {
            b.edge(&a.id, &c.id, EdgeKind::Next, "");
        }
    }
    if let Some(c) = within {
        for step in steps {
            b.put(&step.id, c);
        }
    }
    for step in steps {
        let nested = step.steps.as_deref().unwrap_or_default();
        let kind = step.kind.as_str();
        match step.kind {
            StepType::Parallel if !nested.is_empty() => {
                for child in nested {
                    b.edge(&step.id, &child.id, EdgeKind::Nested, "parallel");
                }
                let c = b.cluster(format!("{} {kind}", step.id), within);
                // Side by side: no order among them.
                for child in nested {
                    sequence(b, std::slice::from_ref(child), Some(c));
                }
            }
            StepType::Loop | StepType::Retry if !nested.is_empty() => {
                if let Some(first) = nested.first() {
                    b.edge(&step.id, &first.id, EdgeKind::Nested, kind);
                }
                let c = b.cluster(format!("{} {kind}", step.id), within);
                sequence(b, nested, Some(c));
            }
            _ => {
                // Only a loop, retry or parallel has steps (validated).
            }
        }
        for case in step.cases.iter().flatten() {
            let when = match &case.when {
                None => "always".to_owned(),
                Some(When::Bool(v)) => v.to_string(),
                Some(When::Number(n)) => n.to_string(),
                Some(When::Text(t)) => t.clone(),
            };
            if let Some(first) = case.steps.first() {
                b.edge(&step.id, &first.id, EdgeKind::Case, when.clone());
                let c = b.cluster(format!("{}: {when}", step.id), within);
                sequence(b, &case.steps, Some(c));
            }
        }
        if let Some(default) = &step.default
            && let Some(first) = default.first()
        {
            b.edge(&step.id, &first.id, EdgeKind::Default, "default");
            let c = b.cluster(format!("{}: default", step.id), within);
            sequence(b, default, Some(c));
        }
    }
}

/// The steps a step's own fields read through `${steps.<id>.<path>}`, each
/// with the field (`prompt`, `params`, `when`, …), in field order. Nested
/// steps are left to themselves; a case's `when` counts as `when`.
fn template_reads(step: &Step) -> Vec<(String, String)> {
    let mut own = step.clone();
    own.steps = None;
    own.default = None;
    let whens: Vec<Value> = own
        .cases
        .take()
        .into_iter()
        .flatten()
        .filter_map(|c| serde_json::to_value(c.when).ok())
        .collect();
    let mut out = Vec::new();
    let Ok(Value::Object(fields)) = serde_json::to_value(&own) else {
        return out;
    };
    let whens = Value::Array(whens);
    let when = "when".to_owned();
    let fields = fields.iter().chain(std::iter::once((&when, &whens)));
    for (field, value) in fields {
        each_string(value, &mut |text| {
            for id in step_refs(text) {
                let pair = (field.clone(), id.to_owned());
                if !out.contains(&pair) {
                    out.push(pair);
                }
            }
        });
    }
    out
}

/// Calls `f` with every string in `value` (keys are not templated).
fn each_string(value: &Value, f: &mut impl FnMut(&str)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|v| each_string(v, f)),
        Value::Object(map) => map.values().for_each(|v| each_string(v, f)),
        _ => {}
    }
}

/// The ids in `${steps.<id>.<path>}` placeholders of `text`.
fn step_refs(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        let Some(after) = rest.get(at + 2..) else {
            break;
        };
        let Some(end) = after.find('}') else { break };
        let key = after.get(..end).unwrap_or_default();
        if let Some((id, path)) = key.strip_prefix("steps.").and_then(|r| r.split_once('.'))
            && !id.is_empty()
            && !path.is_empty()
        {
            out.push(id);
        }
        rest = after.get(end + 1..).unwrap_or_default();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::step_refs;

    #[test]
    fn placeholders_name_the_steps_they_read() {
        assert_eq!(
            step_refs("a ${steps.x.output} b ${input} ${steps.y.data.k}${steps.z} ${steps..a} ${"),
            ["x", "y"]
        );
    }
}

//! A run that has no document to draw — an LLM skill's agentic loop — drawn
//! from what it did: one node per step it took (a model turn, a tool call),
//! each joined to the step it followed.

use crate::model::{Builder, EdgeKind, Graph, Shape, Source};

/// One step of a run, in the order it first happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Its id in the run (`turn-2`, `turn-2/call_7`).
    pub id: String,
    /// Its kind (`model`, `tool`).
    pub kind: String,
    /// What it shows (`model turn 2`, `tool run_command`).
    pub caption: String,
    /// The step it followed (none for the first).
    pub after: Option<String>,
}

/// The graph of a loop's steps: a box per step, a `next` edge from the step
/// each followed. Steps after an unknown one are drawn unjoined.
pub fn loop_graph(name: &str, steps: &[Step]) -> Graph {
    let mut b = Builder::new(Source::Loop, name);
    for step in steps {
        b.node(&step.id, &step.kind, step.caption.clone(), Shape::Box);
    }
    for step in steps {
        if let Some(after) = &step.after {
            b.edge(after, &step.id, EdgeKind::Next, "");
        }
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Format;

    fn step(id: &str, kind: &str, after: Option<&str>) -> Step {
        Step {
            id: id.into(),
            kind: kind.into(),
            caption: format!("{kind} {id}"),
            after: after.map(str::to_owned),
        }
    }

    #[test]
    fn steps_join_the_ones_they_followed_and_render() {
        let steps = [
            step("turn-1", "model", None),
            step("turn-1/c1", "tool", Some("turn-1")),
            step("turn-2", "model", Some("turn-1")),
            step("orphan", "tool", Some("nope")),
        ];
        let graph = loop_graph("helper", &steps);
        assert_eq!(graph.nodes.len(), 4);
        assert_eq!(graph.edges.len(), 2);
        assert_eq!(graph.title(), "LLM skill loop helper");
        let svg = graph.render(Format::Svg, None).unwrap();
        assert!(
            svg.contains("turn-1/c1") && svg.starts_with("<svg"),
            "{svg}"
        );
    }
}

//! A run drawn over its document: each node's state and duration.
//!
//! The renderers take a plain map from node id to [`NodeRun`]; a node that is
//! not in the map was not reached. Ids the graph does not have are ignored.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

/// Where a node's run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NodeState {
    /// It completed.
    Done,
    /// It failed.
    Failed,
    /// It was skipped (a branch not taken, a failed upstream, `when` false).
    Skipped,
    /// It is running.
    Running,
    /// The run did not get to it (yet).
    NotReached,
}

impl NodeState {
    /// The state's name for classes and legends (`done`, `not-reached`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Done => "done",
            NodeState::Failed => "failed",
            NodeState::Skipped => "skipped",
            NodeState::Running => "running",
            NodeState::NotReached => "not-reached",
        }
    }

    /// The fill and line colours a node in this state is drawn with.
    pub(crate) fn colours(self) -> (&'static str, &'static str) {
        match self {
            NodeState::Done => ("#dcfce7", "#15803d"),
            NodeState::Failed => ("#fee2e2", "#b91c1c"),
            NodeState::Skipped => ("#f1f5f9", "#94a3b8"),
            NodeState::Running => ("#dbeafe", "#1d4ed8"),
            NodeState::NotReached => ("#ffffff", "#cbd5e1"),
        }
    }
}

impl fmt::Display for NodeState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One node's part in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRun {
    /// Its state.
    pub state: NodeState,
    /// How long it ran (so far, when running); `None` when unknown.
    pub duration: Option<Duration>,
}

impl NodeRun {
    /// A node in `state` that ran for `duration`.
    pub fn new(state: NodeState, duration: Option<Duration>) -> Self {
        NodeRun { state, duration }
    }
}

/// Each node's run, by node id.
pub type RunStates = HashMap<String, NodeRun>;

/// The colours of a node drawn without a run.
pub(crate) const PLAIN: (&str, &str) = ("#f8fafc", "#334155");

/// What the renderers need of a run for one node.
#[derive(Debug, Clone)]
pub(crate) struct Look {
    /// The state, when a run is drawn.
    pub state: Option<NodeState>,
    /// The third label line: the state and duration, when a run is drawn.
    pub note: Option<String>,
    /// Fill colour.
    pub fill: &'static str,
    /// Line colour.
    pub line: &'static str,
}

/// How the node `id` is drawn given `run`.
pub(crate) fn look(id: &str, run: Option<&RunStates>) -> Look {
    let Some(run) = run else {
        return Look {
            state: None,
            note: None,
            fill: PLAIN.0,
            line: PLAIN.1,
        };
    };
    let node = run
        .get(id)
        .copied()
        .unwrap_or(NodeRun::new(NodeState::NotReached, None));
    let (fill, line) = node.state.colours();
    let note = match node.duration {
        Some(d) => format!("{} · {}", node.state, duration(d)),
        None => node.state.to_string(),
    };
    Look {
        state: Some(node.state),
        note: Some(note),
        fill,
        line,
    }
}

/// A duration as people read it: `850 µs`, `42 ms`, `1.25 s`, `3 min 05 s`,
/// `2 h 07 min`.
pub fn duration(d: Duration) -> String {
    let micros = d.as_micros();
    if micros < 1_000 {
        return format!("{micros} µs");
    }
    let millis = d.as_millis();
    if millis < 1_000 {
        return format!("{millis} ms");
    }
    let secs = d.as_secs();
    if secs < 60 {
        return format!("{:.2} s", d.as_secs_f64());
    }
    if secs < 3_600 {
        return format!("{} min {:02} s", secs / 60, secs % 60);
    }
    format!("{} h {:02} min", secs / 3_600, (secs % 3_600) / 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(duration(Duration::from_micros(850)), "850 µs");
        assert_eq!(duration(Duration::from_millis(42)), "42 ms");
        assert_eq!(duration(Duration::from_millis(1_250)), "1.25 s");
        assert_eq!(duration(Duration::from_secs(185)), "3 min 05 s");
        assert_eq!(duration(Duration::from_secs(7_620)), "2 h 07 min");
    }

    #[test]
    fn a_node_missing_from_the_run_was_not_reached() {
        let mut run = RunStates::new();
        run.insert(
            "a".into(),
            NodeRun::new(NodeState::Failed, Some(Duration::from_millis(3))),
        );
        let a = look("a", Some(&run));
        assert_eq!(a.note.as_deref(), Some("failed · 3 ms"));
        assert_eq!((a.fill, a.line), NodeState::Failed.colours());
        let b = look("b", Some(&run));
        assert_eq!(b.state, Some(NodeState::NotReached));
        assert_eq!(look("a", None).note, None);
    }
}

//! A run drawn over its document: each node's state and duration.
//!
//! The renderers take a plain map from node id to [`NodeRun`]; a node that is
//! not in the map was not reached. Ids the graph does not have are ignored,
//! except a map's items: a chain reports each item of a map as
//! `template[index]`, and the renderers fold those into the template node
//! ([`fold_items`]), which shows their count and a state drawn from theirs.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fmt::Write as _;
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
    /// For a map's template node: how its items stand ([`fold_items`]).
    pub items: Option<Items>,
}

impl NodeRun {
    /// A node in `state` that ran for `duration`.
    pub fn new(state: NodeState, duration: Option<Duration>) -> Self {
        NodeRun {
            state,
            duration,
            items: None,
        }
    }
}

/// How a map's items stand: how many the run has reported and how many of
/// them are in each state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Items {
    /// Items the run has reported (started or settled).
    pub total: usize,
    /// Items done.
    pub done: usize,
    /// Items failed.
    pub failed: usize,
    /// Items running.
    pub running: usize,
    /// Items skipped.
    pub skipped: usize,
}

impl Items {
    /// Counts one item in `state`.
    fn add(&mut self, state: NodeState) {
        self.total += 1;
        match state {
            NodeState::Done => self.done += 1,
            NodeState::Failed => self.failed += 1,
            NodeState::Running => self.running += 1,
            NodeState::Skipped => self.skipped += 1,
            NodeState::NotReached => {}
        }
    }

    /// The template's state: running while any item runs, then failed when
    /// any failed, skipped when every item was, done otherwise.
    pub fn state(&self) -> NodeState {
        if self.running > 0 {
            NodeState::Running
        } else if self.failed > 0 {
            NodeState::Failed
        } else if self.total > 0 && self.skipped == self.total {
            NodeState::Skipped
        } else if self.done > 0 {
            NodeState::Done
        } else {
            NodeState::NotReached
        }
    }
}

impl fmt::Display for Items {
    /// `3/3 done`, `1/3 done, 1 failed`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{} done", self.done, self.total)?;
        if self.failed > 0 {
            write!(f, ", {} failed", self.failed)?;
        }
        Ok(())
    }
}

/// The template id and index of a map item's id (`read[3]` → `read`, 3).
pub fn item_of(id: &str) -> Option<(&str, usize)> {
    let open = id.rfind('[')?;
    let template = id.get(..open)?;
    let index = id.get(open + 1..)?.strip_suffix(']')?;
    if template.is_empty() || index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((template, index.parse().ok()?))
}

/// `run` with each map item (`template[index]`) folded into its template:
/// for a `template` that `is_node` and an item id that is not, the template
/// gets the items' counts ([`Items`]) and the state they add up to. The
/// items stay in the map as they are; a template with an entry of its own
/// keeps its duration.
pub fn fold_items(run: &RunStates, is_node: impl Fn(&str) -> bool) -> RunStates {
    let mut items: HashMap<&str, Items> = HashMap::new();
    for (id, node) in run {
        if let Some((template, _)) = item_of(id)
            && is_node(template)
            && !is_node(id)
        {
            items.entry(template).or_default().add(node.state);
        }
    }
    let mut out = run.clone();
    for (template, counts) in items {
        let duration = run.get(template).and_then(|n| n.duration);
        out.insert(
            template.to_owned(),
            NodeRun {
                state: counts.state(),
                duration,
                items: Some(counts),
            },
        );
    }
    out
}

/// `run` folded for the nodes of `graph` ([`fold_items`]).
pub(crate) fn folded(graph: &crate::Graph, run: Option<&RunStates>) -> Option<RunStates> {
    let ids: HashSet<&str> = graph.nodes.iter().map(|n| n.id.as_str()).collect();
    run.map(|run| fold_items(run, |id| ids.contains(id)))
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
    let mut note = match node.duration {
        Some(d) => format!("{} · {}", node.state, duration(d)),
        None => node.state.to_string(),
    };
    if let Some(items) = node.items {
        let _ = write!(note, " · {items}");
    }
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

    #[test]
    fn item_ids_name_their_template_and_index() {
        assert_eq!(item_of("read[3]"), Some(("read", 3)));
        assert_eq!(item_of("a[b][12]"), Some(("a[b]", 12)));
        for plain in ["read", "read[]", "[3]", "read[x]", "read[3", "read[-1]"] {
            assert_eq!(item_of(plain), None, "{plain}");
        }
    }

    fn items_of(states: &[NodeState]) -> RunStates {
        let mut run = RunStates::new();
        for (i, s) in states.iter().enumerate() {
            run.insert(format!("read[{i}]"), NodeRun::new(*s, None));
        }
        run
    }

    #[test]
    fn items_fold_into_their_template_with_counts_and_a_state() {
        use NodeState::*;
        let is_node = |id: &str| id == "read" || id == "other";
        let fold = |states: &[NodeState]| fold_items(&items_of(states), is_node)["read"];

        let all_done = fold(&[Done, Done, Done]);
        assert_eq!(all_done.state, Done);
        assert_eq!(
            all_done.items,
            Some(Items {
                total: 3,
                done: 3,
                ..Items::default()
            })
        );
        assert_eq!(
            look(
                "read",
                Some(&fold_items(&items_of(&[Done, Done, Done]), is_node))
            )
            .note
            .as_deref(),
            Some("done · 3/3 done")
        );
        assert_eq!(fold(&[Done, Running, Failed]).state, Running);
        assert_eq!(fold(&[Done, Failed, Done]).state, Failed);
        assert_eq!(
            fold(&[Done, Failed, Done])
                .items
                .map(|i| i.to_string())
                .as_deref(),
            Some("2/3 done, 1 failed")
        );
        assert_eq!(fold(&[Skipped, Skipped]).state, Skipped);
        assert_eq!(fold(&[Skipped, Done]).state, Done);

        // Only into a node of the graph, and not when the item is a node.
        let mut run = items_of(&[Done]);
        run.insert("ghost[0]".into(), NodeRun::new(Done, None));
        let folded = fold_items(&run, |id| id == "read" || id == "read[0]");
        assert!(!folded.contains_key("read"));
        assert!(!folded.contains_key("ghost"));
        assert_eq!(folded.len(), 2);
    }
}

//! A validated DAG with the providers chosen and the streaming edges decided.

use std::collections::HashMap;
use std::sync::Arc;

use crate::events::FallbackReason;
use crate::{ProviderRef, Router, ValidatedDag};

/// What a run executes.
pub(crate) struct Plan {
    pub(crate) dag: ValidatedDag,
    pub(crate) dag_id: Arc<str>,
    pub(crate) routes: Vec<Option<ProviderRef>>,
    /// Tasks invoked with `stream: true`, with the downstream tasks their chunks go to.
    pub(crate) stream_out: HashMap<u32, Vec<u32>>,
    /// Per task: whether it is invoked with `stream: true`.
    pub(crate) streams: Vec<bool>,
    /// Stream-eligible edges that fell back to non-streaming, and why.
    pub(crate) fallbacks: Vec<(u32, u32, FallbackReason)>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("dag_id", &self.dag_id)
            .field("tasks", &self.routes.len())
            .field("stream_out", &self.stream_out)
            .finish()
    }
}

impl Plan {
    pub(crate) fn new(dag: ValidatedDag, router: &dyn Router) -> Self {
        let routes: Vec<Option<ProviderRef>> =
            dag.dag().tasks.iter().map(|t| router.route(t)).collect();
        let features: Vec<_> = routes
            .iter()
            .map(|r| r.as_ref().map(|p| p.features()))
            .collect();
        let mut stream_out: HashMap<u32, Vec<u32>> = HashMap::new();
        let mut fallbacks = Vec::new();
        for from in 0..dag.nodes.len() as u32 {
            for edge in dag.outs(from).iter().filter(|e| e.stream_candidate) {
                let up = features.get(from as usize).copied().flatten();
                let down = features.get(edge.to as usize).copied().flatten();
                let verdict = match (up, down) {
                    (Some(up), Some(down)) => match (up.output_streaming, down.input_streaming) {
                        (true, true) => None,
                        (false, _) => Some(FallbackReason::NoOutputStreaming),
                        (true, false) => Some(FallbackReason::NoInputStreaming),
                    },
                    _ => Some(FallbackReason::NoProvider),
                };
                match verdict {
                    None => stream_out.entry(from).or_default().push(edge.to),
                    Some(reason) => fallbacks.push((from, edge.to, reason)),
                }
            }
        }
        let mut streams = vec![false; routes.len()];
        for &from in stream_out.keys() {
            if let Some(s) = streams.get_mut(from as usize) {
                *s = true;
            }
        }
        let dag_id = Arc::from(dag.dag().dag_id.as_str());
        Self {
            dag,
            dag_id,
            routes,
            stream_out,
            streams,
            fallbacks,
        }
    }

    pub(crate) fn id(&self, idx: u32) -> Arc<str> {
        self.dag
            .nodes
            .get(idx as usize)
            .map_or_else(|| Arc::from(""), |n| n.id.clone())
    }

    /// Whether `from → to` streams.
    pub(crate) fn is_streamed(&self, from: u32, to: u32) -> bool {
        self.streams.get(from as usize).copied().unwrap_or(false)
            && self
                .stream_out
                .get(&from)
                .is_some_and(|tos| tos.contains(&to))
    }
}

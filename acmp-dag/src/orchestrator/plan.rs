//! A validated DAG with the providers chosen and the streaming edges decided.

use std::collections::HashMap;
use std::sync::Arc;

use crate::events::FallbackReason;
use crate::hash::IdxMap;
use crate::{ProviderFeatures, ProviderRef, Router, ValidatedDag};

/// `routes` entry of a task without a provider.
const NO_PROVIDER: u32 = u32::MAX;

/// What a run executes.
pub(crate) struct Plan {
    pub(crate) dag: ValidatedDag,
    pub(crate) dag_id: Arc<str>,
    /// Per task: its provider's position in `providers`, or [`NO_PROVIDER`].
    routes: Vec<u32>,
    /// The distinct providers the router chose (one entry per provider, not per task).
    providers: Vec<ProviderRef>,
    /// Tasks invoked with `stream: true`, with the downstream tasks their chunks go to.
    pub(crate) stream_out: IdxMap<u32, Vec<u32>>,
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
    /// The plan of `dag`; `durable`: no edge streams (`FallbackReason::Durable`).
    pub(crate) fn new(dag: ValidatedDag, router: &dyn Router, durable: bool) -> Self {
        // Routers typically hand out the same few providers: keep each once, with its
        // features asked once.
        let mut providers: Vec<ProviderRef> = Vec::new();
        let mut features: Vec<ProviderFeatures> = Vec::new();
        let mut known: HashMap<*const (), u32> = HashMap::new();
        let mut last: Option<(*const (), u32)> = None;
        let routes: Vec<u32> = dag
            .dag()
            .tasks
            .iter()
            .map(|t| {
                let Some(provider) = router.route(t) else {
                    return NO_PROVIDER;
                };
                let key = Arc::as_ptr(&provider).cast::<()>();
                match last {
                    Some((k, at)) if k == key => at,
                    _ => {
                        let at = *known.entry(key).or_insert_with(|| {
                            features.push(provider.features());
                            providers.push(provider);
                            u32::try_from(providers.len() - 1).unwrap_or(NO_PROVIDER)
                        });
                        last = Some((key, at));
                        at
                    }
                }
            })
            .collect();
        let features_of = |task: u32| -> Option<ProviderFeatures> {
            features.get(*routes.get(task as usize)? as usize).copied()
        };
        let mut stream_out: IdxMap<u32, Vec<u32>> = IdxMap::default();
        let mut fallbacks = Vec::new();
        for from in 0..dag.nodes.len() as u32 {
            for edge in dag.outs(from).iter().filter(|e| e.stream_candidate) {
                let verdict = match (features_of(from), features_of(edge.to)) {
                    _ if durable => Some(FallbackReason::Durable),
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
            providers,
            stream_out,
            streams,
            fallbacks,
        }
    }

    /// The provider of task `idx`.
    pub(crate) fn provider(&self, idx: u32) -> Option<&ProviderRef> {
        self.providers.get(*self.routes.get(idx as usize)? as usize)
    }

    pub(crate) fn id(&self, idx: u32) -> Arc<str> {
        self.dag
            .nodes
            .get(idx as usize)
            .map_or_else(|| Arc::from(""), |n| n.id.clone())
    }

    /// Whether task `idx` is invoked with `stream: true`.
    pub(crate) fn streams(&self, idx: u32) -> bool {
        self.streams.get(idx as usize).copied().unwrap_or(false)
    }

    /// Whether `from → to` streams.
    pub(crate) fn is_streamed(&self, from: u32, to: u32) -> bool {
        self.streams(from)
            && self
                .stream_out
                .get(&from)
                .is_some_and(|tos| tos.contains(&to))
    }
}

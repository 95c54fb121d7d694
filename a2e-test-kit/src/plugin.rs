//! What the host crates' unit tests share: a tool plugin and a counting waker.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::Waker;
use std::time::Duration;

use a2e_proto::ToolDefinition;
use serde_json::{Map, Value, json};

use a2e_plugin::{CallContext, HostResult, ToolOutput, ToolPlugin};

/// Tools `a` and `b`: each answers with its name and its arguments.
pub struct Named;

impl ToolPlugin for Named {
    fn name(&self) -> &str {
        "named"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        vec![ToolDefinition::new("a", "A"), ToolDefinition::new("b", "B")]
    }

    async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
        _: CallContext,
    ) -> HostResult<ToolOutput> {
        if let Some(ms) = args.get("block_ms").and_then(Value::as_u64) {
            // Busy on the chain's thread, finishing without a wait.
            std::thread::sleep(Duration::from_millis(ms));
        }
        Ok(json!({"tool": tool, "args": args}).into())
    }
}

/// A waker that counts its wakes.
#[derive(Default)]
pub struct Wakes(AtomicU32);

impl Wakes {
    /// A fresh counter and its waker.
    pub fn waker() -> (Arc<Self>, Waker) {
        let wakes = Arc::new(Self::default());
        let waker = futures::task::waker(wakes.clone());
        (wakes, waker)
    }

    /// The wakes so far.
    pub fn count(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

impl futures::task::ArcWake for Wakes {
    fn wake_by_ref(arc_self: &Arc<Self>) {
        arc_self.0.fetch_add(1, Ordering::SeqCst);
    }
}

//! What the host crates' unit tests share: tool plugins and a counting waker.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::Duration;

use a2e_proto::ToolDefinition;
use serde_json::{Map, Value, json};

use a2e_plugin::{CallContext, Result, ToolOutput, ToolPlugin};

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
    ) -> Result<ToolOutput> {
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

/// Tools `step` (idempotent) and `once` (not): each records its call's
/// node key and answers `{"n": input n + 1}`.
#[derive(Clone, Default)]
pub struct Effects(Arc<Mutex<Vec<String>>>);

impl Effects {
    /// The node keys of the calls so far, in order.
    pub fn calls(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl ToolPlugin for Effects {
    fn name(&self) -> &str {
        "effects"
    }

    fn tools(&self) -> Vec<ToolDefinition> {
        vec![
            ToolDefinition::new("step", "a step").idempotent(),
            ToolDefinition::new("once", "a step not to repeat"),
        ]
    }

    async fn call(
        &self,
        _tool: &str,
        args: Map<String, Value>,
        ctx: CallContext,
    ) -> Result<ToolOutput> {
        self.0.lock().unwrap().push(ctx.idempotency_key.to_string());
        let n = args.get("n").and_then(Value::as_u64).unwrap_or(0);
        Ok(json!({"n": n + 1}).into())
    }
}

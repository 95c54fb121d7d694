//! Limits and knobs of the engine.

use std::time::Duration;

/// The longest timeout the engine honours, in seconds (24 hours): a chain's
/// `timeout`, a node's `input.timeout` and a map item's. Longer ones are
/// clamped to it, so deadline arithmetic never overflows. The host uses the
/// same maximum for its own calls.
pub const MAX_TIMEOUT_SECS: u64 = 86_400;

/// `timeout` clamped to [`MAX_TIMEOUT_SECS`].
///
/// ```
/// use std::time::Duration;
/// use a2e_chain::{clamp_timeout, MAX_TIMEOUT_SECS};
///
/// assert_eq!(clamp_timeout(Duration::from_secs(5)), Duration::from_secs(5));
/// assert_eq!(clamp_timeout(Duration::MAX), Duration::from_secs(MAX_TIMEOUT_SECS));
/// ```
pub fn clamp_timeout(timeout: Duration) -> Duration {
    timeout.min(Duration::from_secs(MAX_TIMEOUT_SECS))
}

/// The instant `timeout` (clamped to [`MAX_TIMEOUT_SECS`]) after `now`;
/// `None` only if even that is past what the clock can represent.
pub fn deadline_after(
    now: tokio::time::Instant,
    timeout: Duration,
) -> Option<tokio::time::Instant> {
    now.checked_add(clamp_timeout(timeout))
}

/// Limits and knobs of the engine. The defaults suit a host serving agents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainConfig {
    /// Most nodes a chain may declare (validation refuses more). Default 10,000.
    pub max_nodes: usize,
    /// Most items one `map` node may fan out over. Checked at validation when
    /// `items_path` reads only `input`, and again when the map starts.
    /// Default 10,000.
    pub max_map_items: usize,
    /// Most runner calls in flight at once across the chain. Default 256.
    pub max_concurrency: usize,
    /// Most runner calls in flight at once for one `map` node. Default 64.
    pub map_concurrency: usize,
    /// Poll a runner's future once on the scheduler before handing it to a
    /// tokio task. A runner that finishes without waiting then costs no task at
    /// all; one that waits continues on its own task. Runners must not block
    /// the thread (use `spawn_blocking` for that), which is the rule for any
    /// async code anyway. Default `true`.
    pub inline_first_poll: bool,
    /// How long runner calls still in flight when a chain ends (after a
    /// failure, a timeout or a cancellation) get to wind down after their
    /// cancellation token fired, before their tasks are aborted. The
    /// response does not wait for them. Default 1 s.
    pub cancel_grace: std::time::Duration,
    /// The chain timeout, in seconds, for a request whose `timeout` is 0
    /// (0 here too: no limit). Default 0.
    pub default_timeout_secs: u64,
    /// Give each runner call a [`Notices`](crate::Notices) handle, by which
    /// it reports a phase of its own while it runs (a call that waits for a
    /// person's decision) as an event of its node. Off by default: a run
    /// then builds no channel for them.
    pub notices: bool,
}

impl Default for ChainConfig {
    fn default() -> Self {
        Self {
            max_nodes: 10_000,
            max_map_items: 10_000,
            max_concurrency: 256,
            map_concurrency: 64,
            inline_first_poll: true,
            cancel_grace: std::time::Duration::from_secs(1),
            default_timeout_secs: 0,
            notices: false,
        }
    }
}

impl ChainConfig {
    /// The defaults with `max_nodes` and `max_map_items` set to `limit`.
    pub fn with_limits(limit: usize) -> Self {
        Self {
            max_nodes: limit,
            max_map_items: limit,
            ..Self::default()
        }
    }
}

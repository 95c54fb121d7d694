//! A token bucket that paces what one network session may send.

use std::time::Duration;

use tokio::time::Instant;

/// A token bucket: `rate` per second, up to `burst` saved.
#[derive(Debug)]
pub(crate) struct RateLimit {
    rate: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl RateLimit {
    pub(crate) fn new(rate_per_sec: f64, burst: f64) -> Self {
        let burst = burst.max(1.0);
        Self {
            rate: rate_per_sec.max(0.001),
            burst,
            tokens: burst,
            last: Instant::now(),
        }
    }

    /// Takes `n` tokens; returns how long the caller must wait for them (zero
    /// when there were enough). The debt is recorded either way.
    pub(crate) fn take(&mut self, n: f64) -> Duration {
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now;
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.tokens -= n;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.rate)
        }
    }

    /// How long taking `n` tokens would make the caller wait, without taking them.
    pub(crate) fn wait_for(&self, n: f64) -> Duration {
        let elapsed = Instant::now()
            .saturating_duration_since(self.last)
            .as_secs_f64();
        let tokens = (self.tokens + elapsed * self.rate).min(self.burst) - n;
        if tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-tokens / self.rate)
        }
    }
}

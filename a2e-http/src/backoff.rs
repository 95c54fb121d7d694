//! Waits between attempts: exponential backoff with a cap, and `Retry-After`.

use std::time::Duration;

use reqwest::header::{HeaderMap, RETRY_AFTER};

/// Exponential backoff: `initial`, doubled for each later attempt, at most
/// `max`; a server's `Retry-After` takes its place, at most `max_retry_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait before the first retry.
    pub initial: Duration,
    /// The longest wait backoff computes.
    pub max: Duration,
    /// The longest wait a server's `Retry-After` may impose.
    pub max_retry_after: Duration,
}

impl Backoff {
    /// Backoff from `initial` up to `max`; `Retry-After` is held to `max` too
    /// until [`with_max_retry_after`](Self::with_max_retry_after) says otherwise.
    pub const fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            max_retry_after: max,
        }
    }

    /// The same backoff with another cap for `Retry-After`.
    pub const fn with_max_retry_after(mut self, cap: Duration) -> Self {
        self.max_retry_after = cap;
        self
    }

    /// The wait before retry number `attempt` (0 for the first retry):
    /// `initial · 2^attempt`, at most `max`.
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt).unwrap_or(u32::MAX);
        self.initial.saturating_mul(factor).min(self.max)
    }

    /// The wait before retry number `attempt` given the server's
    /// `Retry-After` (see [`retry_after`]): that, at most `max_retry_after`,
    /// when there is one, else [`delay`](Self::delay).
    pub fn delay_after(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        match retry_after {
            Some(wait) => wait.min(self.max_retry_after),
            None => self.delay(attempt),
        }
    }
}

/// The `Retry-After` of a response given in seconds (whole or decimal, under
/// a day). The HTTP-date form, and anything else, is `None`: backoff applies.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = text.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 86_400.0)
        .map(Duration::from_secs_f64)
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn delays_double_up_to_the_cap() {
        let b = Backoff::new(MS(100), MS(350));
        assert_eq!(b.delay(0), MS(100));
        assert_eq!(b.delay(1), MS(200));
        assert_eq!(b.delay(2), MS(350));
        assert_eq!(b.delay(31), MS(350));
        assert_eq!(b.delay(32), MS(350));
        assert_eq!(b.delay(u32::MAX), MS(350));
        assert_eq!(Backoff::new(MS(0), MS(10)).delay(5), MS(0));
        let huge = Backoff::new(Duration::MAX, Duration::MAX);
        assert_eq!(huge.delay(3), Duration::MAX, "saturates");
    }

    #[test]
    fn retry_after_wins_within_its_own_cap() {
        let b = Backoff::new(MS(100), MS(350)).with_max_retry_after(MS(1_000));
        assert_eq!(b.delay_after(0, Some(Duration::from_secs(3600))), MS(1_000));
        assert_eq!(b.delay_after(0, Some(MS(20))), MS(20), "even under backoff");
        assert_eq!(b.delay_after(3, None), MS(350));
        assert_eq!(Backoff::new(MS(1), MS(50)).max_retry_after, MS(50));
    }

    #[test]
    fn retry_after_is_read_in_seconds() {
        let read = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(RETRY_AFTER, HeaderValue::from_str(v).unwrap());
            retry_after(&h)
        };
        assert_eq!(read("3"), Some(Duration::from_secs(3)));
        assert_eq!(read(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(read("1.5"), Some(MS(1_500)));
        assert_eq!(read("-1"), None);
        assert_eq!(read("NaN"), None);
        assert_eq!(read("90000.5"), None);
        assert_eq!(read("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }
}

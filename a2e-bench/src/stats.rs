//! Medians, percentiles, calls per second, and rounds that interleave the
//! cases of a benchmark.
//!
//! Every benchmark reports medians: the machines these run on are shared,
//! and a median over rounds ignores the rounds a busy moment slowed, where a
//! mean would not.

use std::time::{Duration, Instant};

/// The median of `xs`, which is sorted in place: the middle sample, or the
/// mean of the two middle ones. NaN when there are none (a JSON line prints
/// it as `null`).
pub fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    match (xs.get(n / 2), n % 2) {
        (None, _) => f64::NAN,
        (Some(&mid), 1) => mid,
        (Some(&upper), _) => xs
            .get(n / 2 - 1)
            .map_or(upper, |&lower| (lower + upper) / 2.0),
    }
}

/// The median of owned samples (see [`median`]).
pub fn median_of(xs: impl IntoIterator<Item = f64>) -> f64 {
    let mut xs: Vec<f64> = xs.into_iter().collect();
    median(&mut xs)
}

/// The median run of `runs` by `key` (sorted here in place; of an even
/// count, the upper of the two middle ones), so that the run's other figures
/// come from the same run as its key. `None` when there are none.
pub fn median_run<T>(runs: &mut [T], key: impl Fn(&T) -> f64) -> Option<&T> {
    runs.sort_by(|a, b| key(a).total_cmp(&key(b)));
    runs.get(runs.len() / 2)
}

/// The smallest sample (NaN when there are none): the run the machine
/// disturbed least.
pub fn min(xs: &[f64]) -> f64 {
    xs.iter().copied().reduce(f64::min).unwrap_or(f64::NAN)
}

/// The mean of the samples (NaN when there are none).
pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The nearest-rank percentile `p` (0 to 1) of samples sorted ascending: the
/// smallest sample with at least `p` of all the samples at or below it.
/// `None` when there are none.
pub fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    let rank = (sorted.len() as f64 * p).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied()
}

/// Milliseconds of `d`.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Microseconds of `d`.
pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Nanoseconds of `d`.
pub fn ns(d: Duration) -> f64 {
    d.as_nanos() as f64
}

/// What a run of calls gives: how many were answered per second, and the
/// median and 99th percentile round trip.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calls {
    /// Calls answered per second.
    pub per_sec: f64,
    /// The median round trip, in whole microseconds.
    pub p50_us: u64,
    /// The 99th percentile round trip, in whole microseconds.
    pub p99_us: u64,
}

impl Calls {
    /// The figures of calls that took `total` in all, each with its own
    /// round trip in `latencies`.
    pub fn of(total: Duration, mut latencies: Vec<Duration>) -> Self {
        latencies.sort_unstable();
        let micros = |p| percentile(&latencies, p).map_or(0, |d| d.as_micros() as u64);
        Self {
            per_sec: latencies.len() as f64 / total.as_secs_f64(),
            p50_us: micros(0.50),
            p99_us: micros(0.99),
        }
    }
}

/// Runs every case once per round, in turn, and times each run, so that a
/// busy moment of the machine weighs on all of them alike: `warm_ups`
/// rounds unrecorded, then `rounds` recorded. The times of each case come
/// back in the cases' order.
pub fn interleaved(
    warm_ups: usize,
    rounds: usize,
    cases: &mut [&mut dyn FnMut()],
) -> Vec<Vec<Duration>> {
    let mut times = vec![Vec::with_capacity(rounds); cases.len()];
    for round in 0..warm_ups + rounds {
        for (case, took) in cases.iter_mut().zip(times.iter_mut()) {
            let started = Instant::now();
            case();
            let elapsed = started.elapsed();
            if round >= warm_ups {
                took.push(elapsed);
            }
        }
    }
    times
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_or_the_mean_of_the_two_middle_samples() {
        assert_eq!(median(&mut [5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&mut [7.0]), 7.0);
        assert!(median(&mut []).is_nan());
        assert_eq!(median_of([9.0, 8.0, 1.0, 2.0, 3.0]), 3.0);
        let mut runs = [(3.0, 'c'), (1.0, 'a'), (2.0, 'b')];
        assert_eq!(median_run(&mut runs, |r| r.0), Some(&(2.0, 'b')));
        assert_eq!(median_run(&mut [] as &mut [(f64, char)], |r| r.0), None);
    }

    #[test]
    fn min_and_mean() {
        assert_eq!(min(&[3.0, 1.5, 2.0]), 1.5);
        assert!(min(&[]).is_nan());
        assert_eq!(mean(&[1.0, 2.0, 6.0]), 3.0);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let xs: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&xs, 0.50), Some(50));
        assert_eq!(percentile(&xs, 0.99), Some(99));
        assert_eq!(percentile(&xs, 1.0), Some(100));
        assert_eq!(percentile(&xs, 0.0), Some(1));
        assert_eq!(percentile(&[7], 0.99), Some(7));
        assert_eq!(percentile::<u32>(&[], 0.5), None);
    }

    #[test]
    fn calls_per_second_and_round_trips() {
        let latencies = (1..=200).rev().map(Duration::from_micros).collect();
        let calls = Calls::of(Duration::from_millis(100), latencies);
        assert_eq!(calls.per_sec, 2000.0);
        assert_eq!((calls.p50_us, calls.p99_us), (100, 198));
    }

    #[test]
    fn interleaved_rounds_run_each_case_once_per_round_after_the_warm_ups() {
        let order = std::cell::RefCell::new(Vec::new());
        let times = interleaved(
            1,
            2,
            &mut [&mut || order.borrow_mut().push('a'), &mut || {
                order.borrow_mut().push('b');
                std::thread::sleep(Duration::from_millis(2));
            }],
        );
        assert_eq!(order.into_inner(), ['a', 'b', 'a', 'b', 'a', 'b']);
        assert_eq!(times.iter().map(Vec::len).collect::<Vec<_>>(), [2, 2]);
        assert!(times[1].iter().all(|t| *t >= Duration::from_millis(2)));
    }
}

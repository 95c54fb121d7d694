//! The one harness of the workspace's benchmarks (the `examples/bench_*.rs`
//! of each crate, run by `cargo xtask bench`), taken as a dev-dependency and
//! never published: the statistics are written once here, so that every
//! figure of `BENCHMARKS.md` means the same thing.
//!
//! - [`stats`]: medians, percentiles, calls per second, interleaved rounds;
//! - [`report`]: rounding, JSON lines, ratios against a peer with a target;
//! - [`process`]: this process's own measures from `/proc` (peak RSS, CPU
//!   time, page faults);
//! - [`args`]: the flags and environment variables the benchmarks read.
//!
//! ```
//! use a2e_bench::report::{Target, ratio};
//! use a2e_bench::stats::median;
//!
//! let ours = median(&mut [3.0, 1.0, 2.0]);
//! let peer = median(&mut [4.0, 2.0, 3.0, 5.0]);
//! assert_eq!((ours, peer), (2.0, 3.5));
//! let line = ratio("ours_vs_peer", ours / peer, Some(Target::AtMost(1.3)));
//! assert_eq!(line["value"], 0.57);
//! assert_eq!(line["met"], true);
//! ```

pub mod args;
pub mod process;
pub mod report;
pub mod stats;

//! A cache prefetch hint, for the few places where the engine knows a
//! moment ahead which scattered record it will read.
//!
//! In a large chain whose nodes read random earlier nodes, the id table and
//! the per-node state are far bigger than the caches, and one read that
//! waits for memory costs more than the rest of the work on an edge. A
//! plain load cannot hide that (it retires only once its data is in, so the
//! processor stalls behind it); a prefetch retires at once and the data
//! arrives while other work goes on.
//!
//! The hints stay only while `cargo xtask bench structures` shows the engine
//! with them beating the same engine without them (feature
//! `bench-no-prefetch`) by the bar of that bench (a best speedup of 1.10 or
//! more) on some shape; the figures are in `BENCHMARKS.md`.

/// Asks for the cache line holding `r` to be loaded, without waiting.
#[inline(always)]
pub(crate) fn prefetch<T>(r: Option<&T>) {
    #[cfg(all(target_arch = "x86_64", not(feature = "bench-no-prefetch")))]
    if let Some(r) = r {
        let p: *const T = r;
        #[allow(unsafe_code)]
        // SAFETY: `_mm_prefetch` is a hint: it changes no program state and
        // never faults, whatever the address (here one taken from a live
        // reference). It is `unsafe` only for its `sse` target feature,
        // which every x86_64 processor has.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
        }
    }
    #[cfg(any(not(target_arch = "x86_64"), feature = "bench-no-prefetch"))]
    let _ = r;
}

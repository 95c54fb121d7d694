//! The `a2e` binary's allocator settings (mimalloc).
//!
//! mimalloc 2 returns freed memory to the kernel soon after it was last used
//! (its default purge delay). A host that answers large requests in quick
//! succession then faults the same pages in again for each one, so the
//! binary keeps freed memory for a second (the figures of `cargo xtask bench
//! transport` with and without it are in `BENCHMARKS.md`). Memory unused for
//! a second still goes back, as with mimalloc 3's default.

/// How long freed memory stays with the process, in milliseconds, unless
/// `MIMALLOC_PURGE_DELAY` says otherwise.
pub const PURGE_DELAY_MS: std::ffi::c_long = 1000;

/// `mi_option_purge_delay` in mimalloc 2's `mi_option_e` (the bindings name
/// the options around it, 14 and 16, but not this one).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Applies the settings; call it first thing in `main`, before any thread.
pub fn tune() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // The one call into C in the host: setting an option is what mimalloc's
    // API offers for it, documented as safe to call at any time.
    #[allow(unsafe_code)]
    // SAFETY: `mi_option_set` takes an option id from mimalloc's own enum and
    // a plain integer; it only stores the value.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS);
    }
}

/// The purge delay mimalloc uses now, in milliseconds.
#[cfg(test)]
fn purge_delay_ms() -> std::ffi::c_long {
    #[allow(unsafe_code)]
    // SAFETY: reads an option by its id from mimalloc's own enum.
    unsafe {
        libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tuning_keeps_freed_memory_for_a_second() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            eprintln!("MIMALLOC_PURGE_DELAY is set: the default cannot be checked");
            return;
        }
        // mimalloc 2's default for this option id is the purge delay's, 10 ms.
        assert_eq!(super::purge_delay_ms(), 10);
        super::tune();
        assert_eq!(super::purge_delay_ms(), super::PURGE_DELAY_MS);
    }
}

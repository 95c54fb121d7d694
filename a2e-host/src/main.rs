//! `a2e`: the A2E host binary.

mod cli;

/// The host allocates and frees many short-lived JSON values per call and
/// per chain node; mimalloc serves them from thread-local free lists and
/// keeps freed pages for reuse, which the chain engine's benchmark measured
/// at about half the per-node cost of the system allocator (see
/// `a2e-chain/README.md`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}

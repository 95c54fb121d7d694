//! `a2e`: the A2E host binary.

mod allocator;
mod cli;

/// The host allocates and frees many short-lived JSON values per call and
/// per chain node; mimalloc serves them from thread-local free lists and
/// keeps freed pages for reuse, so a call's allocations rarely reach the
/// kernel (the chain engine's benchmark compares it with the system
/// allocator: `a2e-chain/README.md`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The hidden subcommand under which the binary is its own sandbox wrapper.
const SANDBOX_EXEC: &str = "__sandbox-exec";

fn main() -> std::process::ExitCode {
    allocator::tune();
    // Before any thread exists: the wrapper may enter namespaces.
    let mut args = std::env::args_os().skip(1).peekable();
    if args.peek().is_some_and(|a| a == SANDBOX_EXEC) {
        a2e_sandbox::exec_main(args.skip(1));
    }
    cli::main()
}

//! The exec wrapper as a binary of its own: `a2e-sandbox-exec PLAN -- PROGRAM [ARGS…]`
//! (or `--probe`). Hosts usually call [`a2e_sandbox::exec_main`] from a hidden
//! subcommand of their own binary instead.

fn main() {
    a2e_sandbox::exec_main(std::env::args_os().skip(1))
}

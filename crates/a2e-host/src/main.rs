//! `a2e`: the A2E host binary.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}

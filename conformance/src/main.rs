//! `a2e-conformance`: checks an A2E host or client against the specs.

fn main() -> std::process::ExitCode {
    conformance::cli::main(std::env::args_os())
}

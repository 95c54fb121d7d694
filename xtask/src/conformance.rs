//! `cargo xtask conformance`: one line per fixture and a closing `N passed, N failed`.

/// Runs every conformance fixture; with `--host CMD…`, the black-box suite
/// against that host command instead.
pub fn run(args: &[&str]) -> Result<(), String> {
    let outcomes = match args.iter().position(|a| *a == "--host") {
        Some(at) => {
            let command: Vec<String> = args.iter().skip(at + 1).map(|s| (*s).to_owned()).collect();
            if command.is_empty() {
                return Err(
                    "--host needs the host command, e.g. --host target/debug/a2e serve --stdio"
                        .into(),
                );
            }
            conformance::blackbox::run(&command)
        }
        None => conformance::run_all(),
    };
    let mut failed = 0usize;
    for outcome in &outcomes {
        if outcome.passed {
            println!("ok     {}", outcome.name);
        } else {
            failed += 1;
            println!("FAILED {}: {}", outcome.name, outcome.detail);
        }
    }
    println!("{} passed, {} failed", outcomes.len() - failed, failed);
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} conformance fixture(s) failed"))
    }
}

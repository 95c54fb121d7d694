//! `cargo xtask conformance`: one line per fixture and a closing `N passed, N failed`.

/// Runs every conformance fixture.
pub fn run() -> Result<(), String> {
    let outcomes = conformance::run_all();
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

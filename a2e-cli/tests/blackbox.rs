//! The conformance crate's black-box suite against the `a2e` binary.

#[test]
fn the_a2e_binary_passes_the_black_box_suite() {
    let root = tempfile::tempdir().unwrap();
    let command: Vec<String> = vec![
        env!("CARGO_BIN_EXE_a2e").into(),
        "serve".into(),
        "--stdio".into(),
        "--root".into(),
        root.path().display().to_string(),
    ];
    let outcomes = conformance::blackbox::run(&command);
    let failed: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.passed)
        .map(ToString::to_string)
        .collect();
    assert!(outcomes.len() >= 12, "{outcomes:?}");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

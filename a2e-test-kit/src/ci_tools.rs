//! Where `.ci/install-*.sh` put the packages the tests use, and the settings
//! they announced.

use std::path::{Path, PathBuf};

/// `$A2E_CI_TOOLS`, or `<workspace>/.ci-tools`.
pub fn dir() -> PathBuf {
    std::env::var_os("A2E_CI_TOOLS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci-tools"),
        PathBuf::from,
    )
}

/// A variable from the environment, else from the `export` lines the
/// installers append to `$A2E_CI_TOOLS/env` (the last one wins).
pub fn setting(name: &str) -> Option<String> {
    if let Some(v) = std::env::var(name).ok().filter(|v| !v.is_empty()) {
        return Some(v);
    }
    let text = std::fs::read_to_string(dir().join("env")).ok()?;
    let prefix = format!("export {name}=");
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim().trim_matches('"').to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_comes_before_the_env_file() {
        // PATH is set in any test process; an unset name with no env file
        // entry is none.
        assert_eq!(setting("PATH"), std::env::var("PATH").ok());
        assert_eq!(setting("A2E_TEST_KIT_NO_SUCH_SETTING_0"), None);
    }
}

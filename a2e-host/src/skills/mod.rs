//! Skills: argument checking against `input_schema`, and chain skills loaded
//! from Markdown files with YAML front matter.

pub mod chain_skill;

use crate::host::{BuildError, HostBuilder};

/// Adds the chain skills found in the configuration's `skill_dirs` (relative
/// to `root`) to a builder; a file that does not parse fails the build.
pub fn builder_with_skills(builder: HostBuilder) -> HostBuilder {
    let config = builder.config();
    let dirs: Vec<_> = config
        .skill_dirs
        .iter()
        .map(|d| {
            if d.is_absolute() {
                d.clone()
            } else {
                config.root.join(d)
            }
        })
        .collect();
    match chain_skill::load_dirs(&dirs) {
        Ok(skills) if skills.is_empty() => builder,
        Ok(skills) => builder.with_skill_plugin(chain_skill::ChainSkills::new(skills)),
        Err(e) => builder.with_error(BuildError::Skill(e)),
    }
}

//! Skills loaded from Markdown files with YAML front matter (the `SKILL.md` shape):
//! chain skills (a ```` ```chain ```` block in the body) and LLM skills (the body is the
//! system prompt of the agentic loop), with default `arguments` merged under a call's.
//!
//! [`front_matter::SkillFileKind`] tells the kinds apart: a file with `command:` in its front
//! matter is a sandboxed program skill ([`program_skill`]), one with an ```` ```ontheia ````
//! block an Ontheia chain ([`ontheia_skill`]).
//!
//! A chain skill from a file, called on the host it joins:
//!
//! ```
//! use a2e_host_core::{CallOptions, Host, HostConfig};
//! use a2e_proto::SkillCallRequest;
//! use serde_json::json;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = tokio::runtime::Runtime::new()?;
//! rt.block_on(async {
//!     let dir = tempfile::tempdir()?;
//!     std::fs::create_dir_all(dir.path().join("skills"))?;
//!     std::fs::write(
//!         dir.path().join("skills/count.md"),
//!         "---\nname: count\ndescription: Counts words\n---\n\n```chain\n\
//!          {\"entry_node\": \"n\", \"nodes\": [{\"node_id\": \"n\", \"kind\": \"tool\", \
//!          \"name\": \"text_stats\", \"input_map\": {\"text\": \"input.text\"}}]}\n```\n",
//!     )?;
//!     let config = HostConfig { root: dir.path().to_path_buf(), ..HostConfig::default() };
//!     let builder = Host::builder(config).with_builtins();
//!     let host = a2e_host_skills::builder_with_skills(builder).build()?;
//!     let req = SkillCallRequest::new("count", json!({"text": "one two three"}));
//!     let result = host.call_skill(req, CallOptions::new()).await?;
//!     assert!(result.success, "{result:?}");
//!     Ok(())
//! })
//! # }
//! ```
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)
)]

pub mod chain_skill;
pub mod defaults;
#[cfg(all(test, feature = "journal", feature = "llm", feature = "ontheia"))]
mod durable_tests;
pub mod front_matter;
#[cfg(feature = "llm")]
pub(crate) mod llm_durable;
#[cfg(feature = "llm")]
pub mod llm_skill;
#[cfg(feature = "ontheia")]
pub mod ontheia_skill;
#[cfg(feature = "sandbox")]
pub mod program_skill;

use std::path::{Path, PathBuf};

use a2e_host_core::error::SkillError;
use a2e_host_core::host::{BuildError, HostBuilder};
use chain_skill::ChainSkill;
use front_matter::SkillFileKind;
#[cfg(feature = "llm")]
use llm_skill::LlmSkill;

/// A loaded skill file.
#[derive(Debug, Clone)]
pub enum LoadedSkill {
    /// A chain skill.
    Chain(ChainSkill),
    /// An LLM skill.
    #[cfg(feature = "llm")]
    Llm(LlmSkill),
    /// A sandboxed program.
    #[cfg(feature = "sandbox")]
    Program(program_skill::ProgramSkill),
    /// An Ontheia chain.
    #[cfg(feature = "ontheia")]
    Ontheia(ontheia_skill::OntheiaSkill),
}

/// Loads one skill file's text; `path` is recorded as `file_path` and named in errors.
pub fn load_skill(text: &str, path: &Path) -> Result<LoadedSkill, SkillError> {
    let file = front_matter::parse_file(text, path)?;
    match file.kind() {
        SkillFileKind::Chain => chain_skill::from_file(&file, path).map(LoadedSkill::Chain),
        #[cfg(feature = "llm")]
        SkillFileKind::Llm => LlmSkill::from_file(&file, path).map(LoadedSkill::Llm),
        #[cfg(feature = "sandbox")]
        SkillFileKind::Program => {
            program_skill::ProgramSkill::from_file(&file, path).map(LoadedSkill::Program)
        }
        #[cfg(feature = "ontheia")]
        SkillFileKind::Ontheia => {
            ontheia_skill::OntheiaSkill::from_file(&file, path).map(LoadedSkill::Ontheia)
        }
        #[allow(unreachable_patterns, reason = "reached only without some features")]
        kind => Err(SkillError::MissingFeature {
            path: path.to_owned(),
            kind: kind.as_str(),
            feature: kind.feature(),
        }),
    }
}

/// Loads every `*.md` file under `dirs` (one level deep, and `*/SKILL.md` /
/// `*/skill.md` in subfolders). Missing directories are skipped; two skills of one
/// name are an error naming both files.
pub fn load_dirs(dirs: &[PathBuf]) -> Result<Vec<LoadedSkill>, SkillError> {
    let mut files = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                for name in ["SKILL.md", "skill.md"] {
                    let candidate = path.join(name);
                    if candidate.is_file() {
                        files.push(candidate);
                        break;
                    }
                }
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut skills = Vec::new();
    for file in files {
        let text = match std::fs::read_to_string(&file) {
            Ok(text) => text,
            Err(source) => return Err(SkillError::Read { path: file, source }),
        };
        skills.push(load_skill(&text, &file)?);
    }
    Ok(skills)
}

/// Adds the skills found in the configuration's `skill_dirs` (relative to `root`) to a
/// builder; a file that does not load, or a provider configuration that does not
/// build, fails the build.
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
    let loaded = match load_dirs(&dirs) {
        Ok(l) => l,
        Err(e) => return builder.with_error(BuildError::Skill(e)),
    };
    let mut chains = Vec::new();
    #[cfg(feature = "llm")]
    let mut llms = Vec::new();
    #[cfg(feature = "sandbox")]
    let mut programs = Vec::new();
    #[cfg(feature = "ontheia")]
    let mut ontheias = Vec::new();
    for skill in loaded {
        match skill {
            LoadedSkill::Chain(c) => chains.push(c),
            #[cfg(feature = "llm")]
            LoadedSkill::Llm(l) => llms.push(l),
            #[cfg(feature = "sandbox")]
            LoadedSkill::Program(p) => programs.push(p),
            #[cfg(feature = "ontheia")]
            LoadedSkill::Ontheia(o) => ontheias.push(o),
        }
    }
    let mut builder = builder;
    #[cfg(feature = "sandbox")]
    if !programs.is_empty() {
        let launcher = builder.launcher().clone();
        builder = builder.with_skill_plugin(program_skill::ProgramSkills::new(programs, launcher));
    }
    #[cfg(feature = "ontheia")]
    if !ontheias.is_empty() {
        builder = builder.with_skill_plugin(ontheia_skill::OntheiaSkills::new(ontheias));
    }
    if !chains.is_empty() {
        builder = builder.with_skill_plugin(chain_skill::ChainSkills::new(chains));
    }
    #[cfg(feature = "llm")]
    if !llms.is_empty() {
        match builder.providers() {
            Ok(Some(p)) => builder = builder.with_skill_plugin(llm_skill::LlmSkills::new(llms, p)),
            Ok(None) => {}
            Err(e) => builder = builder.with_error(BuildError::Config(e)),
        }
    }
    builder
}

#[cfg(all(test, feature = "sandbox"))]
mod tests {
    use super::*;

    #[test]
    fn program_skills_load_and_a_bad_command_is_refused_naming_the_file() {
        let loaded = load_skill(
            "---\nname: p\ndescription: d\ncommand: [python3, run.py]\n---\n",
            Path::new("dir/p.md"),
        )
        .unwrap();
        let LoadedSkill::Program(p) = loaded else {
            panic!("not a program skill")
        };
        assert_eq!(p.command, ["python3", "run.py"]);
        assert_eq!(p.workdir, Path::new("dir"));
        let err = load_skill(
            "---\nname: p\ndescription: d\ncommand: 5\n---\n",
            Path::new("p.md"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("p.md") && err.contains("command"), "{err}");
    }
}

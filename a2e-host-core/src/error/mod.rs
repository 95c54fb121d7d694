//! Host errors: [`HostError`], every way a request is refused or a call
//! fails, with the one place where they map to wire codes; how a plugin's
//! small error becomes one (`plugin.rs`); and the typed errors of building a host: a
//! configuration section that does not build ([`ConfigError`]) and a skill
//! file that does not load ([`SkillError`]).

use std::path::PathBuf;

mod host_error;
mod plugin;

pub use a2e_plugin::Cause;
pub use host_error::{HostError, HostResult};
pub use plugin::PluginError;

/// A section of the configuration that does not build; the message names the
/// section.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `[[llm.providers]]` (or the `A2E_LLM_*` variables) do not build.
    #[cfg(feature = "llm")]
    #[error("[llm] {0}")]
    Providers(#[from] a2e_llm::ConfigError),
    /// A `[memory] namespaces` pattern is refused.
    #[cfg(feature = "memory")]
    #[error("[memory] namespaces: {0}")]
    MemoryNamespaces(#[from] a2e_memory::PolicyError),
    /// `[memory.embeddings]` does not build.
    #[cfg(feature = "memory")]
    #[error("[memory.embeddings]: {0}")]
    Embeddings(#[from] a2e_memory::EmbedError),
    /// `[[mcp.servers]]` do not mount.
    #[cfg(feature = "mcp")]
    #[error("[mcp] {0}")]
    Mcp(#[source] a2e_mcp::McpError),
    /// `[acmp]` cannot be acted on (a `token_env` the environment does not set).
    #[error(transparent)]
    Acmp(#[from] crate::acmp_config::AcmpConfigError),
    /// An `[[approvals]]` rule's glob does not compile.
    #[error("[[approvals]]: {0}")]
    Approvals(#[source] globset::Error),
    /// A remote agent of `[[a2a.agents]]` cannot be reached or used.
    #[error("[[a2a.agents]] {agent}: {why}")]
    A2aAgent {
        /// The agent's name.
        agent: String,
        /// What went wrong.
        why: String,
    },
    /// A section needs a feature this host was built without.
    #[error("{section} needs a host built with its `{feature}` feature")]
    MissingFeature {
        /// The section, as written in the configuration (`[[mcp.servers]]`).
        section: &'static str,
        /// The feature it needs.
        feature: &'static str,
    },
}

/// Why a skill does not load. Every error names its file, or the skill for
/// one defined in code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than a skill file may be.
    #[error("{}: {size} bytes, more than the {limit} a skill file may have", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size in bytes.
        size: usize,
        /// The most a skill file may have.
        limit: usize,
    },
    /// The file does not open with `---` YAML front matter.
    #[error("{}: missing `---` YAML front matter", path.display())]
    MissingFrontMatter {
        /// The file.
        path: PathBuf,
    },
    /// The front matter is not YAML of the expected shape.
    #[error("{}: front matter: {source}", path.display())]
    FrontMatter {
        /// The file.
        path: PathBuf,
        /// The YAML error.
        #[source]
        source: serde_norway::Error,
    },
    /// A front matter field has a value of the wrong shape.
    #[error("{}: {field}: {reason}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// The field (`llm_config`, `arguments`, `command`, …).
        field: &'static str,
        /// What is wrong with its value.
        #[source]
        reason: FieldError,
    },
    /// The body lacks the fenced block its kind needs.
    #[error("{}: no ```{block} block in the body", path.display())]
    MissingBlock {
        /// The file.
        path: PathBuf,
        /// The block's info string (`chain`, `ontheia`).
        block: &'static str,
    },
    /// The ```` ```chain ```` block is not a chain.
    #[error("{}: chain block: {source}", path.display())]
    ChainBlock {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        #[source]
        source: serde_json::Error,
    },
    /// The ```` ```ontheia ```` block is not a valid Ontheia chain.
    #[cfg(feature = "ontheia")]
    #[error("{}: ontheia block: {source}", path.display())]
    OntheiaBlock {
        /// The file.
        path: PathBuf,
        /// Every rule the document breaks.
        #[source]
        source: ontheia::ValidationErrors,
    },
    /// One of the skill's schemas is not a JSON Schema.
    #[error("skill `{skill}`: {schema} does not compile: {source}")]
    Schema {
        /// The skill's name.
        skill: String,
        /// `input_schema` or `output_schema`.
        schema: &'static str,
        /// The compiler's error.
        #[source]
        source: Box<jsonschema::ValidationError<'static>>,
    },
    /// The skill loaded, but its definition does not build (with the file
    /// named).
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// What does not build.
        #[source]
        source: Box<SkillError>,
    },
    /// A kind of skill this host was built without.
    #[error("{}: a {kind} skill needs a host built with its `{feature}` feature", path.display())]
    MissingFeature {
        /// The file.
        path: PathBuf,
        /// The skill's kind.
        kind: &'static str,
        /// The feature it needs.
        feature: &'static str,
    },
}

/// What is wrong with one front matter field's value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FieldError {
    /// A value of another JSON kind was expected.
    #[error("expected {expected}, got {got}")]
    Kind {
        /// What the field takes.
        expected: &'static str,
        /// The kind it has.
        got: &'static str,
    },
    /// The value is empty.
    #[error("is empty")]
    Empty,
    /// A key the value needs is missing or empty.
    #[error("names no `{0}`")]
    Missing(&'static str),
    /// One item of a list is wrong.
    #[error("item {index}: {reason}")]
    Item {
        /// Its index in the list.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The value does not have the shape of its type.
    #[error(transparent)]
    Shape(#[from] serde_json::Error),
}

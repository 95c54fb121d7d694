//! Capabilities a host offers and an agent asks for (a2e-core.md §2).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

open_enum! {
    /// A capability name. Note `skill` is singular and `tools` plural.
    pub struct A2ECapability {
        /// Skills (`skill/*`).
        SKILL = "skill",
        /// Tools (`tool/*`).
        TOOLS = "tools",
        /// Toolkits.
        TOOLKITS = "toolkits",
        /// Environment.
        ENV = "env",
        /// Processes (`proc/*`).
        PROC = "proc",
        /// Memory.
        MEMORY = "memory",
        /// Learning.
        LEARNING = "learning",
        /// Chains (`chain/*`).
        CHAINS = "chains",
        /// Multi-agent.
        MULTI_AGENT = "multi_agent",
        /// Planning.
        PLANNING = "planning",
        /// MCP bridging.
        MCP = "mcp",
        /// Test.
        TEST = "test",
    }
}

/// One capability as the host grants it in `handshake/resp`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "arbitrary", derive(proptest_derive::Arbitrary))]
pub struct Capability {
    /// Which capability.
    pub capability: A2ECapability,
    /// Whether it is available in this session.
    #[serde(default = "crate::envelope::yes")]
    pub enabled: bool,
    /// Plugin facts (`name`, `type`, `priority`, `exclusive`) or, when disabled, `reason`.
    #[serde(default)]
    #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
    pub metadata: Map<String, Value>,
}

impl Capability {
    /// An enabled capability with no metadata.
    pub fn enabled(capability: A2ECapability) -> Self {
        Self {
            capability,
            enabled: true,
            metadata: Map::new(),
        }
    }

    /// A disabled capability with `metadata.reason`.
    pub fn disabled(capability: A2ECapability, reason: &str) -> Self {
        let mut metadata = Map::new();
        metadata.insert("reason".into(), Value::String(reason.into()));
        Self {
            capability,
            enabled: false,
            metadata,
        }
    }
}

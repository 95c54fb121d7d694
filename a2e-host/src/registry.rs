//! The plugin registry: plugins ordered by priority, `exclusive` honoured, and
//! tool and skill names unique across plugins.

use std::collections::HashMap;
use std::sync::Arc;

use a2e_proto::{SkillDefinition, ToolDefinition};

use crate::plugin::{DynSkillPlugin, DynToolPlugin};

/// Registration refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RegistryError {
    /// Two plugins share a name.
    #[error("a plugin named `{0}` is already registered")]
    DuplicatePlugin(String),
    /// Two plugins offer the same tool.
    #[error("tool `{tool}` of plugin `{plugin}` is already offered by plugin `{existing}`")]
    DuplicateTool {
        /// The tool.
        tool: String,
        /// The plugin being registered.
        plugin: String,
        /// The plugin that has it.
        existing: String,
    },
    /// Two plugins offer the same skill.
    #[error("skill `{skill}` of plugin `{plugin}` is already offered by plugin `{existing}`")]
    DuplicateSkill {
        /// The skill.
        skill: String,
        /// The plugin being registered.
        plugin: String,
        /// The plugin that has it.
        existing: String,
    },
}

/// A registered tool: its definition and the plugin that serves it.
#[derive(Clone)]
pub struct ToolEntry {
    /// The manifest.
    pub def: ToolDefinition,
    /// Its plugin.
    pub plugin: Arc<dyn DynToolPlugin>,
}

/// A registered skill.
#[derive(Clone)]
pub struct SkillEntry {
    /// The manifest.
    pub def: SkillDefinition,
    /// Its plugin.
    pub plugin: Arc<dyn DynSkillPlugin>,
}

/// Tool and skill plugins, in dispatch order.
#[derive(Default, Clone)]
pub struct Registry {
    tool_plugins: Vec<Arc<dyn DynToolPlugin>>,
    skill_plugins: Vec<Arc<dyn DynSkillPlugin>>,
    tools: HashMap<String, ToolEntry>,
    skills: HashMap<String, SkillEntry>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool plugin; refuses a duplicate plugin or tool name.
    pub fn add_tool_plugin(&mut self, plugin: Arc<dyn DynToolPlugin>) -> Result<(), RegistryError> {
        if self.tool_plugins.iter().any(|p| p.name() == plugin.name()) {
            return Err(RegistryError::DuplicatePlugin(plugin.name().into()));
        }
        let defs = plugin.tools();
        let mut seen = std::collections::HashSet::new();
        for def in &defs {
            if let Some(existing) = self.tools.get(&def.name) {
                return Err(RegistryError::DuplicateTool {
                    tool: def.name.clone(),
                    plugin: plugin.name().into(),
                    existing: existing.plugin.name().into(),
                });
            }
            if !seen.insert(def.name.clone()) {
                return Err(RegistryError::DuplicateTool {
                    tool: def.name.clone(),
                    plugin: plugin.name().into(),
                    existing: plugin.name().into(),
                });
            }
        }
        for def in defs {
            self.tools.insert(
                def.name.clone(),
                ToolEntry {
                    def,
                    plugin: plugin.clone(),
                },
            );
        }
        self.tool_plugins.push(plugin);
        // Stable: equal priorities keep registration order.
        self.tool_plugins
            .sort_by_key(|p| std::cmp::Reverse(p.priority()));
        Ok(())
    }

    /// Adds a skill plugin; refuses a duplicate plugin or skill name.
    pub fn add_skill_plugin(
        &mut self,
        plugin: Arc<dyn DynSkillPlugin>,
    ) -> Result<(), RegistryError> {
        if self.skill_plugins.iter().any(|p| p.name() == plugin.name()) {
            return Err(RegistryError::DuplicatePlugin(plugin.name().into()));
        }
        let defs = plugin.skills();
        let mut seen = std::collections::HashSet::new();
        for def in &defs {
            let existing = self
                .skills
                .get(&def.name)
                .map(|e| e.plugin.name().to_owned());
            let dup_here = !seen.insert(def.name.clone());
            if let Some(existing) = existing.or_else(|| dup_here.then(|| plugin.name().to_owned()))
            {
                return Err(RegistryError::DuplicateSkill {
                    skill: def.name.clone(),
                    plugin: plugin.name().into(),
                    existing,
                });
            }
        }
        for def in defs {
            self.skills.insert(
                def.name.clone(),
                SkillEntry {
                    def,
                    plugin: plugin.clone(),
                },
            );
        }
        self.skill_plugins.push(plugin);
        self.skill_plugins
            .sort_by_key(|p| std::cmp::Reverse(p.priority()));
        Ok(())
    }

    /// Tool plugins that serve, highest priority first: only the first when it is exclusive.
    pub fn serving_tool_plugins(&self) -> &[Arc<dyn DynToolPlugin>] {
        match self.tool_plugins.first() {
            Some(first) if first.exclusive() => std::slice::from_ref(first),
            _ => &self.tool_plugins,
        }
    }

    /// Skill plugins that serve, highest priority first: only the first when it is exclusive.
    pub fn serving_skill_plugins(&self) -> &[Arc<dyn DynSkillPlugin>] {
        match self.skill_plugins.first() {
            Some(first) if first.exclusive() => std::slice::from_ref(first),
            _ => &self.skill_plugins,
        }
    }

    /// Every tool that serves, in plugin priority order, then name.
    pub fn tools(&self) -> Vec<ToolEntry> {
        let mut out = Vec::new();
        for plugin in self.serving_tool_plugins() {
            let mut mine: Vec<ToolEntry> = self
                .tools
                .values()
                .filter(|e| Arc::ptr_eq(&e.plugin, plugin))
                .cloned()
                .collect();
            mine.sort_by(|a, b| a.def.name.cmp(&b.def.name));
            out.extend(mine);
        }
        out
    }

    /// A tool that serves, by name.
    pub fn tool(&self, name: &str) -> Option<ToolEntry> {
        let entry = self.tools.get(name)?;
        self.serving_tool_plugins()
            .iter()
            .any(|p| Arc::ptr_eq(p, &entry.plugin))
            .then(|| entry.clone())
    }

    /// Every skill that serves, in plugin priority order, then name.
    pub fn skills(&self) -> Vec<SkillEntry> {
        let mut out = Vec::new();
        for plugin in self.serving_skill_plugins() {
            let mut mine: Vec<SkillEntry> = self
                .skills
                .values()
                .filter(|e| Arc::ptr_eq(&e.plugin, plugin))
                .cloned()
                .collect();
            mine.sort_by(|a, b| a.def.name.cmp(&b.def.name));
            out.extend(mine);
        }
        out
    }

    /// A skill that serves, by name.
    pub fn skill(&self, name: &str) -> Option<SkillEntry> {
        let entry = self.skills.get(name)?;
        self.serving_skill_plugins()
            .iter()
            .any(|p| Arc::ptr_eq(p, &entry.plugin))
            .then(|| entry.clone())
    }

    /// Whether any tool plugin is registered.
    pub fn has_tools(&self) -> bool {
        !self.tool_plugins.is_empty()
    }

    /// Whether any skill plugin is registered.
    pub fn has_skills(&self) -> bool {
        !self.skill_plugins.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::HostResult;
    use crate::plugin::{CallContext, ToolOutput, ToolPlugin};
    use serde_json::{Map, Value};

    struct P {
        name: &'static str,
        tools: &'static [&'static str],
        priority: i32,
        exclusive: bool,
    }

    impl ToolPlugin for P {
        fn name(&self) -> &str {
            self.name
        }
        fn priority(&self) -> i32 {
            self.priority
        }
        fn exclusive(&self) -> bool {
            self.exclusive
        }
        fn tools(&self) -> Vec<ToolDefinition> {
            self.tools
                .iter()
                .map(|t| ToolDefinition::new(t, "t"))
                .collect()
        }
        async fn call(
            &self,
            _: &str,
            _: Map<String, Value>,
            _: CallContext,
        ) -> HostResult<ToolOutput> {
            Ok(ToolOutput::default())
        }
    }

    fn p(
        name: &'static str,
        tools: &'static [&'static str],
        priority: i32,
        exclusive: bool,
    ) -> Arc<dyn DynToolPlugin> {
        Arc::new(P {
            name,
            tools,
            priority,
            exclusive,
        })
    }

    #[test]
    fn duplicate_plugins_and_tools_are_refused() {
        let mut r = Registry::new();
        r.add_tool_plugin(p("a", &["x", "y"], 0, false)).unwrap();
        assert_eq!(
            r.add_tool_plugin(p("a", &["z"], 0, false)).unwrap_err(),
            RegistryError::DuplicatePlugin("a".into())
        );
        let err = r
            .add_tool_plugin(p("b", &["z", "y"], 0, false))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool `y` of plugin `b` is already offered by plugin `a`"
        );
        // Nothing of the refused plugin was registered.
        assert!(r.tool("z").is_none());
        assert!(r.add_tool_plugin(p("c", &["w", "w"], 0, false)).is_err());
    }

    #[test]
    fn higher_priority_lists_first_and_exclusive_serves_alone() {
        let mut r = Registry::new();
        r.add_tool_plugin(p("low", &["b1"], 0, false)).unwrap();
        r.add_tool_plugin(p("high", &["a1"], 10, false)).unwrap();
        let names: Vec<String> = r.tools().into_iter().map(|e| e.def.name).collect();
        assert_eq!(names, vec!["a1", "b1"]);
        r.add_tool_plugin(p("only", &["o1"], 20, true)).unwrap();
        let names: Vec<String> = r.tools().into_iter().map(|e| e.def.name).collect();
        assert_eq!(names, vec!["o1"]);
        assert!(r.tool("b1").is_none());
        assert!(r.tool("o1").is_some());
    }
}

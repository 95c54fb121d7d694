//! The plugin registry: plugins ordered by priority, `exclusive` honoured, and
//! tool and skill names unique across plugins.

use std::sync::Arc;

use a2e_proto::{SkillDefinition, ToolDefinition};
use serde_json::Value;

use crate::error::HostError;
use crate::plugin::{DynSkillPlugin, DynToolPlugin};

pub mod schema_check;
mod table;
mod validator;
pub use schema_check::InvalidSchema;
use table::Table;
pub use validator::ArgsValidator;

/// Registration refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
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
    /// A tool's or skill's schema is not valid JSON Schema.
    #[error("plugin `{plugin}`: {source}")]
    InvalidSchema {
        /// The plugin being registered.
        plugin: String,
        /// The tool or skill, which schema, and where it goes wrong.
        #[source]
        source: Box<InvalidSchema>,
    },
}

/// What the registry needs to know of a plugin.
pub trait PluginInfo: Send + Sync {
    /// Plugin name (unique among plugins of its kind).
    fn plugin_name(&self) -> &str;
    /// Dispatch priority; higher first.
    fn plugin_priority(&self) -> i32;
    /// Whether it serves alone when it ranks first.
    fn plugin_exclusive(&self) -> bool;
}

/// `PluginInfo` for a plugin trait object with `name`, `priority` and `exclusive`.
macro_rules! plugin_info {
    ($($t:ty),+) => {$(
        impl PluginInfo for $t {
            fn plugin_name(&self) -> &str {
                self.name()
            }
            fn plugin_priority(&self) -> i32 {
                self.priority()
            }
            fn plugin_exclusive(&self) -> bool {
                self.exclusive()
            }
        }
    )+};
}

plugin_info!(dyn DynToolPlugin<HostError>, dyn DynSkillPlugin<HostError>);

/// A registered tool or skill: its definition, the plugin that serves it, and
/// the compiled validator of its arguments.
pub struct Entry<P: ?Sized, D> {
    /// The manifest (shared: a lookup copies no definition).
    pub def: Arc<D>,
    /// Its plugin.
    pub plugin: Arc<P>,
    /// The arguments' schema, compiled once at registration.
    pub validator: ArgsValidator,
}

impl<P: ?Sized, D> Clone for Entry<P, D> {
    fn clone(&self) -> Self {
        Self {
            def: self.def.clone(),
            plugin: self.plugin.clone(),
            validator: self.validator.clone(),
        }
    }
}

/// A registered tool.
pub type ToolEntry = Entry<dyn DynToolPlugin<HostError>, ToolDefinition>;
/// A registered skill.
pub type SkillEntry = Entry<dyn DynSkillPlugin<HostError>, SkillDefinition>;

/// A tool plugin's tools as `(name, definition, argument schema)`, each
/// schema checked against the meta-schema.
fn tool_items(
    plugin: &dyn DynToolPlugin<HostError>,
) -> Vec<(String, ToolDefinition, Value, Result<(), InvalidSchema>)> {
    plugin
        .tools()
        .into_iter()
        .map(|def| {
            let schema = plugin.input_schema(&def);
            let checked = schema_check::check_tool(&def, &schema);
            (def.name.clone(), def, schema, checked)
        })
        .collect()
}

/// The tools that a plugin offers later (a mounted server's): a tool with an
/// invalid schema is left out, with a warning naming it and the place.
fn valid_late_items(plugin: &dyn DynToolPlugin<HostError>) -> Vec<(String, ToolDefinition, Value)> {
    tool_items(plugin)
        .into_iter()
        .filter_map(|(name, def, schema, checked)| match checked {
            Ok(()) => Some((name, def, schema)),
            Err(e) => {
                tracing::warn!(plugin = plugin.name(), "{e}; the tool is not offered");
                None
            }
        })
        .collect()
}

/// Tool and skill plugins, in dispatch order.
#[derive(Default, Clone)]
pub struct Registry {
    tools: Table<dyn DynToolPlugin<HostError>, ToolDefinition>,
    skills: Table<dyn DynSkillPlugin<HostError>, SkillDefinition>,
    /// One [`Registry::load_tools`] at a time: a caller that waits for a
    /// plugin another caller is starting sees its tools registered after.
    loading: Arc<tokio::sync::Mutex<()>>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool plugin; refuses a duplicate plugin or tool name. Each tool's
    /// argument schema is compiled here, once.
    /// A tool whose input or output schema is not valid JSON Schema is refused
    /// ([`RegistryError::InvalidSchema`]).
    pub fn add_tool_plugin(
        &mut self,
        plugin: Arc<dyn DynToolPlugin<HostError>>,
    ) -> Result<(), RegistryError> {
        let plugin_name = plugin.name().to_owned();
        let mut items = Vec::new();
        for (name, def, schema, checked) in tool_items(plugin.as_ref()) {
            checked.map_err(|source| RegistryError::InvalidSchema {
                plugin: plugin_name.clone(),
                source: Box::new(source),
            })?;
            items.push((name, def, schema));
        }
        self.tools.add(plugin, items, |tool, existing| {
            RegistryError::DuplicateTool {
                tool,
                plugin: plugin_name.clone(),
                existing,
            }
        })
    }

    /// Asks every serving tool plugin to load the tools it loads on first use
    /// ([`ToolPlugin::load_tools`](crate::plugin::ToolPlugin::load_tools))
    /// and registers what they offer now. Returns how many tools were added.
    pub async fn load_tools(&self, include_deferred: bool) -> usize {
        // Without this, a second call could find the plugin started (and its
        // list unchanged) before the first has registered what it offers.
        let _one_at_a_time = self.loading.lock().await;
        let mut added = 0;
        for plugin in self.tools.serving() {
            if !plugin.load_tools_dyn(include_deferred).await {
                continue;
            }
            added += self.tools.sync(plugin, valid_late_items(plugin.as_ref()));
        }
        added
    }

    /// Adds a skill plugin; refuses a duplicate plugin or skill name, and a
    /// skill whose input or output schema is not valid JSON Schema. Each
    /// skill's `input_schema` is compiled here, once.
    pub fn add_skill_plugin(
        &mut self,
        plugin: Arc<dyn DynSkillPlugin<HostError>>,
    ) -> Result<(), RegistryError> {
        let plugin_name = plugin.name().to_owned();
        let mut items = Vec::new();
        for def in plugin.skills() {
            schema_check::check_skill(&def).map_err(|source| RegistryError::InvalidSchema {
                plugin: plugin_name.clone(),
                source: Box::new(source),
            })?;
            let schema = Value::Object(def.input_schema.clone());
            items.push((def.name.clone(), def, schema));
        }
        self.skills.add(plugin, items, |skill, existing| {
            RegistryError::DuplicateSkill {
                skill,
                plugin: plugin_name.clone(),
                existing,
            }
        })
    }

    /// Tool plugins that serve, highest priority first: only the first when it is exclusive.
    pub fn serving_tool_plugins(&self) -> &[Arc<dyn DynToolPlugin<HostError>>] {
        self.tools.serving()
    }

    /// Skill plugins that serve, highest priority first: only the first when it is exclusive.
    pub fn serving_skill_plugins(&self) -> &[Arc<dyn DynSkillPlugin<HostError>>] {
        self.skills.serving()
    }

    /// Every tool that serves, in plugin priority order, then name.
    pub fn tools(&self) -> Vec<ToolEntry> {
        self.tools.all()
    }

    /// A tool that serves, by name.
    pub fn tool(&self, name: &str) -> Option<ToolEntry> {
        self.tools.get(name)
    }

    /// Every skill that serves, in plugin priority order, then name.
    pub fn skills(&self) -> Vec<SkillEntry> {
        self.skills.all()
    }

    /// A skill that serves, by name.
    pub fn skill(&self, name: &str) -> Option<SkillEntry> {
        self.skills.get(name)
    }

    /// Whether any tool plugin is registered.
    pub fn has_tools(&self) -> bool {
        !self.tools.plugins.is_empty()
    }

    /// Whether any skill plugin is registered.
    pub fn has_skills(&self) -> bool {
        !self.skills.plugins.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HostResult;
    use crate::plugin::{CallContext, ToolOutput, ToolPlugin};
    use serde_json::{Map, json};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A plugin with `tools`, and `later` ones that it offers only once it
    /// has been asked to load (as a mounted MCP server that starts on first
    /// use).
    struct P {
        name: &'static str,
        tools: &'static [&'static str],
        priority: i32,
        exclusive: bool,
        later: &'static [&'static str],
        loaded: AtomicBool,
    }

    impl ToolPlugin<HostError> for P {
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
            let later = if self.loaded.load(Ordering::SeqCst) {
                self.later
            } else {
                &[]
            };
            self.tools
                .iter()
                .chain(later)
                .map(|t| ToolDefinition::new(t, "t"))
                .collect()
        }
        async fn load_tools(&self, _include_deferred: bool) -> bool {
            !self.later.is_empty() && !self.loaded.swap(true, Ordering::SeqCst)
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
    ) -> Arc<dyn DynToolPlugin<HostError>> {
        Arc::new(plugin(name, tools, priority, exclusive))
    }

    fn plugin(
        name: &'static str,
        tools: &'static [&'static str],
        priority: i32,
        exclusive: bool,
    ) -> P {
        P {
            name,
            tools,
            priority,
            exclusive,
            later: &[],
            loaded: AtomicBool::new(false),
        }
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
        let names: Vec<String> = r.tools().into_iter().map(|e| e.def.name.clone()).collect();
        assert_eq!(names, vec!["a1", "b1"]);
        r.add_tool_plugin(p("only", &["o1"], 20, true)).unwrap();
        let names: Vec<String> = r.tools().into_iter().map(|e| e.def.name.clone()).collect();
        assert_eq!(names, vec!["o1"]);
        assert!(r.tool("b1").is_none());
        assert!(r.tool("o1").is_some());
    }

    #[tokio::test]
    async fn tools_offered_later_join_without_taking_names_over() {
        let mut r = Registry::new();
        r.add_tool_plugin(p("other", &["a1"], 0, false)).unwrap();
        // `a1` is another plugin's: skipped, not taken over.
        r.add_tool_plugin(Arc::new(P {
            later: &["second", "a1"],
            ..plugin("later", &["first"], 0, false)
        }))
        .unwrap();
        assert!(r.tool("second").is_none());
        assert_eq!(r.load_tools(true).await, 1, "only `second` is new");
        let second = r.tool("second").expect("registered late");
        assert_eq!(second.plugin.name(), "later");
        assert_eq!(r.tool("a1").unwrap().plugin.name(), "other");
        let names: Vec<String> = r.tools().into_iter().map(|e| e.def.name.clone()).collect();
        assert_eq!(names, ["a1", "first", "second"]);
        // Nothing more to load: nothing added, and a copy keeps the late names.
        assert_eq!(r.load_tools(true).await, 0);
        assert!(r.clone().tool("second").is_some());
    }

    /// A plugin whose offer changes (as a mounted MCP server whose list
    /// changed): `offer` is what it lists, `changed` what `load_tools` says.
    struct Shifting {
        offer: Mutex<Vec<ToolDefinition>>,
        changed: AtomicBool,
    }

    impl Shifting {
        fn offers(&self, tools: &[(&str, &str)]) {
            *self.offer.lock().unwrap() = tools
                .iter()
                .map(|(name, description)| ToolDefinition::new(name, description))
                .collect();
            self.changed.store(true, Ordering::SeqCst);
        }
    }

    impl ToolPlugin<HostError> for Shifting {
        fn name(&self) -> &str {
            "shifting"
        }
        fn tools(&self) -> Vec<ToolDefinition> {
            self.offer.lock().unwrap().clone()
        }
        fn input_schema(&self, tool: &ToolDefinition) -> Value {
            // v2 of a tool requires `n`.
            if tool.description == "v2" {
                json!({"type": "object", "required": ["n"]})
            } else {
                tool.input_schema()
            }
        }
        async fn load_tools(&self, _include_deferred: bool) -> bool {
            self.changed.swap(false, Ordering::SeqCst)
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

    fn names(r: &Registry) -> Vec<String> {
        let mut names: Vec<String> = r.tools().into_iter().map(|e| e.def.name.clone()).collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn a_plugins_revised_offer_adds_replaces_and_withdraws() {
        let shifting = Arc::new(Shifting {
            offer: Mutex::new(Vec::new()),
            changed: AtomicBool::new(false),
        });
        shifting.offers(&[("keep", "v1"), ("drop_me", "v1")]);
        let mut r = Registry::new();
        r.add_tool_plugin(shifting.clone()).unwrap();
        r.add_tool_plugin(p("other", &["o"], 0, false)).unwrap();
        assert_eq!(
            r.load_tools(false).await,
            0,
            "nothing changed since registration"
        );
        assert_eq!(names(&r), ["drop_me", "keep", "o"]);

        // `keep` changes (its new schema requires `n`), `drop_me` goes,
        // `new` comes, and `o` stays the other plugin's.
        shifting.offers(&[("keep", "v2"), ("new", "v1"), ("o", "mine?")]);
        assert_eq!(r.load_tools(false).await, 3);
        assert_eq!(names(&r), ["keep", "new", "o"]);
        assert!(r.tool("drop_me").is_none());
        let keep = r.tool("keep").expect("still served");
        assert_eq!(keep.def.description, "v2");
        assert!(
            keep.validator.check_owned(Map::new()).is_err(),
            "the new schema checks"
        );
        assert_eq!(r.tool("o").unwrap().plugin.name(), "other");
        assert_eq!(r.load_tools(false).await, 0, "asked again: nothing new");

        // A copy keeps the revisions; the original goes on changing.
        let copy = r.clone();
        shifting.offers(&[("drop_me", "v1")]);
        assert_eq!(
            r.load_tools(false).await,
            3,
            "drop_me back, keep and new gone"
        );
        assert_eq!(names(&r), ["drop_me", "o"]);
        assert_eq!(r.tool("drop_me").unwrap().def.description, "v1");
        assert!(r.tool("keep").is_none() && r.tool("new").is_none());
        assert_eq!(names(&copy), ["keep", "new", "o"]);
    }
}

//! One kind's plugins and the names they serve: the names known when the
//! registry was built, and the offer as plugins revise it later (tools that
//! load on first use, an MCP server whose list changed).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use super::{ArgsValidator, Entry, PluginInfo, RegistryError};

/// Plugins of one kind and the names they serve.
pub(super) struct Table<P: ?Sized, D> {
    pub(super) plugins: Vec<Arc<P>>,
    /// The names known when the plugins were registered: read without a
    /// lock while no plugin has revised any of them.
    entries: HashMap<String, Entry<P, D>>,
    /// What plugins offered, changed or withdrew since.
    late: RwLock<Late<P, D>>,
    /// Set once a name of `entries` was withdrawn or its definition
    /// replaced: lookups then read `late` first.
    revised: AtomicBool,
}

/// A table's revisions after registration.
struct Late<P: ?Sized, D> {
    /// Names offered (or offered anew) since; they win over `entries`.
    added: HashMap<String, Entry<P, D>>,
    /// Names of `entries` their plugin no longer offers.
    withdrawn: HashSet<String>,
}

impl<P: ?Sized, D> Default for Late<P, D> {
    fn default() -> Self {
        Self {
            added: HashMap::new(),
            withdrawn: HashSet::new(),
        }
    }
}

impl<P: ?Sized, D> Clone for Late<P, D> {
    fn clone(&self) -> Self {
        Self {
            added: self.added.clone(),
            withdrawn: self.withdrawn.clone(),
        }
    }
}

impl<P: ?Sized, D> Default for Table<P, D> {
    fn default() -> Self {
        Self {
            plugins: Vec::new(),
            entries: HashMap::new(),
            late: RwLock::default(),
            revised: AtomicBool::new(false),
        }
    }
}

impl<P: ?Sized, D: Clone> Clone for Table<P, D> {
    fn clone(&self) -> Self {
        Self {
            plugins: self.plugins.clone(),
            entries: self.entries.clone(),
            late: RwLock::new(self.late_read().clone()),
            revised: AtomicBool::new(self.revised.load(Ordering::Acquire)),
        }
    }
}

impl<P: ?Sized, D> Table<P, D> {
    fn late_read(&self) -> std::sync::RwLockReadGuard<'_, Late<P, D>> {
        self.late
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The entry that serves `name` given the revisions (`None`: none).
fn current<'a, P: ?Sized, D>(
    entries: &'a HashMap<String, Entry<P, D>>,
    late: &'a Late<P, D>,
    name: &str,
) -> Option<&'a Entry<P, D>> {
    match late.added.get(name) {
        Some(entry) => Some(entry),
        None if late.withdrawn.contains(name) => None,
        None => entries.get(name),
    }
}

impl<P: PluginInfo + ?Sized, D: Clone + PartialEq> Table<P, D> {
    /// Adds `plugin` with its `(name, definition, schema)`s; `duplicate(name, existing)`
    /// builds the error for a name already served.
    pub(super) fn add(
        &mut self,
        plugin: Arc<P>,
        items: Vec<(String, D, Value)>,
        duplicate: impl Fn(String, String) -> RegistryError,
    ) -> Result<(), RegistryError> {
        if self
            .plugins
            .iter()
            .any(|p| p.plugin_name() == plugin.plugin_name())
        {
            return Err(RegistryError::DuplicatePlugin(plugin.plugin_name().into()));
        }
        let mut seen = HashSet::new();
        for (name, _, _) in &items {
            if let Some(existing) = self.entries.get(name) {
                return Err(duplicate(
                    name.clone(),
                    existing.plugin.plugin_name().into(),
                ));
            }
            if !seen.insert(name.as_str()) {
                return Err(duplicate(name.clone(), plugin.plugin_name().into()));
            }
        }
        for (name, def, schema) in items {
            let entry = entry(&plugin, def, &schema);
            self.entries.insert(name, entry);
        }
        self.plugins.push(plugin);
        // Stable: equal priorities keep registration order.
        self.plugins
            .sort_by_key(|p| std::cmp::Reverse(p.plugin_priority()));
        Ok(())
    }

    /// Plugins that serve, highest priority first: only the first when it is exclusive.
    pub(super) fn serving(&self) -> &[Arc<P>] {
        match self.plugins.first() {
            Some(first) if first.plugin_exclusive() => std::slice::from_ref(first),
            _ => &self.plugins,
        }
    }

    /// Brings the table in line with what `plugin` (registered) offers now,
    /// `items`: names new to it are added, a definition that changed is
    /// replaced (its schema compiled again), and names it served but no
    /// longer offers are withdrawn. A name another plugin serves is skipped
    /// (and logged). Returns how many names changed.
    pub(super) fn sync(&self, plugin: &Arc<P>, items: Vec<(String, D, Value)>) -> usize {
        let mut late = self
            .late
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let offered: HashSet<&str> = items.iter().map(|(name, _, _)| name.as_str()).collect();
        let mine = |e: &Entry<P, D>| Arc::ptr_eq(&e.plugin, plugin);
        let mut changed = 0;

        // Withdrawn: what it served and offers no more.
        let gone: Vec<String> = self
            .entries
            .iter()
            .filter(|(name, e)| mine(e) && !offered.contains(name.as_str()))
            .map(|(name, _)| name.clone())
            .filter(|name| !late.withdrawn.contains(name))
            .collect();
        for name in gone {
            // A late entry under a build-time name is this plugin's own
            // revision: no other plugin can take a name still served.
            late.added.remove(&name);
            late.withdrawn.insert(name);
            self.revised.store(true, Ordering::Release);
            changed += 1;
        }
        let before = late.added.len();
        late.added
            .retain(|name, e| !mine(e) || offered.contains(name.as_str()));
        changed += before - late.added.len();

        // Offered: new names, and definitions that changed.
        for (name, def, schema) in items {
            match current(&self.entries, &late, &name) {
                Some(e) if mine(e) && *e.def == def => continue,
                Some(e) if !mine(e) => {
                    tracing::warn!(
                        name,
                        plugin = plugin.plugin_name(),
                        existing = e.plugin.plugin_name(),
                        "a name offered late is already served; skipped"
                    );
                    continue;
                }
                _ => {}
            }
            if self.entries.contains_key(&name) {
                // Offered anew, or changed: the late entry wins from now on.
                late.withdrawn.remove(&name);
                self.revised.store(true, Ordering::Release);
            }
            late.added.insert(name, entry(plugin, def, &schema));
            changed += 1;
        }
        changed
    }

    /// Every entry that serves, in plugin priority order, then name.
    pub(super) fn all(&self) -> Vec<Entry<P, D>> {
        let late = self.late_read();
        let mut out = Vec::new();
        for plugin in self.serving() {
            let mut mine: Vec<(&String, &Entry<P, D>)> = self
                .entries
                .iter()
                .filter(|(name, _)| {
                    !late.withdrawn.contains(name.as_str())
                        && !late.added.contains_key(name.as_str())
                })
                .chain(late.added.iter())
                .filter(|(_, e)| Arc::ptr_eq(&e.plugin, plugin))
                .collect();
            mine.sort_by(|a, b| a.0.cmp(b.0));
            out.extend(mine.into_iter().map(|(_, e)| e.clone()));
        }
        out
    }

    /// An entry that serves, by name.
    pub(super) fn get(&self, name: &str) -> Option<Entry<P, D>> {
        let unrevised = if self.revised.load(Ordering::Acquire) {
            None
        } else {
            self.entries.get(name).cloned()
        };
        let entry = match unrevised {
            Some(entry) => entry,
            None => current(&self.entries, &self.late_read(), name)?.clone(),
        };
        self.serving()
            .iter()
            .any(|p| Arc::ptr_eq(p, &entry.plugin))
            .then_some(entry)
    }
}

/// A registered name's entry, its schema compiled.
fn entry<P: ?Sized, D>(plugin: &Arc<P>, def: D, schema: &Value) -> Entry<P, D> {
    Entry {
        def: Arc::new(def),
        plugin: plugin.clone(),
        validator: ArgsValidator::compile(schema),
    }
}

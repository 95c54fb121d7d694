//! Names of mounted tools when several servers are mounted.
//!
//! **The rule.** A mounted tool keeps its own name unless that name is
//! *ambiguous*: offered by two or more mounted servers, or equal to a reserved
//! name (a built-in or plugin tool of the host). Every tool with an ambiguous
//! name is exposed as `server.tool` instead — all of them, not all but the
//! first, so a name never depends on the order servers were mounted in.
//! Server names cannot contain `.`, so `server.tool` names are unique; should
//! one equal another tool's plain name, that plain name is qualified too.
//!
//! On calls, [`NameTable::resolve`] accepts the exposed name and, for every
//! tool, its qualified `server.tool` form as well (so `time.get_current_time`
//! works whether or not it collides).
//!
//! **Servers listed later.** A server that starts on first use (not `eager`)
//! is listed after the others, and a name, once exposed, never changes while
//! the host runs ([`NameTable::keeping`]): a tool of the later server whose
//! name is already exposed is exposed as `server.tool`, and the tool exposed
//! first keeps its plain name. Only servers listed together follow the rule
//! without regard to order.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use crate::config::check_name;
use crate::error::McpError;

/// The exposed names of all mounted tools, and the way back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NameTable {
    /// (server, tool) → exposed name.
    exposed: BTreeMap<(String, String), String>,
    /// Exposed name or `server.tool` alias → (server, tool).
    lookup: BTreeMap<String, (String, String)>,
}

impl NameTable {
    /// Applies the rule to the tools of each server. `reserved` are names the
    /// host already uses (built-ins, plugins). Server names must be valid and
    /// distinct.
    ///
    /// ```
    /// use a2e_mcp::NameTable;
    /// let time = vec!["now".to_owned(), "convert".to_owned()];
    /// let clock = vec!["now".to_owned()];
    /// let table = NameTable::build(
    ///     [("time", time.as_slice()), ("clock", clock.as_slice())],
    ///     &["read_file".to_owned()].into_iter().collect(),
    /// ).unwrap();
    /// assert_eq!(table.exposed_name("time", "convert"), Some("convert"));
    /// assert_eq!(table.exposed_name("time", "now"), Some("time.now"));
    /// assert_eq!(table.exposed_name("clock", "now"), Some("clock.now"));
    /// assert_eq!(table.resolve("time.convert"), Some(("time", "convert")));
    /// assert_eq!(table.resolve("now"), None);
    /// ```
    pub fn build<'a, S>(servers: S, reserved: &HashSet<String>) -> Result<Self, McpError>
    where
        S: IntoIterator<Item = (&'a str, &'a [String])>,
    {
        let mut tools: Vec<(String, String)> = Vec::new();
        let mut seen_servers = BTreeSet::new();
        for (server, names) in servers {
            check_name(server)?;
            if !seen_servers.insert(server.to_owned()) {
                return Err(McpError::Config {
                    server: server.into(),
                    reason: "two mounted servers have this name".into(),
                });
            }
            let mut own = BTreeSet::new();
            for tool in names {
                if own.insert(tool.as_str()) {
                    tools.push((server.to_owned(), tool.clone()));
                }
            }
        }
        let mut offered: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, tool) in &tools {
            *offered.entry(tool.as_str()).or_default() += 1;
        }
        let mut qualified: Vec<bool> = tools
            .iter()
            .map(|(_, tool)| {
                offered.get(tool.as_str()).copied().unwrap_or(0) > 1 || reserved.contains(tool)
            })
            .collect();
        // A qualified name that equals some plain name qualifies that one too;
        // each round removes plain names, so this ends.
        loop {
            let taken: HashSet<String> = tools
                .iter()
                .zip(&qualified)
                .filter(|(_, q)| **q)
                .map(|((s, t), _)| format!("{s}.{t}"))
                .collect();
            let mut changed = false;
            for (i, (_, tool)) in tools.iter().enumerate() {
                if let Some(q) = qualified.get_mut(i)
                    && !*q
                    && taken.contains(tool)
                {
                    *q = true;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let exposed = tools
            .into_iter()
            .zip(qualified)
            .map(|((server, tool), q)| {
                let name = if q {
                    format!("{server}.{tool}")
                } else {
                    tool.clone()
                };
                ((server, tool), name)
            })
            .collect();
        Ok(Self::from_exposed(exposed))
    }

    /// This table with every tool that `previous` exposed under the name it
    /// had there; a tool new here takes its `server.tool` form when its name
    /// is one of those.
    ///
    /// ```
    /// use a2e_mcp::NameTable;
    /// let none = Default::default();
    /// let time = vec!["now".to_owned()];
    /// let clock = vec!["now".to_owned()];
    /// let before = NameTable::build([("time", time.as_slice())], &none).unwrap();
    /// let both = NameTable::build([("time", time.as_slice()), ("clock", clock.as_slice())], &none)
    ///     .unwrap()
    ///     .keeping(&before);
    /// assert_eq!(both.exposed_name("time", "now"), Some("now"));
    /// assert_eq!(both.exposed_name("clock", "now"), Some("clock.now"));
    /// assert_eq!(both.resolve("time.now"), Some(("time", "now")));
    /// ```
    pub fn keeping(self, previous: &NameTable) -> Self {
        let kept: HashSet<&str> = previous.exposed.values().map(String::as_str).collect();
        let mut exposed = BTreeMap::new();
        for ((server, tool), name) in self.exposed {
            let key = (server, tool);
            let name = match previous.exposed.get(&key) {
                Some(old) => old.clone(),
                None if kept.contains(name.as_str()) => format!("{}.{}", key.0, key.1),
                None => name,
            };
            exposed.insert(key, name);
        }
        Self::from_exposed(exposed)
    }

    /// The table of these exposed names, with the `server.tool` aliases that
    /// shadow none of them.
    fn from_exposed(exposed: BTreeMap<(String, String), String>) -> Self {
        let mut lookup: BTreeMap<String, (String, String)> = exposed
            .iter()
            .map(|(key, name)| (name.clone(), key.clone()))
            .collect();
        for (server, tool) in exposed.keys() {
            lookup
                .entry(format!("{server}.{tool}"))
                .or_insert_with(|| (server.clone(), tool.clone()));
        }
        Self { exposed, lookup }
    }

    /// The name `tool` of `server` is listed and called by.
    pub fn exposed_name(&self, server: &str, tool: &str) -> Option<&str> {
        self.exposed
            .get(&(server.to_owned(), tool.to_owned()))
            .map(String::as_str)
    }

    /// The server and tool an exposed name (or a `server.tool` alias) means.
    pub fn resolve(&self, name: &str) -> Option<(&str, &str)> {
        self.lookup.get(name).map(|(s, t)| (s.as_str(), t.as_str()))
    }

    /// Every tool as (server, tool, exposed name), by server then tool.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str, &str)> {
        self.exposed
            .iter()
            .map(|((s, t), n)| (s.as_str(), t.as_str(), n.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn order_of_mounting_does_not_matter() {
        let a = v(&["x", "y"]);
        let b = v(&["y", "z"]);
        let none = HashSet::new();
        let t1 = NameTable::build([("a", &a[..]), ("b", &b[..])], &none).unwrap();
        let t2 = NameTable::build([("b", &b[..]), ("a", &a[..])], &none).unwrap();
        assert_eq!(t1, t2);
        let listed: Vec<&str> = t1.iter().map(|(_, _, n)| n).collect();
        assert_eq!(listed, ["x", "a.y", "b.y", "z"]);
        assert_eq!(t1.resolve("a.x"), Some(("a", "x")));
        assert_eq!(t1.resolve("y"), None);
    }

    #[test]
    fn reserved_names_and_dotted_tool_names() {
        let a = v(&["read_file", "b.q"]);
        let b = v(&["q"]);
        let c = v(&["q"]);
        let reserved: HashSet<String> = ["read_file".to_owned()].into();
        let t = NameTable::build([("a", &a[..]), ("b", &b[..]), ("c", &c[..])], &reserved).unwrap();
        assert_eq!(t.exposed_name("a", "read_file"), Some("a.read_file"));
        // `b.q` is b's qualified name, so a's tool of that name is qualified.
        assert_eq!(t.exposed_name("b", "q"), Some("b.q"));
        assert_eq!(t.exposed_name("a", "b.q"), Some("a.b.q"));
        assert_eq!(t.resolve("b.q"), Some(("b", "q")));
        assert_eq!(t.resolve("a.b.q"), Some(("a", "b.q")));
    }

    #[test]
    fn a_server_listed_later_renames_nothing_already_exposed() {
        let a = v(&["x", "y"]);
        let b = v(&["y", "z", "x"]);
        let none = HashSet::new();
        let first = NameTable::build([("a", &a[..])], &none).unwrap();
        let later = NameTable::build([("a", &a[..]), ("b", &b[..])], &none)
            .unwrap()
            .keeping(&first);
        let listed: Vec<(&str, &str, &str)> = later.iter().collect();
        assert_eq!(
            listed,
            [
                ("a", "x", "x"),
                ("a", "y", "y"),
                ("b", "x", "b.x"),
                ("b", "y", "b.y"),
                ("b", "z", "z"),
            ]
        );
        assert_eq!(later.resolve("x"), Some(("a", "x")));
        assert_eq!(later.resolve("a.x"), Some(("a", "x")));
        assert_eq!(later.resolve("b.x"), Some(("b", "x")));
        // Listed together, the same servers follow the symmetric rule.
        let together = NameTable::build([("a", &a[..]), ("b", &b[..])], &none).unwrap();
        assert_eq!(together.exposed_name("a", "x"), Some("a.x"));
        assert_eq!(together.clone().keeping(&NameTable::default()), together);
    }

    #[test]
    fn duplicate_or_bad_server_names_fail() {
        let a = v(&["x"]);
        let none = HashSet::new();
        assert!(NameTable::build([("a", &a[..]), ("a", &a[..])], &none).is_err());
        assert!(NameTable::build([("a.b", &a[..])], &none).is_err());
    }
}

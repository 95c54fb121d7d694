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
        let mut table = Self::default();
        for ((server, tool), q) in tools.iter().zip(&qualified) {
            let full = format!("{server}.{tool}");
            let name = if *q { full.clone() } else { tool.clone() };
            table
                .exposed
                .insert((server.clone(), tool.clone()), name.clone());
            table.lookup.insert(name, (server.clone(), tool.clone()));
        }
        // Qualified aliases, where they do not shadow an exposed name.
        for (server, tool) in &tools {
            table
                .lookup
                .entry(format!("{server}.{tool}"))
                .or_insert_with(|| (server.clone(), tool.clone()));
        }
        Ok(table)
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
    fn duplicate_or_bad_server_names_fail() {
        let a = v(&["x"]);
        let none = HashSet::new();
        assert!(NameTable::build([("a", &a[..]), ("a", &a[..])], &none).is_err());
        assert!(NameTable::build([("a.b", &a[..])], &none).is_err());
    }
}

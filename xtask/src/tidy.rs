//! Tidy checks that run with the workspace's tests: the host's modules form
//! layers, and every `crate::` import points down or across, never up.
//!
//! The layers of `a2e-host` (ARCHITECTURE.md, "Invariants"), from the bottom:
//! the base (what a call needs: errors, configuration, the plugin traits, the
//! registry, the outbound item, processes, built-in tools, memory),
//! then `host`, then the adapters that run documents and skills on a host
//! (`chains`, `acmp`, `ontheia_host`, `mcp`, `skills`, `plugins`, `runs`), then
//! `session`, then `transport` (with the live view, `ui`), then the composition root
//! (`compose`). The command line lives in `a2e-cli`, above them all.

use std::path::Path;

use crate::rust_source::{rust_files, without_tests};

/// The layer of each top-level module of `a2e-host`, lowest first.
pub const HOST_LAYERS: &[(&str, &[&str])] = &[
    (
        "base",
        &[
            "error",
            "config",
            "acmp_config",
            "redact",
            "search",
            "audit",
            "plugin",
            "outbound",
            "llm",
            "registry",
            "proc",
            "builtins",
            "memory",
        ],
    ),
    ("host", &["host", "llm_tools", "llm_turns"]),
    (
        "adapters",
        &[
            "chains",
            "acmp",
            "ontheia_host",
            "mcp",
            "skills",
            "plugins",
            "runs",
        ],
    ),
    ("session", &["session"]),
    ("transport", &["transport", "ui"]),
    ("root", &["compose"]),
];

/// Files that belong to no layer (the crate root), and the crate below the
/// layers whose modules the root re-exports (`a2e-host-core`).
const UNLAYERED: &[&str] = &["lib", "a2e_host_core"];

/// One import that points up, or a module missing from [`HOST_LAYERS`].
#[derive(Debug, PartialEq, Eq)]
pub struct Violation {
    /// The importing file, relative to the crate's `src`.
    pub file: String,
    /// Its 1-based line.
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

/// The index of a module's layer, if it has one.
fn layer_of(module: &str) -> Option<usize> {
    HOST_LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

/// The top-level module a file under `src` belongs to (`host/calls.rs` → `host`).
fn top_module(relative: &Path) -> String {
    let first = relative
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    first.trim_end_matches(".rs").to_owned()
}

/// Every `crate::NAME` a line names, with NAME's position.
fn crate_paths(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        let before = rest.get(..at).and_then(|b| b.chars().last());
        let tail = rest.get(at + "crate::".len()..).unwrap_or("");
        // `a2e_crate::x` is not ours: `crate` must stand alone.
        if !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            let name: String = tail
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.push(name);
            }
        }
        rest = tail;
    }
    found
}

/// The modules behind the crate root's re-exports (`pub use host::{Host, …};`
/// in `lib.rs` makes `crate::Host` an import of `host`).
pub fn root_reexports(lib: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for statement in lib.split(';') {
        let Some(at) = statement.find("pub use ") else {
            continue;
        };
        let path = statement.get(at + "pub use ".len()..).unwrap_or("");
        let Some((module, rest)) = path.trim().split_once("::") else {
            continue;
        };
        let names = rest.trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.rsplit("::").next().unwrap_or("").trim();
            let name = name.rsplit(" as ").next().unwrap_or(name).trim();
            if !name.is_empty() {
                found.push((name.to_owned(), module.to_owned()));
            }
        }
    }
    found
}

/// Checks one file's text; `relative` is its path under `src`, `reexports` the
/// crate root's (see [`root_reexports`]).
pub fn check_file(relative: &Path, text: &str, reexports: &[(String, String)]) -> Vec<Violation> {
    let file = relative.display().to_string();
    let module = top_module(relative);
    if UNLAYERED.contains(&module.as_str()) {
        return Vec::new();
    }
    let Some(own) = layer_of(&module) else {
        return vec![Violation {
            file,
            line: 1,
            what: format!("module `{module}` has no layer in xtask/src/tidy.rs HOST_LAYERS"),
        }];
    };
    let mut violations = Vec::new();
    for (index, line) in without_tests(text).lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for named in crate_paths(code) {
            let target = reexports
                .iter()
                .find(|(name, _)| *name == named)
                .map_or(named, |(_, module)| module.clone());
            if UNLAYERED.contains(&target.as_str()) {
                continue;
            }
            match layer_of(&target) {
                Some(theirs) if theirs > own => violations.push(Violation {
                    file: file.clone(),
                    line: index + 1,
                    what: format!(
                        "`{module}` ({}) imports `{target}` ({}), a layer above it",
                        HOST_LAYERS.get(own).map_or("?", |l| l.0),
                        HOST_LAYERS.get(theirs).map_or("?", |l| l.0),
                    ),
                }),
                Some(_) => {}
                None => violations.push(Violation {
                    file: file.clone(),
                    line: index + 1,
                    what: format!("`crate::{target}` has no layer in HOST_LAYERS"),
                }),
            }
        }
    }
    violations
}

/// `cargo xtask tidy`: fails on a test file no test target compiles, on a
/// path in `ARCHITECTURE.md` that does not exist, on an import of `a2e-host`
/// that points up, and on a public function of a library crate that returns
/// `Result<_, String>`.
pub fn run() -> Result<(), String> {
    let orphans = crate::tidy_tests::orphans(&crate::root())?;
    if !orphans.is_empty() {
        for orphan in &orphans {
            eprintln!("{orphan}: compiled by no test target (declare it in the crate's test root)");
        }
        return Err(format!("{} test file(s) never build", orphans.len()));
    }
    let stale = crate::tidy_paths::missing(&crate::root())?;
    if !stale.is_empty() {
        for path in &stale {
            eprintln!("{}:{path} does not exist", crate::tidy_paths::DOC);
        }
        return Err(format!(
            "{} path(s) in {} do not exist",
            stale.len(),
            crate::tidy_paths::DOC
        ));
    }
    let string_errors = crate::tidy_errors::string_errors(&crate::root())?;
    for found in &string_errors {
        eprintln!("{found}: returns Result<_, String>");
    }
    let violations = check_host(&crate::root())?;
    if violations.is_empty() && string_errors.is_empty() {
        eprintln!(
            "tidy: ARCHITECTURE.md's paths exist; a2e-host's imports point down through its \
             layers; no public String errors"
        );
        return Ok(());
    }
    if violations.is_empty() {
        return Err(format!(
            "{} public function(s) return Result<_, String>",
            string_errors.len()
        ));
    }
    for v in &violations {
        eprintln!("a2e-host/src/{}:{}: {}", v.file, v.line, v.what);
    }
    Err(format!("{} import(s) point up", violations.len()))
}

/// Checks every source file of `a2e-host`.
pub fn check_host(root: &Path) -> Result<Vec<Violation>, String> {
    let src = root.join("a2e-host/src");
    let lib = std::fs::read_to_string(src.join("lib.rs"))
        .map_err(|e| format!("cannot read a2e-host/src/lib.rs: {e}"))?;
    let reexports = root_reexports(&lib);
    let mut violations = Vec::new();
    for path in rust_files(&src) {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let relative = path.strip_prefix(&src).unwrap_or(&path);
        violations.extend(check_file(relative, &text, &reexports));
    }
    Ok(violations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_imports_point_down() {
        let violations = check_host(&crate::root()).unwrap();
        let listed: Vec<String> = violations
            .iter()
            .map(|v| format!("a2e-host/src/{}:{}: {}", v.file, v.line, v.what))
            .collect();
        assert!(
            listed.is_empty(),
            "imports that point up:\n{}",
            listed.join("\n")
        );
    }

    #[test]
    fn an_upward_import_is_found_with_its_line() {
        let text = "use crate::config::HostConfig;\n\nuse crate::session::Session;\n";
        let found = check_file(Path::new("host/calls.rs"), text, &[]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].line, 3);
        assert!(found[0].what.contains("`session`"), "{}", found[0].what);
    }

    #[test]
    fn paths_in_code_count_and_tests_and_comments_do_not() {
        let text = "fn f() { crate::transport::run(); } // crate::session\n\
                    #[cfg(test)]\nmod tests {\n    use crate::session::Session;\n}\n";
        let found = check_file(Path::new("chains/mod.rs"), text, &[]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].what.contains("`transport`"));
    }

    #[test]
    fn a_module_without_a_layer_is_reported() {
        let found = check_file(Path::new("newthing.rs"), "", &[]);
        assert_eq!(found.len(), 1);
        assert!(found[0].what.contains("no layer"));
        assert!(crate_paths("use a2e_crate::x; crate::y").eq(&["y".to_owned()]));
    }

    #[test]
    fn root_reexports_resolve_to_their_module() {
        let lib = "pub mod host;\npub use host::{\n    Host, HostBuilder as Builder,\n};\npub use session::Session;\n";
        let re = root_reexports(lib);
        assert!(
            re.contains(&("Host".to_owned(), "host".to_owned())),
            "{re:?}"
        );
        assert!(
            re.contains(&("Builder".to_owned(), "host".to_owned())),
            "{re:?}"
        );
        assert!(
            re.contains(&("Session".to_owned(), "session".to_owned())),
            "{re:?}"
        );
        let found = check_file(Path::new("registry/mod.rs"), "use crate::Host;", &re);
        assert_eq!(found.len(), 1, "{found:?}");
    }
}

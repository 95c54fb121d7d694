//! `[[plugins]]`: plugin processes mounted as toolkits (see
//! `a2e_host::plugins`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// One `[[plugins]]` entry: a program that serves A2E over stdio.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginProcessConfig {
    /// The plugin's name: its toolkit, named in logs and errors.
    pub name: String,
    /// The program and its arguments: `["prog", "arg", …]`, or `"prog"`
    /// with its arguments in `args` (as `[[mcp.servers]]` write it).
    #[serde(deserialize_with = "program_or_argv")]
    pub command: Vec<String>,
    /// Arguments after those of `command`.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables set for it, over those `[commands] inherit_env` passes on.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its working directory (default: the host's root).
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// How long its start and handshake may take, in seconds.
    #[serde(default = "default_start_timeout")]
    pub start_timeout_secs: u64,
}

fn default_start_timeout() -> u64 {
    10
}

/// `"prog"` as `["prog"]`, or a list as it is.
fn program_or_argv<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Shape {
        Program(String),
        Argv(Vec<String>),
    }
    Ok(match Shape::deserialize(d)? {
        Shape::Program(program) => vec![program],
        Shape::Argv(argv) => argv,
    })
}

impl PluginProcessConfig {
    /// The program and every argument: `command` followed by `args`.
    pub fn argv(&self) -> Vec<String> {
        self.command.iter().chain(&self.args).cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::HostConfig;

    #[test]
    fn a_plugins_command_is_a_list_or_a_program_with_args() {
        let c = HostConfig::from_toml(
            "[[plugins]]\nname = \"a\"\ncommand = [\"prog\", \"-v\"]\n\n\
             [[plugins]]\nname = \"b\"\ncommand = \"prog\"\nargs = [\"-v\"]\n",
        )
        .unwrap();
        assert_eq!(c.plugins[0].argv(), ["prog", "-v"]);
        assert_eq!(c.plugins[1].argv(), c.plugins[0].argv());
        assert!(HostConfig::from_toml("[[plugins]]\nname = \"c\"\ncommand = 5\n").is_err());
    }
}

//! `[[approvals]]`: the calls that wait for a person's decision before they
//! run (the layer that holds them is `a2e-host-approvals`; docs/approvals.md).

use serde::Deserialize;

/// Default of [`ApprovalRule::timeout_secs`]: ten minutes.
pub const DEFAULT_APPROVAL_TIMEOUT_SECS: u64 = 600;

/// The longest a call may wait for a decision: one day, the longest any
/// call may run.
pub const MAX_APPROVAL_TIMEOUT_SECS: u64 = 24 * 3600;

/// One `[[approvals]]` rule: a call it matches waits for a person's
/// decision. Every matcher the rule sets must match (globs, `*` and `?`);
/// a rule sets at least one.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRule {
    /// The tool's name (a glob).
    #[serde(default)]
    pub tool: Option<String>,
    /// The skill's name (a glob).
    #[serde(default)]
    pub skill: Option<String>,
    /// `run_command`'s program, `argv[0]` (a glob over the whole word and
    /// over its file name: `rm` matches `/bin/rm`).
    #[serde(default)]
    pub program: Option<String>,
    /// `http_request`'s host (a glob: `*.example.com`).
    #[serde(default)]
    pub http_host: Option<String>,
    /// The file tools' `path` (a glob over the path as the call gives it,
    /// relative to the root: `secrets/**`).
    #[serde(default)]
    pub path: Option<String>,
    /// The agent the call's session acts for (a glob).
    #[serde(default)]
    pub agent: Option<String>,
    /// How long the call waits, in seconds; then `on_timeout` decides.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// What a call nobody decided on in time comes to.
    #[serde(default)]
    pub on_timeout: OnTimeout,
    /// Who may decide: `operator` (`a2e runs approve`, the live view) and
    /// `client` (the user of the MCP or A2A client the call came from).
    #[serde(default = "default_deciders")]
    pub deciders: Vec<Decider>,
}

fn default_timeout() -> u64 {
    DEFAULT_APPROVAL_TIMEOUT_SECS
}

fn default_deciders() -> Vec<Decider> {
    vec![Decider::Operator, Decider::Client]
}

impl Default for ApprovalRule {
    /// A rule that matches nothing yet: set a matcher.
    fn default() -> Self {
        Self {
            tool: None,
            skill: None,
            program: None,
            http_host: None,
            path: None,
            agent: None,
            timeout_secs: DEFAULT_APPROVAL_TIMEOUT_SECS,
            on_timeout: OnTimeout::Deny,
            deciders: default_deciders(),
        }
    }
}

/// What a call that waited past its rule's timeout comes to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    /// It fails with code `approval_timeout` (the default).
    #[default]
    Deny,
    /// It runs with its arguments as they were.
    Approve,
}

/// Who may decide on a waiting call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decider {
    /// Whoever reaches the run journal (`a2e runs approve | deny`) or the
    /// live view with its token.
    Operator,
    /// The user of the client the call came from: an MCP client's
    /// elicitation, an A2A client's `input-required` answer.
    Client,
}

impl Decider {
    /// `operator` or `client`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Operator => "operator",
            Self::Client => "client",
        }
    }
}

/// What is wrong with an `[[approvals]]` rule.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalRuleError {
    /// The rule matches nothing.
    #[error("sets no matcher (tool, skill, program, http_host, path or agent)")]
    NoMatcher,
    /// A glob does not compile.
    #[error("{field} `{glob}`: {source}")]
    Glob {
        /// The field.
        field: &'static str,
        /// The glob.
        glob: String,
        /// Why.
        source: globset::Error,
    },
    /// A skill rule with a tool's matcher.
    #[error(
        "sets `skill` beside a tool's matcher (tool, program, http_host, path): no call is both"
    )]
    SkillAndTool,
    /// A timeout out of range.
    #[error("timeout_secs {0} is not within 1..={MAX_APPROVAL_TIMEOUT_SECS}")]
    Timeout(u64),
    /// Nobody may decide.
    #[error("deciders is empty: nobody could decide")]
    NoDeciders,
}

impl ApprovalRule {
    /// Checks the rule: a matcher set, valid globs, a timeout within a day,
    /// somebody to decide.
    pub fn check(&self) -> Result<(), ApprovalRuleError> {
        let globs = [
            ("tool", &self.tool),
            ("skill", &self.skill),
            ("program", &self.program),
            ("http_host", &self.http_host),
            ("path", &self.path),
            ("agent", &self.agent),
        ];
        if globs.iter().all(|(_, g)| g.is_none()) {
            return Err(ApprovalRuleError::NoMatcher);
        }
        for (field, glob) in globs {
            if let Some(glob) = glob {
                globset::Glob::new(glob).map_err(|source| ApprovalRuleError::Glob {
                    field,
                    glob: glob.clone(),
                    source,
                })?;
            }
        }
        if self.skill.is_some()
            && (self.tool.is_some()
                || self.program.is_some()
                || self.http_host.is_some()
                || self.path.is_some())
        {
            return Err(ApprovalRuleError::SkillAndTool);
        }
        if self.timeout_secs == 0 || self.timeout_secs > MAX_APPROVAL_TIMEOUT_SECS {
            return Err(ApprovalRuleError::Timeout(self.timeout_secs));
        }
        if self.deciders.is_empty() {
            return Err(ApprovalRuleError::NoDeciders);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::HostConfig;

    #[test]
    fn rules_parse_and_bad_ones_are_named() {
        let c = HostConfig::from_toml(
            "[[approvals]]\ntool = \"run_command\"\nprogram = \"rm\"\ntimeout_secs = 60\n\
             on_timeout = \"approve\"\ndeciders = [\"operator\"]\n",
        )
        .unwrap();
        let rule = &c.approvals[0];
        assert_eq!(rule.program.as_deref(), Some("rm"));
        assert_eq!(rule.on_timeout, super::OnTimeout::Approve);
        assert_eq!(rule.deciders, [super::Decider::Operator]);
        for (toml, names) in [
            ("[[approvals]]\ntimeout_secs = 5\n", "no matcher"),
            ("[[approvals]]\ntool = \"[x\"\n", "tool `[x`"),
            (
                "[[approvals]]\ntool = \"x\"\ntimeout_secs = 0\n",
                "timeout_secs 0",
            ),
            (
                "[[approvals]]\nskill = \"s\"\npath = \"a\"\n",
                "no call is both",
            ),
            ("[[approvals]]\ntool = \"x\"\ndeciders = []\n", "nobody"),
            ("[[approvals]]\ntool = \"x\"\nwho = 1\n", "who"),
        ] {
            let err = HostConfig::from_toml(toml).unwrap_err().to_string();
            assert!(err.contains(names), "{toml}: {err}");
        }
    }
}

//! The `[[approvals]]` rules, compiled: which calls wait for a decision.

use a2e_host_core::CallTarget;
use a2e_host_core::config::ApprovalRule;
use globset::{Glob, GlobMatcher};
use serde_json::{Map, Value};

/// The built-in tool whose program a rule's `program` matches.
const RUN_COMMAND: &str = "run_command";
/// The built-in tool whose host a rule's `http_host` matches.
const HTTP_REQUEST: &str = "http_request";
/// The built-in tools whose `path` a rule's `path` matches.
const FILE_TOOLS: [&str; 5] = ["read_file", "write_file", "list_dir", "glob", "grep"];

/// A pattern: a plain name is compared as it is (most rules name a tool),
/// anything else matched as a glob.
#[derive(Debug, Clone)]
enum Matcher {
    Exact(String),
    Glob(GlobMatcher),
}

impl Matcher {
    fn is_match(&self, text: &str) -> bool {
        match self {
            Self::Exact(name) => name == text,
            Self::Glob(glob) => glob.is_match(text),
        }
    }
}

/// One rule with its globs compiled.
#[derive(Debug, Clone)]
struct Compiled {
    /// Its place in the configuration, from 1.
    number: usize,
    rule: ApprovalRule,
    tool: Option<Matcher>,
    skill: Option<Matcher>,
    program: Option<Matcher>,
    http_host: Option<Matcher>,
    path: Option<Matcher>,
    agent: Option<Matcher>,
}

/// The approval rules of a configuration, compiled once.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    rules: Vec<Compiled>,
}

/// A rule a call matched.
#[derive(Debug, Clone, Copy)]
pub struct Matched<'a> {
    /// Its place in the configuration, from 1 (`[[approvals]] #N`).
    pub number: usize,
    /// The rule.
    pub rule: &'a ApprovalRule,
}

fn glob(pattern: Option<&String>) -> Result<Option<Matcher>, globset::Error> {
    pattern
        .map(|p| {
            if p.contains(['*', '?', '[', ']', '{', '}', '\\']) {
                Glob::new(p).map(|g| Matcher::Glob(g.compile_matcher()))
            } else {
                Ok(Matcher::Exact(p.clone()))
            }
        })
        .transpose()
}

impl Policy {
    /// Compiles `rules` (checked already by the configuration: a glob that
    /// does not compile is an error here too).
    pub fn new(rules: &[ApprovalRule]) -> Result<Self, globset::Error> {
        let rules = rules
            .iter()
            .enumerate()
            .map(|(i, rule)| {
                Ok(Compiled {
                    number: i + 1,
                    tool: glob(rule.tool.as_ref())?,
                    skill: glob(rule.skill.as_ref())?,
                    program: glob(rule.program.as_ref())?,
                    http_host: glob(rule.http_host.as_ref())?,
                    path: glob(rule.path.as_ref())?,
                    agent: glob(rule.agent.as_ref())?,
                    rule: rule.clone(),
                })
            })
            .collect::<Result<_, globset::Error>>()?;
        Ok(Self { rules })
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether some rule may match a call of `target` named `name`, judged
    /// by the name alone (cheap: what [`Policy::matching`] then checks
    /// against the arguments and the agent).
    pub fn may_match(&self, target: CallTarget, name: &str) -> bool {
        self.rules.iter().any(|c| c.matches_name(target, name))
    }

    /// The first rule that matches a call of `target` named `name` with
    /// `args`, made for `agent`.
    pub fn matching(
        &self,
        target: CallTarget,
        name: &str,
        args: &Map<String, Value>,
        agent: &str,
    ) -> Option<Matched<'_>> {
        self.rules
            .iter()
            .find(|c| {
                c.matches_name(target, name)
                    && c.agent.as_ref().is_none_or(|g| g.is_match(agent))
                    && c.matches_args(args)
            })
            .map(|c| Matched {
                number: c.number,
                rule: &c.rule,
            })
    }
}

impl Compiled {
    /// Whether a call of `target` named `name` can match: a skill rule
    /// only skills of its name; a tool rule only tools of its name, and
    /// only the tool its `program`, `http_host` or `path` reads; an agent
    /// rule every call.
    fn matches_name(&self, target: CallTarget, name: &str) -> bool {
        if let Some(skill) = &self.skill {
            return target == CallTarget::Skill && skill.is_match(name);
        }
        let tool_rule = self.tool.is_some()
            || self.program.is_some()
            || self.http_host.is_some()
            || self.path.is_some();
        if !tool_rule {
            return true;
        }
        target == CallTarget::Tool
            && self.tool.as_ref().is_none_or(|g| g.is_match(name))
            && (self.program.is_none() || name == RUN_COMMAND)
            && (self.http_host.is_none() || name == HTTP_REQUEST)
            && (self.path.is_none() || FILE_TOOLS.contains(&name))
    }

    /// Whether the arguments match the rule's `program`, `http_host` and
    /// `path` (those it sets).
    fn matches_args(&self, args: &Map<String, Value>) -> bool {
        let text = |key: &str| args.get(key).and_then(Value::as_str);
        if let Some(program) = &self.program {
            let argv0 = args
                .get("argv")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .unwrap_or_default();
            let file_name = argv0.rsplit('/').next().unwrap_or(argv0);
            if !(program.is_match(argv0) || program.is_match(file_name)) {
                return false;
            }
        }
        if let Some(host) = &self.http_host
            && !host_of(text("url").unwrap_or_default()).is_some_and(|h| host.is_match(&h))
        {
            return false;
        }
        if let Some(path) = &self.path {
            // A file tool's path defaults to the root (`.`).
            let given = text("path").unwrap_or(".");
            let given = given.strip_prefix("./").unwrap_or(given);
            if !path.is_match(given) {
                return false;
            }
        }
        true
    }
}

/// The host of `url` (lowercase, without port or user), when it has one.
fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        host_port.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2e_host_core::config::HostConfig;
    use serde_json::json;

    fn policy(toml: &str) -> Policy {
        Policy::new(&HostConfig::from_toml(toml).unwrap().approvals).unwrap()
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn each_matcher_reads_its_tool_and_argument() {
        let p = policy(
            "[[approvals]]\nprogram = \"rm\"\n\n[[approvals]]\nhttp_host = \"*.example.com\"\n\n\
             [[approvals]]\npath = \"secrets/**\"\n\n[[approvals]]\nskill = \"deploy*\"\n\n\
             [[approvals]]\ntool = \"payments_*\"\nagent = \"intern-*\"\n",
        );
        let tool = CallTarget::Tool;
        let rm = args(json!({"argv": ["/bin/rm", "-rf", "x"]}));
        assert_eq!(p.matching(tool, "run_command", &rm, "a").unwrap().number, 1);
        let ls = args(json!({"argv": ["ls"]}));
        assert!(p.matching(tool, "run_command", &ls, "a").is_none());
        let api = args(json!({"url": "https://user@API.example.com:8443/x"}));
        assert_eq!(
            p.matching(tool, "http_request", &api, "a").unwrap().number,
            2
        );
        let other = args(json!({"url": "https://example.org/"}));
        assert!(p.matching(tool, "http_request", &other, "a").is_none());
        let secret = args(json!({"path": "./secrets/key.pem"}));
        assert_eq!(
            p.matching(tool, "read_file", &secret, "a").unwrap().number,
            3
        );
        assert!(
            p.matching(tool, "read_file", &args(json!({"path": "README.md"})), "a")
                .is_none()
        );
        assert!(p.may_match(CallTarget::Skill, "deploy-prod"));
        assert!(!p.may_match(CallTarget::Tool, "deploy-prod"));
        assert!(
            p.matching(tool, "payments_refund", &Map::new(), "staff")
                .is_none()
        );
        assert_eq!(
            p.matching(tool, "payments_refund", &Map::new(), "intern-7")
                .unwrap()
                .number,
            5
        );
        assert!(!p.may_match(tool, "echo"));
        assert!(Policy::default().is_empty());
    }

    #[test]
    fn hosts_are_read_from_urls() {
        assert_eq!(host_of("http://[::1]:80/x").as_deref(), Some("::1"));
        assert_eq!(host_of("https://a.b/c?d").as_deref(), Some("a.b"));
        assert_eq!(host_of("not a url"), None);
    }
}

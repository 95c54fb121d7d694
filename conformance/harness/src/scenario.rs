//! Scenarios: a unit of work against a peer (a host, or a client), with the
//! checks it evaluates, what it needs, and the transports it runs on.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde::Serialize;

use crate::check::CheckDef;

/// A protocol area: what `--suite` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Area {
    /// Envelope, framing, handshake, ping, errors, shutdown, concurrency.
    Core,
    /// `tool/*`.
    Tools,
    /// `skill/*`.
    Skills,
    /// `chain/*`.
    Chains,
    /// `proc/*`.
    Proc,
    /// What a transport adds: WebSocket frames, HTTP+SSE routes and replay, bearer auth.
    Transport,
    /// What a client sends and how it handles what it gets.
    Client,
    /// What a plugin process (a `[[plugins]]` entry's program) answers.
    Plugin,
}

impl Area {
    /// Every area.
    pub const ALL: &'static [Area] = &[
        Area::Core,
        Area::Tools,
        Area::Skills,
        Area::Chains,
        Area::Proc,
        Area::Transport,
        Area::Client,
        Area::Plugin,
    ];

    /// Its name (`core`, `tools`, …).
    pub fn name(self) -> &'static str {
        match self {
            Self::Core => "core",
            Self::Tools => "tools",
            Self::Skills => "skills",
            Self::Chains => "chains",
            Self::Proc => "proc",
            Self::Transport => "transport",
            Self::Client => "client",
            Self::Plugin => "plugin",
        }
    }

    /// The area named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|a| a.name() == name)
    }
}

impl fmt::Display for Area {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which scenarios run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Scenario names (empty: all).
    pub scenarios: Vec<String>,
    /// Areas (empty: all).
    pub suites: Vec<Area>,
}

impl Selection {
    /// Whether the scenario `name` of `area` is selected.
    pub fn includes(&self, name: &str, area: Area) -> bool {
        (self.scenarios.is_empty() || self.scenarios.iter().any(|s| s == name))
            && (self.suites.is_empty() || self.suites.contains(&area))
    }
}

/// A transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// NDJSON over a child's stdin and stdout.
    Stdio,
    /// One message per WebSocket text frame.
    Ws,
    /// `POST /session`, `POST /send`, `GET /stream` (Server-Sent Events).
    Http,
}

impl Transport {
    /// Every transport.
    pub const ALL: &'static [Transport] = &[Transport::Stdio, Transport::Ws, Transport::Http];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Ws => "ws",
            Self::Http => "http",
        }
    }

    /// The transport named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|t| t.name() == name)
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The transports a scenario runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum On {
    /// Every transport.
    All,
    /// stdio only.
    Stdio,
    /// WebSocket only.
    Ws,
    /// HTTP+SSE only.
    Http,
    /// WebSocket and HTTP+SSE.
    Network,
}

impl On {
    /// Whether a scenario of this kind runs on `t`.
    pub fn includes(self, t: Transport) -> bool {
        match self {
            Self::All => true,
            Self::Stdio => t == Transport::Stdio,
            Self::Ws => t == Transport::Ws,
            Self::Http => t == Transport::Http,
            Self::Network => t != Transport::Stdio,
        }
    }

    /// How the README writes it.
    pub fn label(self) -> &'static str {
        match self {
            Self::All => "all",
            Self::Stdio => "stdio",
            Self::Ws => "ws",
            Self::Http => "http",
            Self::Network => "ws, http",
        }
    }
}

/// Something of the fixture profile a host under test may offer (see
/// [`crate::profile`]); a scenario that needs what the host lacks is skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Fixture {
    /// A capability the host accepts (`tools`, `skill`, `chains`, `proc`).
    Cap(&'static str),
    /// A tool of the profile, by name.
    Tool(&'static str),
    /// A skill of the profile, by name.
    Skill(&'static str),
    /// Processes: `sh`, `cat` and `sleep` may be spawned.
    Proc,
    /// The host checks a shared secret, and the suite was given it (`--auth-token`).
    AuthToken,
}

impl fmt::Display for Fixture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cap(name) => write!(f, "capability {name}"),
            Self::Tool(name) | Self::Skill(name) => f.write_str(name),
            Self::Proc => f.write_str("proc (sh, cat, sleep)"),
            Self::AuthToken => f.write_str("auth token (--auth-token)"),
        }
    }
}

/// Why a scenario stopped before it evaluated all its checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abort(pub String);

impl fmt::Display for Abort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for Abort {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl From<&str> for Abort {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

/// The result of a scenario's run function.
pub type Outcome = Result<(), Abort>;

/// A boxed future of a scenario's run.
pub type BoxRun<'a> = Pin<Box<dyn Future<Output = Outcome> + Send + 'a>>;

/// A scenario over a context `C` (the host suite's or the client suite's).
pub struct Scenario<C: 'static> {
    /// `<area>/<name>`, unique.
    pub name: &'static str,
    /// Its area.
    pub area: Area,
    /// What it does, in one sentence.
    pub about: &'static str,
    /// Fixtures it needs.
    pub needs: &'static [Fixture],
    /// Transports it runs on.
    pub on: On,
    /// The checks it evaluates.
    pub checks: &'static [CheckDef],
    /// Runs it.
    pub run: for<'a> fn(&'a mut C) -> BoxRun<'a>,
}

impl<C> fmt::Debug for Scenario<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scenario")
            .field("name", &self.name)
            .field("checks", &self.checks.len())
            .finish_non_exhaustive()
    }
}

/// The run function of a scenario from an `async fn(&mut C) -> Outcome`.
#[macro_export]
#[doc(hidden)]
macro_rules! run_fn {
    ($ctx:ty, $f:path) => {{
        fn run(cx: &mut $ctx) -> $crate::scenario::BoxRun<'_> {
            Box::pin($f(cx))
        }
        run
    }};
}

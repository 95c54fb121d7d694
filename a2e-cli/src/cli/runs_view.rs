//! What `a2e runs …` and `a2e graph --run` read: the run journal of the
//! configuration (the cluster's in JetStream when `--cluster`, `A2E_CLUSTER`
//! or `[cluster] nats_url` names one, else the SQLite file under the root),
//! whether a live host runs an unfinished run, and the rows and JSON shown
//! of runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use a2e_host::config::HostConfig;
use a2e_journal::nats::{Leases, NatsJournal, NatsOptions};
use a2e_journal::{Journal, RunId, RunState, RunStatus, RunSummary, SqliteJournal, now_ms};
use serde_json::{Value, json};

/// The name under which `a2e runs` reads leases (it never takes one).
const READER: &str = "a2e-runs";

/// A run journal opened for reading, with a way to tell whether a host runs
/// a run.
pub(crate) struct Opened {
    /// The journal.
    pub journal: Box<dyn Journal>,
    /// Where it is, for messages: the journal file or the cluster's URL.
    pub place: String,
    liveness: Liveness,
}

/// How to tell whether a live host runs a run.
enum Liveness {
    /// In a cluster: the host that coordinates a run holds its lease.
    Leases(Box<Leases>),
    /// On one machine: the host process that resumes the journal's runs
    /// holds its resume lock (the file beside it) for as long as it lives.
    ResumeLock(PathBuf),
}

/// Opens the journal of `config` for `a2e runs` and `a2e graph --run`: the
/// cluster's when one is configured, else the SQLite file. A file that does
/// not exist is an error that says so (and where a cluster's runs are
/// found), not an empty journal.
pub(crate) async fn open(config: &HostConfig) -> Result<Opened, String> {
    if config.cluster.enabled() {
        let url = &config.cluster.nats_url;
        let options = NatsOptions {
            prefix: config.cluster.prefix.clone(),
            ..NatsOptions::default()
        };
        let journal = NatsJournal::connect(url, options)
            .await
            .map_err(|e| format!("cannot open the journal of the cluster at {url}: {e}"))?;
        let ttl = Duration::from_secs(config.cluster.lease_ttl_secs);
        let leases = Leases::open(journal.jetstream(), &config.cluster.prefix, READER, ttl)
            .await
            .map_err(|e| format!("cannot read the leases of the cluster at {url}: {e}"))?;
        return Ok(Opened {
            journal: Box::new(journal),
            place: url.clone(),
            liveness: Liveness::Leases(Box::new(leases)),
        });
    }
    let path = config.journal_path();
    if !path.exists() {
        return Err(format!(
            "no run journal at {}: no durable run was journaled under this root and \
             configuration (the runs of a cluster: --cluster URL or A2E_CLUSTER)",
            path.display()
        ));
    }
    let options = a2e_host::runs::journal_options(&config.journal);
    let journal = SqliteJournal::open(&path, options)
        .await
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut lock = path.clone().into_os_string();
    lock.push(".lock");
    Ok(Opened {
        journal: Box::new(journal),
        place: path.display().to_string(),
        liveness: Liveness::ResumeLock(PathBuf::from(lock)),
    })
}

impl Opened {
    /// Whether a live host runs `run` (`None`: cannot tell).
    async fn runs(&self, run: &RunId) -> Option<bool> {
        match &self.liveness {
            Liveness::Leases(leases) => match leases.holder(run).await {
                Ok(holder) => Some(holder.is_some()),
                Err(e) => {
                    tracing::warn!(run = %run, "cannot read the run's lease: {e}");
                    None
                }
            },
            Liveness::ResumeLock(path) => lock_held(path),
        }
    }

    /// The host that holds `run`'s lease, in a cluster.
    async fn coordinator(&self, run: &RunId) -> Option<String> {
        match &self.liveness {
            Liveness::Leases(leases) => leases.holder(run).await.ok().flatten(),
            Liveness::ResumeLock(_) => None,
        }
    }
}

/// Whether a process holds the resume lock at `path`, read from the
/// kernel's table of locks (`/proc/locks`) rather than by taking it: a host
/// starting at that moment must not find it taken. `None` where there is no
/// such table.
fn lock_held(path: &Path) -> Option<bool> {
    use std::os::unix::fs::MetadataExt;
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        // No lock file: no host ever resumed this journal.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(false),
        Err(_) => return None,
    };
    let table = std::fs::read_to_string("/proc/locks").ok()?;
    let dev = meta.dev();
    // glibc's encoding of a device number.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let wanted = (major, minor, meta.ino());
    Some(table.lines().any(|line| {
        line.split_whitespace()
            .filter_map(lock_target)
            .any(|target| target == wanted)
    }))
}

/// The `MAJOR:MINOR:INODE` field of a `/proc/locks` line (hex, hex, decimal).
fn lock_target(field: &str) -> Option<(u64, u64, u64)> {
    let mut parts = field.split(':');
    let major = u64::from_str_radix(parts.next()?, 16).ok()?;
    let minor = u64::from_str_radix(parts.next()?, 16).ok()?;
    let inode = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((major, minor, inode))
}

/// Age of a time in ms since the epoch, for people.
pub(crate) fn age(ms: u64) -> String {
    let secs = now_ms().saturating_sub(ms) / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86_400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    }
}

/// One run as `a2e runs list` shows it.
pub(crate) struct Row {
    summary: RunSummary,
    /// The chain's `chain_id`, the DAG's `dag_id` or the skill's name.
    document: String,
    /// The id of the request that started the run.
    request: String,
    /// When a `running` run has no live host: its last journaled activity.
    orphaned_since: Option<u64>,
    /// Its calls that wait for a person's decision (the run shows as
    /// `waiting`).
    waiting: usize,
}

impl Row {
    /// The row of `summary`, its request and its nodes read from the journal.
    pub(crate) async fn load(opened: &Opened, summary: RunSummary) -> Self {
        let state = opened
            .journal
            .show_run(&summary.run_id)
            .await
            .ok()
            .flatten();
        let (document, request) = state
            .as_ref()
            .map(|s| request_ids(&s.request))
            .unwrap_or_default();
        let orphaned_since = if summary.status == RunStatus::Running
            && opened.runs(&summary.run_id).await == Some(false)
        {
            Some(
                state
                    .as_ref()
                    .map(last_activity)
                    .unwrap_or(summary.created_ms),
            )
        } else {
            None
        };
        let waiting = state
            .as_ref()
            .filter(|_| summary.status == RunStatus::Running)
            .map_or(0, |s| a2e_host::approvals::waiting_in(s).len());
        Self {
            summary,
            document,
            request,
            orphaned_since,
            waiting,
        }
    }

    /// Whether calls of the run wait for a person's decision.
    pub(crate) fn waits(&self) -> bool {
        self.waiting > 0
    }

    /// The status shown: the journal's, or `waiting` for a running run
    /// whose calls wait for a decision.
    fn status(&self) -> &'static str {
        if self.waits() {
            "waiting"
        } else {
            self.summary.status.as_str()
        }
    }

    /// The row as one JSON object: the run's summary, `chain_id`,
    /// `request_id`, `orphaned` and, when orphaned, `orphaned_since_ms`.
    pub(crate) fn json(&self) -> Value {
        let mut value = serde_json::to_value(&self.summary).unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            object.insert("chain_id".into(), json!(self.document));
            object.insert("request_id".into(), json!(self.request));
            object.insert("orphaned".into(), json!(self.orphaned_since.is_some()));
            object.insert("status".into(), json!(self.status()));
            object.insert("waiting".into(), json!(self.waiting));
            if let Some(since) = self.orphaned_since {
                object.insert("orphaned_since_ms".into(), json!(since));
            }
        }
        value
    }

    fn cells(&self) -> [String; 9] {
        let run = &self.summary;
        let dash = |s: &str| {
            if s.is_empty() {
                "-".into()
            } else {
                s.to_owned()
            }
        };
        let note = match self.orphaned_since {
            _ if self.waits() => format!(
                "{} call(s) wait for approval: a2e runs waiting",
                self.waiting
            ),
            Some(since) => format!("orphaned since {} (no live host)", age(since)),
            None if run.cancel_requested && !run.status.is_finished() => "cancel asked".into(),
            None => String::new(),
        };
        [
            run.run_id.to_string(),
            run.kind.as_str().to_owned(),
            self.status().to_owned(),
            age(run.created_ms),
            run.next_seq.to_string(),
            dash(&run.agent),
            dash(&self.document),
            dash(&self.request),
            note,
        ]
    }
}

/// The header row of `a2e runs list`.
const HEADER: [&str; 9] = [
    "RUN", "KIND", "STATUS", "AGE", "EVENTS", "AGENT", "CHAIN", "REQUEST", "",
];

/// `rows` as a table: a header row, then one line per run, columns aligned.
pub(crate) fn table(rows: &[Row]) -> Vec<String> {
    let cells: Vec<[String; 9]> = rows.iter().map(Row::cells).collect();
    let mut widths = HEADER.map(str::len);
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |row: &[String]| {
        let mut out = String::new();
        for (cell, width) in row.iter().zip(widths) {
            out.push_str(&format!("{cell:<width$}  "));
        }
        out.trim_end().to_owned()
    };
    let header: Vec<String> = HEADER.iter().map(|h| (*h).to_owned()).collect();
    std::iter::once(line(&header))
        .chain(cells.iter().map(|row| line(row)))
        .collect()
}

/// The document's id and the request's id of a journaled request: a chain
/// (`chain_id`, `id`), a DAG (`dag.dag_id`, `id`) or a skill (`name`, `id`).
fn request_ids(request: &Value) -> (String, String) {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let document = [
        &request["chain_id"],
        &request["dag"]["dag_id"],
        &request["name"],
    ]
    .into_iter()
    .map(text)
    .find(|s| !s.is_empty())
    .unwrap_or_default();
    (document, text(&request["id"]))
}

/// The last time the journal heard of the run: its latest node start or
/// result, else its creation.
fn last_activity(state: &RunState) -> u64 {
    state
        .nodes
        .iter()
        .flat_map(|n| [n.started_ms, n.finished_ms.unwrap_or_default()])
        .chain([state.summary.created_ms])
        .max()
        .unwrap_or_default()
}

/// `a2e runs show`'s JSON of `state`: the run as journaled, with its nodes
/// in start order, each node's `outcome.ok` a boolean, `orphaned` on a
/// `running` run no live host runs, and in a cluster `coordinator`: the
/// host that holds its lease, or, with no lease held (a finished run), the
/// one the journal names.
pub(crate) async fn show_json(opened: &Opened, mut state: RunState) -> Value {
    a2e_host::redact::redact_records(&mut state);
    // A node journaled by its result alone (`started_ms` 0) sits where it
    // finished.
    state.nodes.sort_by_key(|n| {
        let at = if n.started_ms > 0 {
            n.started_ms
        } else {
            n.finished_ms.unwrap_or_default()
        };
        (at, n.attempt)
    });
    let run = state.summary.run_id.clone();
    let running = state.summary.status == RunStatus::Running;
    let pending = a2e_host::approvals::waiting_in(&state);
    let journaled = state.summary.coordinator.clone();
    let mut value = serde_json::to_value(&state).unwrap_or_default();
    if let Some(nodes) = value["nodes"].as_array_mut() {
        for node in nodes {
            // The journal keeps the outcome's tag as a string.
            if let Some(ok) = node["outcome"]["ok"].as_str().map(|ok| ok == "true") {
                node["outcome"]["ok"] = Value::Bool(ok);
            }
        }
    }
    if let Some(object) = value.as_object_mut() {
        if let Some(host) = opened.coordinator(&run).await.or(journaled) {
            object.insert("coordinator".into(), json!(host));
        }
        if running {
            let orphaned = opened.runs(&run).await == Some(false);
            object.insert("orphaned".into(), json!(orphaned));
            let waiting: Vec<Value> = pending.iter().map(super::approvals::row_json).collect();
            if !waiting.is_empty() {
                object.insert("status".into(), json!("waiting"));
            }
            object.insert("waiting".into(), Value::Array(waiting));
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_table_field_is_read_as_device_and_inode() {
        assert_eq!(lock_target("fd:01:5678"), Some((0xfd, 1, 5678)));
        assert_eq!(lock_target("00:2e:12"), Some((0, 0x2e, 12)));
        assert_eq!(lock_target("FLOCK"), None);
        assert_eq!(lock_target("1:"), None);
        assert_eq!(lock_target("1:2:3:4"), None);
    }

    #[test]
    fn the_ids_of_a_chain_a_dag_and_a_skill_request() {
        let chain = json!({"id": "r1", "chain_id": "build"});
        assert_eq!(request_ids(&chain), ("build".into(), "r1".into()));
        let dag = json!({"id": "r2", "dag": {"dag_id": "d"}});
        assert_eq!(request_ids(&dag), ("d".into(), "r2".into()));
        let skill = json!({"id": "r3", "name": "find_todos"});
        assert_eq!(request_ids(&skill), ("find_todos".into(), "r3".into()));
    }
}

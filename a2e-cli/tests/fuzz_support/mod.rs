//! The session fuzzer: generates sessions of hostile lines, drives a real
//! [`Session`] with them over an in-memory channel pair, and checks the
//! invariants:
//!
//! 1. every line that needs an answer (a request, a line that does not
//!    decode, a message an agent may not send) gets exactly one final answer
//!    (a response or an `error`, events aside) carrying its readable id;
//! 2. the session still answers a `ping` afterwards;
//! 3. nothing panics (a panic hook counts every panic, caught or not).
//!
//! A failing case is written as a JSON-lines fixture (one line per message
//! sent, as text when it is UTF-8, else `{"hex": …}`) that
//! [`read_fixture`] turns back into a case: `tests/fuzz_regressions/*.jsonl`
//! replays each one as a regression test.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use a2e_host::session::Session;
use a2e_host::{Host, HostConfig};
use a2e_proto::{DecodeOptions, Message, arb, decode_with};
use proptest::prelude::*;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The id of the `ping` that closes every case.
pub const FINAL_PING: &str = "fuzz-final-ping";

/// How long one case may take before it counts as a hang.
pub const CASE_LIMIT: Duration = Duration::from_secs(30);

/// One session's worth of lines.
#[derive(Clone)]
pub struct Case {
    /// The lines, in order, without their newlines.
    pub lines: Vec<Vec<u8>>,
}

impl std::fmt::Debug for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for line in &self.lines {
            let text = String::from_utf8_lossy(line);
            let cut: String = text.chars().take(300).collect();
            writeln!(f, "{cut}{}", if text.len() > 300 { "…" } else { "" })?;
        }
        Ok(())
    }
}

/// A host for fuzzing: the built-in tools in a fresh root, `echo` the only
/// command allowed, no network, audit records to the log.
pub struct FuzzHost {
    /// The host.
    pub host: Arc<Host>,
    /// Its root (removed on drop).
    pub root: tempfile::TempDir,
}

impl FuzzHost {
    /// A fresh host.
    pub fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("a.txt"), "alpha\nbeta\n").unwrap();
        std::fs::create_dir_all(root.path().join("sub")).unwrap();
        let mut config = HostConfig {
            root: root.path().to_path_buf(),
            max_parallel: 4,
            ..HostConfig::default()
        };
        config.commands.allow = vec!["echo".into()];
        config.commands.timeout_secs = 5;
        // Audit records go to the log (serialised, then dropped): a file in
        // the root would grow with every case and slow `grep` and `glob` down.
        config.audit.path = std::path::PathBuf::new();
        // `A2E_FUZZ_WITHOUT=transform,grep`: leave out built-ins with a known
        // open finding, so a long run can look for the next one.
        if let Ok(without) = std::env::var("A2E_FUZZ_WITHOUT") {
            let without: Vec<&str> = without.split(',').map(str::trim).collect();
            config.builtins.retain(|b| !without.contains(&b.as_str()));
        }
        let host = Host::builder(config).with_builtins().build().unwrap();
        Self { host, root }
    }
}

/// Requests that reach every part of the host: the mutations start here as
/// well as from the conformance fixtures.
pub fn host_seeds() -> Vec<Value> {
    let call = |id: &str, tool: &str, args: Value| json!({"type": "tool/call/req", "id": id, "tool_name": tool, "arguments": args, "timeout": 5});
    vec![
        json!({"type": "handshake/req", "id": "hs", "agent_id": "fuzz", "agent_caps": ["tools", "skill", "chains", "proc"]}),
        json!({"type": "ping", "id": "p1"}),
        json!({"type": "tool/list/req", "id": "l1", "query": "file", "include_deferred": true}),
        call(
            "c1",
            "read_file",
            json!({"path": "a.txt", "offset": 1, "limit": 4}),
        ),
        call(
            "c2",
            "write_file",
            json!({"path": "sub/b.txt", "content": "x", "create_dirs": true}),
        ),
        call("c3", "list_dir", json!({"path": "sub"})),
        call("c4", "glob", json!({"pattern": "**/*.txt"})),
        call(
            "c5",
            "grep",
            json!({"pattern": "al.*a", "path": ".", "max_matches": 3}),
        ),
        call(
            "c6",
            "run_command",
            json!({"argv": ["echo", "hi"], "timeout": 5}),
        ),
        call(
            "c7",
            "split_text",
            json!({"text": "a. b. c.", "by": "sentence", "size": 4}),
        ),
        call("c8", "text_stats", json!({"text": "one two two"})),
        call(
            "c9",
            "transform",
            json!({"expression": "a.b[0]", "data": {"a": {"b": [1]}}}),
        ),
        call(
            "c10",
            "http_request",
            json!({"url": "http://127.0.0.1:9/", "method": "GET"}),
        ),
        json!({"type": "skill/discover/req", "id": "s1", "filter_tags": ["x"]}),
        json!({"type": "skill/call/req", "id": "s2", "name": "nope", "arguments": {}, "timeout": 5}),
        json!({"type": "chain/req", "id": "ch1", "entry_node": "a", "timeout": 5,
        "initial_input": {"items": [1, 2], "flag": true},
        "nodes": [
            {"node_id": "a", "kind": "tool", "name": "text_stats", "input": {"text": "a b", "timeout": 5}, "next_node": "b"},
            {"node_id": "b", "kind": "branch", "condition": "input.flag", "true_node": "m", "false_node": ""},
            {"node_id": "m", "kind": "map", "items_path": "input.items", "map_node": "t"},
            {"node_id": "t", "kind": "tool", "name": "transform", "input_map": {"data": "item", "expression": "input.flag"}, "input": {"timeout": 5}}
        ]}),
        json!({"type": "proc/spawn/req", "id": "ps1", "cmd": ["echo", "x"], "timeout": 5}),
        json!({"type": "proc/status/req", "id": "pq1", "proc_id": "nope"}),
        json!({"type": "proc/write/req", "id": "pw1", "proc_id": "nope", "data": "x"}),
        json!({"type": "proc/kill/req", "id": "pk1", "proc_id": "nope"}),
        json!({"type": "memory/store/req", "id": "u1", "key": "k"}),
    ]
}

/// Every message fixture of the conformance suite, and every negative line
/// that is JSON.
pub fn fixture_seeds() -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/fixtures");
    let mut out = Vec::new();
    let mut dirs = vec![dir.join("spec"), dir.join("edge")];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                out.push(serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap());
            }
        }
    }
    let negative: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("negative.json")).unwrap()).unwrap();
    for case in negative["cases"].as_array().unwrap() {
        if let Some(v) = case["line"]
            .as_str()
            .and_then(|l| serde_json::from_str(l).ok())
        {
            out.push(v);
        }
    }
    out
}

/// Sessions of hostile lines: usually a handshake first (sometimes none,
/// sometimes a mutated one), then lines from the host's seeds, the
/// fixtures, every message type and random bytes, mutated; some lines
/// reuse an earlier line's id.
pub fn case_strategy() -> BoxedStrategy<Case> {
    let hs = serde_json::to_vec(&host_seeds()[0]).unwrap();
    let mut seeds = host_seeds();
    seeds.extend(fixture_seeds());
    let handshake = prop_oneof![
        6 => Just(Some(hs.clone())),
        1 => Just(None),
        1 => arb::mutated(host_seeds()[0].clone()).prop_map(Some),
    ];
    let plain = {
        let seeds = host_seeds();
        proptest::sample::select(seeds).prop_map(|v| serde_json::to_vec(&v).unwrap())
    };
    let line = prop_oneof![
        2 => plain,
        5 => arb::hostile_line(seeds),
    ];
    let lines = proptest::collection::vec(
        (
            line,
            proptest::option::weighted(0.15, any::<proptest::sample::Index>()),
        ),
        1..6,
    );
    (handshake, lines)
        .prop_map(|(hs, lines)| {
            let mut out: Vec<Vec<u8>> = hs.into_iter().collect();
            for (line, dup) in lines {
                let line = match dup {
                    // The id of an earlier line, on this one.
                    Some(at) if !out.is_empty() => reuse_id(&out[at.index(out.len())], line),
                    _ => line,
                };
                out.push(line);
            }
            Case { lines: out }
        })
        .boxed()
}

/// `line` with the `id` of `earlier`, when both are objects.
fn reuse_id(earlier: &[u8], line: Vec<u8>) -> Vec<u8> {
    let (Ok(Value::Object(old)), Ok(Value::Object(mut new))) = (
        serde_json::from_slice::<Value>(earlier),
        serde_json::from_slice::<Value>(&line),
    ) else {
        return line;
    };
    match old.get("id") {
        Some(id) => {
            new.insert("id".into(), id.clone());
            serde_json::to_vec(&new).unwrap()
        }
        None => line,
    }
}

/// A marker for a request without an `id`: the decoder gives it a fresh
/// one, which its answer carries.
pub const FRESH: &str = "\u{0}fresh";

/// What the session must answer for `line`: `Some(id)` for one final answer
/// with that `req_id` (empty when the id is unreadable, [`FRESH`] when the
/// request has none and gets a fresh one), `None` for no answer (`pong`,
/// `error` and `shutdown` from the agent).
pub fn expected_answer(line: &[u8], options: &DecodeOptions) -> Option<String> {
    match decode_with(line, options) {
        Err(e) => Some(e.req_id),
        Ok(Message::Pong(_) | Message::ErrorMessage(_) | Message::Shutdown(_)) => None,
        Ok(msg) => {
            // Read as the decoder reads it: other members are skipped, not
            // parsed (a lone surrogate there does not matter).
            #[derive(serde::Deserialize)]
            struct Written {
                id: Option<Value>,
            }
            let written = serde_json::from_slice::<Written>(line)
                .ok()
                .and_then(|w| w.id)
                .and_then(|id| id.as_str().map(str::to_owned));
            match written {
                Some(id) => Some(id),
                None if matches!(msg, Message::Unknown(_)) => Some(msg.id().to_owned()),
                None => Some(FRESH.to_owned()),
            }
        }
    }
}

static PANICS: AtomicUsize = AtomicUsize::new(0);
static LAST_PANIC: Mutex<String> = Mutex::new(String::new());
static HOOK: OnceLock<()> = OnceLock::new();
/// One fuzz run at a time per process: the panic count is global.
pub static EXCLUSIVE: Mutex<()> = Mutex::new(());

/// Counts every panic in the process (caught or not) and keeps the last one.
pub fn install_panic_hook() {
    HOOK.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut last) = LAST_PANIC.lock() {
                *last = info.to_string();
            }
            previous(info);
        }));
    });
}

static ANSWERS: Mutex<BTreeMap<String, usize>> = Mutex::new(BTreeMap::new());

/// Counts an answer by type (and code, for an `error`; success, for a
/// tool call): what the cases reached.
fn count_answer(msg: &Message) {
    let key = match msg {
        Message::ErrorMessage(e) => format!("error:{}", e.code),
        Message::ToolCallResponse(r) => format!("tool/call/resp:{}", r.data.success),
        Message::ChainResponse(r) => format!("chain/resp:{}", r.success),
        other => other.type_str().to_owned(),
    };
    if let Ok(mut answers) = ANSWERS.lock() {
        *answers.entry(key).or_default() += 1;
    }
}

/// The answers counted so far, by type.
pub fn answers() -> BTreeMap<String, usize> {
    ANSWERS.lock().map(|a| a.clone()).unwrap_or_default()
}

/// Why a case failed.
#[derive(Debug)]
pub struct Failure(pub String);

/// Runs one case on a fresh session of `host` and checks the invariants.
pub async fn run_case(host: &Arc<Host>, case: &Case) -> Result<(), Failure> {
    let panics_before = PANICS.load(Ordering::SeqCst);
    let options = DecodeOptions {
        max_bytes: host.config().max_message_bytes,
        ..DecodeOptions::default()
    };
    let mut expected: BTreeMap<String, usize> = BTreeMap::new();
    for line in &case.lines {
        if let Some(id) = expected_answer(line, &options) {
            *expected.entry(id).or_default() += 1;
        }
    }
    *expected.entry(FINAL_PING.to_owned()).or_default() += 1;

    // After a `shutdown` the session may drop what it has not started: each
    // line then gets at most one answer.
    let relaxed = case
        .lines
        .iter()
        .any(|l| matches!(decode_with(l, &options), Ok(Message::Shutdown(_))));

    let (tx, mut rx) = mpsc::channel(a2e_host::session::OUTBOUND_CAPACITY);
    let session = Session::new(host.clone(), tx);
    // The reader side: every final answer by `req_id`, up to the pong that
    // answers the final ping (sent once every request task has finished, so
    // every answer before it is already in the channel).
    let collector = tokio::spawn(async move {
        let mut got: BTreeMap<String, usize> = BTreeMap::new();
        while let Some(out) = rx.recv().await {
            let out: a2e_host::session::Outbound = out;
            for msg in out.into_messages() {
                if msg.is_event() {
                    continue;
                }
                let id = msg.req_id().unwrap_or("").to_owned();
                count_answer(&msg);
                *got.entry(id.clone()).or_default() += 1;
                if id == FINAL_PING && matches!(msg, Message::Pong(_)) {
                    return (got, true);
                }
            }
        }
        (got, false)
    });
    let drive = async {
        for line in &case.lines {
            session.handle_line(line).await;
        }
        session.idle().await;
        let ping = format!(r#"{{"type":"ping","id":"{FINAL_PING}"}}"#);
        session.handle_line(ping.as_bytes()).await;
    };
    let finished = tokio::time::timeout(CASE_LIMIT, drive).await.is_ok();
    let collected = tokio::time::timeout(CASE_LIMIT, collector).await;
    session.close(Duration::ZERO).await;
    drop(session);
    if !finished {
        return Err(Failure(format!(
            "the session did not take every line within {} s",
            CASE_LIMIT.as_secs()
        )));
    }
    let (got, pong) = match collected {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(Failure(format!("collector failed: {e}"))),
        Err(_) => {
            return Err(Failure(format!(
                "no pong for the final ping within {} s",
                CASE_LIMIT.as_secs()
            )));
        }
    };
    let panics = PANICS.load(Ordering::SeqCst) - panics_before;
    if panics > 0 {
        let last = LAST_PANIC.lock().map(|l| l.clone()).unwrap_or_default();
        return Err(Failure(format!("{panics} panic(s); the last: {last}")));
    }
    if !pong {
        return Err(Failure("no pong for the final ping".to_owned()));
    }
    // Answers to ids nobody wrote stand for the requests that had none.
    let fresh = expected.remove(FRESH).unwrap_or(0);
    let mut got = got;
    let strays: Vec<String> = got
        .keys()
        .filter(|id| !expected.contains_key(*id) && !id.is_empty())
        .cloned()
        .collect();
    let mut unclaimed = 0;
    for id in strays {
        unclaimed += got.remove(&id).unwrap_or(0);
    }
    if unclaimed > fresh || (!relaxed && unclaimed != fresh) {
        return Err(Failure(format!(
            "{fresh} request(s) without an id, {unclaimed} answer(s) to ids nobody sent"
        )));
    }
    let ok = if relaxed {
        got.iter()
            .all(|(id, n)| *n <= expected.get(id).copied().unwrap_or(0))
    } else {
        got == expected
    };
    if !ok {
        let mut diff = Vec::new();
        for id in expected.keys().chain(got.keys()) {
            let (want, have) = (
                expected.get(id).copied().unwrap_or(0),
                got.get(id).copied().unwrap_or(0),
            );
            if want != have
                && !diff
                    .iter()
                    .any(|d: &String| d.starts_with(&format!("`{id}`")))
            {
                diff.push(format!(
                    "`{id}`: expected {want} final answer(s), got {have}"
                ));
            }
        }
        return Err(Failure(diff.join("; ")));
    }
    Ok(())
}

/// A case as a JSON-lines fixture: each line sent, as a JSON string when it
/// is UTF-8, else `{"hex": "…"}`.
pub fn write_fixture(case: &Case, why: &str) -> String {
    let mut out = format!("{}\n", json!({"$comment": why}));
    for line in &case.lines {
        let entry = match std::str::from_utf8(line) {
            Ok(text) => json!(text),
            Err(_) => json!({"hex": line.iter().map(|b| format!("{b:02x}")).collect::<String>()}),
        };
        out.push_str(&entry.to_string());
        out.push('\n');
    }
    out
}

/// A fixture written by [`write_fixture`] as a case.
pub fn read_fixture(text: &str) -> Case {
    let mut lines = Vec::new();
    for entry in text.lines().filter(|l| !l.trim().is_empty()) {
        let value: Value = serde_json::from_str(entry).unwrap();
        match value {
            Value::String(s) => lines.push(s.into_bytes()),
            Value::Object(map) if map.contains_key("hex") => {
                let hex = map["hex"].as_str().unwrap();
                let bytes = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect();
                lines.push(bytes);
            }
            _ => {} // a comment
        }
    }
    Case { lines }
}

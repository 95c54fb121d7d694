//! Proc: spawn, output, stdin, signals, status, limits (a2e-core §5).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Cx, HostScenario};
use crate::check::{CheckDef, must, should};
use crate::scenario::{Abort, Area, Fixture, On, Outcome, Scenario};
use crate::session::{Reply, Session};
use crate::wire::show;

pub(super) const SCENARIOS: &[HostScenario] = &[
    Scenario {
        name: "proc/spawn",
        area: Area::Proc,
        about: "Spawns `sh` writing to stdout and stderr and exiting 3, and one reading its environment.",
        needs: &[Fixture::Cap("proc"), Fixture::Proc],
        on: On::All,
        checks: SPAWN,
        run: crate::run_fn!(Cx, spawn),
    },
    Scenario {
        name: "proc/io",
        area: Area::Proc,
        about: "Writes to `cat`, closes its stdin, writes again; spawns one with stdin_mode null.",
        needs: &[Fixture::Cap("proc"), Fixture::Proc],
        on: On::All,
        checks: IO,
        run: crate::run_fn!(Cx, io),
    },
    Scenario {
        name: "proc/signals",
        area: Area::Proc,
        about: "Asks about an unknown process, reads the status of sleeping processes and ends them with SIGTERM, SIGKILL and SIGINT.",
        needs: &[Fixture::Cap("proc"), Fixture::Proc],
        on: On::All,
        checks: SIGNALS,
        run: crate::run_fn!(Cx, signals),
    },
    Scenario {
        name: "proc/limits",
        area: Area::Proc,
        about: "Spawns a command not allowed, one past its timeout, and one whose argument looks like a shell variable.",
        needs: &[Fixture::Cap("proc"), Fixture::Proc],
        on: On::All,
        checks: LIMITS,
        run: crate::run_fn!(Cx, limits),
    },
];

const SPAWN: &[CheckDef] = &[
    must(
        "proc.spawn.answered",
        "a2e-core §5",
        "proc/spawn/req is answered with proc/spawn/resp naming it in req_id",
    ),
    must(
        "proc.spawn.ok",
        "a2e-core §5",
        "an allowed command starts: ok: true, a non-empty proc_id, a pid > 0",
    ),
    must(
        "proc.read.stdout",
        "a2e-core §5",
        "a line on stdout comes as a proc/read/event, stream_type stdout, data.text",
    ),
    must(
        "proc.read.stderr",
        "a2e-core §5",
        "a line on stderr comes as a proc/read/event, stream_type stderr, data.text",
    ),
    must(
        "proc.read.exit",
        "a2e-core §5",
        "the end comes as a proc/read/event, stream_type killed, data.code the exit code",
    ),
    must(
        "proc.read.proc-id",
        "a2e-core §5",
        "every proc/read/event names its proc_id",
    ),
    must(
        "proc.read.seq",
        "a2e-core §1",
        "a process's events carry seq 0, 1, 2, …",
    ),
    should(
        "proc.read.req-id",
        "a2e-core §4",
        "a process's events name the spawn request in req_id",
    ),
    must(
        "proc.spawn.env",
        "a2e-core §5",
        "env sets variables for the command",
    ),
    must(
        "proc.spawn.minimal",
        "a2e-core §5",
        "a proc/spawn/req with only cmd is served",
    ),
];

const IO: &[CheckDef] = &[
    must(
        "proc.write.answered",
        "a2e-core §5",
        "proc/write/req is answered with proc/write/resp, ok: true",
    ),
    must(
        "proc.write.stdin",
        "a2e-core §5",
        "what is written reaches the process's stdin",
    ),
    must(
        "proc.write.eof",
        "a2e-core §5",
        "eof: true closes stdin (cat then exits with code 0)",
    ),
    must(
        "proc.write.dead",
        "a2e-core §5",
        "a write to a process that ended is refused (proc_dead) or answered ok: false",
    ),
    should(
        "proc.write.stdin-null",
        "a2e-core §5",
        "with stdin_mode null a write is refused or answered ok: false",
    ),
];

const SIGNALS: &[CheckDef] = &[
    must(
        "proc.status.unknown",
        "a2e-core §5",
        "proc/status of an unknown proc_id is refused (unknown_proc) or has a non-empty error",
    ),
    must(
        "proc.kill.unknown",
        "a2e-core §5",
        "proc/kill of an unknown proc_id is refused (unknown_proc) or answered ok: false",
    ),
    must(
        "proc.status.running",
        "a2e-core §5",
        "a live process's status is running",
    ),
    must(
        "proc.status.all",
        "a2e-core §5",
        "proc/status/req with an empty proc_id covers every process of the session",
    ),
    must(
        "proc.kill.answered",
        "a2e-core §5",
        "proc/kill/req is answered with proc/kill/resp, ok: true",
    ),
    must(
        "proc.kill.ends",
        "a2e-core §5",
        "after SIGTERM the process ends: its killed event comes",
    ),
    must(
        "proc.kill.state",
        "a2e-core §5",
        "an ended process's status is stopped, crashed or timedout",
    ),
    must("proc.kill.sigkill", "a2e-core §5", "SIGKILL ends a process"),
    must("proc.kill.sigint", "a2e-core §5", "SIGINT ends a process"),
];

const LIMITS: &[CheckDef] = &[
    must(
        "proc.spawn.not-allowed",
        "a2e-core §5",
        "a command not on the allow-list does not start: a refusal, or ok: false with an error",
    ),
    must(
        "proc.spawn.timeout",
        "a2e-core §5",
        "a process past its timeout is ended: its killed event comes within the timeout plus 5 s",
    ),
    should(
        "proc.spawn.timedout-state",
        "a2e-core §5",
        "its status is then timedout",
    ),
    must(
        "proc.spawn.no-shell",
        "a2e-core §5",
        "commands run without a shell: `$X` in an argument reaches the program as it is",
    ),
];

/// Spawns `cmd` with `extra` fields; the reply and its proc_id.
async fn start(s: &mut Session, cmd: Value, extra: Value) -> Result<(Value, Reply, String), Abort> {
    let mut fields = json!({"session_id": s.session_id.clone(), "cmd": cmd});
    if let (Some(f), Value::Object(x)) = (fields.as_object_mut(), extra) {
        f.extend(x);
    }
    let req = s.req("proc/spawn/req", fields);
    let r = s.request(req.clone()).await?;
    let pid = r.s("/proc_id").to_owned();
    Ok((req, r, pid))
}

/// The process's events until its `killed` one (by proc_id), within `within`.
async fn until_end(s: &mut Session, proc_id: &str, within: Duration) -> Result<Vec<Value>, Abort> {
    let id = proc_id.to_owned();
    s.events_where(
        move |m| m["type"] == "proc/read/event" && m["proc_id"] == id.as_str(),
        within,
        |m| m["stream_type"] == "killed",
    )
    .await
}

fn texts(events: &[Value], stream: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["stream_type"] == stream)
        .filter_map(|e| e.pointer("/data/text").and_then(Value::as_str))
        .map(|t| t.trim_end().to_owned())
        .collect()
}

fn end_of(events: &[Value]) -> Option<&Value> {
    events.iter().find(|e| e["stream_type"] == "killed")
}

async fn spawn(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let cmd = json!(["sh", "-c", "echo out; echo err >&2; exit 3"]);
    let (req, r, proc_id) = start(
        &mut s,
        cmd,
        json!({"cwd": "", "env": {}, "stdin_mode": "pipe", "timeout": 0}),
    )
    .await?;
    cx.check(
        "proc.spawn.answered",
        r.ty() == "proc/spawn/resp" && r.msg["req_id"] == req["id"],
        "proc/spawn/resp with the request's req_id",
        r.show(),
    );
    cx.check(
        "proc.spawn.ok",
        r.at("/ok") == &json!(true)
            && !proc_id.is_empty()
            && r.at("/pid").as_u64().is_some_and(|p| p > 0),
        "ok: true, a proc_id, a pid",
        r.show(),
    );
    let events = until_end(&mut s, &proc_id, WAIT).await?;
    let shown: Vec<String> = events.iter().map(show).collect();
    cx.check(
        "proc.read.stdout",
        texts(&events, "stdout") == ["out"],
        "stdout text `out`",
        format!("{shown:?}"),
    );
    cx.check(
        "proc.read.stderr",
        texts(&events, "stderr") == ["err"],
        "stderr text `err`",
        format!("{shown:?}"),
    );
    let end = end_of(&events);
    cx.check(
        "proc.read.exit",
        end.is_some_and(|e| e.pointer("/data/code") == Some(&json!(3))),
        "a killed event with data.code 3",
        end.map(show).unwrap_or_else(|| "no killed event".into()),
    );
    cx.check(
        "proc.read.proc-id",
        !events.is_empty() && events.iter().all(|e| e["proc_id"] == proc_id.as_str()),
        format!("proc_id `{proc_id}` on every event"),
        format!("{shown:?}"),
    );
    let seq_ok = events
        .iter()
        .enumerate()
        .all(|(i, e)| e.get("seq").and_then(Value::as_u64) == Some(i as u64));
    cx.check(
        "proc.read.seq",
        !events.is_empty() && seq_ok,
        "seq 0, 1, 2, …",
        format!("{shown:?}"),
    );
    cx.check(
        "proc.read.req-id",
        !events.is_empty() && events.iter().all(|e| e["req_id"] == req["id"]),
        format!("req_id {} on every event", req["id"]),
        format!("{shown:?}"),
    );

    let (_, r, proc_id) = start(
        &mut s,
        json!(["sh", "-c", "echo \"$CONF_X\""]),
        json!({"env": {"CONF_X": "42"}}),
    )
    .await?;
    let events = until_end(&mut s, &proc_id, WAIT).await?;
    cx.check(
        "proc.spawn.env",
        texts(&events, "stdout") == ["42"],
        "stdout `42`",
        format!("{} / {:?}", r.show(), texts(&events, "stdout")),
    );

    let min = s.req("proc/spawn/req", json!({"cmd": ["sh", "-c", "exit 0"]}));
    let r = s.request(min).await?;
    cx.check(
        "proc.spawn.minimal",
        r.ty() == "proc/spawn/resp" && r.at("/ok") == &json!(true),
        "ok: true",
        r.show(),
    );
    let proc_id = r.s("/proc_id").to_owned();
    until_end(&mut s, &proc_id, WAIT).await?;
    Ok(())
}

async fn write(s: &mut Session, proc_id: &str, data: &str, eof: bool) -> Result<Reply, Abort> {
    let req = s.req(
        "proc/write/req",
        json!({"proc_id": proc_id, "data": data, "eof": eof}),
    );
    s.request(req).await
}

fn refused_or_not_ok(r: &Reply, code: &str) -> bool {
    (r.is_error() && (code.is_empty() || r.code() == code)) || r.at("/ok") == &json!(false)
}

async fn io(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let (_, r, proc_id) = start(&mut s, json!(["cat"]), json!({})).await?;
    if r.at("/ok") != &json!(true) {
        return Err(Abort(format!("`cat` did not start: {}", r.show())));
    }
    let w = write(&mut s, &proc_id, "hello cat\n", false).await?;
    cx.check(
        "proc.write.answered",
        w.ty() == "proc/write/resp" && w.at("/ok") == &json!(true),
        "proc/write/resp, ok: true",
        w.show(),
    );
    let id = proc_id.clone();
    let echoed = s
        .events_where(
            move |m| m["type"] == "proc/read/event" && m["proc_id"] == id.as_str(),
            s.wait,
            |m| m["stream_type"] == "stdout",
        )
        .await?;
    cx.check(
        "proc.write.stdin",
        texts(&echoed, "stdout") == ["hello cat"],
        "stdout `hello cat`",
        format!("{:?}", echoed.iter().map(show).collect::<Vec<_>>()),
    );
    write(&mut s, &proc_id, "", true).await?;
    let events = until_end(&mut s, &proc_id, WAIT).await?;
    let end = end_of(&events);
    cx.check(
        "proc.write.eof",
        end.is_some_and(|e| e.pointer("/data/code") == Some(&json!(0))),
        "cat ends with code 0",
        end.map(show).unwrap_or_else(|| "no killed event".into()),
    );
    let late = write(&mut s, &proc_id, "too late\n", false).await?;
    cx.check(
        "proc.write.dead",
        refused_or_not_ok(&late, "proc_dead"),
        "an error proc_dead, or ok: false",
        late.show(),
    );

    let (_, r, proc_id) =
        start(&mut s, json!(["sleep", "5"]), json!({"stdin_mode": "null"})).await?;
    if r.at("/ok") == &json!(true) {
        let w = write(&mut s, &proc_id, "x\n", false).await?;
        cx.check(
            "proc.write.stdin-null",
            refused_or_not_ok(&w, ""),
            "an error, or ok: false",
            w.show(),
        );
        let kill = s.req(
            "proc/kill/req",
            json!({"proc_id": proc_id, "signal": "SIGKILL"}),
        );
        s.request(kill).await?;
    } else {
        cx.fail(
            "proc.write.stdin-null",
            "a process started with stdin_mode null",
            r.show(),
        );
    }
    Ok(())
}

async fn status(s: &mut Session, proc_id: &str) -> Result<Reply, Abort> {
    let req = s.req("proc/status/req", json!({"proc_id": proc_id}));
    s.request(req).await
}

/// How long a short process may take to end.
const WAIT: Duration = Duration::from_secs(10);

const ENDED: &[&str] = &["stopped", "crashed", "timedout"];

/// Starts a process that says `ready` and then sleeps 30 s; its proc_id once
/// it said so (a signal then reaches the program, not its start-up).
async fn sleeper(s: &mut Session) -> Result<String, Abort> {
    let cmd = json!(["sh", "-c", "echo ready; exec sleep 30"]);
    let (_, r, proc_id) = start(s, cmd, json!({})).await?;
    if r.at("/ok") != &json!(true) {
        return Err(Abort(format!("`sh` did not start: {}", r.show())));
    }
    let id = proc_id.clone();
    let ready = s
        .events_where(
            move |m| m["type"] == "proc/read/event" && m["proc_id"] == id.as_str(),
            WAIT,
            |m| m["stream_type"] != "stderr",
        )
        .await?;
    if texts(&ready, "stdout") != ["ready"] {
        return Err(Abort(format!("the sleeper did not say `ready`: {ready:?}")));
    }
    Ok(proc_id)
}

async fn kill_and_wait(cx: &mut Cx, s: &mut Session, signal: &str, check: &str) -> Outcome {
    let proc_id = sleeper(s).await?;
    let kill = s.req(
        "proc/kill/req",
        json!({"proc_id": proc_id, "signal": signal}),
    );
    s.request(kill).await?;
    let events = until_end(s, &proc_id, Duration::from_secs(10)).await?;
    cx.check(
        check,
        end_of(&events).is_some(),
        format!("a killed event after {signal}"),
        format!("{} event(s)", events.len()),
    );
    Ok(())
}

async fn signals(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let st = status(&mut s, "conformance-no-such-proc").await?;
    cx.check(
        "proc.status.unknown",
        (st.is_error() && st.code() == "unknown_proc") || !st.s("/error").is_empty(),
        "an error unknown_proc, or a non-empty error",
        st.show(),
    );
    let kill = s.req(
        "proc/kill/req",
        json!({"proc_id": "conformance-no-such-proc", "signal": "SIGTERM"}),
    );
    let k = s.request(kill).await?;
    cx.check(
        "proc.kill.unknown",
        refused_or_not_ok(&k, "unknown_proc"),
        "an error unknown_proc, or ok: false",
        k.show(),
    );
    let first = sleeper(&mut s).await?;
    let second = sleeper(&mut s).await?;
    let st = status(&mut s, &first).await?;
    cx.check(
        "proc.status.running",
        st.s("/status") == "running",
        "status running",
        st.show(),
    );
    let all = s.req("proc/status/req", json!({}));
    let st = s.request(all).await?;
    let text = st.msg.to_string();
    cx.check(
        "proc.status.all",
        st.ty() == "proc/status/resp" && text.contains(&first) && text.contains(&second),
        format!("a status naming `{first}` and `{second}`"),
        st.show(),
    );
    let kill = s.req(
        "proc/kill/req",
        json!({"proc_id": first, "signal": "SIGTERM"}),
    );
    let k = s.request(kill).await?;
    cx.check(
        "proc.kill.answered",
        k.ty() == "proc/kill/resp" && k.at("/ok") == &json!(true),
        "proc/kill/resp, ok: true",
        k.show(),
    );
    let events = until_end(&mut s, &first, Duration::from_secs(10)).await?;
    cx.check(
        "proc.kill.ends",
        end_of(&events).is_some(),
        "a killed event",
        format!("{} event(s)", events.len()),
    );
    let st = status(&mut s, &first).await?;
    cx.check(
        "proc.kill.state",
        ENDED.contains(&st.s("/status")),
        "stopped, crashed or timedout",
        st.show(),
    );
    let kill = s.req(
        "proc/kill/req",
        json!({"proc_id": second, "signal": "SIGKILL"}),
    );
    s.request(kill).await?;
    let events = until_end(&mut s, &second, Duration::from_secs(10)).await?;
    cx.check(
        "proc.kill.sigkill",
        end_of(&events).is_some(),
        "a killed event after SIGKILL",
        format!("{} event(s)", events.len()),
    );
    kill_and_wait(cx, &mut s, "SIGINT", "proc.kill.sigint").await?;

    Ok(())
}

async fn limits(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let (_, r, _) = start(&mut s, json!(["conformance-not-allowed"]), json!({})).await?;
    let refused = r.is_error() || (r.at("/ok") == &json!(false) && !r.s("/error").is_empty());
    cx.check(
        "proc.spawn.not-allowed",
        refused,
        "a refusal, or ok: false with an error",
        r.show(),
    );

    let (_, r, proc_id) = start(&mut s, json!(["sleep", "30"]), json!({"timeout": 1})).await?;
    if r.at("/ok") != &json!(true) {
        return Err(Abort(format!("`sleep 30` did not start: {}", r.show())));
    }
    let started = Instant::now();
    let events = until_end(&mut s, &proc_id, Duration::from_secs(8)).await?;
    let took = started.elapsed();
    cx.check(
        "proc.spawn.timeout",
        end_of(&events).is_some() && took <= Duration::from_secs(6),
        "a killed event within 6 s",
        format!("{} event(s) in {took:?}", events.len()),
    );
    let st = status(&mut s, &proc_id).await?;
    cx.check(
        "proc.spawn.timedout-state",
        st.s("/status") == "timedout",
        "status timedout",
        st.show(),
    );

    let cmd = json!(["sh", "-c", "printf '%s\\n' \"$1\"", "sh", "$CONF_LITERAL"]);
    let (_, _, proc_id) = start(&mut s, cmd, json!({})).await?;
    let events = until_end(&mut s, &proc_id, WAIT).await?;
    cx.check(
        "proc.spawn.no-shell",
        texts(&events, "stdout") == ["$CONF_LITERAL"],
        "stdout `$CONF_LITERAL`",
        format!("{:?}", texts(&events, "stdout")),
    );
    Ok(())
}

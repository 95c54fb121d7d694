//! The runner of sandboxed skills: the arguments go to the program's stdin as
//! one JSON document; the program answers on stdout with NDJSON — event lines,
//! then one final line (a result or an error). The format is described in the
//! crate README.

use std::ffi::OsStr;

use serde_json::{Map, Value};

use crate::error::SandboxError;
use crate::outcome::{Termination, classify};
use crate::policy::Policy;
use crate::run::{RunOptions, StdoutSink, Tail, drive};
use crate::sandbox::{Applied, Sandbox};

/// Longest event kind accepted.
const MAX_KIND_BYTES: usize = 128;

/// Bounds of one skill run, besides [`RunOptions`] (whose `stdin` is replaced
/// by the arguments and whose `stdout_max_bytes` is not used).
#[derive(Debug, Clone)]
pub struct SkillOptions {
    /// Timeout, cancellation and the stderr cap.
    pub run: RunOptions,
    /// Longest stdout line, in bytes (default 1 MiB).
    pub max_line_bytes: usize,
    /// Most event lines (default 10 000).
    pub max_events: u64,
}

impl Default for SkillOptions {
    fn default() -> Self {
        Self {
            run: RunOptions::default(),
            max_line_bytes: 1 << 20,
            max_events: 10_000,
        }
    }
}

/// One event line.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillEvent {
    /// The kind (`progress`, `artifact`, `log`, `status`, or another).
    pub kind: String,
    /// The payload (an empty object when absent).
    pub data: Value,
    /// Position among the run's events, from 0.
    pub seq: u64,
}

/// A successful skill run.
#[derive(Debug, Clone)]
pub struct SkillOutput {
    /// The final line's `result`.
    pub result: Value,
    /// The final line's `summary`, if any.
    pub summary: Option<Value>,
    /// Events passed to the callback.
    pub events: u64,
    /// The tail of stderr.
    pub stderr: Tail,
    /// The layers the run had.
    pub applied: Applied,
}

/// Why a skill run failed.
#[derive(Debug, thiserror::Error)]
pub enum SkillError {
    /// The sandbox could not run the program.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// The program broke the stdout protocol; its group was killed.
    #[error("the skill broke the output protocol: {message}")]
    Protocol {
        /// What was wrong.
        message: String,
        /// The tail of stderr.
        stderr: String,
    },
    /// The program reported an error on its final line.
    #[error("the skill failed: {message}")]
    Reported {
        /// The program's own code, if it gave one.
        code: Option<String>,
        /// Its message.
        message: String,
        /// The tail of stderr.
        stderr: String,
    },
    /// The run ended badly: timeout, out of memory, a crash, a non-zero exit,
    /// or an exit without a final line.
    #[error("the skill {termination}{}", if *.no_result { " without a result" } else { "" })]
    Terminated {
        /// How it ended.
        termination: Termination,
        /// Whether it ended without a final line.
        no_result: bool,
        /// The tail of stderr.
        stderr: String,
    },
}

impl SkillError {
    /// The A2E error code: `timeout`, `out_of_memory`, `sandbox_crash`,
    /// `runtime_error` (the sandbox could not start it), `cancelled`, or
    /// `skill_error` (protocol, reported error, non-zero exit, no result).
    pub fn code(&self) -> &'static str {
        match self {
            Self::Sandbox(_) => "runtime_error",
            Self::Protocol { .. } | Self::Reported { .. } => "skill_error",
            Self::Terminated { termination, .. } => {
                termination.error_code().unwrap_or("skill_error")
            }
        }
    }
}

/// The final line.
#[derive(Debug, Clone, PartialEq)]
enum Final {
    Result {
        result: Value,
        summary: Option<Value>,
    },
    Error {
        code: Option<String>,
        message: String,
    },
}

/// Splits stdout into lines and reads each as a protocol line.
struct LineSink<'a> {
    line: Vec<u8>,
    line_no: u64,
    max_line: usize,
    max_events: u64,
    events: u64,
    finished: Option<Final>,
    on_event: &'a mut (dyn FnMut(SkillEvent) + Send),
}

impl LineSink<'_> {
    fn take_line(&mut self) -> Result<(), String> {
        self.line_no = self.line_no.saturating_add(1);
        let line = std::mem::take(&mut self.line);
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let n = self.line_no;
        if self.finished.is_some() {
            return Err(format!("line {n}: output after the final line"));
        }
        let value: Value =
            serde_json::from_slice(line).map_err(|e| format!("line {n}: not JSON: {e}"))?;
        let Value::Object(mut obj) = value else {
            return Err(format!("line {n}: not a JSON object"));
        };
        let keys = ["event", "result", "error"]
            .iter()
            .filter(|k| obj.contains_key(**k))
            .count();
        if keys != 1 {
            return Err(format!(
                "line {n}: expected exactly one of `event`, `result`, `error`"
            ));
        }
        if let Some(kind) = obj.remove("event") {
            return self.event(n, kind, obj);
        }
        if let Some(result) = obj.remove("result") {
            self.finished = Some(Final::Result {
                result,
                summary: obj.remove("summary"),
            });
            return Ok(());
        }
        let error = obj.remove("error").unwrap_or(Value::Null);
        self.finished = Some(parse_error(n, error)?);
        Ok(())
    }

    fn event(&mut self, n: u64, kind: Value, mut obj: Map<String, Value>) -> Result<(), String> {
        let Value::String(kind) = kind else {
            return Err(format!(
                "line {n}: `event` must be a string (the event kind)"
            ));
        };
        if kind.is_empty() || kind.len() > MAX_KIND_BYTES {
            return Err(format!(
                "line {n}: the event kind must have 1 to {MAX_KIND_BYTES} bytes"
            ));
        }
        if self.events >= self.max_events {
            return Err(format!("more than {} events", self.max_events));
        }
        let data = obj
            .remove("data")
            .unwrap_or_else(|| Value::Object(Map::new()));
        (self.on_event)(SkillEvent {
            kind,
            data,
            seq: self.events,
        });
        self.events += 1;
        Ok(())
    }
}

fn parse_error(n: u64, error: Value) -> Result<Final, String> {
    match error {
        Value::String(message) => Ok(Final::Error {
            code: None,
            message,
        }),
        Value::Object(mut e) => {
            let message = match e.remove("message") {
                Some(Value::String(m)) => m,
                Some(_) => return Err(format!("line {n}: `error.message` must be a string")),
                None => String::new(),
            };
            let code = match e.remove("code") {
                Some(Value::String(c)) => Some(c),
                None | Some(Value::Null) => None,
                Some(_) => return Err(format!("line {n}: `error.code` must be a string")),
            };
            Ok(Final::Error { code, message })
        }
        _ => Err(format!(
            "line {n}: `error` must be a string or an object with `message` and `code`"
        )),
    }
}

impl StdoutSink for LineSink<'_> {
    fn feed(&mut self, mut chunk: &[u8]) -> Result<(), String> {
        while !chunk.is_empty() {
            let (part, rest, complete) = match chunk.iter().position(|b| *b == b'\n') {
                Some(i) => (
                    chunk.get(..i).unwrap_or_default(),
                    chunk.get(i + 1..).unwrap_or_default(),
                    true,
                ),
                None => (chunk, &[][..], false),
            };
            if self.line.len().saturating_add(part.len()) > self.max_line {
                return Err(format!(
                    "line {}: longer than {} bytes",
                    self.line_no.saturating_add(1),
                    self.max_line
                ));
            }
            self.line.extend_from_slice(part);
            if complete {
                self.take_line()?;
            }
            chunk = rest;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), String> {
        if self.line.is_empty() {
            Ok(())
        } else {
            self.take_line()
        }
    }
}

/// Runs a sandboxed skill: `program` with `args` under `policy`, `input` on
/// its stdin, each event line handed to `on_event` as it arrives (keep it
/// quick: send it on a channel), and the final line's result returned.
pub async fn run_skill(
    sandbox: &Sandbox,
    policy: &Policy,
    program: impl AsRef<OsStr>,
    args: impl IntoIterator<Item = impl AsRef<OsStr>>,
    input: &Value,
    opts: &SkillOptions,
    mut on_event: impl FnMut(SkillEvent) + Send,
) -> Result<SkillOutput, SkillError> {
    let mut run = opts.run.clone();
    let mut stdin = serde_json::to_vec(input)
        .map_err(|e| SandboxError::Policy(format!("the arguments cannot be encoded: {e}")))?;
    stdin.push(b'\n');
    run.stdin = Some(stdin);
    let applied = sandbox.applied(policy);
    let child = sandbox.spawn(policy, program, args, true)?;
    let mut sink = LineSink {
        line: Vec::new(),
        line_no: 0,
        max_line: opts.max_line_bytes,
        max_events: opts.max_events,
        events: 0,
        finished: None,
        on_event: &mut on_event,
    };
    let driven = drive(child, &run, &mut sink).await?;
    let events = sink.events;
    let finished = sink.finished.take();
    let stderr_text = driven.stderr.text();
    let termination = classify(
        driven.status,
        driven.ending,
        &driven.stderr.bytes,
        &policy.limits,
    );
    if let Some(message) = driven.stopped
        && !matches!(termination, Termination::TimedOut | Termination::Cancelled)
    {
        return Err(SkillError::Protocol {
            message,
            stderr: stderr_text,
        });
    }
    match (termination, finished) {
        (Termination::Exited(0), Some(Final::Result { result, summary })) => Ok(SkillOutput {
            result,
            summary,
            events,
            stderr: driven.stderr,
            applied,
        }),
        (Termination::Exited(_), Some(Final::Error { code, message })) => {
            Err(SkillError::Reported {
                code,
                message,
                stderr: stderr_text,
            })
        }
        (termination, finished) => Err(SkillError::Terminated {
            no_result: finished.is_none(),
            termination,
            stderr: stderr_text,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink_run(
        input: &[&[u8]],
        max_line: usize,
        max_events: u64,
    ) -> (Result<(), String>, Vec<SkillEvent>, Option<Final>) {
        let mut seen = Vec::new();
        let mut on_event = |e: SkillEvent| seen.push(e);
        let mut sink = LineSink {
            line: Vec::new(),
            line_no: 0,
            max_line,
            max_events,
            events: 0,
            finished: None,
            on_event: &mut on_event,
        };
        let mut result = Ok(());
        for chunk in input {
            result = sink.feed(chunk);
            if result.is_err() {
                break;
            }
        }
        if result.is_ok() {
            result = sink.finish();
        }
        let finished = sink.finished.take();
        (result, seen, finished)
    }

    #[test]
    fn events_then_result_across_chunk_boundaries() {
        let (r, events, fin) = sink_run(
            &[
                b"{\"event\":\"progress\",\"data\":{\"pct\":30}}\r\n\n{\"eve",
                b"nt\":\"log\"}\n{\"result\":{\"ok\":true},\"summary\":\"done\"}",
            ],
            1024,
            10,
        );
        r.unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].kind, "progress");
        assert_eq!(events[0].data["pct"], 30);
        assert_eq!(events[1].seq, 1);
        assert_eq!(events[1].data, serde_json::json!({}));
        assert_eq!(
            fin,
            Some(Final::Result {
                result: serde_json::json!({"ok": true}),
                summary: Some(serde_json::json!("done"))
            })
        );
    }

    #[test]
    fn errors_in_both_shapes() {
        let (_, _, fin) = sink_run(&[b"{\"error\":\"bad input\"}\n"], 1024, 10);
        assert_eq!(
            fin,
            Some(Final::Error {
                code: None,
                message: "bad input".into()
            })
        );
        let (_, _, fin) = sink_run(
            &[b"{\"error\":{\"code\":\"E1\",\"message\":\"m\"}}\n"],
            1024,
            10,
        );
        assert_eq!(
            fin,
            Some(Final::Error {
                code: Some("E1".into()),
                message: "m".into()
            })
        );
    }

    #[test]
    fn violations_are_named() {
        let cases: [(&[u8], &str); 8] = [
            (b"hello\n", "line 1: not JSON"),
            (b"[1]\n", "line 1: not a JSON object"),
            (b"{}\n", "exactly one of"),
            (b"{\"event\":\"a\",\"result\":1}\n", "exactly one of"),
            (b"{\"event\":3}\n", "must be a string"),
            (b"{\"event\":\"\"}\n", "1 to 128 bytes"),
            (
                b"{\"result\":1}\n{\"event\":\"x\"}\n",
                "line 2: output after the final line",
            ),
            (b"{\"error\":[1]}\n", "`error` must be"),
        ];
        for (input, want) in cases {
            let (r, _, _) = sink_run(&[input], 1024, 10);
            let err = r.unwrap_err();
            assert!(err.contains(want), "{input:?}: {err}");
        }
    }

    #[test]
    fn bounds_hold() {
        let long = [b'x'; 100];
        let (r, _, _) = sink_run(&[&long[..60], &long[60..]], 64, 10);
        assert!(r.unwrap_err().contains("longer than 64 bytes"));
        let (r, events, _) = sink_run(
            &[b"{\"event\":\"a\"}\n{\"event\":\"a\"}\n{\"event\":\"a\"}\n"],
            64,
            2,
        );
        assert!(r.unwrap_err().contains("more than 2 events"));
        assert_eq!(events.len(), 2);
        // Deeply nested JSON is refused by the parser's depth limit, not a crash.
        let deep = format!(
            "{{\"result\":{}{}}}\n",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let (r, _, _) = sink_run(&[deep.as_bytes()], 1 << 20, 2);
        assert!(r.unwrap_err().contains("not JSON"));
    }
}

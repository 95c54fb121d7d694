//! The proc capability (`proc/*`, a2e-core.md §5): spawn, write, read, kill, status.

use serde_json::{Map, Value};

use crate::event::EventKind;

open_enum! {
    /// Which stream a `proc/read/event` carries.
    pub struct StreamType {
        /// Standard output; `data.text`.
        STDOUT = "stdout",
        /// Standard error; `data.text`.
        STDERR = "stderr",
        /// The process ended; `data.code`.
        KILLED = "killed",
    }
}

open_enum! {
    /// State of a process.
    pub struct ProcState {
        /// Still running.
        RUNNING = "running",
        /// Exited or was stopped.
        STOPPED = "stopped",
        /// Exited with a failure or by a signal it did not ask for.
        CRASHED = "crashed",
        /// Killed at its timeout.
        TIMEDOUT = "timedout",
    }
}

wire_message! {
    /// `proc/spawn/req` — start a process (no shell; `cmd[0]` must be allowed).
    pub struct ProcSpawnRequest = "proc/spawn/req" {
        /// Session from the handshake.
        #[serde(default)]
        pub session_id: String = String::new(),
        /// argv.
        pub cmd: Vec<String> = Vec::new(),
        /// Working directory (empty: the host's root).
        #[serde(default)]
        pub cwd: String = String::new(),
        /// Extra environment variables.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::string_map()"))]
        pub env: Map<String, Value> = Map::new(),
        /// `pipe` or `null`.
        #[serde(default = "default_stdin_mode")]
        pub stdin_mode: String = default_stdin_mode(),
        /// Seconds before the process is killed (0 = no limit).
        #[serde(default)]
        #[serde(deserialize_with = "crate::num::int")]
        pub timeout: u64 = 0,
    }
}

fn default_stdin_mode() -> String {
    "pipe".into()
}

wire_message! {
    /// `proc/spawn/resp` — the process id, or why it did not start.
    pub struct ProcSpawnResponse = "proc/spawn/resp" {
        /// The request's id.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// Host-side process handle.
        #[serde(default)]
        pub proc_id: String = String::new(),
        /// Whether it started.
        #[serde(default)]
        pub ok: bool = false,
        /// OS process id.
        #[serde(default)]
        #[serde(deserialize_with = "crate::num::int")]
        pub pid: u32 = 0,
        /// Why not.
        #[serde(default)]
        pub error: String = String::new(),
    }
}

wire_message! {
    /// `proc/write/req` — write to a process's stdin.
    pub struct ProcWriteRequest = "proc/write/req" {
        /// Which process.
        #[serde(default)]
        pub proc_id: String = String::new(),
        /// UTF-8 text to write.
        #[serde(default)]
        pub data: String = String::new(),
        /// Close stdin afterwards.
        #[serde(default)]
        pub eof: bool = false,
    }
}

wire_message! {
    /// `proc/write/resp` — whether the write went through.
    pub struct ProcWriteResponse = "proc/write/resp" {
        /// The request's id.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// Which process.
        #[serde(default)]
        pub proc_id: String = String::new(),
        /// Whether it worked.
        #[serde(default)]
        pub ok: bool = false,
        /// OS process id.
        #[serde(default)]
        #[serde(deserialize_with = "crate::num::int")]
        pub pid: u32 = 0,
        /// Why not.
        #[serde(default)]
        pub error: String = String::new(),
    }
}

wire_message! {
    /// `proc/read/event` — output of a process, or its end.
    pub struct ProcReadEvent = "proc/read/event" {
        /// Event kind.
        #[serde(default)]
        pub kind: EventKind = EventKind::STATUS,
        /// The spawn request's id.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// `{text}` for output, `{code}` at exit.
        #[serde(default)]
        #[cfg_attr(feature = "arbitrary", proptest(strategy = "crate::arb::object()"))]
        pub data: Map<String, Value> = Map::new(),
        /// 0, 1, 2, … per process.
        #[serde(default)]
        #[serde(deserialize_with = "crate::num::int")]
        pub seq: u64 = 0,
        /// Which process.
        #[serde(default)]
        pub proc_id: String = String::new(),
        /// `stdout`, `stderr` or `killed`.
        #[serde(default = "default_stream_type")]
        pub stream_type: StreamType = StreamType::STDOUT,
    }
}

fn default_stream_type() -> StreamType {
    StreamType::STDOUT
}

wire_message! {
    /// `proc/kill/req` — signal a process (its whole process group).
    pub struct ProcKillRequest = "proc/kill/req" {
        /// Which process.
        #[serde(default)]
        pub proc_id: String = String::new(),
        /// `SIGTERM`, `SIGKILL` or `SIGINT`.
        #[serde(default = "default_signal")]
        pub signal: String = default_signal(),
    }
}

fn default_signal() -> String {
    "SIGTERM".into()
}

wire_message! {
    /// `proc/kill/resp` — whether the signal was sent, and the state after.
    pub struct ProcKillResponse = "proc/kill/resp" {
        /// The request's id.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// Whether it worked.
        #[serde(default)]
        pub ok: bool = false,
        /// The process state.
        #[serde(default)]
        pub state: String = String::new(),
    }
}

wire_message! {
    /// `proc/status/req` — state of one process, or of all of the session's.
    pub struct ProcStatusRequest = "proc/status/req" {
        /// Which process (empty: all of the session's).
        #[serde(default)]
        pub proc_id: String = String::new(),
    }
}

wire_message! {
    /// `proc/status/resp` — the state.
    pub struct ProcStatusResponse = "proc/status/resp" {
        /// The request's id.
        #[serde(default)]
        pub req_id: String = String::new(),
        /// Which process.
        #[serde(default)]
        pub proc_id: String = String::new(),
        /// The state (for all processes: a JSON object of id → state, as a string).
        #[serde(default)]
        pub status: String = String::new(),
        /// Why not, when the process is unknown.
        #[serde(default)]
        pub error: String = String::new(),
    }
}

impl_request!(
    ProcSpawnRequest,
    ProcWriteRequest,
    ProcKillRequest,
    ProcStatusRequest
);
impl_response!(
    ProcSpawnResponse,
    ProcWriteResponse,
    ProcReadEvent,
    ProcKillResponse,
    ProcStatusResponse
);

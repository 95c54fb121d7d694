//! The one raw NDJSON client every peer is measured with: pre-built request
//! lines (each with its newline, so one write sends it) written to the
//! child's stdin, answers read line by line in place from its stdout
//! ([`LineReader`]), on plain threads.

use std::io::{BufWriter, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use a2e_bench::stats::Calls;
use memchr::memmem::Finder;

use crate::lines::LineReader;

type Error = Box<dyn std::error::Error>;

/// Which child answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerKind {
    /// The a2e host.
    A2e,
    /// The raw pipe echo.
    Raw,
    /// The rmcp stdio server.
    Rmcp,
}

impl PeerKind {
    /// The name printed and passed to `--serve`.
    pub fn name(self) -> &'static str {
        match self {
            Self::A2e => "a2e",
            Self::Raw => "raw",
            Self::Rmcp => "rmcp",
        }
    }

    /// The request line of call `i` (with its newline) and a token its
    /// answer contains.
    fn call(self, i: usize) -> (String, String) {
        let (mut line, token) = match self {
            Self::A2e | Self::Raw => (
                format!(
                    r#"{{"type":"tool/call/req","id":"c{i}","version":"1.0","ts":1716123457.1,"tool_name":"echo","arguments":{{"i":{i}}},"streaming":false,"timeout":30}}"#
                ),
                format!(r#""c{i}""#),
            ),
            Self::Rmcp => (
                format!(
                    r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"i":{i}}}}}}}"#
                ),
                format!(r#""id":{i}"#),
            ),
        };
        line.push('\n');
        (line, token)
    }
}

/// A child of this program and the client's ends of its pipes.
pub struct Peer {
    /// What the child is.
    pub kind: PeerKind,
    child: Child,
    tx: BufWriter<ChildStdin>,
    rx: LineReader<ChildStdout>,
    /// Finds the `chain/resp` among a chain's lines.
    chain_resp: Finder<'static>,
}

/// The client's read buffer: the largest the host's output pipe grows to,
/// so that a chain's events in the pipe are taken in one read.
const READ_BUFFER: usize = 1 << 20;

impl Peer {
    /// Spawns `--serve <kind>` and opens its session.
    pub fn spawn(kind: PeerKind) -> Result<Self, Error> {
        let mut child = Command::new(std::env::current_exe()?)
            .args(["--serve", kind.name()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let tx = BufWriter::with_capacity(1 << 16, child.stdin.take().ok_or("stdin")?);
        let rx = LineReader::new(child.stdout.take().ok_or("stdout")?, READ_BUFFER);
        let mut peer = Self {
            kind,
            child,
            tx,
            rx,
            chain_resp: Finder::new(br#""type":"chain/resp""#),
        };
        match kind {
            PeerKind::A2e | PeerKind::Raw => {
                peer.send(concat!(r#"{"type":"handshake/req","id":"h","version":"1.0","ts":1716123450.1,"agent_id":"bench","agent_caps":["tools","chains"],"auth_token":""}"#, "\n"))?;
                peer.expect(r#""req_id":"h""#)?;
            }
            PeerKind::Rmcp => {
                peer.send(concat!(r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#, "\n"))?;
                peer.expect("protocolVersion")?;
                peer.send(concat!(
                    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                    "\n"
                ))?;
            }
        }
        Ok(peer)
    }

    /// Sends `line`, which ends with its newline: one write, however long.
    fn send(&mut self, line: &str) -> Result<(), Error> {
        debug_assert!(line.ends_with('\n'));
        self.tx.write_all(line.as_bytes())?;
        self.tx.flush()?;
        Ok(())
    }

    /// The next line; fails at the end of the output.
    fn next_line(&mut self) -> Result<&[u8], Error> {
        let kind = self.kind.name();
        self.rx
            .next_line()?
            .ok_or_else(|| format!("{kind}: output ended").into())
    }

    /// Reads one line; fails unless it contains `token`.
    fn expect(&mut self, token: &str) -> Result<(), Error> {
        let kind = self.kind.name();
        let line = self.next_line()?;
        if memchr::memmem::find(line, token.as_bytes()).is_none() {
            let line = String::from_utf8_lossy(line);
            return Err(format!("{kind}: expected {token}, got {line}").into());
        }
        Ok(())
    }

    /// `n` sequential calls, not measured.
    pub fn warm_up(&mut self, n: usize) -> Result<(), Error> {
        self.sequential(n).map(|_| ())
    }

    /// `n` calls, each sent when the one before was answered.
    pub fn sequential(&mut self, n: usize) -> Result<Calls, Error> {
        let lines: Vec<(String, String)> = (0..n).map(|i| self.kind.call(i)).collect();
        let mut lat = Vec::with_capacity(n);
        let started = Instant::now();
        for (line, token) in &lines {
            let t = Instant::now();
            self.send(line)?;
            self.expect(token)?;
            lat.push(t.elapsed());
        }
        Ok(Calls::of(started.elapsed(), lat))
    }

    /// `n` calls with `window` in flight: a writer thread keeps the window
    /// full, this thread reads the answers.
    pub fn in_flight(&mut self, n: usize, window: usize) -> Result<Calls, Error> {
        let lines: Vec<(String, String)> = (0..n).map(|i| self.kind.call(i)).collect();
        let received = AtomicUsize::new(0);
        // When each call was sent, in nanoseconds since `epoch`.
        let sent_at: Vec<AtomicU64> = (0..n).map(|_| AtomicU64::new(0)).collect();
        let epoch = Instant::now();
        let since_epoch = || u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let mut lat = Vec::with_capacity(n);
        let tx = &mut self.tx;
        let rx = &mut self.rx;
        let kind = self.kind;
        std::thread::scope(|scope| -> Result<(), Error> {
            let (received, sent_at, lines) = (&received, &sent_at, &lines);
            let writer = scope.spawn(move || -> std::io::Result<()> {
                for (i, (line, _)) in lines.iter().enumerate() {
                    while i - received.load(Ordering::Acquire) >= window {
                        tx.flush()?;
                        std::thread::park_timeout(Duration::from_millis(1));
                    }
                    sent_at[i].store(since_epoch(), Ordering::Release);
                    tx.write_all(line.as_bytes())?;
                    if i + 1 - received.load(Ordering::Acquire) >= window {
                        tx.flush()?;
                    }
                }
                tx.flush()
            });
            for _ in 0..n {
                let Some(line) = rx.next_line()? else {
                    return Err(format!("{}: output ended", kind.name()).into());
                };
                let id = answered_index(kind, line).ok_or_else(|| {
                    let line = String::from_utf8_lossy(line);
                    format!("{}: unexpected answer {line}", kind.name())
                })?;
                let sent = sent_at
                    .get(id)
                    .ok_or("answer to an unknown call")?
                    .load(Ordering::Acquire);
                lat.push(Duration::from_nanos(since_epoch().saturating_sub(sent)));
                received.fetch_add(1, Ordering::AcqRel);
                writer.thread().unpark();
            }
            writer.join().map_err(|_| "writer panicked")??;
            Ok(())
        })?;
        Ok(Calls::of(epoch.elapsed(), lat))
    }

    /// Sends a chain (a line with its newline) and waits for its
    /// `chain/resp`; the time and how many lines came before it (the
    /// events).
    pub fn chain(&mut self, line: &str) -> Result<(Duration, usize), Error> {
        let started = Instant::now();
        self.send(line)?;
        let mut events = 0;
        loop {
            let Some(line) = self.rx.next_line()? else {
                return Err("a2e: output ended during a chain".into());
            };
            if self.chain_resp.find(line).is_some() {
                let elapsed = started.elapsed();
                if memchr::memmem::find(line, br#""success":true"#).is_none() {
                    let line = String::from_utf8_lossy(line);
                    return Err(format!("chain failed: {line}").into());
                }
                return Ok((elapsed, events));
            }
            events += 1;
        }
    }

    /// The child's peak resident set (VmHWM), in kB.
    pub fn peak_rss_kb(&self) -> u64 {
        a2e_bench::process::peak_rss_kb_of(self.child.id())
    }

    /// Closes the child's input and waits for it.
    pub fn close(self) {
        let Self { mut child, tx, .. } = self;
        drop(tx);
        let _ = child.wait();
    }
}

/// The call index an answer is for.
fn answered_index(kind: PeerKind, line: &[u8]) -> Option<usize> {
    let key: &[u8] = match kind {
        PeerKind::A2e | PeerKind::Raw => br#""req_id":"c"#,
        PeerKind::Rmcp => br#""id":"#,
    };
    let at = memchr::memmem::find(line, key)? + key.len();
    let digits = line.get(at..)?;
    let len = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(digits.get(..len)?).ok()?.parse().ok()
}

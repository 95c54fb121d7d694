//! Links: one connection to a peer, as text messages in and out, whatever the
//! transport. The suite's side of a host under test ([`stdio`], [`ws`],
//! [`http`]) and the scripted host's side of a client under test
//! ([`serve`]) are both links.
//!
//! A link's tasks (and a child's whole process group) end when it is dropped.

pub mod http;
pub mod serve;
pub mod stdio;
pub mod ws;

use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Longest message read from a peer, in bytes; a longer line or frame is
/// reported as garbage and skipped.
pub const MAX_MESSAGE_BYTES: usize = 32 * 1024 * 1024;

/// Messages queued from a peer before the reader waits for the suite.
const INBOX: usize = 4096;

/// What a link hands the suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// One message: a line, a text frame, an SSE event's data.
    Text(String),
    /// Something that is no message (not UTF-8, over the size limit), described.
    Garbage(String),
    /// The peer closed the connection (or it failed), and why.
    Closed(String),
}

/// One connection to a peer.
pub struct Link {
    out: Option<mpsc::Sender<String>>,
    inbox: mpsc::Receiver<Incoming>,
    closed: Option<String>,
    tasks: Vec<JoinHandle<()>>,
    child: Option<stdio::Child>,
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("closed", &self.closed)
            .finish_non_exhaustive()
    }
}

/// The two ends a transport's tasks use.
pub(crate) struct Ends {
    /// Messages to write to the peer.
    pub(crate) out: mpsc::Receiver<String>,
    /// Where messages from the peer go.
    pub(crate) inbox: mpsc::Sender<Incoming>,
}

impl Link {
    /// A link and the ends its transport's tasks serve.
    pub(crate) fn pair() -> (Self, Ends) {
        let (out_tx, out_rx) = mpsc::channel(INBOX);
        let (in_tx, in_rx) = mpsc::channel(INBOX);
        (
            Self {
                out: Some(out_tx),
                inbox: in_rx,
                closed: None,
                tasks: Vec::new(),
                child: None,
            },
            Ends {
                out: out_rx,
                inbox: in_tx,
            },
        )
    }

    /// Keeps `task` running as long as the link lives.
    pub(crate) fn hold(&mut self, task: JoinHandle<()>) {
        self.tasks.push(task);
    }

    /// Owns a child process (killed with its group when the link is dropped).
    pub(crate) fn own_child(&mut self, child: stdio::Child) {
        self.child = Some(child);
    }

    /// Sends one message.
    pub async fn send(&mut self, text: String) -> Result<(), String> {
        let Some(out) = &self.out else {
            return Err("the link was closed by the suite".into());
        };
        out.send(text).await.map_err(|_| {
            self.closed
                .clone()
                .unwrap_or_else(|| "the peer is gone".into())
        })
    }

    /// The next thing from the peer within `within`; `None` on timeout. After
    /// the peer closed, every call gives `Closed` again.
    pub async fn recv(&mut self, within: Duration) -> Option<Incoming> {
        if let Some(why) = &self.closed {
            return Some(Incoming::Closed(why.clone()));
        }
        match tokio::time::timeout(within, self.inbox.recv()).await {
            Err(_) => None,
            Ok(Some(Incoming::Closed(why))) => {
                self.closed = Some(why.clone());
                Some(Incoming::Closed(why))
            }
            Ok(Some(other)) => Some(other),
            Ok(None) => {
                let why = "the connection ended".to_owned();
                self.closed = Some(why.clone());
                Some(Incoming::Closed(why))
            }
        }
    }

    /// Closes the suite's side (end of input, a close frame, `DELETE /session`).
    pub fn close(&mut self) {
        self.out = None;
    }

    /// Whether the peer has closed (as far as read).
    pub fn is_closed(&self) -> bool {
        self.closed.is_some()
    }

    /// For a child process: waits up to `within` for it to exit; whether it did.
    pub async fn wait_exit(&mut self, within: Duration) -> Option<bool> {
        let child = self.child.as_mut()?;
        Some(child.wait(within).await)
    }

    /// The child's process id, for a stdio link.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(stdio::Child::pid)
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Delivers `item` unless the suite stopped listening; false when it did.
pub(crate) async fn deliver(inbox: &mpsc::Sender<Incoming>, item: Incoming) -> bool {
    inbox.send(item).await.is_ok()
}

/// `bytes` as a message: text when UTF-8, else garbage naming the problem.
pub(crate) fn text_of(bytes: Vec<u8>) -> Incoming {
    match String::from_utf8(bytes) {
        Ok(text) => Incoming::Text(text),
        Err(e) => Incoming::Garbage(format!(
            "a message that is not UTF-8 ({}): {}",
            e.utf8_error(),
            String::from_utf8_lossy(e.as_bytes())
        )),
    }
}

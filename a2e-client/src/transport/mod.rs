//! Transports: how a client reaches a host. Each one spawns a reader that hands
//! incoming messages to the connection core and a writer that drains the
//! outgoing queue; when either ends, every pending request fails.

pub(crate) mod http;
pub(crate) mod io;
pub(crate) mod stdio;
pub(crate) mod ws;

use tokio::task::JoinHandle;

use crate::conn::Shared;
use crate::error::ClientError;

/// What keeps a transport alive; dropping it stops the tasks and kills a child host.
#[derive(Default)]
pub(crate) struct Guard {
    pub(crate) tasks: Vec<JoinHandle<()>>,
    pub(crate) child: Option<tokio::process::Child>,
}

impl Guard {
    pub(crate) fn abort(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Aborting the writer closes a child host's stdin: it ends its session
        // (killing the session's processes) and exits; it is killed if it does not.
        self.abort();
        if let Some(mut child) = self.child.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => {
                    runtime.spawn(stdio::stop_child(child));
                }
                Err(_) => {
                    let _ = child.start_kill();
                }
            }
        }
    }
}

/// Decodes one message from the peer and hands it on.
///
/// A message that does not decode (a result of the wrong shape) fails the
/// request its `req_id` names at once, and a line that is not JSON at all
/// fails every request still waiting (which one it meant cannot be told):
/// a peer that broke the protocol gets no request stuck until its timeout.
/// Either is logged naming the peer; the connection goes on.
pub(crate) fn receive(shared: &Shared, bytes: &[u8], max: usize) {
    let options = a2e_proto::DecodeOptions {
        max_bytes: max,
        ..a2e_proto::DecodeOptions::default()
    };
    let e = match a2e_proto::decode_with(bytes, &options) {
        Ok(msg) => return shared.deliver(msg),
        Err(e) => e,
    };
    let peer = shared.peer();
    match serde_json::from_slice::<serde_json::Value>(bytes) {
        Ok(value) => {
            let kind = value
                .get("type")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("message");
            tracing::warn!(code = %e.code(), "{peer} sent a `{kind}` that does not decode: {e}");
            if let Some(req_id) = value
                .get("req_id")
                .and_then(serde_json::Value::as_str)
                .filter(|id| !id.is_empty())
            {
                shared.reject(
                    req_id,
                    ClientError::Malformed(format!(
                        "{peer} answered with a `{kind}` that does not decode: {e}"
                    )),
                );
            }
        }
        Err(_) => {
            let line = excerpt(bytes);
            tracing::warn!("{peer} wrote a line that is not JSON: {line}");
            shared.reject_waiting(&ClientError::Malformed(format!(
                "{peer} wrote a line that is not an A2E message: `{line}`"
            )));
        }
    }
}

/// The start of a line, for a message: at most 80 characters, lossy UTF-8.
fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end();
    match text.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or(text)),
        None => text.to_owned(),
    }
}

//! Transports: how a client reaches a host. Each one spawns a reader that hands
//! incoming messages to the connection core and a writer that drains the
//! outgoing queue; when either ends, every pending request fails.

pub(crate) mod http;
pub(crate) mod io;
pub(crate) mod stdio;
pub(crate) mod ws;

use tokio::task::JoinHandle;

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

/// Decodes one message from the host; bad input is logged and skipped.
pub(crate) fn decode(bytes: &[u8], max: usize) -> Option<a2e_proto::Message> {
    let options = a2e_proto::DecodeOptions {
        max_bytes: max,
        ..a2e_proto::DecodeOptions::default()
    };
    match a2e_proto::decode_with(bytes, &options) {
        Ok(msg) => Some(msg),
        Err(e) => {
            tracing::warn!(code = %e.code(), "undecodable message from the host: {e}");
            None
        }
    }
}

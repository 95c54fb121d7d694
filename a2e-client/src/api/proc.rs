//! `proc/*`: processes on the host, their output as a stream.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use a2e_proto::{
    Message, ProcKillRequest, ProcKillResponse, ProcReadEvent, ProcSpawnRequest, ProcState,
    ProcStatusRequest, ProcStatusResponse, ProcWriteRequest, ProcWriteResponse, StreamType,
};
use futures::{Stream, StreamExt};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::client::{Client, unexpected};
use crate::conn::Shared;
use crate::error::{ClientError, ClientResult};

/// The proc capability of a [`Client`].
#[derive(Debug, Clone, Copy)]
pub struct ProcApi<'a> {
    client: &'a Client,
}

impl<'a> ProcApi<'a> {
    pub(crate) fn new(client: &'a Client) -> Self {
        Self { client }
    }

    /// Starts `cmd` (argv; no shell; `cmd[0]` must be allowed on the host).
    pub async fn spawn<S: Into<String>>(
        &self,
        cmd: impl IntoIterator<Item = S>,
    ) -> ClientResult<Process> {
        self.spawn_with(ProcSpawnRequest {
            cmd: cmd.into_iter().map(Into::into).collect(),
            ..ProcSpawnRequest::default()
        })
        .await
    }

    /// Starts a process as described (cwd, env, stdin mode, timeout). Its
    /// output arrives on the returned [`Process`].
    pub async fn spawn_with(&self, mut req: ProcSpawnRequest) -> ClientResult<Process> {
        req.session_id = self.client.session_id().to_owned();
        let limit = self.client.request_timeout();
        let call = self
            .client
            .start_route::<ProcReadEvent, Message>(req.into(), true, true, limit, Ok)
            .await?;
        let (req_id, events, answer, mut deadline, limit) = call.into_parts();
        let shared = self.client.inner.shared.clone();
        // From here the route lives as long as the `Process` (or until the exit event).
        let route = RouteGuard {
            shared: shared.clone(),
            id: req_id.clone(),
        };
        let answer = tokio::select! {
            biased;
            answer = answer => answer,
            () = &mut deadline => return Err(ClientError::Timeout(limit)),
        };
        let resp = match answer {
            Ok(Ok(Message::ProcSpawnResponse(resp))) => resp,
            Ok(Ok(Message::ErrorMessage(e))) => return Err(ClientError::from_wire(e)),
            Ok(Ok(other)) => return Err(unexpected("proc/spawn/resp", &other)),
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(ClientError::ConnectionClosed(
                    shared
                        .closed_reason()
                        .unwrap_or_else(|| "the request was dropped".into()),
                ));
            }
        };
        if !resp.ok {
            return Err(ClientError::Failed {
                what: "proc/spawn",
                message: resp.error,
            });
        }
        Ok(Process {
            client: self.client.clone(),
            proc_id: resp.proc_id,
            pid: resp.pid,
            events,
            exit: None,
            _route: route,
        })
    }

    /// Writes `data` to a process's stdin; closes it afterwards when `eof`.
    pub async fn write(
        &self,
        proc_id: &str,
        data: &str,
        eof: bool,
    ) -> ClientResult<ProcWriteResponse> {
        let req = ProcWriteRequest {
            proc_id: proc_id.to_owned(),
            data: data.to_owned(),
            eof,
            ..ProcWriteRequest::default()
        };
        match self.client.request(req.into()).await? {
            Message::ProcWriteResponse(resp) if resp.ok => Ok(resp),
            Message::ProcWriteResponse(resp) => Err(ClientError::Failed {
                what: "proc/write",
                message: resp.error,
            }),
            other => Err(unexpected("proc/write/resp", &other)),
        }
    }

    /// Sends `signal` (`SIGTERM`, `SIGKILL`, `SIGINT`) to a process's group.
    /// `ok` is false when it had already ended.
    pub async fn kill(&self, proc_id: &str, signal: &str) -> ClientResult<ProcKillResponse> {
        let req = ProcKillRequest {
            proc_id: proc_id.to_owned(),
            signal: signal.to_owned(),
            ..ProcKillRequest::default()
        };
        match self.client.request(req.into()).await? {
            Message::ProcKillResponse(resp) => Ok(resp),
            other => Err(unexpected("proc/kill/resp", &other)),
        }
    }

    /// The state of one process.
    pub async fn status(&self, proc_id: &str) -> ClientResult<ProcState> {
        let resp = self.status_raw(proc_id).await?;
        Ok(ProcState::new(resp.status))
    }

    /// The state of every process of this session, by id.
    pub async fn status_all(&self) -> ClientResult<Vec<(String, ProcState)>> {
        let resp = self.status_raw("").await?;
        let map: serde_json::Map<String, Value> =
            serde_json::from_str(&resp.status).map_err(|e| ClientError::Failed {
                what: "proc/status",
                message: format!("the status is not a JSON object: {e}"),
            })?;
        Ok(map
            .into_iter()
            .map(|(id, state)| (id, ProcState::new(state.as_str().unwrap_or_default())))
            .collect())
    }

    async fn status_raw(&self, proc_id: &str) -> ClientResult<ProcStatusResponse> {
        let req = ProcStatusRequest {
            proc_id: proc_id.to_owned(),
            ..ProcStatusRequest::default()
        };
        match self.client.request(req.into()).await? {
            Message::ProcStatusResponse(resp) if resp.error.is_empty() => Ok(resp),
            Message::ProcStatusResponse(resp) => Err(ClientError::Failed {
                what: "proc/status",
                message: resp.error,
            }),
            other => Err(unexpected("proc/status/resp", &other)),
        }
    }
}

/// Forgets a process's route when its handle goes.
struct RouteGuard {
    shared: Arc<Shared>,
    id: String,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.shared.unregister(&self.id);
    }
}

/// How a process ended, with the output it wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcExit {
    /// Exit code (`None` when a signal ended it).
    pub code: Option<i64>,
    /// Final state (`stopped`, `crashed`, `timedout`).
    pub state: String,
    /// Standard output lines not yet read from the stream, joined with `\n`.
    pub stdout: String,
    /// Standard error lines not yet read from the stream, joined with `\n`.
    pub stderr: String,
}

/// A process running on the host. It is a [`Stream`] of its
/// `proc/read/event`s (a line of stdout or stderr each, then one `killed`
/// event at the end). Dropping it stops the output; the process keeps running
/// until it ends, is killed, or the session ends.
pub struct Process {
    client: Client,
    proc_id: String,
    pid: u32,
    events: Option<mpsc::UnboundedReceiver<Message>>,
    exit: Option<ProcExit>,
    _route: RouteGuard,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("proc_id", &self.proc_id)
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

impl Process {
    /// The host's handle of the process.
    pub fn id(&self) -> &str {
        &self.proc_id
    }

    /// Its OS process id on the host.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Writes text to its stdin.
    pub async fn write(&self, data: &str) -> ClientResult<()> {
        self.client
            .proc()
            .write(&self.proc_id, data, false)
            .await
            .map(drop)
    }

    /// Closes its stdin.
    pub async fn close_stdin(&self) -> ClientResult<()> {
        self.client
            .proc()
            .write(&self.proc_id, "", true)
            .await
            .map(drop)
    }

    /// Sends it a signal.
    pub async fn kill(&self, signal: &str) -> ClientResult<ProcKillResponse> {
        self.client.proc().kill(&self.proc_id, signal).await
    }

    /// Its state.
    pub async fn status(&self) -> ClientResult<ProcState> {
        self.client.proc().status(&self.proc_id).await
    }

    /// Reads the rest of its output until it ends, within `limit`.
    pub async fn wait(&mut self, limit: Duration) -> ClientResult<ProcExit> {
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let collect = async {
            while let Some(event) = self.next().await {
                let text = event
                    .data
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                if event.stream_type == StreamType::STDOUT {
                    stdout.push(text);
                } else if event.stream_type == StreamType::STDERR {
                    stderr.push(text);
                }
            }
        };
        tokio::time::timeout(limit, collect)
            .await
            .map_err(|_| ClientError::Timeout(limit))?;
        match self.exit.clone() {
            Some(mut exit) => {
                exit.stdout = stdout.join("\n");
                exit.stderr = stderr.join("\n");
                Ok(exit)
            }
            None => Err(ClientError::ConnectionClosed(
                self.client
                    .close_reason()
                    .unwrap_or_else(|| "the output ended before the process".into()),
            )),
        }
    }

    /// How it ended, once the stream has delivered its `killed` event.
    pub fn exit(&self) -> Option<&ProcExit> {
        self.exit.as_ref()
    }
}

impl Stream for Process {
    type Item = ProcReadEvent;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ProcReadEvent>> {
        let this = self.get_mut();
        let Some(events) = this.events.as_mut() else {
            return Poll::Ready(None);
        };
        loop {
            match events.poll_recv(cx) {
                Poll::Ready(Some(Message::ProcReadEvent(event))) => {
                    if event.stream_type == StreamType::KILLED {
                        this.exit = Some(ProcExit {
                            code: event.data.get("code").and_then(Value::as_i64),
                            state: event
                                .data
                                .get("state")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                            ..ProcExit::default()
                        });
                        this.events = None;
                    }
                    return Poll::Ready(Some(event));
                }
                Poll::Ready(Some(_)) => {}
                Poll::Ready(None) => {
                    this.events = None;
                    return Poll::Ready(None);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

//! A spawned process's output streamed as `proc/read/event`s, and its end recorded.

use super::*;

/// Streams a spawned process's output as events, then records its end.
pub(super) async fn supervise_proc(
    entry: Arc<Proc>,
    child: GroupChild,
    timeout: Option<Duration>,
    req_id: String,
    out: crate::outbound::EventStream,
) {
    let mut seq: u64 = 0;
    let event = |seq: u64, stream_type: StreamType, data: Map<String, Value>| ProcReadEvent {
        req_id: req_id.clone(),
        proc_id: entry.id.clone(),
        stream_type,
        data,
        seq,
        ..ProcReadEvent::default()
    };
    let limits = RunLimits {
        timeout,
        cancel: entry.cancel.clone(),
        output_max_bytes: None,
        keep_output: false,
    };
    let outcome = process::supervise(child, limits, |line| {
        let stream_type = match line.stream {
            StreamKind::Stdout => StreamType::STDOUT,
            StreamKind::Stderr => StreamType::STDERR,
        };
        let mut data = Map::new();
        data.insert("text".into(), Value::String(line.text));
        let message: Message = event(seq, stream_type, data).into();
        seq += 1;
        let out = out.clone();
        async move {
            // A receiver that went away just stops the stream; the process runs on.
            let _ = out.send(crate::outbound::Outbound::Message(message)).await;
        }
    })
    .await;
    let (ending, code, signal) = match &outcome {
        Ok(o) => (o.ending, o.exit_code(), o.signal()),
        Err(e) => {
            tracing::warn!(proc_id = %entry.id, error = %e, "waiting for a process failed");
            (Ending::Exited, None, None)
        }
    };
    let state = {
        let mut status = entry.status();
        status.state = match ending {
            Ending::TimedOut => ProcState::TIMEDOUT,
            Ending::Cancelled => ProcState::STOPPED,
            Ending::Exited if status.kill_requested || code == Some(0) => ProcState::STOPPED,
            Ending::Exited => ProcState::CRASHED,
        };
        status.state.clone()
    };
    entry.stdin.lock().await.take();
    entry.done.send_replace(true);
    tracing::debug!(proc_id = %entry.id, state = %state, ?code, ?signal, "process ended");
    let mut data = Map::new();
    data.insert("code".into(), code.map_or(Value::Null, Value::from));
    if let Some(signal) = signal {
        data.insert("signal".into(), Value::from(signal));
    }
    data.insert("state".into(), Value::String(state.to_string()));
    let ended = Message::from(event(seq, StreamType::KILLED, data));
    let _ = out.send(crate::outbound::Outbound::Message(ended)).await;
}

//! What the scripts of client scenarios share: opening the session, waiting
//! for the client to close, judging a report.

use std::time::Duration;

use serde_json::Value;

use super::{ClientCx, ClientRun};
use conformance_harness::check::Recorder;
use conformance_harness::scenario::Abort;
use conformance_harness::wire::{show, ty};

/// How long the client may take to close when it is done.
pub(super) const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// Reads the handshake and accepts it (aborts on anything else).
pub(super) async fn open(cx: &mut ClientCx) -> Result<Value, Abort> {
    let hs = cx.peer.recv("handshake/req").await?;
    if ty(&hs) != "handshake/req" {
        return Err(Abort(format!(
            "the first message is not handshake/req: {}",
            show(&hs)
        )));
    }
    cx.peer.accept(&hs).await?;
    Ok(hs)
}

/// Waits for the client to close (it is done).
pub(super) async fn done(cx: &mut ClientCx) -> bool {
    let mut extra = Vec::new();
    cx.peer.closed_within(CLOSE_WAIT, &mut extra).await
}

/// Records `id` from the report: `ok` when the report says what is expected.
pub(super) fn judge(rec: &mut Recorder, run: &ClientRun, id: &str, ok: bool, expected: &str) {
    rec.check(id, ok && run.report.is_some(), expected, run.shown());
}

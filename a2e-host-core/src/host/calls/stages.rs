//! The stages of the call pipeline, in the order a call passes them (see
//! [`Host::call`]): its clock (the deadline it runs under), where its events
//! go, its context (identity, cancellation, extensions), what observes it
//! (span, metrics, the journal's trace of a node), the work (the plugin),
//! its supervision (panics, timeout, cancellation), and its result; the
//! added layers' admission comes before the clock.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use a2e_proto::ErrorCode;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

use super::{CallKind, CallSpec, Caller, Collected, MAX_TIMEOUT_SECS, layers};
use crate::error::{HostError, HostResult};
use crate::host::Host;
use crate::plugin::{CallContext, EventSink};

/// When a call must end, and from when its duration counts.
pub(super) struct Clock {
    /// When the call started: `None` for a call whose duration nobody reads,
    /// under its caller's deadline.
    started: Option<Instant>,
    /// The caller's deadline, when it bounds the call: the caller enforces
    /// it, and the call sets no timer of its own.
    inherited: Option<Instant>,
    /// When the call must end.
    deadline: Instant,
}

impl Clock {
    /// The clock of a call with `timeout_secs` under `caller`.
    pub(super) fn start(caller: &Caller<'_>, timeout_secs: u64) -> Self {
        match caller.deadline {
            // A call without a timeout of its own (the longest) under its
            // caller's deadline, whose duration nobody reads (a chain
            // node's), reads no clock: a chain's deadline is never further
            // than the longest timeout from now.
            Some(theirs) if timeout_secs >= MAX_TIMEOUT_SECS && !caller.full_result => Self {
                started: None,
                inherited: Some(theirs),
                deadline: theirs,
            },
            _ => {
                let started = Instant::now();
                // Checked: a deadline past the clock's range means "no
                // deadline this century".
                let own = started
                    .checked_add(Duration::from_secs(timeout_secs))
                    .unwrap_or_else(|| started + Duration::from_secs(MAX_TIMEOUT_SECS));
                // The caller's deadline bounds the call when it comes first
                // (a skill's own shorter timeout still applies inside a chain).
                let inherited = caller.deadline.filter(|d| *d <= own);
                Self {
                    started: Some(started),
                    inherited,
                    deadline: inherited.unwrap_or(own),
                }
            }
        }
    }

    /// The call's duration so far, when `measured` (else 0).
    pub(super) fn duration_ms(&self, measured: bool) -> u64 {
        match self.started {
            Some(started) if measured => {
                u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
            }
            _ => 0,
        }
    }
}

/// Where a call's events go: nowhere when nobody reads them (a chain node's
/// call that does not stream), else numbered, kept for the result and
/// streamed when the request streams.
pub(super) fn events<K: CallKind>(
    caller: &mut Caller<'_>,
    spec: &CallSpec<'_>,
) -> (EventSink, Option<Arc<Collected<K::Event>>>) {
    let stream = caller.stream.take().filter(|_| spec.streaming);
    if stream.is_none() && !caller.full_result {
        return (EventSink::discard(), None);
    }
    let (sink, collected) = super::collecting_sink(spec.req_id, stream, K::event);
    (sink, Some(collected))
}

/// The events a call's result carries.
pub(super) fn collected<E>(collected: Option<&Arc<Collected<E>>>) -> Vec<E> {
    collected.map(|c| super::take(c)).unwrap_or_default()
}

impl Host {
    /// The context the plugin gets: who calls, the request's ids, the
    /// deadline, the token that stops the call, the events' sink and the
    /// caller's extensions. The token is the caller's when the caller
    /// enforces the deadline itself; else one of the call's own (returned
    /// too), which its supervision fires.
    pub(super) fn context(
        &self,
        caller: &mut Caller<'_>,
        spec: &CallSpec<'_>,
        clock: &Clock,
        sink: EventSink,
    ) -> (CallContext, Option<CancellationToken>) {
        // A call with a deadline of its own gets a token of its own, not a
        // child of the caller's: its supervision forwards the caller's
        // cancellation (it watches both tokens, and fires the call's when
        // dropped), which spares every call locking the caller's token to
        // join and again to leave its children.
        let (token, own) = if clock.inherited.is_some() {
            (caller.cancel.clone(), None)
        } else {
            let own = CancellationToken::new();
            (own.clone(), Some(own))
        };
        let looked_up;
        let identity = match caller.identity {
            Some(identity) => identity,
            None => {
                looked_up = self.identity(caller.session_id);
                &looked_up
            }
        };
        let mut ctx =
            CallContext::for_identity(identity, spec.req_id, token, Some(clock.deadline), sink)
                .with_correlation_id(spec.correlation_id)
                .with_extensions(std::mem::take(&mut caller.extensions));
        if let Some(key) = caller.idempotency_key {
            ctx = ctx.with_idempotency_key(key);
        }
        (ctx, own)
    }

    /// Admission: the added layers that apply to the call (none unless an
    /// embedder or a feature adds one), before its clock starts — a layer
    /// may wait (for a person's decision) longer than the call may run.
    /// The wait ends with the caller's cancellation (a chain's deadline
    /// fires it); a layer's panic fails the call. A call no layer applies
    /// to builds nothing here; `Ok(true)` says layers ran (and may have
    /// changed the arguments).
    pub(super) async fn admit<K: CallKind>(
        self: &Arc<Self>,
        caller: &Caller<'_>,
        spec: &CallSpec<'_>,
        entry: &K::Entry,
        args: &mut Map<String, Value>,
        sink: &EventSink,
    ) -> HostResult<bool> {
        let name = K::name(entry);
        let applies: Vec<&Arc<dyn layers::CallLayer>> = self
            .layers
            .iter()
            .filter(|l| l.applies(K::TARGET, name, &caller.extensions))
            .collect();
        if applies.is_empty() {
            return Ok(false);
        }
        let looked_up;
        let identity = match caller.identity {
            Some(identity) => identity,
            None => {
                looked_up = self.identity(caller.session_id);
                &looked_up
            }
        };
        let mut ctx = CallContext::for_identity(
            identity,
            spec.req_id,
            caller.cancel.clone(),
            caller.deadline,
            sink.clone(),
        )
        .with_correlation_id(spec.correlation_id)
        .with_extensions(caller.extensions.clone());
        if let Some(key) = caller.idempotency_key {
            ctx = ctx.with_idempotency_key(key);
        }
        let run = AssertUnwindSafe(layers::run_layers(
            self,
            &applies,
            K::TARGET,
            name,
            args,
            &ctx,
        ))
        .catch_unwind();
        let mut run = std::pin::pin!(run);
        // A layer that lets the call through at once (no decision to wait
        // for) needs no watch of the caller's token.
        if let std::task::Poll::Ready(joined) = futures::poll!(&mut run) {
            return super::caught("a call layer", joined).map(|()| true);
        }
        tokio::select! {
            joined = run => super::caught("a call layer", joined).map(|()| true),
            () = caller.cancel.cancelled() => Err(HostError::Cancelled),
        }
    }

    /// The work of a call: the plugin, in the call's span when it records.
    pub(super) fn work<'a, K: CallKind>(
        self: &'a Arc<Self>,
        req: &'a K::Req,
        args: Map<String, Value>,
        entry: &'a K::Entry,
        ctx: CallContext,
        op: &a2e_telemetry::OpSpan,
    ) -> BoxFuture<'a, HostResult<K::Output>> {
        let work = K::invoke(self, req, args, entry, ctx);
        if op.is_recording() {
            Box::pin(tracing::Instrument::instrument(work, op.span().clone()))
        } else {
            work
        }
    }
}

/// Runs `work` to its end: under the call's own token and deadline when it
/// has one (`own`), else (its caller enforces the deadline) catching only
/// its panics.
pub(super) async fn supervised<T>(
    work: BoxFuture<'_, HostResult<T>>,
    own: Option<CancellationToken>,
    cancel: &CancellationToken,
    clock: &Clock,
    timeout_secs: u64,
    what: &str,
) -> HostResult<T> {
    let mut work = AssertUnwindSafe(work).catch_unwind();
    match own {
        None => super::caught(what, work.await),
        Some(own) => {
            if cancel.is_cancelled() {
                return Err(HostError::Cancelled);
            }
            // A call that ends on its first poll (a built-in's, most
            // in-process tools') needs no timer and no watch.
            if let std::task::Poll::Ready(joined) = futures::poll!(&mut work) {
                return super::caught(what, joined);
            }
            // Boxed: its timer and select state would otherwise widen every
            // call's future, the chain nodes' included, which never use them.
            Box::pin(super::supervise(
                work,
                own,
                cancel,
                clock.deadline,
                timeout_secs,
                what,
            ))
            .await
        }
    }
}

/// What observes a call: its span, its duration in the metrics, and the
/// gauge of calls in flight (which it leaves when dropped).
pub(super) struct Observed<'h> {
    pub(super) op: a2e_telemetry::OpSpan,
    timer: a2e_telemetry::Timer<'h>,
    _in_flight: a2e_telemetry::Gauged,
}

impl<'h> Observed<'h> {
    /// Starts observing a call of `entry` with `args`; a durable run's node
    /// call also gives the journal its span's ids.
    pub(super) fn start<K: CallKind>(
        host: &'h Host,
        entry: &K::Entry,
        caller: &Caller<'_>,
        args: &Map<String, Value>,
    ) -> Self {
        let telemetry = &host.telemetry;
        let timer = telemetry.metrics().timer();
        let in_flight = telemetry.metrics().run_started(match K::METRIC {
            a2e_telemetry::CallKind::Tool => "tool",
            a2e_telemetry::CallKind::Skill => "skill",
        });
        let op = super::call_span::<K>(telemetry, entry, caller.session_id, caller.trace, args);
        #[cfg(feature = "journal")]
        if op.is_recording()
            && let Some(key) = caller.idempotency_key
        {
            host.journal_span(key, &op);
        }
        Self {
            op,
            timer,
            _in_flight: in_flight,
        }
    }

    /// What the call came to: its output, or the code and message of a
    /// call that ran and failed; `Err` is a refusal. Each is reported to the
    /// span and the metrics.
    pub(super) fn finish<K: CallKind>(
        self,
        entry: &K::Entry,
        outcome: HostResult<K::Output>,
    ) -> HostResult<Result<K::Output, (ErrorCode, String)>> {
        match outcome {
            Ok(out) => {
                self.op.result(K::data(&out));
                self.timer
                    .call(K::METRIC, K::name(entry), a2e_telemetry::metrics::OK);
                Ok(Ok(out))
            }
            Err(e) if e.is_refusal() => {
                self.op.error(e.code().as_str(), &e.to_string());
                self.timer
                    .call(K::METRIC, K::name(entry), e.code().as_str());
                Err(e)
            }
            Err(e) => {
                let code = match &e {
                    HostError::Runtime(_) | HostError::Io { .. } | HostError::Tool(_) => K::FAILED,
                    other => other.code(),
                };
                let message = e.to_string();
                self.op.error(code.as_str(), &message);
                self.timer.call(K::METRIC, K::name(entry), code.as_str());
                Ok(Err((code, message)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock_in(secs: u64) -> Clock {
        let started = Instant::now();
        Clock {
            started: Some(started),
            inherited: None,
            deadline: started + Duration::from_secs(secs),
        }
    }

    /// A call that waits on its token until it fires.
    fn waits_on(token: CancellationToken) -> BoxFuture<'static, HostResult<u32>> {
        Box::pin(async move {
            token.cancelled().await;
            Err(HostError::Cancelled)
        })
    }

    #[tokio::test]
    async fn a_call_that_ends_at_once_keeps_its_token_unfired() {
        let (caller, own) = (CancellationToken::new(), CancellationToken::new());
        let work: BoxFuture<'static, HostResult<u32>> = Box::pin(async { Ok(7) });
        let out = supervised(work, Some(own.clone()), &caller, &clock_in(5), 5, "tool").await;
        assert_eq!(out.unwrap(), 7);
        assert!(!own.is_cancelled());
    }

    #[tokio::test]
    async fn the_callers_cancellation_reaches_the_calls_own_token() {
        let (caller, own) = (CancellationToken::new(), CancellationToken::new());
        let fire = caller.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            fire.cancel();
        });
        let work = waits_on(own.clone());
        let out = supervised(work, Some(own.clone()), &caller, &clock_in(30), 30, "tool").await;
        assert!(matches!(out, Err(HostError::Cancelled)), "{out:?}");
        assert!(own.is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_its_deadline_times_out_and_its_token_fires() {
        let (caller, own) = (CancellationToken::new(), CancellationToken::new());
        let work = waits_on(own.clone());
        let out = supervised(work, Some(own.clone()), &caller, &clock_in(2), 2, "tool").await;
        assert!(matches!(out, Err(HostError::Timeout(2))), "{out:?}");
        assert!(own.is_cancelled());
        assert!(!caller.is_cancelled());
    }

    #[tokio::test]
    async fn a_call_dropped_while_it_runs_fires_its_token() {
        let (caller, own) = (CancellationToken::new(), CancellationToken::new());
        let work: BoxFuture<'static, HostResult<u32>> = Box::pin(std::future::pending());
        let clock = clock_in(30);
        let call = supervised(work, Some(own.clone()), &caller, &clock, 30, "tool");
        let gave_up = tokio::time::timeout(Duration::from_millis(20), call).await;
        assert!(gave_up.is_err());
        assert!(
            own.is_cancelled(),
            "what the call started must stop with it"
        );
    }

    #[tokio::test]
    async fn a_panicking_call_fails_with_its_message() {
        let (caller, own) = (CancellationToken::new(), CancellationToken::new());
        let work: BoxFuture<'static, HostResult<u32>> = Box::pin(async {
            tokio::task::yield_now().await;
            panic!("boom")
        });
        let out = supervised(work, Some(own), &caller, &clock_in(30), 30, "tool").await;
        let Err(HostError::Runtime(message)) = out else {
            panic!("{out:?}")
        };
        assert!(message.contains("tool panicked: boom"), "{message}");
    }
}

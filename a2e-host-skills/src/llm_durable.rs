//! An LLM skill call as a durable run when the host journals runs (feature
//! `journal`; see [`a2e_host_runs::llm_run`]); without the feature every
//! function here lets the loop run as it is.

use a2e_llm::{
    CancellationToken, ChatProvider, ChatRequest, LoopError, LoopEvent, LoopEventSink, LoopOptions,
    LoopOutcome, run_loop,
};
use a2e_proto::SkillDefinition;
use serde_json::{Map, Value};

use a2e_host_core::error::{HostError, HostResult};
use a2e_host_core::host::Host;
use a2e_host_core::llm_tools::HostTools;
use a2e_host_core::plugin::{SkillCall, SkillOutput};

/// The journaling of a durable call, if it is one.
#[cfg(feature = "journal")]
pub(crate) type Durable = Option<a2e_host_runs::llm_run::LoopJournal>;
/// Calls are never durable without the journal.
#[cfg(not(feature = "journal"))]
pub(crate) type Durable = Option<std::convert::Infallible>;

/// The run of this call of `skill` (defined by `def`) with `args`: a new
/// one, or the one the host resumes; `Err` when a resumed run's skill has
/// changed since (the run ends with that error).
#[cfg(feature = "journal")]
pub(crate) async fn begin(
    host: &Host,
    call: &SkillCall<HostError>,
    skill: &str,
    args: &Map<String, Value>,
    def: &SkillDefinition,
) -> HostResult<Durable> {
    let kind = a2e_journal::RunKind::LlmSkill;
    let run =
        a2e_host_runs::skill_run::begin_call(host, kind, call, skill, args, def, false).await?;
    Ok(run.map(a2e_host_runs::llm_run::LoopJournal::new))
}

/// Without the journal no call is durable.
#[cfg(not(feature = "journal"))]
pub(crate) async fn begin(
    _host: &Host,
    _call: &SkillCall<HostError>,
    _skill: &str,
    _args: &Map<String, Value>,
    _def: &SkillDefinition,
) -> HostResult<Durable> {
    Ok(None)
}

/// The loop's cancellation: `parent`, and a cancel of the run asked for
/// out of process.
pub(crate) async fn cancel_token(
    durable: &Durable,
    parent: CancellationToken,
) -> CancellationToken {
    match durable {
        #[cfg(feature = "journal")]
        Some(j) => j.run().cancel_token(&parent).await,
        #[cfg(not(feature = "journal"))]
        Some(never) => match *never {},
        None => parent,
    }
}

/// Follows one loop event.
pub(crate) fn observe(durable: &Durable, event: &LoopEvent) {
    match durable {
        #[cfg(feature = "journal")]
        Some(j) => j.observe(event),
        #[cfg(not(feature = "journal"))]
        Some(never) => match *never {},
        None => {
            let _ = event;
        }
    }
}

/// Runs the loop on `model` and `tools`, journaled when the call is durable.
pub(crate) async fn drive<P: ChatProvider, S: LoopEventSink>(
    durable: &Durable,
    model: &P,
    request: ChatRequest,
    tools: &HostTools,
    sink: &S,
    options: &LoopOptions,
    cancel: &CancellationToken,
) -> Result<LoopOutcome, LoopError> {
    match durable {
        #[cfg(feature = "journal")]
        Some(j) => {
            let (model, tools) = (j.model(model), j.tools(tools, &tools.host));
            run_loop(&model, request, &tools, sink, options, cancel).await
        }
        #[cfg(not(feature = "journal"))]
        Some(never) => match *never {},
        None => run_loop(model, request, tools, sink, options, cancel).await,
    }
}

/// Journals the run's end with the call's result; the result for the
/// caller (another host's, when this one lost the run's lease).
pub(crate) async fn finish(
    durable: &Durable,
    result: HostResult<SkillOutput>,
) -> HostResult<SkillOutput> {
    match durable {
        #[cfg(feature = "journal")]
        Some(j) => j.run().finish(result).await,
        #[cfg(not(feature = "journal"))]
        Some(never) => match *never {},
        None => result,
    }
}

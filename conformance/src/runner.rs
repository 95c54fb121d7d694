//! Running scenarios: selection, fixtures, deadlines (each scenario's and the
//! whole run's), and the results with the expected failures marked.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::check::{CheckDef, CheckResult, Recorder, Status};
use crate::host::{self, Cx, Env, Fixtures, Options, Target};
use crate::scenario::{Abort, Fixture, Transport};
use crate::schemas::Schemas;

pub use crate::scenario::Selection;

/// A scenario as the runner sees it, whatever its context type.
pub(crate) struct Plan {
    pub(crate) name: &'static str,
    pub(crate) needs: &'static [Fixture],
    pub(crate) checks: &'static [CheckDef],
}

/// A fixture a scenario needs that the host does not offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unmet {
    /// The fixture.
    pub(crate) fixture: Fixture,
    /// The capability for which the host owes it (it offers the fixture
    /// profile and accepted that capability); `None` when it may lack it.
    pub(crate) owed: Option<&'static str>,
}

impl Unmet {
    /// The first of `needs` that `fixtures` lacks, and whether it is owed.
    pub(crate) fn find(fixtures: &Fixtures, needs: &[Fixture]) -> Option<Self> {
        fixtures.missing(needs).map(|fixture| Self {
            fixture,
            owed: fixtures.owes(fixture),
        })
    }
}

/// Runs one scenario's `body` within `limit`: its results, with checks it
/// did not reach failed with the reason it stopped. A scenario whose fixture
/// is missing is skipped, or failed when the host owes the fixture.
pub(crate) async fn run_one<F>(
    plan: &Plan,
    unmet: Option<Unmet>,
    run_left: Duration,
    body: F,
) -> Vec<CheckResult>
where
    F: Future<Output = (Recorder, Result<(), Abort>)>,
{
    if let Some(Unmet { fixture, owed }) = unmet {
        let mut rec = Recorder::new(plan.name, plan.checks);
        match owed {
            Some(cap) => {
                for def in plan.checks {
                    rec.fail(
                        def.id,
                        format!(
                            "fixture {fixture}: the host offers the fixture profile and accepted capability {cap}"
                        ),
                        "the host does not offer it",
                    );
                }
            }
            None => rec.skip_all(&format!("needs fixture {fixture}")),
        }
        return rec.finish(None);
    }
    if run_left.is_zero() {
        let mut rec = Recorder::new(plan.name, plan.checks);
        for def in plan.checks {
            rec.record(
                def.id,
                Status::failed(
                    "the check to run",
                    "the run's time limit was reached before this scenario",
                ),
            );
        }
        return rec.finish(None);
    }
    let (rec, outcome) = body.await;
    let why = outcome.err().map(|a| a.0);
    rec.finish(why.as_deref())
}

/// What a host run found.
#[derive(Debug)]
pub struct HostReport {
    /// The host.
    pub target: String,
    /// Its transport.
    pub transport: Transport,
    /// What of the fixture profile it offers.
    pub fixtures: Fixtures,
    /// Every check's result, scenario by scenario.
    pub results: Vec<CheckResult>,
}

/// Runs the selected host scenarios against `target`, handing each result to
/// `seen` as it comes; the whole run stops after `max_time`.
pub async fn run_host(
    target: Target,
    opts: Options,
    selection: &Selection,
    max_time: Duration,
    mut seen: impl FnMut(&CheckResult),
) -> Result<HostReport, String> {
    let run_end = Instant::now() + max_time;
    let transport = target.transport()?;
    let schemas = Arc::new(Schemas::build()?);
    let bare = Arc::new(Env {
        target: target.clone(),
        transport,
        opts: opts.clone(),
        fixtures: Fixtures::default(),
        schemas: schemas.clone(),
        wire: Arc::default(),
    });
    let probe_limit = opts.answer_timeout.saturating_mul(3).min(max_time);
    let fixtures = host::probe(&bare, probe_limit).await;
    let env = Arc::new(Env {
        target: target.clone(),
        transport,
        opts: opts.clone(),
        fixtures: fixtures.clone(),
        schemas,
        wire: Arc::new(Mutex::default()),
    });
    let mut results = Vec::new();
    for scenario in host::scenarios() {
        if !scenario.on.includes(transport) || !selection.includes(scenario.name, scenario.area) {
            continue;
        }
        let plan = Plan {
            name: scenario.name,
            needs: scenario.needs,
            checks: scenario.checks,
        };
        let run_left = run_end.saturating_duration_since(Instant::now());
        let limit = opts.scenario_timeout.min(run_left);
        let deadline = Instant::now() + limit;
        let env = env.clone();
        let body = async move {
            let mut cx = Cx::new(env, scenario, deadline);
            let outcome = match tokio::time::timeout(limit, (scenario.run)(&mut cx)).await {
                Ok(outcome) => outcome,
                Err(_) => Err(Abort(format!(
                    "the scenario's time limit ({} s) ran out",
                    limit.as_secs()
                ))),
            };
            (cx.rec, outcome)
        };
        let unmet = Unmet::find(&fixtures, plan.needs);
        for result in run_one(&plan, unmet, run_left, body).await {
            seen(&result);
            results.push(result);
        }
    }
    Ok(HostReport {
        target: target.describe(),
        transport,
        fixtures,
        results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::must;
    use crate::profile;

    #[test]
    fn a_fixture_the_host_owes_fails_its_scenario_and_one_it_may_lack_skips_it() {
        const CHECKS: &[CheckDef] = &[must("a.b.c", "s", "r")];
        let plan = Plan {
            name: "x",
            needs: &[Fixture::Cap("tools"), Fixture::Tool(profile::SLEEP)],
            checks: CHECKS,
        };
        let run = |fixtures: &Fixtures| {
            let unmet = Unmet::find(fixtures, plan.needs);
            let body = async { (Recorder::new("x", CHECKS), Ok(())) };
            futures::executor::block_on(run_one(&plan, unmet, Duration::from_secs(1), body))
        };
        // A host offering nothing of the profile may lack it: skipped.
        let mut fixtures = Fixtures::default();
        fixtures.caps.insert("tools".into());
        let out = run(&fixtures);
        assert!(matches!(out[0].status, Status::Skipped { .. }), "{out:?}");
        // Offering another tool of the profile declares it: the missing one fails.
        fixtures.tools.insert(profile::ECHO.into());
        assert_eq!(fixtures.owes(Fixture::Tool(profile::SLEEP)), Some("tools"));
        let out = run(&fixtures);
        assert!(out[0].failed(), "{out:?}");
        // A skill is owed only when the skill capability was accepted.
        assert_eq!(fixtures.owes(Fixture::Skill(profile::SKILL)), None);
        assert_eq!(fixtures.owes(Fixture::Cap("chains")), None);
        fixtures.caps.insert("skill".into());
        assert_eq!(fixtures.owes(Fixture::Skill(profile::SKILL)), Some("skill"));
        assert_eq!(fixtures.owes(Fixture::AuthToken), None);
        // A capability the host did not accept is not needed of it.
        fixtures.caps.remove("tools");
        assert!(matches!(run(&fixtures)[0].status, Status::Skipped { .. }));
    }
}

//! Ontheia skills: a skill file whose body holds a ```` ```ontheia ```` block
//! (an Ontheia chain document). `skill/call` runs it on the host
//! ([`crate::ontheia_host`]): the argument `input` (a string, else the
//! arguments as JSON) is `${input}`; other string arguments are globals
//! (`${name}`); `agent_id`/`user_id` are the calling session's unless given.
//! Each step event is a `skill/event` (`status` with `{step_id, event, output|error}`);
//! the result's `data` is every stored step result, `summary` the last step's output.

use std::path::Path;

use a2e_proto::{EventKind, SkillDefinition};
use serde_json::{Map, Value};

use super::defaults::Defaults;
use super::front_matter::{SkillFile, fenced_block};
use crate::error::{HostError, HostResult, SkillError};
use crate::plugin::{SkillCall, SkillOutput, SkillPlugin};

/// A loaded Ontheia skill.
#[derive(Debug, Clone)]
pub struct OntheiaSkill {
    /// The definition.
    pub def: SkillDefinition,
    /// The chain (validated at load).
    pub document: ontheia::Document,
    /// Default arguments.
    pub defaults: Defaults,
}

impl OntheiaSkill {
    /// The Ontheia skill of a parsed file.
    pub fn from_file(file: &SkillFile, path: &Path) -> Result<Self, SkillError> {
        let (instructions, text) =
            fenced_block(&file.body, "ontheia").ok_or_else(|| SkillError::MissingBlock {
                path: path.to_owned(),
                block: "ontheia",
            })?;
        let document = ontheia::parse(&text).map_err(|source| SkillError::OntheiaBlock {
            path: path.to_owned(),
            source,
        })?;
        let def = file.definition(&instructions, path)?;
        let defaults = Defaults::new(&def)?;
        Ok(Self {
            def,
            document,
            defaults,
        })
    }
}

/// The plugin serving Ontheia skills.
pub struct OntheiaSkills {
    skills: Vec<OntheiaSkill>,
}

impl OntheiaSkills {
    /// A plugin over loaded skills.
    pub fn new(skills: Vec<OntheiaSkill>) -> Self {
        Self { skills }
    }
}

impl SkillPlugin for OntheiaSkills {
    fn name(&self) -> &str {
        "ontheia_skills"
    }

    fn skills(&self) -> Vec<SkillDefinition> {
        self.skills
            .iter()
            .map(|s| s.defaults.advertised(&s.def))
            .collect()
    }

    async fn call(
        &self,
        skill: &str,
        args: Map<String, Value>,
        call: SkillCall,
    ) -> HostResult<SkillOutput> {
        let found = self
            .skills
            .iter()
            .find(|s| s.def.name == skill)
            .ok_or_else(|| HostError::UnknownSkill(skill.into()))?;
        let args = found.defaults.apply(args)?;
        let input = match args.get("input") {
            Some(Value::String(s)) => s.clone(),
            _ => Value::Object(args.clone()).to_string(),
        };
        let mut vars: Vec<(String, String)> = vec![
            ("agent_id".into(), call.ctx.agent_id.to_string()),
            ("user_id".into(), call.ctx.user_id.to_string()),
        ];
        for (k, v) in &args {
            if let (false, Some(s)) = (k == "input", v.as_str()) {
                vars.retain(|(name, _)| name != k);
                vars.push((k.clone(), s.to_owned()));
            }
        }
        let globals = crate::ontheia_host::globals(
            &input,
            vars.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        );
        let host = crate::Host::of(&call.host)?;
        #[cfg(feature = "journal")]
        let durable = crate::runs::skill_run::SkillRun::begin(
            &host,
            a2e_journal::RunKind::Ontheia,
            &call.ctx,
            skill,
            {
                let mut request = crate::runs::skill_run::request_of(
                    &call.ctx,
                    skill,
                    &args,
                    call.llm_override.as_ref(),
                    &crate::runs::skill_run::digest_of(&found.document),
                );
                // The live view draws the run from it.
                if let Some(map) = request.as_object_mut() {
                    map.insert(
                        "document".into(),
                        serde_json::to_value(&found.document).unwrap_or_default(),
                    );
                }
                request
            },
        )
        .await;
        #[cfg(feature = "journal")]
        if let Some(run) = &durable {
            let digest = crate::runs::skill_run::digest_of(&found.document);
            if run.request().get("digest").and_then(Value::as_str) != Some(digest.as_str()) {
                return run
                    .finish(Err(crate::runs::skill_run::changed(skill)))
                    .await;
            }
        }
        #[cfg(feature = "journal")]
        let (cancel, options) = match &durable {
            Some(run) => (
                run.cancel_token(&call.ctx.cancel).await,
                crate::runs::ontheia_run::options(&host, run, &found.document).await,
            ),
            None => (call.ctx.cancel.clone(), ontheia::RunOptions::default()),
        };
        #[cfg(not(feature = "journal"))]
        let (cancel, options) = (call.ctx.cancel.clone(), ontheia::RunOptions::default());
        #[cfg(feature = "journal")]
        let journaled = durable.clone();
        #[cfg(feature = "journal")]
        let run_id = durable.as_ref().map(|run| run.run_id().to_string());
        #[cfg(not(feature = "journal"))]
        let run_id: Option<String> = None;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Value>();
        let ctx = call.ctx.clone();
        let forward = tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                if let Value::Object(data) = event {
                    ctx.emit(EventKind::STATUS, data).await;
                }
            }
        });
        let outcome = crate::ontheia_host::run_with(
            &host,
            &call.ctx.session_id,
            &found.document,
            &globals,
            move |e| {
                #[cfg(feature = "journal")]
                if let Some(run) = &journaled {
                    crate::runs::ontheia_run::journal_event(run, &e);
                }
                let _ = tx.send(e);
            },
            cancel,
            crate::ontheia_host::DurableRun {
                options,
                run_id: run_id.as_deref(),
            },
        )
        .await;
        let _ = forward.await;
        let result = output_of(outcome);
        #[cfg(feature = "journal")]
        if let Some(run) = &durable {
            return run.finish(result).await;
        }
        result
    }
}

/// The skill's result from the document's outcome: every stored step
/// result as `data`, the last step's output as `summary`; a failed step
/// fails the call.
pub(crate) fn output_of(
    outcome: Result<ontheia::RunOutcome, ontheia::RunError>,
) -> HostResult<SkillOutput> {
    let outcome = outcome.map_err(|e| match e {
        ontheia::RunError::Cancelled => HostError::Cancelled,
        other => HostError::skill_failed("the ontheia chain failed", other),
    })?;
    let summary = outcome
        .last_result()
        .map(|r| r.output.clone())
        .unwrap_or(Value::Null);
    if outcome.any_failed() {
        let failed: Vec<String> = outcome
            .results
            .iter()
            .filter(|(_, r)| r.status == ontheia::StepStatus::Failed)
            .map(|(id, r)| format!("{id}: {}", r.error.clone().unwrap_or_default()))
            .collect();
        return Err(HostError::Skill(format!(
            "steps failed: {}",
            failed.join("; ")
        )));
    }
    Ok(SkillOutput {
        data: outcome.to_value(),
        summary,
        truncated: false,
    })
}

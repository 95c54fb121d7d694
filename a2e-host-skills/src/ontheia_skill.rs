//! Ontheia skills: a skill file whose body holds a ```` ```ontheia ```` block
//! (an Ontheia chain document). `skill/call` runs it on the host
//! ([`a2e_host_ontheia`]): the argument `input` (a string, else the
//! arguments as JSON) is `${input}`; other string arguments are globals
//! (`${name}`); `agent_id`/`user_id` are the calling session's unless given.
//! Each step event is a `skill/event` (`status` with `{step_id, event, output|error}`);
//! the result's `data` is every stored step result, `summary` the last step's output.

use std::path::Path;

use a2e_proto::{EventKind, SkillDefinition};
use serde_json::{Map, Value};

use super::defaults::Defaults;
use super::front_matter::{SkillFile, fenced_block};
use a2e_host_core::error::{HostError, HostResult, SkillError};
use a2e_host_core::plugin::{SkillCall, SkillOutput, SkillPlugin};

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

impl SkillPlugin<HostError> for OntheiaSkills {
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
        call: SkillCall<HostError>,
    ) -> HostResult<SkillOutput> {
        let found = self
            .skills
            .iter()
            .find(|s| s.def.name == skill)
            .ok_or_else(|| HostError::UnknownSkill(skill.into()))?;
        let args = found.defaults.apply(args)?;
        let (input, given) = a2e_host_ontheia::input_of(&args, &["input"]);
        let mut vars: Vec<(String, String)> = vec![
            ("agent_id".into(), call.ctx.agent_id.to_string()),
            ("user_id".into(), call.ctx.user_id.to_string()),
        ];
        for (k, v) in given {
            vars.retain(|(name, _)| *name != k);
            vars.push((k, v));
        }
        let globals =
            a2e_host_ontheia::globals(&input, vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let host = a2e_host_core::host::Host::of(&call.ctx)?;
        #[cfg(feature = "journal")]
        let durable = a2e_host_runs::skill_run::begin_call(
            &host,
            a2e_journal::RunKind::Ontheia,
            &call,
            skill,
            &args,
            &found.document,
            true,
        )
        .await?;
        #[cfg(feature = "journal")]
        let (cancel, options, run_id) = a2e_host_runs::ontheia_run::prepare(
            &host,
            durable.as_ref(),
            &call.ctx.cancel,
            &found.document,
        )
        .await;
        #[cfg(not(feature = "journal"))]
        let (cancel, options, run_id) = (
            call.ctx.cancel.clone(),
            ontheia::RunOptions::default(),
            None::<String>,
        );
        #[cfg(feature = "journal")]
        let journaled = durable.clone();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Value>();
        let ctx = call.ctx.clone();
        let forward = tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                if let Value::Object(data) = event {
                    ctx.emit(EventKind::STATUS, data).await;
                }
            }
        });
        let outcome = a2e_host_ontheia::run_with(
            &host,
            &call.ctx.session_id,
            &found.document,
            &globals,
            move |e| {
                #[cfg(feature = "journal")]
                if let Some(run) = &journaled {
                    a2e_host_runs::ontheia_run::journal_event(run, &e);
                }
                let _ = tx.send(e);
            },
            cancel,
            a2e_host_ontheia::DurableRun {
                options,
                run_id: run_id.as_deref(),
            },
        )
        .await;
        let _ = forward.await;
        let result = a2e_host_ontheia::output_of(outcome);
        #[cfg(feature = "journal")]
        if let Some(run) = &durable {
            return run.finish(result).await;
        }
        result
    }
}

//! Program skills: a program in any language (`command:` in the front matter)
//! run sandboxed by `a2e-sandbox`, with the arguments as JSON on stdin and NDJSON
//! events and a final result on stdout (the protocol in `a2e-sandbox`'s README).
//!
//! The sandbox: its own process group and PID namespace, rlimits (address space
//! `memory_limit_mb`, default 1 GiB; CPU `cpu_seconds`, default 60; open files),
//! the skill file's folder as the working directory (writes only below it,
//! through Landlock where the kernel has it), no network (a network namespace,
//! or bubblewrap), a minimal environment, no capabilities. Exceeding the memory
//! limit answers `out_of_memory`, death by a signal `sandbox_crash` (naming the
//! signal), the call's timeout kills the group (`timeout`).

use std::path::{Path, PathBuf};

use a2e_proto::{EventKind, SkillDefinition};
use a2e_sandbox::{Policy, RunOptions, SkillOptions};
use serde_json::{Map, Value};

use super::defaults::Defaults;
use super::front_matter::{SkillFile, field};
use a2e_host_core::error::{FieldError, HostError, HostResult, SkillError};
use a2e_host_core::plugin::{SkillCall, SkillOutput, SkillPlugin};

/// A loaded program skill.
#[derive(Debug, Clone)]
pub struct ProgramSkill {
    /// The definition.
    pub def: SkillDefinition,
    /// Program and arguments.
    pub command: Vec<String>,
    /// The working directory: the skill file's folder.
    pub workdir: PathBuf,
    /// Address-space limit in bytes.
    pub memory_bytes: u64,
    /// CPU-time limit in seconds.
    pub cpu_seconds: u64,
    /// Default arguments.
    pub defaults: Defaults,
}

impl ProgramSkill {
    /// The program skill of a parsed file.
    pub fn from_file(file: &SkillFile, path: &Path) -> Result<Self, SkillError> {
        let not_a_list = |got| {
            let expected = "a list of strings";
            field(path, "command", FieldError::Kind { expected, got })
        };
        let command: Vec<String> = match &file.front.command {
            Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| not_a_list("a list with other items"))?,
            Some(other) => return Err(not_a_list(a2e_proto::json_kind(other))),
            None => return Err(field(path, "command", FieldError::Empty)),
        };
        if command.is_empty() {
            return Err(field(path, "command", FieldError::Empty));
        }
        let def = file.definition(file.body.trim(), path)?;
        let defaults = Defaults::new(&def)?;
        let workdir = path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."));
        let memory_mb = file
            .front
            .memory_limit_mb
            .unwrap_or(1024)
            .clamp(16, 1 << 20);
        Ok(Self {
            def,
            command,
            workdir,
            memory_bytes: memory_mb * 1024 * 1024,
            cpu_seconds: file.front.cpu_seconds.unwrap_or(60).clamp(1, 86_400),
            defaults,
        })
    }
}

/// The plugin serving program skills.
pub struct ProgramSkills {
    skills: Vec<ProgramSkill>,
    /// Its sandbox runs the skills (a host without one refuses them).
    launcher: a2e_host_core::proc::Launcher,
}

impl ProgramSkills {
    /// A plugin over loaded skills, run in `launcher`'s sandbox.
    pub fn new(skills: Vec<ProgramSkill>, launcher: a2e_host_core::proc::Launcher) -> Self {
        Self { skills, launcher }
    }
}

fn event_kind(kind: &str) -> EventKind {
    match kind {
        "progress" => EventKind::PROGRESS,
        "artifact" => EventKind::ARTIFACT,
        "log" => EventKind::LOG,
        _ => EventKind::STATUS,
    }
}

impl SkillPlugin<HostError> for ProgramSkills {
    fn name(&self) -> &str {
        "program_skills"
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
        let sandbox = self.launcher.sandbox().ok_or_else(|| {
            HostError::Runtime(
                "program skills need the sandbox, which this host has not installed".into(),
            )
        })?;
        let workdir = std::fs::canonicalize(&found.workdir)
            .map_err(|e| HostError::io(format!("{}", found.workdir.display()), e))?;
        let mut policy = Policy::skill(&workdir);
        policy.limits.address_space_bytes = Some(found.memory_bytes);
        policy.limits.cpu_seconds = Some(found.cpu_seconds);
        // The wrapper is this binary, on mimalloc, which reserves a large arena
        // up front; under an address-space limit it must reserve little.
        policy
            .env
            .set
            .push(("MIMALLOC_ARENA_RESERVE".into(), "8192".into()));
        let options = SkillOptions {
            run: RunOptions {
                timeout: call.ctx.remaining(),
                cancel: call.ctx.cancel.clone(),
                ..RunOptions::default()
            },
            ..SkillOptions::default()
        };
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<a2e_sandbox::SkillEvent>();
        let ctx = call.ctx.clone();
        let forward = tokio::spawn(async move {
            while let Some(e) = rx.recv().await {
                let data = match e.data {
                    Value::Object(m) => m,
                    other => Map::from_iter([("value".to_owned(), other)]),
                };
                ctx.emit(event_kind(&e.kind), data).await;
            }
        });
        let (program, rest) = found
            .command
            .split_first()
            .ok_or_else(|| HostError::Runtime("empty command".into()))?;
        let outcome = a2e_sandbox::run_skill(
            &sandbox,
            &policy,
            program,
            rest,
            &Value::Object(args),
            &options,
            move |e| {
                let _ = tx.send(e);
            },
        )
        .await;
        let _ = forward.await;
        match outcome {
            Ok(out) => Ok(SkillOutput {
                data: out.result,
                summary: out.summary.unwrap_or(Value::Null),
                truncated: false,
            }),
            Err(e) => Err(match e.code() {
                "timeout" if call.ctx.cancel.is_cancelled() => HostError::Cancelled,
                "timeout" => HostError::Timeout(found.def.timeout_seconds.unwrap_or(0)),
                "cancelled" => HostError::Cancelled,
                code @ ("out_of_memory" | "sandbox_crash") => HostError::Proc {
                    code: a2e_proto::ErrorCode::new(code),
                    message: e.to_string(),
                },
                "runtime_error" => HostError::Runtime(e.to_string()),
                _ => HostError::Skill(e.to_string()),
            }),
        }
    }
}

//! A skill reaches its host through `HostHandle`: tool and skill calls in the
//! skill's own session, refusals as `Err`, failures as results.

use a2e_host::plugin::{SkillCall, SkillOutput, SkillPlugin, Toolbox};
use a2e_host::{CallOptions, Host, HostConfig, HostError, HostResult};
use a2e_proto::{ErrorCode, SkillCallRequest, SkillDefinition, ToolCallRequest};
use serde_json::{Map, Value, json};

struct Caller;

impl SkillPlugin<HostError> for Caller {
    fn name(&self) -> &str {
        "caller"
    }

    fn skills(&self) -> Vec<SkillDefinition> {
        vec![
            SkillDefinition::new("outer", "Calls a tool and a skill"),
            SkillDefinition::new("inner", "Answers"),
        ]
    }

    async fn call(
        &self,
        skill: &str,
        _: Map<String, Value>,
        call: SkillCall<HostError>,
    ) -> HostResult<SkillOutput> {
        if skill == "inner" {
            return Ok(json!({"inner_session": call.ctx.session_id.to_string()}).into());
        }
        let echoed = call
            .host
            .call_tool(
                ToolCallRequest::new("echo", json!({"text": "hi"})),
                &call.ctx,
            )
            .await?;
        let unknown = call
            .host
            .call_tool(ToolCallRequest::new("no_such_tool", json!({})), &call.ctx)
            .await
            .err()
            .map(|e| e.code().to_string());
        let inner = SkillCallRequest {
            name: "inner".into(),
            ..Default::default()
        };
        let inner = call.host.call_skill(inner, &call.ctx).await?;
        if !echoed.success || !inner.success {
            return Err(HostError::Skill(format!("{echoed:?} {inner:?}")));
        }
        Ok(json!({"echoed": echoed.data, "unknown": unknown, "inner": inner.data}).into())
    }
}

#[tokio::test]
async fn a_skill_calls_tools_and_skills_through_its_host() {
    let tools =
        Toolbox::new("t").tool("echo", "Echoes", |args: Value, _cx| async move { Ok(args) });
    let host = Host::builder(HostConfig::default())
        .with_tool_plugin(tools)
        .with_skill_plugin(Caller)
        .build()
        .unwrap();
    host.register_session("s1", "agent");
    let req = SkillCallRequest {
        id: "r1".into(),
        name: "outer".into(),
        ..Default::default()
    };
    let result = host
        .call_skill(req, CallOptions::new().session("s1"))
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    assert_eq!(result.data["echoed"], json!({"text": "hi"}));
    assert_eq!(result.data["unknown"], ErrorCode::UNKNOWN_TOOL.to_string());
    assert_eq!(result.data["inner"]["inner_session"], "s1");
}

/// What the caller of `outer` hands its whole call, by type.
#[derive(Clone)]
struct Marker(&'static str);

#[tokio::test]
async fn a_calls_extensions_reach_the_calls_it_makes() {
    // The tool reports the marker its context carries, and whether the
    // skill reached the whole host through its own context.
    let tools = Toolbox::new("t").tool("echo", "Echoes", |_args: Value, cx| async move {
        let marker = cx.extensions.get::<Marker>().map(|m| m.0);
        Ok(json!({"text": marker}))
    });
    let host = Host::builder(HostConfig::default())
        .with_tool_plugin(tools)
        .with_skill_plugin(Caller)
        .build()
        .unwrap();
    let req = SkillCallRequest::new("outer", json!({}));
    let result = host
        .call_skill(req, CallOptions::new().extension(Marker("from-the-agent")))
        .await
        .unwrap();
    assert!(result.success, "{result:?}");
    assert_eq!(result.data["echoed"], json!({"text": "from-the-agent"}));
    // A direct tool call without it sees none.
    let direct = host
        .call_tool(ToolCallRequest::new("echo", json!({})), CallOptions::new())
        .await
        .unwrap();
    assert_eq!(direct.data, json!({"text": null}));
}

#[tokio::test]
async fn a_skill_call_carries_its_host_and_other_contexts_do_not() {
    struct Reach;
    impl SkillPlugin<HostError> for Reach {
        fn name(&self) -> &str {
            "reach"
        }
        fn skills(&self) -> Vec<SkillDefinition> {
            vec![SkillDefinition::new("reach", "Finds its host")]
        }
        async fn call(
            &self,
            _: &str,
            _: Map<String, Value>,
            call: SkillCall<HostError>,
        ) -> HostResult<SkillOutput> {
            let host = Host::of(&call.ctx)?;
            Ok(json!({"uptime": host.uptime_seconds() >= 0.0}).into())
        }
    }
    let host = Host::builder(HostConfig::default())
        .with_skill_plugin(Reach)
        .build()
        .unwrap();
    let result = host
        .call_skill(
            SkillCallRequest::new("reach", json!({})),
            CallOptions::new(),
        )
        .await
        .unwrap();
    assert_eq!(result.data, json!({"uptime": true}), "{result:?}");
    let detached = a2e_host::plugin::CallContext::detached();
    let refused = Host::of(&detached).err().map(|e| e.to_string());
    assert!(
        refused
            .as_deref()
            .is_some_and(|e| e.contains("inside an a2e host")),
        "{refused:?}"
    );
}

//! Provider configuration, the allow-list, and the mapping of `LLMConfig`.

use crate::common;

use a2e_llm::{
    CancellationToken, ChatProvider, ConfigError, ConfigSource, NoDeltas, ProviderConfig,
    ProviderKind, Providers,
};
use a2e_proto::LLMConfig;
use common::*;
use serde_json::{Value, json};

fn llm(value: Value) -> LLMConfig {
    serde_json::from_value(value).unwrap()
}

fn registry() -> Providers {
    let open: ProviderConfig = serde_json::from_value(json!({
        "name": "open", "kind": "openai", "base_url": "http://127.0.0.1:9/v1",
        "model": "small", "models": ["medium"], "api_key": FAKE_KEY,
        "agent_selectable": true, "temperature": 0.5
    }))
    .unwrap();
    let closed: ProviderConfig = serde_json::from_value(json!({
        "name": "closed", "kind": "anthropic", "base_url": "http://127.0.0.1:9/v1",
        "model": "claude-x", "api_key_env": "A2E_TEST_SOME_KEY_VAR"
    }))
    .unwrap();
    Providers::with_env(vec![open, closed], &|var| {
        (var == "A2E_TEST_SOME_KEY_VAR").then(|| "env-key-value-123".to_owned())
    })
    .unwrap()
}

fn refused(err: ConfigError, field: &str) {
    assert!(err.is_unauthorized(), "{err:?}");
    assert_eq!(err.field(), field);
    assert!(err.to_string().starts_with(field), "{err}");
}

#[test]
fn overrides_are_held_to_the_allow_list() {
    let p = registry();
    let unknown = llm(json!({"provider_name": "evil", "provider_credentials": {}}));
    refused(
        p.resolve(None, Some(&unknown)).unwrap_err(),
        "llm_override.provider_name",
    );
    let closed = llm(json!({"provider_name": "closed", "provider_credentials": {}}));
    refused(
        p.resolve(None, Some(&closed)).unwrap_err(),
        "llm_override.provider_name",
    );
    let big = llm(json!({"provider_name": "open", "provider_credentials": {},
        "provider_config": {"model": "huge"}}));
    refused(
        p.resolve(None, Some(&big)).unwrap_err(),
        "llm_override.provider_config.model",
    );
    let creds = llm(json!({"provider_name": "open", "provider_credentials": {"api_key": "mine"}}));
    refused(
        p.resolve(None, Some(&creds)).unwrap_err(),
        "llm_override.provider_credentials",
    );

    let ok = llm(
        json!({"provider_name": "open", "provider_credentials": {"api_key": "[REDACTED]"},
        "provider_config": {"model": "medium", "temperature": 0.1, "max_tokens": 99, "top_p": 0.9}}),
    );
    let r = p.resolve(None, Some(&ok)).unwrap();
    assert_eq!((r.provider.as_str(), r.model.as_str()), ("open", "medium"));
    assert_eq!(r.temperature, Some(0.1));
    assert_eq!(r.max_tokens, Some(99));
    assert_eq!(r.extra["top_p"], 0.9);
}

#[test]
fn skill_configs_may_use_any_configured_provider_and_model() {
    let p = registry();
    let skill = llm(
        json!({"provider_name": "closed", "provider_credentials": {},
        "provider_config": {"model": "claude-other"}}),
    );
    let r = p.resolve(Some(&skill), None).unwrap();
    assert_eq!(r.model, "claude-other");
    // An override wins over the skill's configuration.
    let o = llm(json!({"provider_name": "open", "provider_credentials": {}}));
    assert_eq!(p.resolve(Some(&skill), Some(&o)).unwrap().provider, "open");
    let missing = llm(json!({"provider_name": "nope", "provider_credentials": {}}));
    let err = p.resolve(Some(&missing), None).unwrap_err();
    assert!(!err.is_unauthorized());
    assert_eq!(err.field(), "llm_config.provider_name");
    // No configuration at all: the first provider, its defaults.
    let d = p.resolve(None, None).unwrap();
    assert_eq!(
        (d.provider.as_str(), d.model.as_str(), d.temperature),
        ("open", "small", Some(0.5))
    );
}

#[test]
fn bad_settings_name_their_field() {
    let p = registry();
    let cases = [
        (
            json!({"base_url": "http://elsewhere"}),
            "llm_config.provider_config.base_url",
        ),
        (
            json!({"temperature": 7}),
            "llm_config.provider_config.temperature",
        ),
        (
            json!({"max_tokens": -1}),
            "llm_config.provider_config.max_tokens",
        ),
        (json!({"model": ""}), "llm_config.provider_config.model"),
    ];
    for (config, field) in cases {
        let c = llm(
            json!({"provider_name": "open", "provider_credentials": {}, "provider_config": config}),
        );
        let err = p.resolve_one(&c, ConfigSource::Skill).unwrap_err();
        assert_eq!(err.field(), field, "{err}");
    }
    let c = llm(json!({"provider_name": "open", "provider_credentials": {"token": "x"}}));
    assert_eq!(
        p.resolve_one(&c, ConfigSource::Skill).unwrap_err().field(),
        "llm_config.provider_credentials.token"
    );
    let bad_url = ProviderConfig::new("x", ProviderKind::OpenAi, "ftp://host", "m");
    assert_eq!(
        Providers::new(vec![bad_url]).unwrap_err().field(),
        "providers.x.base_url"
    );
    let twice = ProviderConfig::new("x", ProviderKind::OpenAi, "http://h", "m");
    assert!(Providers::new(vec![twice.clone(), twice]).is_err());
    let unknown_field = serde_json::from_value::<ProviderConfig>(json!({
        "name": "x", "kind": "openai", "base_url": "http://h", "model": "m", "apikey": "typo"}));
    assert!(unknown_field.unwrap_err().to_string().contains("apikey"));
}

#[test]
fn debug_output_never_carries_credentials() {
    let p = registry();
    let text = format!("{p:?}");
    assert!(!text.contains(FAKE_KEY), "{text}");
    assert!(!text.contains("env-key-value-123"), "{text}");
    let r = p.resolve(None, None).unwrap();
    assert!(!format!("{r:?}").contains(FAKE_KEY));
}

#[tokio::test]
async fn keys_from_env_agent_credentials_and_headers_reach_the_server() {
    let server = Server::start(vec![
        Scripted::json(anthropic_text("one")),
        Scripted::json(openai_text("two")),
    ]);
    let mut a = config(ProviderKind::Anthropic, &server);
    a.name = "a".into();
    a.api_key = None;
    a.api_key_env = Some("A2E_TEST_ANTHROPIC_KEY_VAR".into());
    a.anthropic_version = Some("2024-01-01".into());
    let mut o = config(ProviderKind::OpenAi, &server);
    o.name = "o".into();
    o.agent_selectable = true;
    o.accept_agent_credentials = true;
    o.headers.insert("x-org".into(), "org-secret-header".into());
    let p = Providers::with_env(vec![a, o], &|var| {
        (var == "A2E_TEST_ANTHROPIC_KEY_VAR").then(|| "from-env-key".to_owned())
    })
    .unwrap();
    let cancel = CancellationToken::new();
    let ra = p.resolve(None, None).unwrap();
    ra.client
        .chat(
            &ra.request(vec![a2e_llm::Message::user("hi")], vec![]),
            &mut NoDeltas,
            &cancel,
        )
        .await
        .unwrap();
    let agent =
        llm(json!({"provider_name": "o", "provider_credentials": {"api_key": "agent-own-key"}}));
    let ro = p.resolve(None, Some(&agent)).unwrap();
    ro.client
        .chat(
            &ro.request(vec![a2e_llm::Message::user("hi")], vec![]),
            &mut NoDeltas,
            &cancel,
        )
        .await
        .unwrap();
    let got = server.received();
    assert_eq!(got[0].headers["x-api-key"], "from-env-key");
    assert_eq!(got[0].headers["anthropic-version"], "2024-01-01");
    assert_eq!(got[1].headers["authorization"], "Bearer agent-own-key");
    assert_eq!(got[1].headers["x-org"], "org-secret-header");
    assert!(!format!("{p:?} {ro:?}").contains("org-secret-header"));
}

#[test]
fn base_url_and_model_may_come_from_the_environment() {
    let from_env: ProviderConfig = serde_json::from_value(json!({
        "name": "env", "kind": "openai",
        "base_url_env": "A2E_TEST_BASE", "model_env": "A2E_TEST_MODEL",
        "model": "fallback-model"
    }))
    .unwrap();
    let env = |var: &str| match var {
        "A2E_TEST_BASE" => Some("http://127.0.0.1:9/v1".to_owned()),
        _ => None,
    };
    let p = Providers::with_env(vec![from_env.clone()], &env).unwrap();
    let r = p.resolve(None, None).unwrap();
    // The unset model variable leaves the configured model in place.
    assert_eq!(r.model, "fallback-model");
    assert_eq!(p.config("env").unwrap().base_url, "http://127.0.0.1:9/v1");
    // Neither the variable nor a value: an error naming the field and the variable.
    let err = Providers::with_env(vec![from_env], &|_| None).unwrap_err();
    assert_eq!(err.field(), "providers.env.base_url");
    assert!(err.to_string().contains("A2E_TEST_BASE"), "{err}");
    let no_model: ProviderConfig = serde_json::from_value(
        json!({"name": "m", "kind": "openai", "base_url": "http://127.0.0.1:9/v1"}),
    )
    .unwrap();
    let err = Providers::with_env(vec![no_model], &|_| None).unwrap_err();
    assert_eq!(err.field(), "providers.m.model");
}

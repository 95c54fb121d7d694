//! Tools: every field of a tool definition (tools spec, ToolDefinition and
//! ToolParameter), each of the spec's types, and for the fixture profile's
//! tools the values the profile declares ([`crate::profile::declared_tools`]).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Cx, HostScenario};
use crate::check::{CheckDef, must, should};
use crate::profile::{self, ECHO, TOOLKIT};
use crate::scenario::{Area, Fixture, On, Outcome, Scenario};
use crate::session::Session;
use crate::wire::show;

pub(super) const SCENARIOS: &[HostScenario] = &[
    Scenario {
        name: "tools/served",
        area: Area::Tools,
        about: "Lists the tools of a session that accepted `tools`, whatever it offers: the list is answered and every definition has the spec's types.",
        needs: &[Fixture::Cap("tools")],
        on: On::All,
        checks: SERVED,
        run: crate::run_fn!(Cx, served),
    },
    Scenario {
        name: "tools/definitions",
        area: Area::Tools,
        about: "Lists every tool, searches the profile's deferred ones, and holds each definition of the profile's tools to what the profile declares.",
        needs: &[Fixture::Cap("tools"), Fixture::Tool(ECHO)],
        on: On::All,
        checks: DEFINITIONS,
        run: crate::run_fn!(Cx, definitions),
    },
];

#[rustfmt::skip]
const SERVED: &[CheckDef] = &[
    must("tools.served.list", "tools: tool/list/req", "a session that accepted `tools` gets its list: a tool/list/resp whose `tools` is a list, not an error"),
    must("tools.served.fields", "tools: ToolDefinition", "every listed definition has a string name and description and the spec's field types"),
];

/// A host that accepted `tools` answers its list, whether or not it offers
/// the fixture profile: a host that refuses it fails here instead of only
/// skipping every scenario that needs a fixture.
async fn served(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let req = s.req("tool/list/req", json!({}));
    let r = s.request(req).await?;
    let tools = r.at("/tools").as_array().cloned();
    cx.check(
        "tools.served.list",
        r.ty() == "tool/list/resp" && tools.is_some(),
        "a tool/list/resp with a list of tools",
        r.show(),
    );
    let Some(tools) = tools else {
        cx.fail(
            "tools.served.fields",
            "definitions to check",
            "no tool list was answered",
        );
        return Ok(());
    };
    if tools.is_empty() {
        // A host may offer no tool at all; its empty list breaks nothing.
        cx.pass("tools.served.fields");
    }
    for def in tools {
        let named = def.get("name").is_some_and(Value::is_string)
            && def.get("description").is_some_and(Value::is_string);
        let problem = if named {
            definition_problem(&def)
        } else {
            Some("no string name and description".to_owned())
        };
        cx.check(
            "tools.served.fields",
            problem.is_none(),
            "the spec's field types",
            format!("{}: {}", problem.unwrap_or_default(), show(&def)),
        );
    }
    Ok(())
}

#[rustfmt::skip]
const DEFINITIONS: &[CheckDef] = &[
    must("tools.def.fields", "tools: ToolDefinition", "every definition's fields have the spec's types: parameter lists, boolean streaming, idempotent and defer_loading, string tags, a string version, a string or null toolkit"),
    must("tools.def.fixtures-listed", "tools: tool/list/req", "every tool of the fixture profile is listed (a deferred one by a search with include_deferred)"),
    must("tools.def.fixture-parameters", "tools: ToolParameter", "each profile tool's input and output parameters are the declared ones: names, types, required, enum, properties"),
    must("tools.def.fixture-flags", "tools: ToolDefinition", "each profile tool's streaming, idempotent and defer_loading are as declared (an absent flag reads as the spec's default)"),
    must("tools.def.fixture-tags", "tools: ToolDefinition", "each profile tool carries the tags the profile declares"),
    must("tools.def.fixture-version", "tools: ToolDefinition", "each profile tool's version is the declared one (absent reads as 1.0.0)"),
    should("tools.def.fixture-toolkit", "tools: ToolDefinition", "each profile tool's toolkit is absent, null, or the plugin's name `conformance`"),
];

/// A field, the test its value must pass, and what that test asks, in words.
pub(crate) type FieldRule = (&'static str, fn(&Value) -> bool, &'static str);

/// The spec's default of each optional field of a ToolDefinition.
fn default_of(field: &str) -> Value {
    match field {
        "input_parameters" | "output_parameters" | "tags" => json!([]),
        "streaming" => json!(true),
        "idempotent" | "defer_loading" => json!(false),
        "version" => json!("1.0.0"),
        _ => Value::Null,
    }
}

/// `def`'s `field`, or the spec's default when it is absent.
fn field(def: &Value, name: &str) -> Value {
    def.get(name).cloned().unwrap_or_else(|| default_of(name))
}

/// What is wrong with the types of `def`'s optional fields, if anything.
pub(crate) fn definition_problem(def: &Value) -> Option<String> {
    let Some(obj) = def.as_object() else {
        return Some("not an object".into());
    };
    let is_list_of_objects =
        |v: &Value| v.as_array().is_some_and(|a| a.iter().all(Value::is_object));
    let checks: [FieldRule; 6] = [
        ("streaming", Value::is_boolean, "a boolean"),
        ("idempotent", Value::is_boolean, "a boolean"),
        ("defer_loading", Value::is_boolean, "a boolean"),
        ("version", Value::is_string, "a string"),
        (
            "toolkit",
            |v| v.is_string() || v.is_null(),
            "a string or null",
        ),
        (
            "tags",
            |v| v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
            "a list of strings",
        ),
    ];
    for (name, ok, what) in checks {
        if let Some(v) = obj.get(name)
            && !ok(v)
        {
            return Some(format!("{name} is {}, not {what}", show(v)));
        }
    }
    for name in ["input_parameters", "output_parameters"] {
        if let Some(v) = obj.get(name)
            && !is_list_of_objects(v)
        {
            return Some(format!("{name} is {}, not a list of parameters", show(v)));
        }
    }
    None
}

/// A parameter reduced to what the profile declares of it (its description
/// is the host's to word): type, required, enum and properties, spec
/// defaults filled in, nested properties reduced alike.
fn reduced(param: &Value) -> Value {
    let properties = match param.get("properties") {
        Some(Value::Object(props)) => Value::Object(
            props
                .iter()
                .map(|(k, v)| (k.clone(), reduced(v)))
                .collect::<Map<String, Value>>(),
        ),
        Some(other) => other.clone(),
        None => Value::Null,
    };
    json!({
        "type": param.get("type").cloned().unwrap_or(Value::Null),
        "required": param.get("required").cloned().unwrap_or(json!(false)),
        "enum": param.get("enum").cloned().unwrap_or(Value::Null),
        "properties": properties,
    })
}

/// A parameter list by name, each reduced (a name twice keeps the last, so
/// a list with a duplicate never equals a declared one without).
fn by_name(params: &Value) -> (BTreeMap<String, Value>, usize) {
    let list = params.as_array().cloned().unwrap_or_default();
    let map = list
        .iter()
        .map(|p| {
            let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
            (name.to_owned(), reduced(p))
        })
        .collect();
    (map, list.len())
}

/// Where `listed`'s parameters differ from `declared`'s, if they do.
fn parameters_differ(listed: &Value, declared: &Value) -> Option<String> {
    for name in ["input_parameters", "output_parameters"] {
        let (got, n) = by_name(&field(listed, name));
        let (want, _) = by_name(&field(declared, name));
        if got != want || n != want.len() {
            return Some(format!(
                "{name}: declared {}, listed {}",
                show(&json!(want)),
                show(&field(listed, name))
            ));
        }
    }
    None
}

/// Every tool a plain list gives, and the profile's tools found by a search
/// with include_deferred (the deferred one is only found so).
async fn listing(s: &mut Session) -> Result<(Vec<Value>, Vec<Value>), crate::scenario::Abort> {
    let plain = s.req("tool/list/req", json!({}));
    let r = s.request(plain).await?;
    let all = r.at("/tools").as_array().cloned().unwrap_or_default();
    let search = s.req(
        "tool/list/req",
        json!({"query": "conformance", "include_deferred": true}),
    );
    let r = s.request(search).await?;
    let found = r.at("/tools").as_array().cloned().unwrap_or_default();
    Ok((all, found))
}

async fn definitions(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let (all, found) = listing(&mut s).await?;
    for def in all.iter().chain(found.iter()) {
        let problem = definition_problem(def);
        cx.check(
            "tools.def.fields",
            problem.is_none(),
            "the spec's field types",
            format!("{}: {}", problem.unwrap_or_default(), show(def)),
        );
    }
    let listed = |name: &str| {
        all.iter()
            .chain(found.iter())
            .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
            .cloned()
    };
    for declared in profile::declared_tools() {
        let name = declared.name.clone();
        let declared = serde_json::to_value(&declared).unwrap_or_default();
        let Some(def) = listed(&name) else {
            cx.fail(
                "tools.def.fixtures-listed",
                format!("{name} listed"),
                "not in the list nor in a search with include_deferred",
            );
            continue;
        };
        cx.pass("tools.def.fixtures-listed");
        let differ = parameters_differ(&def, &declared);
        cx.check(
            "tools.def.fixture-parameters",
            differ.is_none(),
            format!("{name}'s declared parameters"),
            differ.unwrap_or_default(),
        );
        for flag in ["streaming", "idempotent", "defer_loading"] {
            let (got, want) = (field(&def, flag), field(&declared, flag));
            cx.check(
                "tools.def.fixture-flags",
                got == want,
                format!("{name}: {flag} {want}"),
                format!("{flag} {got}"),
            );
        }
        let tags = field(&def, "tags");
        let has = |t: &Value| tags.as_array().is_some_and(|a| a.contains(t));
        let want = field(&declared, "tags");
        cx.check(
            "tools.def.fixture-tags",
            want.as_array().into_iter().flatten().all(has),
            format!("{name}: tags {want}"),
            format!("tags {tags}"),
        );
        let (got, want) = (field(&def, "version"), field(&declared, "version"));
        cx.check(
            "tools.def.fixture-version",
            got == want,
            format!("{name}: version {want}"),
            format!("version {got}"),
        );
        let toolkit = field(&def, "toolkit");
        cx.check(
            "tools.def.fixture-toolkit",
            toolkit.is_null() || toolkit == TOOLKIT,
            format!("{name}: toolkit null or {TOOLKIT}"),
            format!("toolkit {toolkit}"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echo() -> Value {
        let declared = profile::declared_tools();
        serde_json::to_value(declared.iter().find(|d| d.name == ECHO).unwrap()).unwrap()
    }

    #[test]
    fn the_declared_definition_matches_itself_and_a_changed_one_does_not() {
        let declared = echo();
        assert_eq!(definition_problem(&declared), None);
        assert_eq!(parameters_differ(&declared, &declared), None);

        let mut reworded = declared.clone();
        reworded["input_parameters"][0]["description"] = json!("other words");
        assert_eq!(parameters_differ(&reworded, &declared), None);

        let mut optional = declared.clone();
        optional["input_parameters"][0]["required"] = json!(false);
        assert!(parameters_differ(&optional, &declared).is_some());

        let mut twice = declared.clone();
        let text = twice["input_parameters"][0].clone();
        twice["input_parameters"].as_array_mut().unwrap().push(text);
        assert!(parameters_differ(&twice, &declared).is_some());

        let mut outputs = declared.clone();
        outputs["output_parameters"] =
            json!([{"name": "text", "type": "string", "description": "d"}]);
        assert!(parameters_differ(&outputs, &declared).is_some());
    }

    #[test]
    fn absent_fields_read_as_the_spec_defaults_and_wrong_types_are_named() {
        let bare = json!({"name": ECHO, "description": "d"});
        assert_eq!(field(&bare, "streaming"), json!(true));
        assert_eq!(field(&bare, "version"), json!("1.0.0"));
        assert_eq!(definition_problem(&bare), None);
        let bad = json!({"name": "x", "description": "d", "idempotent": "yes"});
        assert!(definition_problem(&bad).unwrap().contains("idempotent"));
        let bad = json!({"name": "x", "description": "d", "tags": [1]});
        assert!(definition_problem(&bad).unwrap().contains("tags"));
        let bad = json!({"name": "x", "description": "d", "output_parameters": ["p"]});
        assert!(
            definition_problem(&bad)
                .unwrap()
                .contains("output_parameters")
        );
    }
}

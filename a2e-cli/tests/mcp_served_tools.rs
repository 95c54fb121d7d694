//! What `a2e serve --mcp-stdio` lists and answers, as the clients people use
//! (Claude Desktop, the OpenAI tool API) need it: every tool name matches
//! `^[a-zA-Z0-9_-]{1,64}$` (skills are `skill__NAME`, other names mapped and
//! called back), the built-ins carry titles, annotations and output schemas
//! their results hold to, skills their `when_to_use` and parameter
//! descriptions, and a tool or skill that cannot run under the configuration
//! is not listed. The client is plain JSON-RPC lines on the binary's stdio.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Map, Value, json};

/// A workspace with the example notes and skills, and two skills whose names
/// break the rule: one with a dot, one of 80 characters.
fn workspace() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/workspace");
    for dir in ["notes", "skills"] {
        std::fs::create_dir_all(root.path().join(dir)).unwrap();
        for entry in std::fs::read_dir(examples.join(dir)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), root.path().join(dir).join(entry.file_name())).unwrap();
        }
    }
    let find_todos = std::fs::read_to_string(examples.join("skills/find_todos.md")).unwrap();
    for (file, name) in [("dotted.md", "notes.todos"), ("long.md", LONG)] {
        let text = find_todos.replacen("name: find_todos", &format!("name: {name}"), 1);
        std::fs::write(root.path().join("skills").join(file), text).unwrap();
    }
    root
}

const LONG: &str = "find_every_todo_marker_in_the_notes_of_the_workspace_and_list_them_all_by_file";

/// One MCP connection to `a2e serve --mcp-stdio`, initialized.
struct Mcp {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Mcp {
    /// Serves `root` with `config` (TOML) to a client declaring `capabilities`.
    fn start(root: &Path, config: &str, capabilities: Value) -> Self {
        let config_path = root.join("a2e.toml");
        std::fs::write(&config_path, config).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_a2e"))
            .args(["serve", "--mcp-stdio", "--root"])
            .arg(root)
            .arg("--config")
            .arg(&config_path)
            .env_remove("A2E_LLM_BASE_URL")
            .env_remove("A2E_LLM_MODEL")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut mcp = Self {
            child,
            stdin,
            stdout,
            next: 0,
        };
        let init = mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": capabilities,
                   "clientInfo": {"name": "names-test", "version": "1"}}),
        );
        assert_eq!(init["serverInfo"]["name"], "a2e", "{init}");
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The result of `method`, skipping the notifications before it.
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the host closed stdout before answering {method}"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }

    fn tools(&mut self) -> Vec<Value> {
        let listed = self.request("tools/list", json!({}));
        listed["tools"].as_array().unwrap().clone()
    }

    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn valid(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool `{name}` in {tools:?}"))
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().filter_map(|t| t["name"].as_str()).collect()
}

/// Whether `value` has the JSON type `ty` (a name, or a list of names).
fn has_type(value: &Value, ty: &Value) -> bool {
    match ty {
        Value::Array(any) => any.iter().any(|t| has_type(value, t)),
        Value::String(t) => match t.as_str() {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "boolean" => value.is_boolean(),
            "null" => value.is_null(),
            other => panic!("type {other}"),
        },
        _ => true,
    }
}

/// Checks `value` against the parts of JSON Schema the host's output schemas
/// use (`type`, `properties`, `items`); what is wrong, by JSON pointer.
fn violations(value: &Value, schema: &Map<String, Value>, at: &str, out: &mut Vec<String>) {
    if let Some(ty) = schema.get("type")
        && !has_type(value, ty)
    {
        out.push(format!("{at}: {value} is not {ty}"));
        return;
    }
    if let (Some(props), Some(obj)) = (
        schema.get("properties").and_then(Value::as_object),
        value.as_object(),
    ) {
        for (key, sub) in props {
            if let (Some(v), Some(sub)) = (obj.get(key), sub.as_object()) {
                violations(v, sub, &format!("{at}/{key}"), out);
            }
        }
    }
    if let (Some(items), Some(list)) = (
        schema.get("items").and_then(Value::as_object),
        value.as_array(),
    ) {
        for (i, v) in list.iter().enumerate() {
            violations(v, items, &format!("{at}/{i}"), out);
        }
    }
}

/// Calls `name` and checks its `structuredContent` against its listed
/// `outputSchema`; the result.
fn call_checked(mcp: &mut Mcp, tools: &[Value], name: &str, arguments: Value) -> Value {
    let result = mcp.call(name, arguments);
    assert_eq!(result["isError"], false, "{name}: {result}");
    let schema = tool(tools, name)["outputSchema"]
        .as_object()
        .unwrap_or_else(|| panic!("{name} has no outputSchema"))
        .clone();
    let structured = &result["structuredContent"];
    assert!(structured.is_object(), "{name}: {result}");
    let mut wrong = Vec::new();
    violations(structured, &schema, "", &mut wrong);
    assert!(wrong.is_empty(), "{name}: {wrong:?} in {result}");
    result
}

#[test]
fn every_name_served_matches_the_tool_apis_rule_and_calls_back() {
    let root = workspace();
    let mut mcp = Mcp::start(root.path(), "", json!({}));
    let tools = mcp.tools();
    let listed = names(&tools);
    let bad: Vec<&&str> = listed.iter().filter(|n| !valid(n)).collect();
    assert!(bad.is_empty(), "names breaking the rule: {bad:?}");
    for expected in [
        "read_file",
        "memory_search",
        "skill__find_todos",
        "skill__aggregate_stats",
        "skill__notes__todos",
    ] {
        assert!(listed.contains(&expected), "{expected} in {listed:?}");
    }
    let long: Vec<&&str> = listed
        .iter()
        .filter(|n| n.starts_with("skill__find_every_todo"))
        .collect();
    assert_eq!(long.len(), 1, "{listed:?}");
    assert_eq!(long[0].len(), 64, "{long:?}");

    // Each listed name calls what it was listed for; the old `skill.NAME`
    // still calls the skill.
    for name in [
        "skill__find_todos",
        "skill__notes__todos",
        long[0],
        "skill.find_todos",
    ] {
        let result = mcp.call(name, json!({"pattern": "TODO"}));
        assert_eq!(result["isError"], false, "{name}: {result}");
        let text = result["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("TODO"), "{name}: {result}");
    }
}

#[test]
fn builtins_carry_titles_annotations_and_output_schemas_their_results_hold_to() {
    let root = workspace();
    let config = "[commands]\nallow = [\"echo\"]\n[http]\nallow_hosts = [\"127.0.0.1\"]\n";
    let mut mcp = Mcp::start(root.path(), config, json!({}));
    let tools = mcp.tools();
    for reader in [
        "read_file",
        "list_dir",
        "glob",
        "grep",
        "memory_search",
        "split_text",
        "text_stats",
        "transform",
    ] {
        let t = tool(&tools, reader);
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
        assert_eq!(t["annotations"]["openWorldHint"], false, "{t}");
        assert!(t["title"].as_str().is_some_and(|s| !s.is_empty()), "{t}");
        assert!(t["outputSchema"].is_object(), "{t}");
    }
    for writer in ["write_file", "run_command", "http_request", "memory_delete"] {
        let t = tool(&tools, writer);
        assert_eq!(t["annotations"]["readOnlyHint"], false, "{t}");
        assert_eq!(t["annotations"]["destructiveHint"], true, "{t}");
    }
    let write = tool(&tools, "memory_write");
    assert_eq!(write["annotations"]["destructiveHint"], false, "{write}");
    assert_eq!(
        tool(&tools, "http_request")["annotations"]["openWorldHint"],
        true
    );
    assert_eq!(tool(&tools, "run_command")["title"], "Run command");

    // The results hold to the schemas advertised (clients check them).
    std::fs::write(root.path().join("notes/big.txt"), "x".repeat(100)).unwrap();
    call_checked(
        &mut mcp,
        &tools,
        "read_file",
        json!({"path": "notes/big.txt", "limit": 10}),
    );
    call_checked(
        &mut mcp,
        &tools,
        "write_file",
        json!({"path": "out.txt", "content": "hi"}),
    );
    call_checked(&mut mcp, &tools, "list_dir", json!({"path": "notes"}));
    call_checked(&mut mcp, &tools, "glob", json!({"pattern": "**/*.md"}));
    call_checked(&mut mcp, &tools, "grep", json!({"pattern": "TODO"}));
    let echo = call_checked(
        &mut mcp,
        &tools,
        "run_command",
        json!({"argv": ["echo", "hi"]}),
    );
    assert_eq!(echo["structuredContent"]["exit_code"], 0, "{echo}");
    call_checked(&mut mcp, &tools, "split_text", json!({"text": "a. b."}));
    call_checked(&mut mcp, &tools, "text_stats", json!({"text": "a b a"}));
    call_checked(
        &mut mcp,
        &tools,
        "transform",
        json!({"expression": "a", "data": {"a": 1}}),
    );
    let stored = call_checked(
        &mut mcp,
        &tools,
        "memory_write",
        json!({"namespace": "agent.mcp.notes", "content": "the plan"}),
    );
    call_checked(
        &mut mcp,
        &tools,
        "memory_search",
        json!({"namespaces": ["agent.mcp.notes"], "query": "plan"}),
    );
    let id = stored["structuredContent"]["id"].clone();
    call_checked(&mut mcp, &tools, "memory_delete", json!({"id": id}));
}

#[test]
fn skills_carry_when_to_use_and_their_parameters_descriptions() {
    let root = workspace();
    // A client with sampling: LLM skills run on its model, so they are listed.
    let mut mcp = Mcp::start(root.path(), "", json!({"sampling": {}}));
    let tools = mcp.tools();
    let todos = tool(&tools, "skill__find_todos");
    let description = todos["description"].as_str().unwrap();
    assert!(
        description.starts_with("Find TODO markers")
            && description
                .contains("Use when the agent needs the open items written down in notes"),
        "{todos}"
    );
    assert_eq!(todos["title"], "find_todos", "{todos}");
    let notes = tool(&tools, "skill__summarise_notes");
    assert_eq!(
        notes["inputSchema"]["properties"]["folder"]["description"],
        "The folder of notes, relative to the workspace",
        "{notes}"
    );
    // An LLM skill's answer is checked against its output schema, so it is
    // advertised.
    assert_eq!(
        notes["outputSchema"]["required"],
        json!(["summary", "todos"]),
        "{notes}"
    );
    assert!(todos.get("outputSchema").is_none(), "{todos}");
}

#[test]
fn what_cannot_run_under_the_configuration_is_not_listed() {
    let root = workspace();
    // No command or host allowed, no model provider, a client without
    // sampling: run_command, http_request and the LLM skill cannot run.
    let mut mcp = Mcp::start(root.path(), "", json!({}));
    let listed = mcp.tools();
    let listed = names(&listed);
    for absent in ["run_command", "http_request", "skill__summarise_notes"] {
        assert!(!listed.contains(&absent), "{absent} in {listed:?}");
    }
    assert!(listed.contains(&"skill__find_todos"), "{listed:?}");
    // A call by name still says why it fails.
    let denied = mcp.call("run_command", json!({"argv": ["echo", "hi"]}));
    assert_eq!(denied["isError"], true, "{denied}");

    // An LLM skill naming a provider the host does not have is left out too,
    // even for a client that samples.
    let config = "[[llm.providers]]\nname = \"local\"\nkind = \"openai\"\n\
        base_url = \"http://127.0.0.1:9\"\nmodel = \"m\"\n";
    let skill = "---\nname: elsewhere\ndescription: Needs another model\n\
        llm_config: remote\n---\nAnswer.\n";
    std::fs::write(root.path().join("skills/elsewhere.md"), skill).unwrap();
    let mut mcp = Mcp::start(root.path(), config, json!({"sampling": {}}));
    let listed = mcp.tools();
    let listed = names(&listed);
    assert!(!listed.contains(&"skill__elsewhere"), "{listed:?}");
    assert!(listed.contains(&"skill__summarise_notes"), "{listed:?}");
}

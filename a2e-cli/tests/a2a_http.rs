//! `a2e serve --a2a` over plain HTTP: the card's cache validators, what is
//! checked before a body is read (version, media type: 415 on HTTP+JSON),
//! `[a2a] default_skill` for a message that names none, file parts refused,
//! and the errors of the catalogue by code.

use std::process::Command;

use serde_json::{Value, json};

use crate::a2a_durable::call;
use crate::mcp_conformance_support::{Server, start};

fn host(root: &std::path::Path) -> Server {
    let skills = root.join("skills");
    std::fs::create_dir_all(&skills).unwrap();
    for name in ["echo", "other"] {
        let text = format!(
            "---\nname: {name}\ndescription: Answers with its arguments\n\
             command: [sh, -c, \"read -r args; echo \\\"{{\\\\\\\"result\\\\\\\": {{\\\\\\\"{name}\\\\\\\": $args}}}}\\\"\"]\n---\nEchoes.\n"
        );
        std::fs::write(skills.join(format!("{name}.md")), text).unwrap();
    }
    let config = root.join("a2e.toml");
    std::fs::write(&config, "[a2a]\ndefault_skill = \"echo\"\n").unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--a2a", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--root")
        .arg(root);
    start(cmd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_is_cached_requests_are_checked_and_errors_have_their_codes() {
    let root = tempfile::tempdir().unwrap();
    let server = host(root.path());
    let http = a2e_http::ClientOptions::default().build().unwrap();
    let card_url = format!("{}/.well-known/agent-card.json", server.url);

    let first = http.get(&card_url).send().await.unwrap();
    assert_eq!(first.status(), 200);
    let etag = first.headers()["etag"].to_str().unwrap().to_owned();
    let modified = first.headers()["last-modified"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(modified.ends_with(" GMT"), "{modified}");
    let again = http
        .get(&card_url)
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);

    // HTTP+JSON: a body that is not JSON is 415, named.
    let text = http
        .post(format!("{}/message:send", server.url))
        .header("A2A-Version", "1.0")
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(text.status(), 415);
    let body: Value = text.json().await.unwrap();
    assert_eq!(
        body["error"]["details"][0]["reason"], "CONTENT_TYPE_NOT_SUPPORTED",
        "{body}"
    );

    // A message naming no skill goes to the default one.
    let message = json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"data": {"n": 7}}]});
    let sent = call(&server.url, "SendMessage", json!({"message": message}))
        .await
        .unwrap();
    let task = &sent["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    assert_eq!(
        task["artifacts"][0]["parts"][0]["data"]["echo"]["n"], 7,
        "{sent}"
    );
    assert_eq!(task["history"][0]["taskId"], task["id"], "{sent}");

    // A file part is refused before anything runs, whichever the skill.
    let file = json!({"messageId": "m-2", "role": "ROLE_USER",
        "parts": [{"raw": "dGNr", "mediaType": "application/x-unsupported"}]});
    let refused = call(&server.url, "SendMessage", json!({"message": file}))
        .await
        .unwrap_err();
    assert_eq!(refused["code"], -32005, "{refused}");

    // The catalogue, by code.
    let unknown = call(&server.url, "GetTask", json!({"id": "no-such-task"}))
        .await
        .unwrap_err();
    assert_eq!(unknown["code"], -32001, "{unknown}");
    let push = call(
        &server.url,
        "GetTaskPushNotificationConfig",
        json!({"taskId": "t", "id": "c"}),
    )
    .await
    .unwrap_err();
    // Push notifications are served: the config of an unknown task is the task's error.
    assert_eq!(push["code"], -32001, "{push}");
    let method = call(&server.url, "NoSuchMethod", json!({}))
        .await
        .unwrap_err();
    assert_eq!(method["code"], -32601, "{method}");
    let old = http
        .post(format!("{}/", server.url))
        .header("content-type", "application/json")
        .body(
            json!({"jsonrpc": "2.0", "id": 9, "method": "GetTask", "params": {"id": "x"}})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    let old: Value = old.json().await.unwrap();
    assert_eq!(old["error"]["code"], -32009, "{old}");
    assert_eq!(old["id"], 9, "{old}");
}

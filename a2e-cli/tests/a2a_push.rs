//! Push notifications to a loopback webhook of this test, set with the
//! official A2A Python SDK (`tests/a2a/push.py`) over both bindings: a
//! config set while a task works, and one given with the message; each post
//! carries the task's event, the config's token and credentials; configs
//! read, listed and deleted, their secrets redacted in every answer and in
//! `a2e runs show`; a webhook host not on `[http] allow_hosts` refused.

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderMap;
use serde_json::Value;

use crate::a2a_sdk::{python, run_script, state};
use crate::mcp_conformance_support::{Server, start};

/// One post the webhook received: its path, headers and JSON body.
#[derive(Debug, Clone)]
struct Post {
    path: String,
    token: Option<String>,
    authorization: Option<String>,
    body: Value,
}

type Posts = Arc<Mutex<Vec<Post>>>;

/// A webhook on a free loopback port recording every post, on `runtime`.
fn webhook(runtime: &tokio::runtime::Runtime) -> (String, Posts) {
    let posts: Posts = Arc::default();
    let record = posts.clone();
    let app = axum::Router::new().fallback(
        move |uri: axum::http::Uri, headers: HeaderMap, body: axum::body::Bytes| {
            let record = record.clone();
            async move {
                let header = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned)
                };
                record.lock().unwrap().push(Post {
                    path: uri.path().to_owned(),
                    token: header("x-a2a-notification-token"),
                    authorization: header("authorization"),
                    body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                });
                "ok"
            }
        },
    );
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), posts)
}

fn workspace(root: &Path) {
    let skills = root.join("skills");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(
        skills.join("later.md"),
        "---\nname: later\ndescription: Answers after a second\n\
         command: [sh, -c, \"read -r args; sleep 1; echo '{\\\"result\\\": {\\\"late\\\": true}}'\"]\n\
         ---\nTakes a second.\n",
    )
    .unwrap();
    std::fs::write(
        skills.join("echo.md"),
        "---\nname: echo\ndescription: Answers with its arguments\n\
         command: [sh, -c, \"read -r args; echo \\\"{\\\\\\\"result\\\\\\\": $args}\\\"\"]\n\
         ---\nEchoes.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("a2e.toml"),
        "[http]\nallow_hosts = [\"127.0.0.1\"]\n",
    )
    .unwrap();
}

fn host(root: &Path) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2e"));
    cmd.args(["serve", "--a2a", "127.0.0.1:0", "--config"])
        .arg(root.join("a2e.toml"))
        .arg("--root")
        .arg(root);
    start(cmd)
}

/// The posts to `path` once one of them tells its task completed.
fn until_completed(posts: &Posts, path: &str) -> Vec<Post> {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let to: Vec<Post> = posts
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.path == path)
            .cloned()
            .collect();
        let done = to
            .iter()
            .any(|p| p.body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED");
        if done {
            return to;
        }
        assert!(
            Instant::now() < end,
            "no completed task posted to {path}: {to:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_a2a_client_sets_webhooks_that_get_the_tasks_events() {
    let test = "an_a2a_client_sets_webhooks_that_get_the_tasks_events";
    let Some(python) = python(test) else { return };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (hook, posts) = webhook(&runtime);
    let root = tempfile::tempdir().unwrap();
    workspace(root.path());
    let server = host(root.path());
    for binding in ["JSONRPC", "HTTP+JSON"] {
        let seen = run_script(&python, "push.py", &server.url, binding, &[&hook]);
        let tag = binding.replace('+', "");
        assert_eq!(seen["capabilities"]["pushNotifications"], true, "{seen}");

        // Answers never carry the secrets.
        for answer in [
            &seen["created"],
            &seen["got"],
            &seen["listed"]["configs"][0],
        ] {
            assert_eq!(answer["id"], "hook-1", "{binding}: {answer}");
            assert_eq!(answer["token"], "[REDACTED]", "{binding}: {answer}");
            assert_eq!(
                answer["authentication"]["credentials"], "[REDACTED]",
                "{binding}: {answer}"
            );
            assert_eq!(answer["authentication"]["scheme"], "Bearer");
        }
        assert_eq!(
            state(&seen["later_after"]),
            "TASK_STATE_COMPLETED",
            "{binding}"
        );

        // The webhook set while the task worked got its events, to its end.
        let set = until_completed(&posts, &format!("/{tag}/set"));
        for post in &set {
            assert_eq!(post.token.as_deref(), Some("tok-1"), "{post:?}");
            assert_eq!(post.authorization.as_deref(), Some("Bearer cred-1"));
            let update = post.body.as_object().unwrap().values().next().unwrap();
            assert_eq!(update["taskId"], seen["later"], "{post:?}");
        }
        let artifact = set
            .iter()
            .find_map(|p| p.body.get("artifactUpdate"))
            .unwrap_or_else(|| panic!("{binding}: no artifact posted in {set:?}"));
        assert_eq!(artifact["artifact"]["parts"][0]["data"]["late"], true);

        // The one given with the message too.
        let sent = until_completed(&posts, &format!("/{tag}/sent"));
        assert!(sent.iter().all(|p| p.token.as_deref() == Some("tok-2")));
        assert!(sent.iter().all(|p| p.authorization.is_none()));
        let artifact = sent.iter().find_map(|p| p.body.get("artifactUpdate"));
        assert_eq!(
            artifact.unwrap()["artifact"]["parts"][0]["data"]["word"],
            "pushed"
        );

        // Deleted; refused.
        assert!(
            seen["listed_after_delete"]
                .get("configs")
                .is_none_or(|c| c.as_array().unwrap().is_empty()),
            "{binding}: {}",
            seen["listed_after_delete"]
        );
        let refused = seen["not_allowed"].to_string();
        assert!(refused.contains("allow_hosts"), "{binding}: {refused}");
        let unknown = seen["unknown"].to_string();
        assert!(unknown.contains("hook-9"), "{binding}: {unknown}");

        // The journal holds the secrets; `a2e runs show` does not show them.
        let shown = Command::new(env!("CARGO_BIN_EXE_a2e"))
            .args(["runs", "show", seen["later"].as_str().unwrap(), "--root"])
            .arg(root.path())
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&shown.stdout);
        assert!(shown.contains("hook-1"), "{shown}");
        assert!(
            !shown.contains("tok-1") && !shown.contains("cred-1"),
            "{shown}"
        );
    }
}

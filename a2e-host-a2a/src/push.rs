//! Push notifications: the webhooks a client sets for a task, and the
//! delivery of the task's events to them.
//!
//! A task's configurations are records of its run (`@push`, attempt `n`:
//! the `n`th set; finished when deleted or replaced), so any host with the
//! journal creates, reads, lists and deletes them, and the host running the
//! task (after a restart, or another of the cluster) delivers to them. They
//! hold the token and credentials the client gave (they go to the webhook);
//! nothing reads them back: answers and `a2e runs show` give them redacted.
//!
//! A webhook's host must be on `[http] allow_hosts`, as `http_request`'s:
//! checked when the configuration is set and before each delivery. Each
//! event (`StreamResponse` JSON, as the task's stream gives it) is posted to
//! each webhook in order, with `X-A2A-Notification-Token` and
//! `Authorization: SCHEME CREDENTIALS` when set; a failed post (no answer,
//! 429, 5xx) is tried again on the shared backoff, [`ATTEMPTS`] times.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use a2a_proto::{
    A2aError, ErrorKind, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, StreamResponse, TaskPushNotificationConfig,
};
use a2e_host_core::host::Host;
use a2e_journal::{NodeKey, NodeOutcome, NodeStart, RunId, RunState};
use serde_json::json;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::A2aAgent;

/// The node of a task's run that holds its push configurations.
const PUSH_NODE: &str = "@push";

/// How many times an event is posted to a webhook that fails.
pub const ATTEMPTS: u32 = 3;

/// How long one post may take.
const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a running task's configurations are read again (another host
/// of the cluster may have set one).
const REREAD: Duration = Duration::from_secs(1);

/// Most configurations a task has.
const MAX_CONFIGS: usize = 16;

fn journal_error(e: impl std::fmt::Display) -> A2aError {
    A2aError::new(ErrorKind::Internal, format!("run journal: {e}"))
}

/// The configurations of task run `state` in force, oldest first, with the
/// attempt of the record that holds each.
fn configs(state: &RunState) -> Vec<(u32, TaskPushNotificationConfig)> {
    let mut out: Vec<_> = state
        .nodes
        .iter()
        .filter(|r| r.node_id == PUSH_NODE && r.outcome.is_none())
        .filter_map(|r| {
            let input = r.start.as_ref()?.input.clone()?;
            Some((r.attempt, serde_json::from_value(input).ok()?))
        })
        .collect();
    out.sort_by_key(|(n, _)| *n);
    out
}

/// `config` as answered: its token and credentials redacted.
fn shown(mut config: TaskPushNotificationConfig) -> TaskPushNotificationConfig {
    let redacted = a2e_host_core::redact::REDACTED;
    if !config.token.is_empty() {
        config.token = redacted.to_owned();
    }
    if let Some(auth) = config.authentication.as_mut()
        && !auth.credentials.is_empty()
    {
        auth.credentials = redacted.to_owned();
    }
    config
}

/// Refuses a webhook URL that `[http] allow_hosts` does not let the host
/// post to.
pub(crate) fn allowed(host: &Host, url: &str) -> Result<(), A2aError> {
    allowed_url(host, url).map(|_| ())
}

/// The URL of a webhook, when `[http] allow_hosts` lets the host post to it.
fn allowed_url(host: &Host, url: &str) -> Result<reqwest::Url, A2aError> {
    let parsed = reqwest::Url::parse(url).map_err(|e| {
        A2aError::new(
            ErrorKind::InvalidParams,
            format!("the push notification url `{url}` is no URL: {e}"),
        )
    })?;
    a2e_http::HostAllowList::new(&host.config().http.allow_hosts)
        .check(&parsed)
        .map_err(|e| {
            A2aError::new(
                ErrorKind::InvalidParams,
                format!(
                    "the push notification url `{url}`: {e} (webhooks go only to the hosts of \
                     [http] allow_hosts)"
                ),
            )
        })?;
    Ok(parsed)
}

/// `CreateTaskPushNotificationConfig` (and a `SendMessage`'s configuration):
/// sets `config` for its task, replacing one of the same id.
pub(crate) async fn create(
    agent: &A2aAgent,
    mut config: TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig, A2aError> {
    let host = &agent.host;
    let state = crate::tasks::find(host, &config.task_id).await?;
    allowed_url(host, &config.url)?;
    let journal = host
        .journal()
        .ok_or_else(|| A2aError::of(ErrorKind::TaskNotFound))?;
    if config.id.is_empty() {
        config.id = uuid::Uuid::new_v4().to_string();
    }
    let run = state.summary.run_id.clone();
    let set = configs(&state);
    if set.len() >= MAX_CONFIGS && !set.iter().any(|(_, c)| c.id == config.id) {
        return Err(A2aError::new(
            ErrorKind::InvalidParams,
            format!("task `{run}` has {MAX_CONFIGS} push notification configs already"),
        ));
    }
    for (n, _) in set.iter().filter(|(_, c)| c.id == config.id) {
        let key = NodeKey::new(run.clone(), PUSH_NODE, *n).map_err(journal_error)?;
        journal
            .node_finished(&key, &NodeOutcome::output(json!({"replaced": true})))
            .await
            .map_err(journal_error)?;
    }
    let n = state
        .nodes
        .iter()
        .filter(|r| r.node_id == PUSH_NODE)
        .map(|r| r.attempt)
        .max()
        .unwrap_or(0)
        + 1;
    let key = NodeKey::new(run, PUSH_NODE, n).map_err(journal_error)?;
    let value = serde_json::to_value(&config).map_err(journal_error)?;
    journal
        .node_started_with(&key, &NodeStart::with_input(value))
        .await
        .map_err(journal_error)?;
    agent.pushes.store(true, Ordering::Relaxed);
    Ok(shown(config))
}

/// The configuration `id` of task `task` in force, with its record's attempt.
async fn find(
    host: &Host,
    task: &str,
    id: &str,
) -> Result<(RunId, u32, TaskPushNotificationConfig), A2aError> {
    let state = crate::tasks::find(host, task).await?;
    configs(&state)
        .into_iter()
        .find(|(_, c)| c.id == id)
        .map(|(n, c)| (state.summary.run_id.clone(), n, c))
        .ok_or_else(|| {
            A2aError::new(
                ErrorKind::InvalidParams,
                format!("task `{task}` has no push notification config `{id}`"),
            )
        })
}

/// `GetTaskPushNotificationConfig`.
pub(crate) async fn get(
    host: &Host,
    task: &str,
    id: &str,
) -> Result<TaskPushNotificationConfig, A2aError> {
    Ok(shown(find(host, task, id).await?.2))
}

/// `DeleteTaskPushNotificationConfig`: idempotent — a config that is not
/// there (deleted before, or never set) is deleted; an unknown task is not.
pub(crate) async fn delete(host: &Host, task: &str, id: &str) -> Result<(), A2aError> {
    let state = crate::tasks::find(host, task).await?;
    let Some((n, _)) = configs(&state).into_iter().find(|(_, c)| c.id == id) else {
        return Ok(());
    };
    let run = state.summary.run_id.clone();
    let journal = host
        .journal()
        .ok_or_else(|| A2aError::of(ErrorKind::TaskNotFound))?;
    let key = NodeKey::new(run, PUSH_NODE, n).map_err(journal_error)?;
    journal
        .node_finished(&key, &NodeOutcome::output(json!({"deleted": true})))
        .await
        .map_err(journal_error)?;
    Ok(())
}

/// `ListTaskPushNotificationConfigs`: in the order they were set, paged
/// (the page token is the position of the page's first config).
pub(crate) async fn list(
    host: &Host,
    req: &ListTaskPushNotificationConfigsRequest,
) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
    let state = crate::tasks::find(host, &req.task_id).await?;
    let start = crate::tasks::page_start(&req.page_token)?;
    let size = usize::try_from(req.page_size)
        .ok()
        .filter(|n| *n > 0)
        .unwrap_or(MAX_CONFIGS);
    let all = configs(&state);
    let next = start.saturating_add(size);
    Ok(ListTaskPushNotificationConfigsResponse {
        configs: all
            .iter()
            .skip(start)
            .take(size)
            .map(|(_, c)| shown(c.clone()))
            .collect(),
        next_page_token: if next < all.len() {
            next.to_string()
        } else {
            String::new()
        },
    })
}

/// Delivers the events of task `task` (from `events`) to its webhooks
/// until its last (a status of a final state), or until its events end.
pub(crate) async fn deliver(
    agent: Arc<A2aAgent>,
    task: RunId,
    mut events: broadcast::Receiver<StreamResponse>,
) {
    let http = match a2e_http::ClientOptions::default()
        .redirects(a2e_http::Redirects::None)
        .build()
    {
        Ok(http) => http,
        Err(e) => {
            tracing::warn!(task = %task, "a2a: no client for push notifications: {e}");
            return;
        }
    };
    let mut set: Vec<TaskPushNotificationConfig> = Vec::new();
    let mut read_at: Option<tokio::time::Instant> = None;
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(RecvError::Lagged(missed)) => {
                tracing::warn!(task = %task, missed, "a2a: push notifications fell behind");
                continue;
            }
            Err(RecvError::Closed) => return,
        };
        let last = match &event {
            StreamResponse::StatusUpdate(update) => update.status.state.is_terminal(),
            _ => false,
        };
        // Read again now and then, and for the last event (a config set
        // on another host reaches the task's end at least).
        let stale = read_at.is_none_or(|at| at.elapsed() >= REREAD);
        if agent.pushes.load(Ordering::Relaxed) && (stale || last) {
            if let Some(journal) = agent.host.journal()
                && let Ok(Some(state)) = journal.show_run(&task).await
            {
                set = configs(&state).into_iter().map(|(_, c)| c).collect();
            }
            read_at = Some(tokio::time::Instant::now());
        }
        for config in &set {
            post(&agent.host, &http, &task, config, &event).await;
        }
        if last {
            return;
        }
    }
}

/// Posts `event` to `config`'s webhook, trying again on the shared backoff.
async fn post(
    host: &Host,
    http: &reqwest::Client,
    task: &RunId,
    config: &TaskPushNotificationConfig,
    event: &StreamResponse,
) {
    let Ok(url) = allowed_url(host, &config.url) else {
        tracing::warn!(task = %task, config = %config.id, "a2a: a webhook not on [http] allow_hosts is skipped");
        return;
    };
    let body = serde_json::to_vec(event).unwrap_or_default();
    let backoff = a2e_http::Backoff::new(Duration::from_millis(200), Duration::from_secs(2));
    for attempt in 0..ATTEMPTS {
        let mut request = http
            .post(url.clone())
            .timeout(POST_TIMEOUT)
            .header(
                reqwest::header::CONTENT_TYPE,
                a2a_proto::headers::MEDIA_TYPE_JSON,
            )
            .body(body.clone());
        if !config.token.is_empty() {
            request = request.header("X-A2A-Notification-Token", &config.token);
        }
        if let Some(auth) = &config.authentication
            && !auth.credentials.is_empty()
        {
            request = request.header(
                reqwest::header::AUTHORIZATION,
                format!("{} {}", auth.scheme, auth.credentials),
            );
        }
        let retry_after = match request.send().await {
            Ok(resp) if resp.status().is_success() => return,
            Ok(resp)
                if resp.status() == reqwest::StatusCode::TOO_MANY_REQUESTS
                    || resp.status().is_server_error() =>
            {
                a2e_http::retry_after(resp.headers())
            }
            Ok(resp) => {
                tracing::warn!(task = %task, config = %config.id, status = %resp.status(),
                    "a2a: a webhook refused a push notification");
                return;
            }
            Err(e) => {
                tracing::debug!(task = %task, config = %config.id, "a2a: push failed: {}",
                    a2e_http::describe(&e));
                None
            }
        };
        if attempt + 1 < ATTEMPTS {
            tokio::time::sleep(backoff.delay_after(attempt + 1, retry_after)).await;
        }
    }
    tracing::warn!(task = %task, config = %config.id, "a2a: a push notification was not delivered after {ATTEMPTS} attempts");
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_proto::AuthenticationInfo;

    #[test]
    fn answers_never_carry_the_token_or_credentials() {
        let config = TaskPushNotificationConfig {
            id: "c".into(),
            token: "tok".into(),
            authentication: Some(AuthenticationInfo {
                scheme: "Bearer".into(),
                credentials: "secret".into(),
            }),
            ..TaskPushNotificationConfig::new("http://127.0.0.1:9/hook")
        };
        let shown = serde_json::to_string(&shown(config)).unwrap();
        assert!(
            !shown.contains("tok\"") && !shown.contains("secret"),
            "{shown}"
        );
        assert!(shown.contains("Bearer") && shown.contains("[REDACTED]"));
    }
}

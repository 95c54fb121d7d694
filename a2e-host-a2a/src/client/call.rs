//! One call of a remote agent's skill: the message sent, the task followed
//! to its end (streamed, or waited for), its artifacts as the output; the
//! remote task cancelled when the call is.

use std::time::Duration;

use a2a_proto::{
    A2aRequest, CancelTaskRequest, JsonRpcRequest, JsonRpcResponse, Message, Part, PartContent,
    SendMessageRequest, SendMessageResponse, StreamResponse, Task, TaskState,
};
use a2e_plugin::{CallContext, Error, SkillOutput};
use a2e_proto::EventKind;
use futures::StreamExt;
use serde_json::{Map, Value, json};

use super::RemoteAgent;

/// How long the cancel of a remote task may take.
const CANCEL_TIMEOUT: Duration = Duration::from_secs(5);

/// A JSON-RPC request of `request` to `agent`, with the current trace
/// context.
fn post(
    http: &reqwest::Client,
    agent: &RemoteAgent,
    request: &A2aRequest,
) -> reqwest::RequestBuilder {
    let id = uuid::Uuid::new_v4().to_string();
    let mut builder = http
        .post(&agent.endpoint)
        .header(a2a_proto::VERSION_HEADER, a2a_proto::PROTOCOL_VERSION)
        .header(
            reqwest::header::CONTENT_TYPE,
            a2a_proto::headers::MEDIA_TYPE_JSON,
        )
        .body(serde_json::to_vec(&JsonRpcRequest::new(id, request)).unwrap_or_default());
    if let Some(token) = &agent.token {
        builder = builder.bearer_auth(token);
    }
    // The call's trace context (its `execute_tool` span's), so that the
    // remote agent's work joins the caller's trace.
    if let Some(trace) = a2e_telemetry::TraceContext::current() {
        let mut headers = reqwest::header::HeaderMap::new();
        trace.to_headers(&mut headers);
        builder = builder.headers(headers);
    }
    builder
}

/// What the remote task's artifacts give: one data part is the output as
/// it is; else the data parts as a list and the text parts joined.
fn output_of(task: &Task) -> SkillOutput {
    let mut data = Vec::new();
    let mut texts = Vec::new();
    for part in task.artifacts.iter().flat_map(|a| &a.parts) {
        match &part.content {
            PartContent::Data(value) => data.push(value.clone()),
            PartContent::Text(text) => texts.push(text.clone()),
            PartContent::Url(url) => texts.push(url.clone()),
            PartContent::Raw(_) => {}
        }
    }
    let summary = if texts.is_empty() {
        Value::Null
    } else {
        Value::from(texts.join("\n"))
    };
    let data = match data.len() {
        0 => summary.clone(),
        1 => data.pop().unwrap_or(Value::Null),
        _ => Value::Array(data),
    };
    SkillOutput {
        data,
        summary,
        truncated: false,
    }
}

/// The text of a status's message, if it has one.
fn status_text(message: Option<&Message>) -> String {
    message
        .into_iter()
        .flat_map(|m| &m.parts)
        .filter_map(Part::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// How the remote task ended, as the call's outcome.
fn ended(agent: &RemoteAgent, task: &Task) -> Result<SkillOutput, Error> {
    let why = status_text(task.status.message.as_ref());
    match task.status.state {
        TaskState::Completed => Ok(output_of(task)),
        TaskState::Canceled => Err(Error::Cancelled),
        state => Err(Error::failed(format!(
            "the agent `{}` ended its task {} {}{}",
            agent.name,
            task.id,
            state.as_str(),
            if why.is_empty() {
                String::new()
            } else {
                format!(": {why}")
            }
        ))),
    }
}

/// Sends the arguments of the call to `remote` of `agent` and follows its
/// task to its end.
pub(super) async fn run(
    http: &reqwest::Client,
    agent: &RemoteAgent,
    remote: &str,
    args: Map<String, Value>,
    ctx: &CallContext,
) -> Result<SkillOutput, Error> {
    let mut message = Message::new(
        uuid::Uuid::new_v4().to_string(),
        a2a_proto::Role::User,
        vec![Part::data(Value::Object(args))],
    );
    message.metadata = json!({"skill": remote}).as_object().cloned();
    let send = SendMessageRequest::new(message);
    let mut task_id = String::new();
    let work = async {
        if agent.streaming {
            stream(http, agent, send, ctx, &mut task_id).await
        } else {
            wait(http, agent, send).await
        }
    };
    // Past its deadline, or cancelled, the call cancels the remote task.
    let error = tokio::select! {
        out = work => return out,
        () = ctx.cancel.cancelled() => Error::Cancelled,
        () = tokio::time::sleep(agent.timeout) => Error::TimedOut { secs: agent.timeout.as_secs() },
    };
    if !task_id.is_empty() {
        cancel(http, agent, &task_id).await;
    }
    Err(error)
}

fn failed_http(agent: &RemoteAgent, e: &reqwest::Error) -> Error {
    Error::failed(format!(
        "the agent `{}`: {}",
        agent.name,
        a2e_http::describe(e)
    ))
}

/// How many times a request is sent to an agent that cannot be reached or
/// is busy.
const ATTEMPTS: u32 = 3;

/// Sends the request `build` makes, again on the shared backoff while the
/// agent cannot be reached (the request never arrived, so nothing runs
/// twice) or answers 429 or 503 (at its `Retry-After`): at most
/// [`ATTEMPTS`] times.
async fn send(
    agent: &RemoteAgent,
    build: impl Fn() -> reqwest::RequestBuilder,
) -> Result<reqwest::Response, Error> {
    let backoff = a2e_http::Backoff::new(Duration::from_millis(200), Duration::from_secs(2));
    let mut attempt = 0;
    loop {
        attempt += 1;
        let busy = |status: reqwest::StatusCode| {
            status == reqwest::StatusCode::TOO_MANY_REQUESTS
                || status == reqwest::StatusCode::SERVICE_UNAVAILABLE
        };
        let retry_after = match build().send().await {
            Ok(resp) if busy(resp.status()) && attempt < ATTEMPTS => {
                a2e_http::retry_after(resp.headers())
            }
            Ok(resp) => return Ok(resp),
            Err(e) if e.is_connect() && attempt < ATTEMPTS => None,
            Err(e) => return Err(failed_http(agent, &e)),
        };
        tokio::time::sleep(backoff.delay_after(attempt, retry_after)).await;
    }
}

/// `SendMessage`, waited for.
async fn wait(
    http: &reqwest::Client,
    agent: &RemoteAgent,
    send: SendMessageRequest,
) -> Result<SkillOutput, Error> {
    let request = A2aRequest::SendMessage(send);
    let resp = self::send(agent, || post(http, agent, &request)).await?;
    let body = resp.bytes().await.map_err(|e| failed_http(agent, &e))?;
    let answer: JsonRpcResponse<SendMessageResponse> = a2a_proto::decode(&body).map_err(|e| {
        Error::failed(format!(
            "the agent `{}` answered no A2A response: {e}",
            agent.name
        ))
    })?;
    match answer.into_result() {
        Ok(SendMessageResponse::Task(task)) => ended(agent, &task),
        Ok(SendMessageResponse::Message(message)) => {
            Ok(SkillOutput::from(Value::from(status_text(Some(&message)))))
        }
        Err(e) => Err(Error::failed(format!("the agent `{}`: {e}", agent.name))),
    }
}

/// `SendStreamingMessage`: each status a `status` event of the call, the
/// artifacts gathered, to the final status.
async fn stream(
    http: &reqwest::Client,
    agent: &RemoteAgent,
    send: SendMessageRequest,
    ctx: &CallContext,
    task_id: &mut String,
) -> Result<SkillOutput, Error> {
    let request = A2aRequest::SendStreamingMessage(send);
    let resp = self::send(agent, || {
        post(http, agent, &request).header(
            reqwest::header::ACCEPT,
            a2a_proto::headers::MEDIA_TYPE_EVENT_STREAM,
        )
    })
    .await?;
    let mut events = sse_stream::SseByteStream::new(resp.bytes_stream());
    let mut task = Task::default();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| Error::failed(format!("the agent `{}`: {e}", agent.name)))?;
        let Some(data) = event.data.filter(|d| !d.trim().is_empty()) else {
            continue;
        };
        let answer: JsonRpcResponse<StreamResponse> =
            a2a_proto::decode(data.as_bytes()).map_err(|e| {
                Error::failed(format!(
                    "the agent `{}` streamed no A2A event: {e}",
                    agent.name
                ))
            })?;
        let item = answer
            .into_result()
            .map_err(|e| Error::failed(format!("the agent `{}`: {e}", agent.name)))?;
        match item {
            StreamResponse::Task(first) => {
                task_id.clone_from(&first.id);
                task = first;
            }
            StreamResponse::Message(message) => {
                return Ok(SkillOutput::from(Value::from(status_text(Some(&message)))));
            }
            StreamResponse::StatusUpdate(update) => {
                task_id.clone_from(&update.task_id);
                task.id.clone_from(&update.task_id);
                let mut data = Map::new();
                data.insert("state".into(), Value::from(update.status.state.as_str()));
                let text = status_text(update.status.message.as_ref());
                if !text.is_empty() {
                    data.insert("message".into(), Value::from(text));
                }
                ctx.emit(EventKind::STATUS, data).await;
                let last =
                    update.status.state.is_terminal() || update.status.state.is_interrupted();
                task.status = update.status;
                if last {
                    return ended(agent, &task);
                }
            }
            StreamResponse::ArtifactUpdate(update) => {
                match task
                    .artifacts
                    .iter_mut()
                    .find(|a| a.artifact_id == update.artifact.artifact_id)
                {
                    Some(artifact) if update.append => artifact.parts.extend(update.artifact.parts),
                    Some(artifact) => *artifact = update.artifact,
                    None => task.artifacts.push(update.artifact),
                }
            }
        }
    }
    Err(Error::failed(format!(
        "the agent `{}` ended its stream before its task ended",
        agent.name
    )))
}

/// `CancelTask` of the remote task (its answer is not waited for past
/// [`CANCEL_TIMEOUT`]).
async fn cancel(http: &reqwest::Client, agent: &RemoteAgent, task_id: &str) {
    let request = A2aRequest::CancelTask(CancelTaskRequest {
        id: task_id.to_owned(),
        ..CancelTaskRequest::default()
    });
    let sent = post(http, agent, &request)
        .timeout(CANCEL_TIMEOUT)
        .send()
        .await;
    if let Err(e) = sent {
        tracing::warn!(agent = %agent.name, task = task_id, "a2a: the remote task was not cancelled: {}", a2e_http::describe(&e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An agent on loopback that answers 503 (`Retry-After: 0`) `busy`
    /// times, then a completed task; it counts the requests.
    async fn busy_agent(
        busy: usize,
    ) -> (RemoteAgent, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let seen = std::sync::Arc::new(AtomicUsize::new(0));
        let count = seen.clone();
        let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
            let count = count.clone();
            async move {
                let n = count.fetch_add(1, Ordering::SeqCst);
                if n < busy {
                    return axum::response::IntoResponse::into_response((
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        [("retry-after", "0")],
                        "busy",
                    ));
                }
                let id = serde_json::from_slice::<Value>(&body).unwrap()["id"].clone();
                let task = json!({"id": "t", "contextId": "c",
                    "status": {"state": "TASK_STATE_COMPLETED"},
                    "artifacts": [{"artifactId": "a", "parts": [{"data": {"ok": true}}]}]});
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"task": task}});
                axum::response::IntoResponse::into_response(axum::Json(answer))
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}/", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let agent = RemoteAgent {
            name: "busy".into(),
            endpoint,
            token: None,
            streaming: false,
            timeout: Duration::from_secs(10),
            skills: Vec::new(),
        };
        (agent, seen)
    }

    fn hello() -> SendMessageRequest {
        SendMessageRequest::new(Message::new(
            "m",
            a2a_proto::Role::User,
            vec![Part::text("hi")],
        ))
    }

    #[tokio::test]
    async fn a_busy_agent_is_asked_again_on_the_backoff() {
        let http = a2e_http::ClientOptions::default().build().unwrap();
        let (agent, seen) = busy_agent(2).await;
        let out = wait(&http, &agent, hello()).await.unwrap();
        assert_eq!(out.data, json!({"ok": true}));
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 3);
        // Busy past the attempts: the call fails, naming the agent.
        let (agent, seen) = busy_agent(5).await;
        let error = wait(&http, &agent, hello()).await.unwrap_err();
        assert_eq!(
            seen.load(std::sync::atomic::Ordering::SeqCst),
            ATTEMPTS as usize
        );
        assert!(error.to_string().contains("busy"), "{error}");
    }

    #[test]
    fn one_data_part_is_the_output_and_texts_are_its_summary() {
        let task: Task = a2a_proto::decode_value(
            json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "a", "parts": [{"data": {"n": 1}}, {"text": "one"}]}]}),
        )
        .unwrap();
        let out = output_of(&task);
        assert_eq!((out.data, out.summary), (json!({"n": 1}), json!("one")));
        let texts: Task = a2a_proto::decode_value(json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "a"}]}, {"artifactId": "b", "parts": [{"text": "b"}]}]}))
            .unwrap();
        assert_eq!(output_of(&texts).data, json!("a\nb"));
    }
}

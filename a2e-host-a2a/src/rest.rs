//! The HTTP+JSON binding: the specification's routes (`POST
//! /message:send`, `GET /tasks/{id}`, `POST /tasks/{id}:cancel`, …, each
//! also under a `/{tenant}` prefix), JSON bodies, errors as HTTP statuses
//! with the `{"error": …}` body; a streaming operation answers with
//! server-sent events, each a `StreamResponse`.

use std::collections::HashMap;
use std::sync::Arc;

use a2a_proto::{
    A2aError, A2aRequest, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, ErrorKind,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, HttpMethod,
    ListTaskPushNotificationConfigsRequest, ListTasksRequest, Operation, RouteError,
    SubscribeToTaskRequest, TaskState,
};
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use crate::A2aAgent;
use crate::ops::Answer;

fn error(e: &A2aError) -> Response {
    let (status, body) = e.to_http();
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(body)).into_response()
}

/// A query parameter as a number, or the error naming it.
fn number(query: &HashMap<String, String>, name: &str) -> Result<Option<i32>, A2aError> {
    query
        .get(name)
        .map(|v| {
            v.parse::<i32>().map_err(|_| {
                A2aError::new(
                    ErrorKind::InvalidParams,
                    format!("{name} must be a number, not `{v}`"),
                )
            })
        })
        .transpose()
}

/// The request of a `GET` route (its parameters in the path and query).
fn from_query(
    operation: Operation,
    id: String,
    config_id: String,
    query: &HashMap<String, String>,
) -> Result<A2aRequest, A2aError> {
    Ok(match operation {
        Operation::GetTask => A2aRequest::GetTask(GetTaskRequest {
            id,
            history_length: number(query, "historyLength")?,
            ..GetTaskRequest::default()
        }),
        Operation::ListTasks => {
            let status = match query.get("status") {
                Some(name) => Some(
                    serde_json::from_value::<TaskState>(serde_json::Value::from(name.as_str()))
                        .map_err(|_| {
                            A2aError::new(
                                ErrorKind::InvalidParams,
                                format!("status `{name}` is no task state"),
                            )
                        })?,
                ),
                None => None,
            };
            let include_artifacts = match query.get("includeArtifacts").map(String::as_str) {
                Some("true") => Some(true),
                Some("false") => Some(false),
                None => None,
                Some(other) => {
                    return Err(A2aError::new(
                        ErrorKind::InvalidParams,
                        format!("includeArtifacts must be true or false, not `{other}`"),
                    ));
                }
            };
            A2aRequest::ListTasks(ListTasksRequest {
                context_id: query.get("contextId").cloned().unwrap_or_default(),
                status,
                page_size: number(query, "pageSize")?,
                page_token: query.get("pageToken").cloned().unwrap_or_default(),
                history_length: number(query, "historyLength")?,
                status_timestamp_after: query.get("statusTimestampAfter").cloned(),
                include_artifacts,
                ..ListTasksRequest::default()
            })
        }
        Operation::SubscribeToTask => A2aRequest::SubscribeToTask(SubscribeToTaskRequest {
            id,
            ..SubscribeToTaskRequest::default()
        }),
        Operation::GetTaskPushNotificationConfig => {
            A2aRequest::GetTaskPushNotificationConfig(GetTaskPushNotificationConfigRequest {
                task_id: id,
                id: config_id,
                ..GetTaskPushNotificationConfigRequest::default()
            })
        }
        Operation::DeleteTaskPushNotificationConfig => {
            A2aRequest::DeleteTaskPushNotificationConfig(DeleteTaskPushNotificationConfigRequest {
                task_id: id,
                id: config_id,
                ..DeleteTaskPushNotificationConfigRequest::default()
            })
        }
        Operation::ListTaskPushNotificationConfigs => {
            A2aRequest::ListTaskPushNotificationConfigs(ListTaskPushNotificationConfigsRequest {
                task_id: id,
                page_size: number(query, "pageSize")?.unwrap_or(0),
                page_token: query.get("pageToken").cloned().unwrap_or_default(),
                ..ListTaskPushNotificationConfigsRequest::default()
            })
        }
        _ => {
            return Err(A2aError::new(
                ErrorKind::UnsupportedOperation,
                format!("{operation} is not served at GET"),
            ));
        }
    })
}

/// Every path but the card and `POST /`.
pub(crate) async fn serve(
    State(agent): State<Arc<A2aAgent>>,
    method: Method,
    uri: Uri,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let matched = match a2a_proto::route_request(method.as_str(), uri.path()) {
        Ok(matched) => matched,
        Err(RouteError::NotFound) => {
            return error(&A2aError::new(
                ErrorKind::MethodNotFound,
                format!("no A2A operation at {}", uri.path()),
            ));
        }
        Err(RouteError::MethodNotAllowed { allowed }) => {
            let allow: Vec<&str> = allowed.iter().map(|m| m.as_str()).collect();
            let mut response = (StatusCode::METHOD_NOT_ALLOWED, "").into_response();
            if let Ok(value) = HeaderValue::from_str(&allow.join(", ")) {
                response.headers_mut().insert(header::ALLOW, value);
            }
            return response;
        }
    };
    if let Err(refused) = crate::checks::check(&agent.host.config().auth_token, &headers) {
        let mut response = error(&refused.error());
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return response;
    }
    if let Err(e) = crate::checks::version(&headers) {
        return error(&e);
    }
    // A body of another media type: HTTP 415, the status HTTP gives it
    // (the error's own status is 400).
    if !body.is_empty()
        && let Err(e) = crate::checks::json_body(&headers)
    {
        let mut response = error(&e);
        *response.status_mut() = StatusCode::UNSUPPORTED_MEDIA_TYPE;
        return response;
    }
    let id = matched.id.clone().unwrap_or_default();
    let request = if method == Method::GET
        || HttpMethod::parse(method.as_str()) == Some(HttpMethod::Delete)
    {
        // A query that does not decode is read as none: its parameters
        // are then missing, which the operation names.
        let query: HashMap<String, String> = query
            .as_deref()
            .and_then(|q| serde_urlencoded::from_str::<Vec<(String, String)>>(q).ok())
            .map(|pairs| pairs.into_iter().collect())
            .unwrap_or_default();
        let config_id = matched.config_id.clone().unwrap_or_default();
        from_query(matched.operation, id, config_id, &query)
    } else {
        match matched.operation {
            Operation::CancelTask if body.is_empty() => {
                Ok(A2aRequest::CancelTask(CancelTaskRequest {
                    id,
                    ..CancelTaskRequest::default()
                }))
            }
            Operation::SubscribeToTask if body.is_empty() => {
                from_query(matched.operation, id, String::new(), &HashMap::new())
            }
            operation => crate::checks::json_body(&headers).and_then(|()| {
                let mut params: serde_json::Value = if body.is_empty() {
                    serde_json::json!({})
                } else {
                    serde_json::from_slice(&body).map_err(|e| {
                        A2aError::new(ErrorKind::JsonParse, format!("the body is no JSON: {e}"))
                    })?
                };
                if let (Some(object), false) = (params.as_object_mut(), id.is_empty()) {
                    let key = if operation == Operation::CreateTaskPushNotificationConfig {
                        "taskId"
                    } else {
                        "id"
                    };
                    object.insert(key.into(), serde_json::Value::from(id.clone()));
                }
                A2aRequest::decode(operation, params).map_err(A2aError::from)
            }),
        }
    };
    let request = match request {
        Ok(request) => request,
        Err(e) => return error(&e),
    };
    match crate::ops::run(&agent, request, &headers).await {
        Ok(Answer::Json(result)) => axum::Json(result).into_response(),
        Ok(Answer::Stream(events)) => {
            let events = events.map(|event| Event::default().json_data(event));
            Sse::new(events)
                .keep_alive(KeepAlive::default())
                .into_response()
        }
        Err(e) => error(&e),
    }
}

//! The HTTP+JSON/REST binding's routes (spec §11.3, the proto's
//! `google.api.http` options): which operation a method and path call, and
//! the path of an operation's request. Every route also exists under a
//! leading `/{tenant}` segment.

use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};

use crate::operations::Operation;

/// An HTTP method of the binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpMethod {
    /// `GET`: parameters in the path and the query.
    Get,
    /// `POST`: the request message as the JSON body.
    Post,
    /// `DELETE`: parameters in the path.
    Delete,
}

impl HttpMethod {
    /// The method's name, e.g. `GET`.
    pub const fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Post => "POST",
            HttpMethod::Delete => "DELETE",
        }
    }

    /// The method of a name (ASCII case-insensitive).
    pub fn parse(name: &str) -> Option<HttpMethod> {
        [HttpMethod::Get, HttpMethod::Post, HttpMethod::Delete]
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(name))
    }
}

/// One route: an operation at a method and a path template. `{id}` is the
/// task's id (`id` or `taskId` in the request message), `{configId}` a push
/// notification config's id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpRoute {
    /// The operation called.
    pub operation: Operation,
    /// The method.
    pub method: HttpMethod,
    /// The path template, without the optional `/{tenant}` prefix.
    pub path: &'static str,
    /// The route clients use; a non-canonical route is only accepted.
    pub canonical: bool,
}

const fn route(operation: Operation, method: HttpMethod, path: &'static str) -> HttpRoute {
    HttpRoute {
        operation,
        method,
        path,
        canonical: true,
    }
}

/// Every route. `SubscribeToTask` is `POST` in spec §11.3 and §5.3 (and in
/// the Python SDK's client and the TCK) but `GET` in the proto's HTTP
/// annotation, so `GET` is accepted as well.
pub const ROUTES: [HttpRoute; 12] = [
    route(Operation::SendMessage, HttpMethod::Post, "/message:send"),
    route(
        Operation::SendStreamingMessage,
        HttpMethod::Post,
        "/message:stream",
    ),
    route(Operation::GetTask, HttpMethod::Get, "/tasks/{id}"),
    route(Operation::ListTasks, HttpMethod::Get, "/tasks"),
    route(
        Operation::CancelTask,
        HttpMethod::Post,
        "/tasks/{id}:cancel",
    ),
    route(
        Operation::SubscribeToTask,
        HttpMethod::Post,
        "/tasks/{id}:subscribe",
    ),
    HttpRoute {
        canonical: false,
        ..route(
            Operation::SubscribeToTask,
            HttpMethod::Get,
            "/tasks/{id}:subscribe",
        )
    },
    route(
        Operation::CreateTaskPushNotificationConfig,
        HttpMethod::Post,
        "/tasks/{id}/pushNotificationConfigs",
    ),
    route(
        Operation::GetTaskPushNotificationConfig,
        HttpMethod::Get,
        "/tasks/{id}/pushNotificationConfigs/{configId}",
    ),
    route(
        Operation::ListTaskPushNotificationConfigs,
        HttpMethod::Get,
        "/tasks/{id}/pushNotificationConfigs",
    ),
    route(
        Operation::DeleteTaskPushNotificationConfig,
        HttpMethod::Delete,
        "/tasks/{id}/pushNotificationConfigs/{configId}",
    ),
    route(
        Operation::GetExtendedAgentCard,
        HttpMethod::Get,
        "/extendedAgentCard",
    ),
];

impl HttpRoute {
    /// The canonical route of an operation.
    pub fn of(operation: Operation) -> HttpRoute {
        ROUTES
            .into_iter()
            .find(|r| r.operation == operation && r.canonical)
            .unwrap_or_else(|| unreachable!("every operation has a canonical route"))
    }

    /// The path of a request: the template with `tenant` (if not empty) in
    /// front and `id` / `config_id` filled in, percent-encoded.
    pub fn path_for(&self, tenant: &str, id: &str, config_id: &str) -> String {
        let mut path = String::new();
        if !tenant.is_empty() {
            path.push('/');
            path.extend(utf8_percent_encode(tenant, SEGMENT));
        }
        let filled = self
            .path
            .replace(
                "{configId}",
                &utf8_percent_encode(config_id, SEGMENT).to_string(),
            )
            .replace("{id}", &utf8_percent_encode(id, SEGMENT).to_string());
        path.push_str(&filled);
        path
    }

    /// Matches a path (without the query) against this route's template:
    /// the captured `id` and `configId`, percent-decoded.
    fn capture(&self, segments: &[&str]) -> Option<(Option<String>, Option<String>)> {
        let template: Vec<&str> = self.path.split('/').skip(1).collect();
        if template.len() != segments.len() {
            return None;
        }
        let (mut id, mut config_id) = (None, None);
        for (pattern, segment) in template.iter().zip(segments) {
            if let Some(rest) = pattern.strip_prefix("{id}") {
                // `{id}` may carry a `:verb` suffix (`{id}:cancel`); the id is
                // what precedes it, so an id may itself contain `:`.
                let value = segment.strip_suffix(rest)?;
                if value.is_empty() {
                    return None;
                }
                id = Some(decode_segment(value));
            } else if *pattern == "{configId}" {
                if segment.is_empty() {
                    return None;
                }
                config_id = Some(decode_segment(segment));
            } else if pattern != segment {
                return None;
            }
        }
        Some((id, config_id))
    }
}

/// What a method and path call: the operation and the path's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteMatch {
    /// The operation.
    pub operation: Operation,
    /// The `/{tenant}` prefix, if the path had one.
    pub tenant: Option<String>,
    /// `{id}`: the task's id.
    pub id: Option<String>,
    /// `{configId}`: the push notification config's id.
    pub config_id: Option<String>,
}

/// Why a method and path call no operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// No route has this path: answer 404.
    #[error("no A2A operation at this path")]
    NotFound,
    /// Routes have this path, not with this method: answer 405 with `Allow`.
    #[error("method not allowed; allowed: {}", allowed.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", "))]
    MethodNotAllowed {
        /// The methods the path has.
        allowed: Vec<HttpMethod>,
    },
}

/// The operation a request calls, from its method and its path (without the
/// query string; any prefix the agent is mounted under already removed). A
/// path matches without a tenant first, then as `/{tenant}` + route.
pub fn route_request(method: &str, path: &str) -> Result<RouteMatch, RouteError> {
    let method = HttpMethod::parse(method);
    let segments: Vec<&str> = path.strip_prefix('/').unwrap_or(path).split('/').collect();
    let mut allowed = Vec::new();
    let tenant_split = segments
        .split_first()
        .filter(|(tenant, _)| !tenant.is_empty());
    let candidates = [(None, segments.as_slice())]
        .into_iter()
        .chain(tenant_split.map(|(tenant, rest)| (Some(*tenant), rest)));
    // Routes with a `:verb` first, so that `/tasks/x:subscribe` is not
    // taken as the task `x:subscribe` when its method fits both.
    let ordered = || {
        let verb = ROUTES.into_iter().filter(|r| r.path.contains(':'));
        verb.chain(ROUTES.into_iter().filter(|r| !r.path.contains(':')))
    };
    for (tenant, rest) in candidates {
        for route in ordered() {
            let Some((id, config_id)) = route.capture(rest) else {
                continue;
            };
            if Some(route.method) == method {
                return Ok(RouteMatch {
                    operation: route.operation,
                    tenant: tenant.map(decode_segment),
                    id,
                    config_id,
                });
            }
            if !allowed.contains(&route.method) {
                allowed.push(route.method);
            }
        }
    }
    if allowed.is_empty() {
        Err(RouteError::NotFound)
    } else {
        Err(RouteError::MethodNotAllowed { allowed })
    }
}

/// What a path segment escapes: controls, space, the URL delimiters, `%`.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b':')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}');

fn decode_segment(segment: &str) -> String {
    percent_decode_str(segment).decode_utf8_lossy().into_owned()
}

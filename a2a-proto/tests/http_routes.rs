//! The HTTP+JSON route table against spec §5.3 / §11.3, and routing.

use a2a_proto::headers::{
    AGENT_CARD_PATH, MEDIA_TYPE_A2A_JSON, format_extensions, parse_extensions, requested_version,
};
use a2a_proto::{
    EXTENSIONS_HEADER, HttpMethod, HttpRoute, Operation, PROTOCOL_VERSION, ROUTES, RouteError,
    VERSION_HEADER, route_request,
};

#[test]
fn the_canonical_routes_are_the_spec_table() {
    // Spec §5.3's "REST Endpoint" column.
    let expected = [
        (Operation::SendMessage, "POST", "/message:send"),
        (Operation::SendStreamingMessage, "POST", "/message:stream"),
        (Operation::GetTask, "GET", "/tasks/{id}"),
        (Operation::ListTasks, "GET", "/tasks"),
        (Operation::CancelTask, "POST", "/tasks/{id}:cancel"),
        (Operation::SubscribeToTask, "POST", "/tasks/{id}:subscribe"),
        (
            Operation::CreateTaskPushNotificationConfig,
            "POST",
            "/tasks/{id}/pushNotificationConfigs",
        ),
        (
            Operation::GetTaskPushNotificationConfig,
            "GET",
            "/tasks/{id}/pushNotificationConfigs/{configId}",
        ),
        (
            Operation::ListTaskPushNotificationConfigs,
            "GET",
            "/tasks/{id}/pushNotificationConfigs",
        ),
        (
            Operation::DeleteTaskPushNotificationConfig,
            "DELETE",
            "/tasks/{id}/pushNotificationConfigs/{configId}",
        ),
        (Operation::GetExtendedAgentCard, "GET", "/extendedAgentCard"),
    ];
    for (operation, method, path) in expected {
        let route = HttpRoute::of(operation);
        assert_eq!(
            (route.method.as_str(), route.path),
            (method, path),
            "{operation}"
        );
    }
    // The one extra row: the proto's `get` binding of SubscribeToTask.
    let extra: Vec<_> = ROUTES.iter().filter(|r| !r.canonical).collect();
    assert_eq!(extra.len(), 1);
    assert_eq!(
        (extra[0].operation, extra[0].method, extra[0].path),
        (
            Operation::SubscribeToTask,
            HttpMethod::Get,
            "/tasks/{id}:subscribe"
        )
    );
}

#[test]
fn every_operation_is_routed_from_its_own_path() {
    for operation in Operation::ALL {
        let route = HttpRoute::of(operation);
        for tenant in ["", "acme"] {
            let path = route.path_for(tenant, "task 1", "cfg/2");
            let found = route_request(route.method.as_str(), &path).expect(&path);
            assert_eq!(found.operation, operation, "{path}");
            assert_eq!(
                found.tenant.as_deref(),
                (!tenant.is_empty()).then_some(tenant)
            );
            if route.path.contains("{id}") {
                assert_eq!(found.id.as_deref(), Some("task 1"), "{path}");
            }
            if route.path.contains("{configId}") {
                assert_eq!(found.config_id.as_deref(), Some("cfg/2"), "{path}");
            }
        }
    }
}

#[test]
fn paths_are_percent_encoded_per_segment() {
    let route = HttpRoute::of(Operation::GetTaskPushNotificationConfig);
    assert_eq!(
        route.path_for("t/1", "a:b", "c d"),
        "/t%2F1/tasks/a%3Ab/pushNotificationConfigs/c%20d"
    );
    assert_eq!(
        HttpRoute::of(Operation::CancelTask).path_for("", "x", ""),
        "/tasks/x:cancel"
    );
}

#[test]
fn routing_details() {
    let m = route_request("GET", "/tasks/abc").unwrap();
    assert_eq!(
        (m.operation, m.id.as_deref(), m.tenant),
        (Operation::GetTask, Some("abc"), None)
    );
    let m = route_request("post", "/tasks/abc:cancel").unwrap();
    assert_eq!(
        (m.operation, m.id.as_deref()),
        (Operation::CancelTask, Some("abc"))
    );
    // Both methods of SubscribeToTask; GET is not read as a task `abc:subscribe`.
    for method in ["POST", "GET"] {
        let m = route_request(method, "/tasks/abc:subscribe").unwrap();
        assert_eq!(
            (m.operation, m.id.as_deref()),
            (Operation::SubscribeToTask, Some("abc"))
        );
    }
    // An id may contain `:`.
    let m = route_request("POST", "/tasks/urn:x:cancel").unwrap();
    assert_eq!(m.id.as_deref(), Some("urn:x"));
    // A tenant in front.
    let m = route_request("GET", "/acme/tasks").unwrap();
    assert_eq!(
        (m.operation, m.tenant.as_deref()),
        (Operation::ListTasks, Some("acme"))
    );
    let m = route_request("POST", "/acme/message:send").unwrap();
    assert_eq!(
        (m.operation, m.tenant.as_deref()),
        (Operation::SendMessage, Some("acme"))
    );
}

#[test]
fn unknown_paths_and_wrong_methods() {
    assert_eq!(route_request("GET", "/nope"), Err(RouteError::NotFound));
    assert_eq!(route_request("GET", "/tasks/"), Err(RouteError::NotFound));
    assert_eq!(
        route_request("GET", "/message:send"),
        Err(RouteError::MethodNotAllowed {
            allowed: vec![HttpMethod::Post]
        })
    );
    let Err(RouteError::MethodNotAllowed { allowed }) =
        route_request("PUT", "/tasks/t/pushNotificationConfigs/c")
    else {
        panic!("405");
    };
    assert_eq!(allowed, [HttpMethod::Get, HttpMethod::Delete]);
}

#[test]
fn headers_version_and_media_types() {
    assert_eq!(
        (VERSION_HEADER, EXTENSIONS_HEADER),
        ("A2A-Version", "A2A-Extensions")
    );
    assert_eq!(PROTOCOL_VERSION, "1.0");
    assert_eq!(MEDIA_TYPE_A2A_JSON, "application/a2a+json");
    assert_eq!(AGENT_CARD_PATH, "/.well-known/agent-card.json");
    // An absent or empty version means 0.3 (spec §3.6.2).
    assert_eq!(requested_version(None), "0.3");
    assert_eq!(requested_version(Some(" ")), "0.3");
    assert_eq!(requested_version(Some("1.0")), "1.0");
    // The example value of spec §3.2.6.
    let value = "https://example.com/extensions/geolocation/v1,https://standards.org/extensions/citations/v1";
    let uris = parse_extensions(value);
    assert_eq!(uris.len(), 2);
    assert_eq!(format_extensions(uris), value);
    assert_eq!(parse_extensions(" a , ,b,"), ["a", "b"]);
}

//! The methods MCP 2026-07-28 removed (SEP-2575: `logging/setLevel`,
//! `resources/subscribe`, `resources/unsubscribe`), answered as that revision
//! says: HTTP 404 with JSON-RPC -32601 (method not found). A 2026-07-28
//! request for one carries no params of the old shape, so rmcp would refuse
//! it while decoding them (HTTP 200, -32602) before the handler could say the
//! method is gone; this layer answers first. Requests of earlier revisions,
//! whose sessions still have these methods, pass untouched.

use axum::Json;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The methods 2026-07-28 removed.
const REMOVED: [&str; 3] = [
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// The revision that removed them; dated revisions compare as strings.
const REMOVED_IN: &str = "2026-07-28";

/// Largest body this layer reads: a request for a removed method is a few
/// hundred bytes, and anything larger (or of unknown length) goes on to
/// rmcp, which enforces its own limit, without being buffered here.
const SMALL: u64 = 16 * 1024;

/// Answers a 2026-07-28 request for a removed method; passes everything else on.
pub(super) async fn refuse_removed_methods(req: Request, next: Next) -> Response {
    let small = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|len| len <= SMALL);
    if req.method() != Method::POST || !small {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, SMALL as usize).await else {
        return (
            StatusCode::BAD_REQUEST,
            "the request body could not be read",
        )
            .into_response();
    };
    if let Some(id) = removed_request(&parts.headers, &bytes) {
        let answer = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32601, "message": "Method not found: removed in MCP 2026-07-28"},
        });
        return (StatusCode::NOT_FOUND, Json(answer)).into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// The id of `body` when it is a request, at 2026-07-28 or later (its
/// `_meta` says so, else its `MCP-Protocol-Version` header), for a removed
/// method.
fn removed_request(headers: &HeaderMap, body: &[u8]) -> Option<Value> {
    let message: Value = serde_json::from_slice(body).ok()?;
    let method = message.get("method")?.as_str()?;
    if !REMOVED.contains(&method) {
        return None;
    }
    let id = message.get("id")?.clone();
    let version = message
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str)
        .or_else(|| {
            headers
                .get("mcp-protocol-version")
                .and_then(|v| v.to_str().ok())
        })?;
    (version >= REMOVED_IN).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, version: Option<&str>) -> Vec<u8> {
        let meta = version.map_or(
            json!({}),
            |v| json!({"io.modelcontextprotocol/protocolVersion": v}),
        );
        serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "id": 7, "method": method, "params": {"_meta": meta}
        }))
        .unwrap()
    }

    #[test]
    fn a_removed_method_at_the_new_revision_is_refused_with_its_id() {
        let headers = HeaderMap::new();
        for method in REMOVED {
            let id = removed_request(&headers, &request(method, Some("2026-07-28")));
            assert_eq!(id, Some(json!(7)), "{method}");
        }
    }

    #[test]
    fn earlier_revisions_and_other_methods_pass() {
        let headers = HeaderMap::new();
        let old = request("logging/setLevel", Some("2025-11-25"));
        assert_eq!(removed_request(&headers, &old), None);
        let other = request("tools/list", Some("2026-07-28"));
        assert_eq!(removed_request(&headers, &other), None);
        let unversioned = request("logging/setLevel", None);
        assert_eq!(removed_request(&headers, &unversioned), None);
        assert_eq!(removed_request(&headers, b"not json"), None);
    }

    #[test]
    fn the_header_gives_the_revision_when_meta_does_not() {
        let mut headers = HeaderMap::new();
        headers.insert("mcp-protocol-version", "2026-07-28".parse().unwrap());
        let body = request("resources/subscribe", None);
        assert_eq!(removed_request(&headers, &body), Some(json!(7)));
        let notification = serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "method": "resources/subscribe", "params": {}
        }))
        .unwrap();
        assert_eq!(removed_request(&headers, &notification), None);
    }
}

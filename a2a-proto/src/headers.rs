//! Service parameters (spec §3.2.6, §3.6, §14.2) and the other fixed strings
//! of the HTTP-based bindings: header names, the version, media types and
//! the Agent Card's well-known path.

/// The protocol version this crate speaks, `Major.Minor` as sent in
/// [`VERSION_HEADER`] and in an interface's `protocolVersion`.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The version an agent assumes when a request has no (or an empty)
/// [`VERSION_HEADER`] (spec §3.6.2).
pub const VERSION_WHEN_ABSENT: &str = "0.3";

/// `A2A-Version`: the protocol version of a request (header, or a query
/// parameter of that name). HTTP header names are case-insensitive.
pub const VERSION_HEADER: &str = "A2A-Version";

/// `A2A-Extensions`: the comma-separated URIs of the extensions a client
/// uses in a request (and an agent activated, in a response).
pub const EXTENSIONS_HEADER: &str = "A2A-Extensions";

/// `application/a2a+json`: the media type of HTTP+JSON bodies (spec §11.1,
/// §14.1).
pub const MEDIA_TYPE_A2A_JSON: &str = "application/a2a+json";

/// `application/json`: the media type of JSON-RPC bodies (spec §9.1).
pub const MEDIA_TYPE_JSON: &str = "application/json";

/// `text/event-stream`: the media type of streaming responses.
pub const MEDIA_TYPE_EVENT_STREAM: &str = "text/event-stream";

/// Where an agent serves its public Agent Card (spec §8.2, §14.3).
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// The version a request asks for: the header's value trimmed, or
/// [`VERSION_WHEN_ABSENT`] when it is missing or empty.
pub fn requested_version(header: Option<&str>) -> &str {
    match header.map(str::trim) {
        Some(version) if !version.is_empty() => version,
        _ => VERSION_WHEN_ABSENT,
    }
}

/// The extension URIs of an `A2A-Extensions` value: split at commas,
/// trimmed, empty entries dropped.
pub fn parse_extensions(header: &str) -> Vec<&str> {
    header
        .split(',')
        .map(str::trim)
        .filter(|uri| !uri.is_empty())
        .collect()
}

/// An `A2A-Extensions` value of extension URIs.
pub fn format_extensions<'a>(uris: impl IntoIterator<Item = &'a str>) -> String {
    uris.into_iter().collect::<Vec<_>>().join(",")
}

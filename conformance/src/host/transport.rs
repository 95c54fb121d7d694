//! What each transport adds: stdio lines, WebSocket frames, the HTTP+SSE
//! routes and their replay, bearer tokens (a2e-core §1, §7; the protocol
//! decisions on network transports).

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use hyper::Method;
use serde_json::{Value, json};

use super::{Cx, HostScenario, Target};
use crate::check::{CheckDef, must, should};
use crate::link::http::{Event, HttpTarget, StreamItem};
use crate::link::ws::{self, ConnectError};
use crate::scenario::{Abort, Area, Fixture, On, Outcome, Scenario};

pub(super) const SCENARIOS: &[HostScenario] = &[
    Scenario {
        name: "transport/stdio",
        area: Area::Transport,
        about: "Writes two requests in one write, then closes the host's stdin.",
        needs: &[],
        on: On::Stdio,
        checks: STDIO,
        run: crate::run_fn!(Cx, stdio),
    },
    Scenario {
        name: "transport/ws",
        area: Area::Transport,
        about: "Reads the host's WebSocket frames.",
        needs: &[],
        on: On::Ws,
        checks: WS,
        run: crate::run_fn!(Cx, ws_frames),
    },
    Scenario {
        name: "transport/ws-auth",
        area: Area::Transport,
        about: "Upgrades without a bearer token and with a wrong one.",
        needs: &[Fixture::AuthToken],
        on: On::Ws,
        checks: WS_AUTH,
        run: crate::run_fn!(Cx, ws_auth),
    },
    Scenario {
        name: "transport/http",
        area: Area::Transport,
        about: "Opens a session, sends a batch, reconnects the stream with Last-Event-ID, sends to unknown sessions.",
        needs: &[],
        on: On::Http,
        checks: HTTP,
        run: crate::run_fn!(Cx, http),
    },
    Scenario {
        name: "transport/http-auth",
        area: Area::Transport,
        about: "Opens sessions without a bearer token and with a wrong one.",
        needs: &[Fixture::AuthToken],
        on: On::Http,
        checks: HTTP_AUTH,
        run: crate::run_fn!(Cx, http_auth),
    },
];

const STDIO: &[CheckDef] = &[
    must(
        "transport.stdio.lines",
        "a2e-core §1",
        "two messages written at once, one per line, are both answered",
    ),
    should(
        "transport.stdio.eof",
        "a2e-core §7",
        "when its stdin ends, the host exits",
    ),
];

const WS: &[CheckDef] = &[must(
    "transport.ws.frames",
    "a2e-core §7",
    "each host message is one WebSocket text frame holding one JSON object",
)];

const WS_AUTH: &[CheckDef] = &[
    must(
        "transport.ws.bearer-required",
        "protocol-decisions: Network transports",
        "with a token configured, an upgrade without Authorization is refused with 401",
    ),
    must(
        "transport.ws.bearer-wrong",
        "protocol-decisions: Network transports",
        "an upgrade with a wrong bearer token is refused with 401",
    ),
];

const HTTP: &[CheckDef] = &[
    must(
        "transport.http.session",
        "a2e-core §7",
        "POST /session answers 2xx with an X-Session-Id header",
    ),
    must(
        "transport.http.send",
        "a2e-core §7",
        "POST /send of a message answers 2xx",
    ),
    must(
        "transport.http.stream",
        "a2e-core §7",
        "GET /stream is a text/event-stream whose data: lines are the host's messages",
    ),
    should(
        "transport.http.batch",
        "protocol-decisions: Network transports",
        "a POST /send body of two NDJSON lines delivers both",
    ),
    should(
        "transport.http.event-ids",
        "protocol-decisions: Network transports",
        "every SSE event carries an id",
    ),
    should(
        "transport.http.replay",
        "protocol-decisions: Network transports",
        "a stream reconnecting with Last-Event-ID first gets the events after that id",
    ),
    must(
        "transport.http.unknown-session",
        "a2e-core §7",
        "POST /send for an unknown session is refused with 4xx",
    ),
    must(
        "transport.http.no-session",
        "a2e-core §7",
        "POST /send without X-Session-Id is refused with 4xx",
    ),
];

const HTTP_AUTH: &[CheckDef] = &[
    must(
        "transport.http.bearer-required",
        "protocol-decisions: Network transports",
        "with a token configured, POST /session without Authorization is refused with 401",
    ),
    must(
        "transport.http.bearer-wrong",
        "protocol-decisions: Network transports",
        "POST /session with a wrong bearer token is refused with 401",
    ),
];

async fn stdio(cx: &mut Cx) -> Outcome {
    let mut s = cx.session().await?;
    let a = s.req("ping", json!({}));
    let b = s.req("ping", json!({}));
    s.send_raw(format!("{a}\n{b}")).await?;
    let ra = s.answer(a["id"].as_str().unwrap_or_default()).await;
    let rb = s.answer(b["id"].as_str().unwrap_or_default()).await;
    let both = matches!((&ra, &rb), (Ok(x), Ok(y)) if x.ty() == "pong" && y.ty() == "pong");
    cx.check(
        "transport.stdio.lines",
        both,
        "two pongs",
        format!("{ra:?} / {rb:?}"),
    );
    s.close();
    let exited = s.exited_within(Duration::from_secs(10)).await;
    cx.check(
        "transport.stdio.eof",
        exited == Some(true),
        "the host exits within 10 s",
        format!("{exited:?}"),
    );
    Ok(())
}

fn url(cx: &Cx) -> Result<String, Abort> {
    match &cx.env.target {
        Target::Url(url) => Ok(url.clone()),
        Target::Command(_) => Err("no URL to connect to".into()),
    }
}

async fn ws_frames(cx: &mut Cx) -> Outcome {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let url = url(cx)?;
    let mut socket = ws::open(&url, cx.token())
        .await
        .map_err(|e| Abort(e.to_string()))?;
    let mut hs = json!({"type": "handshake/req", "id": "cf-ws-hs", "agent_caps": ["tools"]});
    if let Some(token) = cx.token() {
        hs["auth_token"] = json!(token);
    }
    let ping = json!({"type": "ping", "id": "cf-ws-ping"});
    for msg in [hs, ping] {
        socket
            .send(Message::text(msg.to_string()))
            .await
            .map_err(|e| Abort(format!("cannot send: {e}")))?;
    }
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let frame = tokio::time::timeout(cx.env.opts.answer_timeout, socket.next())
            .await
            .map_err(|_| Abort("no frame within the answer timeout".into()))?;
        match frame {
            Some(Ok(Message::Text(text))) => {
                let one = serde_json::from_str::<Value>(text.as_str()).is_ok_and(|v| v.is_object());
                cx.check(
                    "transport.ws.frames",
                    one,
                    "a text frame with one JSON object",
                    text.as_str(),
                );
                seen.push(text.as_str().to_owned());
            }
            Some(Ok(Message::Binary(_))) => {
                cx.fail("transport.ws.frames", "a text frame", "a binary frame")
            }
            Some(Ok(_)) => {}
            other => return Err(Abort(format!("the socket ended: {other:?}"))),
        }
    }
    Ok(())
}

async fn ws_auth(cx: &mut Cx) -> Outcome {
    let url = url(cx)?;
    let wrong = format!("{}-wrong", cx.token().unwrap_or_default());
    for (check, token) in [
        ("transport.ws.bearer-required", None),
        ("transport.ws.bearer-wrong", Some(wrong.as_str())),
    ] {
        let got = ws::open(&url, token).await;
        let ok = matches!(got, Err(ConnectError::Status(401)));
        let shown = match got {
            Ok(_) => "the upgrade succeeded".to_owned(),
            Err(e) => e.to_string(),
        };
        cx.check(check, ok, "HTTP 401", shown);
    }
    Ok(())
}

/// The next event with data within `within`.
async fn next_event(
    stream: &mut crate::link::http::EventStream,
    within: Duration,
) -> Result<Event, Abort> {
    loop {
        match tokio::time::timeout(within, stream.events.recv()).await {
            Ok(Some(StreamItem::Event(e))) if e.data.is_some() => return Ok(e),
            Ok(Some(StreamItem::Event(_))) => {}
            Ok(Some(StreamItem::End(why))) => {
                return Err(Abort(format!("the stream ended: {why}")));
            }
            Ok(None) | Err(_) => return Err(Abort("no event within the answer timeout".into())),
        }
    }
}

fn data_id(e: &Event, key: &str) -> String {
    e.data
        .as_deref()
        .and_then(|d| serde_json::from_str::<Value>(d).ok())
        .and_then(|v| v.get(key).and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default()
}

async fn http(cx: &mut Cx) -> Outcome {
    let target = HttpTarget::new(&url(cx)?, cx.token()).map_err(Abort)?;
    let wait = cx.env.opts.answer_timeout;
    let opened = target
        .call(Method::POST, "/session", None, Bytes::new())
        .await
        .map_err(Abort)?;
    let session = opened.session.clone().unwrap_or_default();
    cx.check(
        "transport.http.session",
        (200..300).contains(&opened.status) && !session.is_empty(),
        "2xx with X-Session-Id",
        format!("HTTP {} {:?}", opened.status, opened.session),
    );
    // A session id in a JSON body (as the Python reference answers) lets the other checks run.
    let session = if session.is_empty() {
        serde_json::from_str::<Value>(&opened.body)
            .ok()
            .and_then(|v| {
                v.get("session_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .ok_or_else(|| Abort("no session to go on with".into()))?
    } else {
        session
    };
    let mut stream = target.stream(&session, None).await.map_err(Abort)?;
    let mut hs = json!({"type": "handshake/req", "id": "cf-http-hs", "agent_caps": ["tools"]});
    if let Some(token) = cx.token() {
        hs["auth_token"] = json!(token);
    }
    let sent = target
        .call(Method::POST, "/send", Some(&session), hs.to_string())
        .await
        .map_err(Abort)?;
    cx.check(
        "transport.http.send",
        (200..300).contains(&sent.status),
        "2xx",
        format!("HTTP {}", sent.status),
    );
    let first = next_event(&mut stream, wait).await?;
    let is_sse = stream
        .content_type
        .as_deref()
        .is_some_and(|c| c.starts_with("text/event-stream"));
    cx.check(
        "transport.http.stream",
        (200..300).contains(&stream.status) && is_sse && data_id(&first, "req_id") == "cf-http-hs",
        "text/event-stream with the handshake/resp as data",
        format!(
            "HTTP {} {:?}: {:?}",
            stream.status, stream.content_type, first.data
        ),
    );
    let batch = format!(
        "{}\n{}\n",
        json!({"type": "ping", "id": "cf-http-p1"}),
        json!({"type": "ping", "id": "cf-http-p2"})
    );
    target
        .call(Method::POST, "/send", Some(&session), batch)
        .await
        .map_err(Abort)?;
    let p1 = next_event(&mut stream, wait).await.ok();
    let p2 = next_event(&mut stream, wait).await.ok();
    let got: Vec<String> = [&p1, &p2]
        .iter()
        .filter_map(|e| e.as_ref())
        .map(|e| data_id(e, "req_id"))
        .collect();
    cx.check(
        "transport.http.batch",
        got.contains(&"cf-http-p1".to_owned()) && got.contains(&"cf-http-p2".to_owned()),
        "pongs for cf-http-p1 and cf-http-p2",
        format!("{got:?}"),
    );
    let ids: Vec<Option<&String>> = [Some(&first), p1.as_ref(), p2.as_ref()]
        .iter()
        .map(|e| e.and_then(|e| e.id.as_ref()))
        .collect();
    cx.check(
        "transport.http.event-ids",
        ids.iter().all(Option::is_some),
        "an id on every event",
        format!("{ids:?}"),
    );
    drop(stream);
    match (&first.id, &p1) {
        (Some(after), Some(p1)) => {
            let mut again = target.stream(&session, Some(after)).await.map_err(Abort)?;
            let replayed = next_event(&mut again, wait).await;
            let got = replayed
                .as_ref()
                .map(|e| data_id(e, "req_id"))
                .unwrap_or_default();
            cx.check(
                "transport.http.replay",
                got == data_id(p1, "req_id"),
                format!(
                    "the event after id {after} again ({})",
                    data_id(p1, "req_id")
                ),
                format!("{replayed:?}"),
            );
        }
        _ => cx.fail(
            "transport.http.replay",
            "an event id to resume after, and an event after it",
            "none",
        ),
    }
    let ping = json!({"type": "ping", "id": "cf-http-lost"}).to_string();
    let r = target
        .call(
            Method::POST,
            "/send",
            Some("conformance-no-such-session"),
            ping.clone(),
        )
        .await
        .map_err(Abort)?;
    cx.check(
        "transport.http.unknown-session",
        (400..500).contains(&r.status),
        "HTTP 4xx",
        format!("HTTP {}", r.status),
    );
    let r = target
        .call(Method::POST, "/send", None, ping)
        .await
        .map_err(Abort)?;
    cx.check(
        "transport.http.no-session",
        (400..500).contains(&r.status),
        "HTTP 4xx",
        format!("HTTP {}", r.status),
    );
    let _ = target
        .call(Method::DELETE, "/session", Some(&session), Bytes::new())
        .await;
    Ok(())
}

async fn http_auth(cx: &mut Cx) -> Outcome {
    let base = HttpTarget::new(&url(cx)?, None).map_err(Abort)?;
    let wrong = format!("{}-wrong", cx.token().unwrap_or_default());
    for (check, target) in [
        ("transport.http.bearer-required", base.clone()),
        ("transport.http.bearer-wrong", base.with_token(Some(&wrong))),
    ] {
        let r = target
            .call(Method::POST, "/session", None, Bytes::new())
            .await
            .map_err(Abort)?;
        cx.check(
            check,
            r.status == 401,
            "HTTP 401",
            format!("HTTP {}", r.status),
        );
    }
    Ok(())
}

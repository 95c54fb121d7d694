//! ACMP as plain JSON-RPC 2.0 over WebSocket, one message per text frame, without an
//! MCP handshake (the form the public reference SDK's `ws_transport` speaks): the
//! host's provider service (`a2e serve --acmp-ws ADDR`) and a connector to remote
//! providers. The upgrade needs `Authorization: Bearer <token>` (401 otherwise).

use std::sync::{Arc, Weak};

use acmp_dag::remote::{Connection, Connector};
use acmp_dag::serve::ProviderService;
use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::future::BoxFuture;
use futures::{SinkExt, StreamExt};
use serde_json::Value;
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Largest message read, in bytes (a larger payload is refused by the service, with
/// the field named, up to this size).
pub const MAX_FRAME_BYTES: usize = 32 << 20;

struct Served {
    service: Arc<ProviderService>,
    token: String,
    shutdown: CancellationToken,
}

/// Whether `headers` carry `Authorization: Bearer <token>`.
fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let Some(given) = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    bool::from(given.as_bytes().ct_eq(token.as_bytes()))
}

async fn upgrade(
    State(served): State<Arc<Served>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    if !authorized(&headers, &served.token) {
        return (StatusCode::UNAUTHORIZED, "missing or wrong bearer token\n").into_response();
    }
    ws.max_message_size(MAX_FRAME_BYTES)
        .max_frame_size(MAX_FRAME_BYTES)
        .on_upgrade(move |socket| connection(served, socket))
}

/// One buyer's connection: every frame to the service, every answer back.
async fn connection(served: Arc<Served>, socket: WebSocket) {
    let (mut sink, mut stream) = socket.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let writer = tokio::spawn(async move {
        while let Some(msg) = rx.recv().await {
            if sink
                .send(WsMessage::Text(msg.to_string().into()))
                .await
                .is_err()
            {
                break;
            }
        }
        let _ = sink.close().await;
    });
    loop {
        let frame = tokio::select! {
            frame = stream.next() => frame,
            () = served.shutdown.cancelled() => break,
        };
        match frame {
            Some(Ok(WsMessage::Text(text))) => served.service.handle_text(text.as_str(), &tx),
            Some(Ok(WsMessage::Binary(bytes))) => match std::str::from_utf8(&bytes) {
                Ok(text) => served.service.handle_text(text, &tx),
                Err(_) => served.service.handle_text("\u{0}", &tx),
            },
            Some(Ok(WsMessage::Close(_))) | None | Some(Err(_)) => break,
            Some(Ok(_)) => {}
        }
    }
    // Answers of tasks still running go nowhere once the socket is gone; their
    // outcomes stay for a duplicate invoke.
    drop(tx);
    writer.abort();
}

/// Serves `service` over WebSocket at `/` and `/acmp` until `shutdown` fires.
pub async fn serve_ws(
    service: Arc<ProviderService>,
    token: String,
    listener: TcpListener,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let served = Arc::new(Served {
        service,
        token,
        shutdown: shutdown.clone(),
    });
    let router = Router::new()
        .route("/", get(upgrade))
        .route("/acmp", get(upgrade))
        .with_state(served);
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

/// Connects to a provider speaking JSON-RPC over WebSocket.
#[derive(Debug, Clone)]
pub struct WsConnector {
    url: String,
    token: Option<String>,
}

impl WsConnector {
    /// A connector to `url` (`ws://…`), presenting `token` as a bearer token.
    pub fn new(url: impl Into<String>, token: Option<String>) -> Self {
        Self {
            url: url.into(),
            token,
        }
    }
}

impl Connector for WsConnector {
    fn connect(&self) -> BoxFuture<'static, Result<Arc<Connection>, String>> {
        let url = self.url.clone();
        let token = self.token.clone();
        Box::pin(async move {
            use tokio_tungstenite::tungstenite::Message;
            use tokio_tungstenite::tungstenite::client::IntoClientRequest;
            let mut request = url
                .as_str()
                .into_client_request()
                .map_err(|e| format!("{url}: {e}"))?;
            if let Some(token) = token {
                let value = format!("Bearer {token}")
                    .parse()
                    .map_err(|_| "the token is not a valid header value".to_owned())?;
                request
                    .headers_mut()
                    .insert(axum::http::header::AUTHORIZATION, value);
            }
            let (socket, _) =
                tokio_tungstenite::connect_async(request)
                    .await
                    .map_err(|e| match e {
                        tokio_tungstenite::tungstenite::Error::Http(resp)
                            if matches!(resp.status().as_u16(), 401 | 403) =>
                        {
                            acmp_dag::remote::refused_token(resp.status().as_u16())
                        }
                        other => format!("{url}: {other}"),
                    })?;
            let (mut sink, mut stream) = socket.split();
            let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
            let conn = Arc::new(Connection::new(tx));
            tokio::spawn(async move {
                while let Some(msg) = rx.recv().await {
                    if sink
                        .send(Message::Text(msg.to_string().into()))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
                let _ = sink.close().await;
            });
            // The reader holds the connection weakly: dropping the last handle ends the
            // writer, which closes the socket, which ends the reader.
            let weak: Weak<Connection> = Arc::downgrade(&conn);
            tokio::spawn(async move {
                while let Some(frame) = stream.next().await {
                    let Some(conn) = weak.upgrade() else { break };
                    match frame {
                        Ok(Message::Text(text)) => conn.deliver_text(text.as_str()),
                        Ok(Message::Close(_)) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                if let Some(conn) = weak.upgrade() {
                    conn.close();
                }
            });
            Ok(conn)
        })
    }
}

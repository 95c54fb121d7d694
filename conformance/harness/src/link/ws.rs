//! WebSocket: one message per text frame, bearer token on the upgrade.

use futures::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::{Ends, Incoming, Link, MAX_MESSAGE_BYTES, deliver, text_of};

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Why a connection was not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectError {
    /// The server answered the upgrade with this HTTP status.
    Status(u16),
    /// Anything else.
    Other(String),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Status(code) => write!(f, "the upgrade was answered with HTTP {code}"),
            Self::Other(why) => f.write_str(why),
        }
    }
}

/// Opens the socket at `url`, with `Authorization: Bearer <token>` when a
/// token is given (`Some("")` sends an empty one, `None` none).
pub async fn open(url: &str, token: Option<&str>) -> Result<Socket, ConnectError> {
    let mut request = url
        .into_client_request()
        .map_err(|e| ConnectError::Other(format!("bad URL `{url}`: {e}")))?;
    if let Some(token) = token {
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|e| ConnectError::Other(format!("bad token: {e}")))?;
        request.headers_mut().insert("authorization", value);
    }
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    match tokio_tungstenite::connect_async_with_config(request, Some(config), true).await {
        Ok((socket, _)) => Ok(socket),
        Err(WsError::Http(resp)) => Err(ConnectError::Status(resp.status().as_u16())),
        Err(e) => Err(ConnectError::Other(format!("cannot connect to {url}: {e}"))),
    }
}

/// A link over a new WebSocket connection to `url`.
pub async fn connect(url: &str, token: Option<&str>) -> Result<Link, String> {
    let socket = open(url, token).await.map_err(|e| e.to_string())?;
    Ok(over(socket))
}

fn over(socket: Socket) -> Link {
    let (mut link, Ends { out, inbox }) = Link::pair();
    link.hold(tokio::spawn(pump(socket, out, inbox)));
    link
}

/// Moves frames both ways until either side ends.
async fn pump(socket: Socket, mut out: mpsc::Receiver<String>, inbox: mpsc::Sender<Incoming>) {
    let (mut sink, mut stream) = socket.split();
    let mut writing = true;
    loop {
        tokio::select! {
            msg = out.recv(), if writing => match msg {
                Some(text) => {
                    if sink.send(Message::text(text)).await.is_err() {
                        writing = false;
                    }
                }
                None => {
                    let _ = sink.send(Message::Close(None)).await;
                    writing = false;
                }
            },
            frame = stream.next() => {
                let item = match frame {
                    Some(Ok(Message::Text(text))) => Incoming::Text(text.as_str().to_owned()),
                    Some(Ok(Message::Binary(bytes))) => text_of(bytes.to_vec()),
                    Some(Ok(Message::Close(frame))) => Incoming::Closed(match frame {
                        Some(f) => format!("the peer closed the socket ({} {})", f.code, f.reason),
                        None => "the peer closed the socket".into(),
                    }),
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => Incoming::Closed(format!("the socket failed: {e}")),
                    None => Incoming::Closed("the socket ended".into()),
                };
                let end = matches!(item, Incoming::Closed(_));
                if !deliver(&inbox, item).await || end {
                    return;
                }
            }
        }
    }
}

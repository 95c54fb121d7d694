//! WebSocket: one message per text frame.

use std::sync::Arc;

use a2e_proto::Message;
use futures::{SinkExt, StreamExt};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{self, Message as WsMessage};

use super::Guard;
use crate::conn::Shared;
use crate::error::{ClientError, ClientResult};

/// Connects to `url` (`ws://host:port/path`), sending the token as a bearer header.
pub(crate) async fn connect(
    url: &str,
    token: &str,
    shared: &Arc<Shared>,
    out: mpsc::Receiver<Message>,
    max: usize,
) -> ClientResult<Guard> {
    let mut request = url
        .into_client_request()
        .map_err(|e| ClientError::Invalid(format!("bad WebSocket URL `{url}`: {e}")))?;
    if !token.is_empty() {
        let value = format!("Bearer {token}").parse().map_err(|_| {
            ClientError::Invalid("the auth token is not a valid header value".into())
        })?;
        request.headers_mut().insert("authorization", value);
    }
    let config = WebSocketConfig::default()
        .max_message_size(Some(max))
        .max_frame_size(Some(max))
        .read_buffer_size(16 * 1024)
        .write_buffer_size(16 * 1024);
    let (socket, _) = tokio_tungstenite::connect_async_with_config(request, Some(config), true)
        .await
        .map_err(|e| match e {
            tungstenite::Error::Http(resp) if resp.status().as_u16() == 401 => {
                ClientError::HandshakeRefused {
                    reason: "auth_failed".into(),
                }
            }
            tungstenite::Error::Http(resp) => {
                ClientError::transport_msg(format!("the host answered HTTP {}", resp.status()))
            }
            other => ClientError::transport(format!("cannot connect to {url}"), other),
        })?;
    let (mut sink, mut stream) = socket.split();

    let reader_shared = shared.clone();
    let read = tokio::spawn(async move {
        let reason = loop {
            match stream.next().await {
                Some(Ok(WsMessage::Text(text))) => {
                    super::receive(&reader_shared, text.as_bytes(), max);
                }
                Some(Ok(WsMessage::Binary(bytes))) => {
                    super::receive(&reader_shared, &bytes, max);
                }
                Some(Ok(WsMessage::Close(frame))) => {
                    break match frame {
                        Some(f) if !f.reason.is_empty() => format!(
                            "the host closed the connection ({}: {})",
                            u16::from(f.code),
                            f.reason
                        ),
                        Some(f) => {
                            format!("the host closed the connection ({})", u16::from(f.code))
                        }
                        None => "the host closed the connection".to_owned(),
                    };
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => break format!("the connection failed: {e}"),
                None => break "the host closed the connection".to_owned(),
            }
        };
        reader_shared.fail_all(&reason);
    });

    let writer_shared = shared.clone();
    let mut out = out;
    let write = tokio::spawn(async move {
        let shared = writer_shared;
        loop {
            let msg = tokio::select! {
                msg = out.recv() => msg,
                () = shared.stop.cancelled() => None,
            };
            let Some(msg) = msg else { break };
            let mut result = sink.feed(frame(&msg)).await;
            while result.is_ok() {
                match out.try_recv() {
                    Ok(more) => result = sink.feed(frame(&more)).await,
                    Err(_) => break,
                }
            }
            if let Err(e) = result.and(sink.flush().await) {
                shared.fail_all(&format!("writing to the host failed: {e}"));
                return;
            }
        }
        let close = CloseFrame {
            code: CloseCode::Normal,
            reason: "client closed".into(),
        };
        let _ = sink.send(WsMessage::Close(Some(close))).await;
    });
    Ok(Guard {
        tasks: vec![read, write],
        child: None,
    })
}

fn frame(msg: &Message) -> WsMessage {
    // Compact JSON of these types is always UTF-8.
    WsMessage::text(String::from_utf8_lossy(&msg.to_json()).into_owned())
}

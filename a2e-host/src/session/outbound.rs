//! What a session hands its transport: messages, and lines already encoded.

use a2e_proto::Message;
use bytes::Bytes;

/// One item of a session's outbound channel.
///
/// Most answers are a [`Message`] the transport encodes. A streaming chain's
/// events are encoded where they happen, on the chain's own task, into runs
/// of NDJSON lines: the transport writes them as they are (stdio) or one
/// frame per line (WebSocket, SSE), without a `Message` per event.
#[derive(Debug, Clone, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "answers, the common item, would pay an allocation each if boxed"
)]
pub enum Outbound {
    /// A message to encode.
    Message(Message),
    /// Whole NDJSON lines, each a JSON message ending in `\n`.
    Lines(Bytes),
}

impl From<Message> for Outbound {
    fn from(msg: Message) -> Self {
        Self::Message(msg)
    }
}

impl Outbound {
    /// Each message's JSON text, without its newline.
    pub fn json_texts(&self) -> Vec<Bytes> {
        match self {
            Self::Message(msg) => vec![Bytes::from(msg.to_json())],
            Self::Lines(lines) => split_lines(lines).collect(),
        }
    }

    /// The messages, decoded (lines that do not decode are left out; the
    /// host only writes lines it encoded itself).
    pub fn into_messages(self) -> Vec<Message> {
        match self {
            Self::Message(msg) => vec![msg],
            Self::Lines(lines) => split_lines(&lines)
                .filter_map(|line| a2e_proto::decode(&line).ok())
                .collect(),
        }
    }
}

/// The lines of `lines` (each without its `\n`), sharing its buffer.
fn split_lines(lines: &Bytes) -> impl Iterator<Item = Bytes> + '_ {
    let mut rest = lines.clone();
    std::iter::from_fn(move || {
        while !rest.is_empty() {
            let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            let line = rest.split_to(end);
            if !rest.is_empty() {
                // The newline itself.
                let _ = rest.split_to(1);
            }
            if !line.is_empty() {
                return Some(line);
            }
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_into_their_messages_and_decode_back() {
        let ping = Message::from(a2e_proto::Ping::default());
        let mut text = ping.to_json();
        text.push(b'\n');
        text.extend_from_slice(b"\n");
        text.extend(ping.to_json());
        text.push(b'\n');
        let lines = Outbound::Lines(Bytes::from(text));
        assert_eq!(lines.json_texts().len(), 2);
        assert_eq!(lines.json_texts()[0], Bytes::from(ping.to_json()));
        assert_eq!(lines.into_messages(), vec![ping.clone(), ping.clone()]);
        let one = Outbound::from(ping.clone());
        assert_eq!(one.json_texts(), vec![Bytes::from(ping.to_json())]);
        assert_eq!(one.into_messages(), vec![ping]);
    }

    #[test]
    fn a_last_line_without_its_newline_still_counts() {
        let lines = Bytes::from_static(b"{\"a\":1}\n{\"b\":2}");
        let got: Vec<Bytes> = split_lines(&lines).collect();
        assert_eq!(got, [&b"{\"a\":1}"[..], &b"{\"b\":2}"[..]]);
    }
}

//! NDJSON framing of real byte streams.

use crate::common;

use a2e_proto::ndjson::{Frame, NdjsonCodec};
use a2e_proto::{Message, decode};
use bytes::BytesMut;
use conformance::fixtures::load_group;
use futures::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio_util::codec::{Encoder, FramedRead};

fn message_lines() -> Vec<Vec<u8>> {
    load_group("spec")
        .expect("fixtures load")
        .iter()
        .filter(|f| decode(f.line()).is_ok())
        .map(|f| f.line().to_vec())
        .collect()
}

#[test]
fn every_framing_case_passes() {
    let outcomes = conformance::run_framing();
    for name in [
        "framing/crlf",
        "framing/bom_at_stream_start",
        "framing/blank_lines_skipped",
        "framing/over_long_line_then_good_line",
        "framing/partial_lines_one_byte_per_read",
    ] {
        assert!(outcomes.iter().any(|o| o.name == name), "no case {name}");
    }
    common::assert_passed(&outcomes);
}

#[test]
fn a_case_with_the_wrong_expectation_fails() {
    let mut case = conformance::framing::cases(&message_lines())
        .into_iter()
        .find(|c| c.name == "crlf")
        .expect("crlf case");
    case.expected.pop();
    let err = conformance::framing::check(&case).expect_err("one frame too many");
    assert!(err.starts_with("expected"), "{err}");
}

/// Writes `stream` in `piece`-byte writes through a small pipe and reads it back framed.
async fn read_framed(stream: Vec<u8>, piece: usize, max_len: usize) -> Vec<Frame> {
    let (mut writer, reader) = tokio::io::duplex(16);
    let write = tokio::spawn(async move {
        for chunk in stream.chunks(piece) {
            writer.write_all(chunk).await.expect("write");
            tokio::task::yield_now().await;
        }
        writer.shutdown().await.expect("shutdown");
    });
    let frames: Vec<Frame> = FramedRead::new(reader, NdjsonCodec::new(max_len))
        .map(|f| f.expect("frame"))
        .collect()
        .await;
    write.await.expect("writer");
    frames
}

#[tokio::test]
async fn messages_survive_a_pipe_in_odd_sized_writes() {
    let lines = message_lines();
    let mut stream = b"\xEF\xBB\xBF".to_vec();
    for line in &lines {
        stream.extend_from_slice(line);
        stream.extend_from_slice(b"\r\n\n");
    }
    for piece in [1, 3, 64, 4096] {
        let frames = read_framed(stream.clone(), piece, 4096).await;
        let got: Vec<Message> = frames
            .iter()
            .map(|f| match f {
                Frame::Line(line) => decode(line).expect("decodes"),
                Frame::TooLong { .. } => panic!("too long"),
            })
            .collect();
        let want: Vec<Message> = lines.iter().map(|l| decode(l).expect("decodes")).collect();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            // Fixtures give every id and ts, so decoding is deterministic.
            assert_eq!(g, w, "piece size {piece}");
        }
    }
}

#[tokio::test]
async fn a_pipe_resynchronises_after_an_over_long_line() {
    let good = br#"{"type":"ping","id":"after"}"#;
    let mut stream = vec![b'z'; 10_000];
    stream.push(b'\n');
    stream.extend_from_slice(good);
    stream.push(b'\n');
    let frames = read_framed(stream, 700, 1024).await;
    assert_eq!(
        frames,
        vec![
            Frame::TooLong { limit: 1024 },
            Frame::Line(bytes::Bytes::copy_from_slice(good))
        ]
    );
}

#[test]
fn the_encoder_writes_exactly_to_line() {
    let mut codec = NdjsonCodec::default();
    for line in message_lines() {
        let msg = decode(&line).expect("decodes");
        let mut dst = BytesMut::new();
        codec.encode(&msg, &mut dst).expect("encodes");
        assert_eq!(&dst[..], &msg.to_line()[..]);
    }
}

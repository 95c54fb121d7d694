//! NDJSON framing: the codec splits a byte stream into the lines the decoder
//! reads, whatever the line endings, BOMs, blank lines, read boundaries and
//! over-long lines.

use a2e_proto::ndjson::{Frame, NdjsonCodec};
use bytes::BytesMut;
use tokio_util::codec::Decoder;

/// Feeds `chunks` to a codec as successive reads, then ends the stream.
pub fn frames(codec: &mut NdjsonCodec, chunks: &[&[u8]]) -> Result<Vec<Frame>, String> {
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        while let Some(frame) = codec.decode(&mut buf).map_err(|e| e.to_string())? {
            out.push(frame);
        }
    }
    while let Some(frame) = codec.decode_eof(&mut buf).map_err(|e| e.to_string())? {
        out.push(frame);
    }
    Ok(out)
}

/// A short description of frames, for reports.
pub fn describe(frames: &[Frame]) -> String {
    let parts: Vec<String> = frames
        .iter()
        .map(|f| match f {
            Frame::Line(line) if line.len() > 60 => {
                format!("Line({} bytes)", line.len())
            }
            Frame::Line(line) => format!("Line({:?})", String::from_utf8_lossy(line)),
            Frame::TooLong { limit } => format!("TooLong({limit})"),
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

const PING_1: &[u8] = br#"{"type":"ping","id":"p1"}"#;
const PING_2: &[u8] = br#"{"type":"ping","id":"p2"}"#;

/// One framing check: a stream, cut into reads, and the frames it must give.
#[derive(Debug, Clone)]
pub struct Case {
    /// Name.
    pub name: &'static str,
    /// The codec's maximum line length.
    pub max_len: usize,
    /// The reads, in order.
    pub chunks: Vec<Vec<u8>>,
    /// The frames expected: `Some(line)` for a line, `None` for `TooLong`.
    pub expected: Vec<Option<Vec<u8>>>,
}

/// The framing cases, built around the given wire lines (each without `\n`).
pub fn cases(lines: &[Vec<u8>]) -> Vec<Case> {
    let first = lines.first().cloned().unwrap_or_else(|| PING_1.to_vec());
    let second = lines.get(1).cloned().unwrap_or_else(|| first.clone());
    let joined = |sep: &[u8]| -> Vec<u8> {
        let mut all = Vec::new();
        for line in lines {
            all.extend_from_slice(line);
            all.extend_from_slice(sep);
        }
        all
    };
    let every = || lines.iter().cloned().map(Some).collect::<Vec<_>>();
    let cat = |parts: &[&[u8]]| parts.concat();
    let longest = lines.iter().map(Vec::len).max().unwrap_or(0);
    let big = 20 * 1024 * 1024;
    let huge = vec![b'x'; big];

    vec![
        Case {
            name: "lf",
            max_len: longest,
            chunks: vec![joined(b"\n")],
            expected: every(),
        },
        Case {
            name: "crlf",
            max_len: longest,
            chunks: vec![joined(b"\r\n")],
            expected: every(),
        },
        Case {
            name: "bom_at_stream_start",
            max_len: longest,
            chunks: vec![cat(&[b"\xEF\xBB\xBF", &first, b"\n", &second, b"\n"])],
            expected: vec![Some(first.clone()), Some(second.clone())],
        },
        Case {
            name: "blank_lines_skipped",
            max_len: longest,
            chunks: vec![cat(&[
                b"\n\n",
                &first,
                b"\n\r\n   \n\t\n",
                &second,
                b"\n\n",
            ])],
            expected: vec![Some(first.clone()), Some(second.clone())],
        },
        Case {
            name: "last_line_without_newline",
            max_len: longest,
            chunks: vec![cat(&[&first, b"\n", &second])],
            expected: vec![Some(first.clone()), Some(second.clone())],
        },
        Case {
            name: "partial_lines_one_byte_per_read",
            max_len: longest,
            chunks: joined(b"\r\n").into_iter().map(|b| vec![b]).collect(),
            expected: every(),
        },
        Case {
            name: "partial_lines_split_at_odd_points",
            max_len: longest,
            chunks: joined(b"\n").chunks(7).map(<[u8]>::to_vec).collect(),
            expected: every(),
        },
        Case {
            name: "line_at_exactly_the_limit",
            max_len: first.len(),
            chunks: vec![cat(&[&first, b"\r\n"])],
            expected: vec![Some(first.clone())],
        },
        Case {
            name: "over_long_line_then_good_line",
            max_len: longest,
            chunks: vec![cat(&[&vec![b'x'; longest + 1], b"\n", &first, b"\n"])],
            expected: vec![None, Some(first.clone())],
        },
        Case {
            name: "over_long_line_across_reads_then_good_line",
            max_len: 64,
            chunks: vec![
                cat(&[PING_1, b"\n", &[b'y'; 50]]),
                vec![b'y'; 50],
                vec![b'y'; 500],
                cat(&[b"yyy\n", PING_2, b"\n"]),
            ],
            expected: vec![Some(PING_1.to_vec()), None, Some(PING_2.to_vec())],
        },
        Case {
            name: "20_mib_line_then_good_line",
            max_len: a2e_proto::decode::DEFAULT_MAX_BYTES,
            chunks: vec![huge, cat(&[b"\n", &first, b"\n"])],
            expected: vec![None, Some(first.clone())],
        },
    ]
}

/// Runs one case; `Err` says what came out instead. Every line that comes out
/// must also decode as a message.
pub fn check(case: &Case) -> Result<(), String> {
    let mut codec = NdjsonCodec::new(case.max_len);
    let chunks: Vec<&[u8]> = case.chunks.iter().map(Vec::as_slice).collect();
    let got = frames(&mut codec, &chunks)?;
    let matches = got.len() == case.expected.len()
        && got.iter().zip(&case.expected).all(|(g, e)| match (g, e) {
            (Frame::Line(line), Some(want)) => line.as_ref() == want.as_slice(),
            (Frame::TooLong { limit }, None) => *limit == case.max_len,
            _ => false,
        });
    if !matches {
        let want: Vec<Frame> = case
            .expected
            .iter()
            .map(|e| match e {
                Some(line) => Frame::Line(bytes::Bytes::copy_from_slice(line)),
                None => Frame::TooLong {
                    limit: case.max_len,
                },
            })
            .collect();
        return Err(format!(
            "expected {}, got {}",
            describe(&want),
            describe(&got)
        ));
    }
    for frame in &got {
        if let Frame::Line(line) = frame
            && let Err(e) = a2e_proto::decode(line)
        {
            return Err(format!("a framed line does not decode: {e}"));
        }
    }
    Ok(())
}

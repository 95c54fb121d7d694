//! Property tests: every message type round-trips and validates against its
//! own schema; no byte string panics the decoder or the NDJSON codec.

use std::sync::OnceLock;

use a2e_proto::ndjson::NdjsonCodec;
use a2e_proto::*;
use bytes::BytesMut;
use conformance::fixtures::load_group;
use conformance::schemas::Schemas;
use proptest::prelude::*;
use tokio_util::codec::Decoder;

fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| Schemas::build().expect("schemas compile"))
}

/// The line of every message fixture, to mutate.
fn fixture_lines() -> Vec<Vec<u8>> {
    load_group("spec")
        .expect("fixtures load")
        .iter()
        .filter(|f| decode(f.line()).is_ok())
        .map(|f| f.line().to_vec())
        .collect()
}

/// 64 cases per message type and property (29 types × 2 properties), unless
/// `PROPTEST_CASES` asks for another number.
fn per_type_config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 64;
    }
    config
}

// The derived strategies draw lists of up to 100 items at every level, so a
// `tool/list/resp` can reach megabytes; these two keep their lists short.

fn tool_definition() -> impl Strategy<Value = ToolDefinition> {
    let params = || proptest::collection::vec(any::<ToolParameter>(), 0..3);
    let words = || proptest::collection::vec("[a-z_]{1,8}", 0..3);
    (
        (".{0,16}", ".{0,32}", params(), params()),
        (any::<bool>(), any::<bool>(), words(), "[0-9.]{1,6}"),
        (proptest::option::of("[a-z_]{1,8}"), any::<bool>()),
    )
        .prop_map(
            |(
                (name, description, input_parameters, output_parameters),
                (streaming, idempotent, tags, version),
                (toolkit, defer_loading),
            )| ToolDefinition {
                name,
                description,
                input_parameters,
                output_parameters,
                streaming,
                idempotent,
                tags,
                version,
                toolkit,
                defer_loading,
            },
        )
}

fn tool_list_response() -> impl Strategy<Value = ToolListResponse> {
    (
        a2e_proto::arb::id(),
        a2e_proto::arb::version(),
        a2e_proto::arb::finite(),
        ".{0,12}",
        proptest::collection::vec(tool_definition(), 0..3),
    )
        .prop_map(|(id, version, ts, req_id, tools)| ToolListResponse {
            id,
            version,
            ts,
            req_id,
            tools,
            ..ToolListResponse::default()
        })
}

fn skill_discover_response() -> impl Strategy<Value = SkillDiscoverResponse> {
    (
        a2e_proto::arb::id(),
        a2e_proto::arb::version(),
        a2e_proto::arb::finite(),
        ".{0,12}",
        proptest::collection::vec(any::<SkillDefinition>(), 0..3),
    )
        .prop_map(|(id, version, ts, req_id, skills)| SkillDiscoverResponse {
            id,
            version,
            ts,
            req_id,
            skills,
            ..SkillDiscoverResponse::default()
        })
}

/// One test module per message type: an arbitrary value survives
/// encode → decode unchanged as `Message`, and its encoding validates
/// against the type's generated schema.
macro_rules! every_message_type {
    ($($module:ident: $ty:ident $(= $strategy:expr)?,)+) => {
        $(
            mod $module {
                use super::*;

                fn values() -> BoxedStrategy<$ty> {
                    every_message_type!(@strategy $ty $(, $strategy)?)
                }

                proptest! {
                    #![proptest_config(per_type_config())]

                    #[test]
                    fn survives_encode_then_decode(value in values()) {
                        let msg = Message::from(value.clone());
                        let line = msg.to_line();
                        prop_assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
                        let back = decode(&line).map_err(|e| {
                            TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(&line)))
                        })?;
                        prop_assert_eq!(back, Message::$ty(value));
                    }

                    #[test]
                    fn validates_against_its_schema(value in values()) {
                        let json = serde_json::to_value(&value).expect("encodes");
                        let wire = <$ty as WireType>::TYPE;
                        if let Err(errors) = schemas().validate(wire, &json) {
                            prop_assert!(false, "{}: {:?}\n{}", wire, errors, json);
                        }
                    }
                }
            }
        )+

        #[test]
        fn every_message_type_is_covered() {
            let covered = [$(<$ty as WireType>::TYPE),+];
            assert_eq!(covered.len(), 29);
            assert_eq!(&covered[..], Message::TYPES);
        }
    };
    (@strategy $ty:ident) => { any::<$ty>().boxed() };
    (@strategy $ty:ident, $strategy:expr) => { $strategy.boxed() };
}

every_message_type! {
    handshake_req: HandshakeRequest,
    handshake_resp: HandshakeResponse,
    ping: Ping,
    pong: Pong,
    shutdown: Shutdown,
    error: ErrorMessage,
    invoke_event: InvokeEvent,
    tool_list_req: ToolListRequest,
    tool_list_resp: ToolListResponse = tool_list_response(),
    tool_call_req: ToolCallRequest,
    tool_call_resp: ToolCallResponse,
    tool_event: ToolEvent,
    skill_discover_req: SkillDiscoverRequest,
    skill_discover_resp: SkillDiscoverResponse = skill_discover_response(),
    skill_call_req: SkillCallRequest,
    skill_call_resp: SkillCallResponse,
    skill_event: SkillEvent,
    chain_req: ChainRequest,
    chain_event: ChainEvent,
    chain_resp: ChainResponse,
    proc_spawn_req: ProcSpawnRequest,
    proc_spawn_resp: ProcSpawnResponse,
    proc_write_req: ProcWriteRequest,
    proc_write_resp: ProcWriteResponse,
    proc_read_event: ProcReadEvent,
    proc_kill_req: ProcKillRequest,
    proc_kill_resp: ProcKillResponse,
    proc_status_req: ProcStatusRequest,
    proc_status_resp: ProcStatusResponse,
}

/// Decoding any bytes returns, and an error is well formed.
fn decode_is_total(bytes: &[u8]) -> Result<(), TestCaseError> {
    for allow_unknown in [true, false] {
        let options = DecodeOptions {
            allow_unknown,
            ..DecodeOptions::default()
        };
        match decode_with(bytes, &options) {
            Ok(msg) => {
                // Whatever decodes re-encodes to something that decodes the same.
                prop_assert_eq!(decode_with(&msg.to_json(), &options).ok(), Some(msg));
            }
            Err(e) => {
                prop_assert!(e.code().is_known());
                prop_assert_eq!(e.path().is_some(), e.code() == ErrorCode::SCHEMA_VIOLATION);
                let answer = Message::from(e.to_error_message());
                prop_assert!(decode(&answer.to_json()).is_ok());
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_the_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        decode_is_total(&bytes)?;
    }

    #[test]
    fn arbitrary_objects_never_panic_the_decoder(
        wire_type in proptest::sample::select(Message::TYPES.to_vec()),
        body in "[{}\\[\\]\",:0-9a-z_ .-]{0,120}",
    ) {
        let line = format!(r#"{{"type":"{wire_type}",{body}"#);
        decode_is_total(line.as_bytes())?;
    }

    #[test]
    fn mutated_fixture_lines_never_panic_the_decoder(
        index in any::<proptest::sample::Index>(),
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let lines = fixture_lines();
        let mut line = index.get(&lines).clone();
        for (at, byte) in edits {
            let i = at.index(line.len());
            line[i] = byte;
        }
        decode_is_total(&line)?;
    }

    #[test]
    fn arbitrary_byte_streams_never_panic_the_codec(
        chunks in proptest::collection::vec(
            proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'\r'), Just(0xEF), any::<u8>()], 0..64),
            0..12,
        ),
        max_len in 0usize..48,
    ) {
        let mut codec = NdjsonCodec::new(max_len);
        let mut buf = BytesMut::new();
        let mut frames = Vec::new();
        for chunk in &chunks {
            buf.extend_from_slice(chunk);
            while let Some(frame) = codec.decode(&mut buf).expect("no i/o") {
                frames.push(frame);
            }
            // The codec never holds much more than one line.
            prop_assert!(buf.len() <= max_len + 4, "{} buffered", buf.len());
        }
        while let Some(frame) = codec.decode_eof(&mut buf).expect("no i/o") {
            frames.push(frame);
        }
        let newlines = chunks.iter().flatten().filter(|b| **b == b'\n').count();
        prop_assert!(frames.len() <= newlines + 1);
        for frame in frames {
            match frame {
                a2e_proto::ndjson::Frame::Line(line) => {
                    prop_assert!(!line.is_empty() && line.len() <= max_len);
                    prop_assert!(!line.contains(&b'\n'));
                    decode_is_total(&line)?;
                }
                a2e_proto::ndjson::Frame::TooLong { limit } => prop_assert_eq!(limit, max_len),
            }
        }
    }
}

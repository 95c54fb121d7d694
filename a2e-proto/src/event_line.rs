//! `chain/event` lines written straight from the state that produced them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use crate::chains::ChainPhase;

/// What every line starts with, up to the id's digits.
const OPEN: &[u8] = b"{\"type\":\"chain/event\",\"id\":\"";

/// Writes the `chain/event` lines of one chain request straight from the
/// state that produced them: the same NDJSON line as the
/// [`ChainEvent`](crate::ChainEvent) with these fields (see the test),
/// without copying the output or building a [`crate::Message`]. The request
/// id is encoded once; the fixed parts of the line are written as they are,
/// the parts of varying length merged ahead where they can be (the id's
/// head, and everything from the id's end to `ts`'s decimal point, made
/// again once a second): each costs a call to `memcpy`, where a part of
/// fixed size is copied inline. About 42 ns a line in a loop (49 before
/// the merging; one `start` and one `done` line per node of a 1000-node
/// chain).
/// The host encodes a streaming chain's events with it where they happen.
///
/// Event ids are 32 lowercase hex digits, as every message id: 16 random to
/// the writer, then a count of its events (unique without drawing random
/// bits per event). `ts` is written from the clock's seconds and
/// microseconds, the number a float of them would print as; the clock is
/// read from the CPU's time-stamp counter, anchored to the system clock
/// once a second.
#[derive(Debug)]
pub struct ChainEventWriter {
    /// `req_id` as a JSON string.
    req_id: Vec<u8>,
    /// What every line starts with: [`OPEN`], then the first 16 digits of
    /// every id, random to this writer.
    head: [u8; HEAD],
    /// The part between `ts` and `node_id`'s value:
    /// `,"req_id":"…","node_id":`.
    middle: Vec<u8>,
    /// The part from the id's end to the decimal point of `ts`, for the
    /// second [`Self::stamp_secs`]: `","version":"1.0","ts":<seconds>.`
    /// (made again when the second changes).
    stamp: Vec<u8>,
    /// The second `stamp` holds (`u64::MAX`: none yet).
    stamp_secs: u64,
    /// Events written.
    count: u64,
    /// Where `ts` comes from.
    clock: WallClock,
}

/// Bytes of [`ChainEventWriter`]'s `head`.
const HEAD: usize = OPEN.len() + 16;

impl Clone for ChainEventWriter {
    /// A writer for the same request, with ids of its own.
    fn clone(&self) -> Self {
        Self::from_json_id(self.req_id.clone())
    }
}

impl ChainEventWriter {
    /// The writer for the events of request `req_id`.
    pub fn new(req_id: &str) -> Self {
        Self::from_json_id(json_string(req_id))
    }

    fn from_json_id(req_id: Vec<u8>) -> Self {
        let mut middle = b",\"req_id\":".to_vec();
        middle.extend_from_slice(&req_id);
        middle.extend_from_slice(b",\"node_id\":");
        let mut head = [0u8; HEAD];
        let (open, prefix) = head.split_at_mut(OPEN.len());
        open.copy_from_slice(OPEN);
        prefix.copy_from_slice(&hex16(uuid::Uuid::new_v4().as_u64_pair().0));
        Self {
            req_id,
            head,
            middle,
            stamp: Vec::new(),
            stamp_secs: u64::MAX,
            count: 0,
            clock: WallClock::new(),
        }
    }

    /// Calibrates the counter `ts` is read from, once per process, so that
    /// no event waits for it. `quanta` spins until its estimate settles:
    /// about 0.6 ms, longer when the thread is often interrupted (7 ms once
    /// in twelve starts on a 2-core machine, ~40 ms under a 20 kHz
    /// profiler), never past its 200 ms cap.
    pub fn calibrate() {
        let _ = quanta::Instant::now();
    }

    /// [`Self::calibrate`] on a thread of its own, started once per process:
    /// what starts a host does not wait for it. An event made while it
    /// runs waits for its end (as the first event would without it). The
    /// thread, on the call that started it; `None` on every later call, and
    /// when no thread could be started (then it calibrated here).
    pub fn calibrate_in_background() -> Option<std::thread::JoinHandle<()>> {
        static STARTED: std::sync::Once = std::sync::Once::new();
        let mut thread = None;
        STARTED.call_once(|| {
            match std::thread::Builder::new()
                .name("a2e-clock-calibration".into())
                .spawn(Self::calibrate)
            {
                Ok(handle) => thread = Some(handle),
                Err(_) => Self::calibrate(),
            }
        });
        thread
    }

    /// Appends one event, with a fresh id and made now, as one NDJSON line
    /// (ending in `\n`) to `out`; the time written as its `ts` (since the
    /// Unix epoch), for a caller that batches lines by age.
    pub fn write_line(&mut self, out: &mut Vec<u8>, event: &ChainEventFields<'_>) -> Duration {
        let count = self.count;
        self.count = self.count.wrapping_add(1);
        let now = self.clock.now();
        if now.as_secs() != self.stamp_secs {
            self.stamp_secs = now.as_secs();
            self.stamp = stamp_for(self.stamp_secs);
        }
        // Room for all but the output: one growth check for the fixed parts.
        out.reserve(
            self.middle.len() + self.stamp.len() + event.node_id.len() + event.error.len() + 160,
        );
        // Fixed-size parts are copied inline; each part of varying length
        // costs a call to `memcpy`, so the few of them are merged ahead.
        out.extend_from_slice(&self.head);
        // The count's 16 digits: with the head's, the id's 32.
        out.extend_from_slice(&hex16(count));
        out.extend_from_slice(&self.stamp);
        write_micros(out, now.subsec_micros());
        out.extend_from_slice(&self.middle);
        write_str(out, event.node_id);
        out.extend_from_slice(b",\"phase\":");
        // The phases a chain reports on every node, as constants.
        match event.phase.as_str() {
            "start" => out.extend_from_slice(b"\"start\""),
            "done" => out.extend_from_slice(b"\"done\""),
            other => write_str(out, other),
        }
        if event.output.is_null() {
            out.extend_from_slice(b",\"output\":null,\"error\":");
        } else {
            out.extend_from_slice(b",\"output\":");
            write_json(out, event.output);
            out.extend_from_slice(b",\"error\":");
        }
        if event.error.is_empty() {
            out.extend_from_slice(b"\"\",\"seq\":");
        } else {
            write_str(out, event.error);
            out.extend_from_slice(b",\"seq\":");
        }
        push_decimal(out, event.seq);
        out.extend_from_slice(b"}\n");
        now
    }
}

/// The wall clock (time since the Unix epoch) at a fraction of the cost of
/// reading it: the system's clock is read once, then the CPU's time-stamp
/// counter (about 10 ns a read against 35 for the system's clock; `quanta`
/// calibrates it, and falls back to the system's monotonic clock where the
/// counter is unfit) measures the time since. Read again each
/// [`WallClock::ANCHOR_AGE`], so that the two clocks never drift apart by
/// more than the counter drifts in that time (microseconds), and a step of
/// the system's clock shows within it.
#[derive(Debug, Clone)]
struct WallClock {
    /// The system's clock at `at`.
    wall: Duration,
    /// The counter when `wall` was read.
    at: quanta::Instant,
}

impl WallClock {
    /// How long one reading of the system's clock serves.
    const ANCHOR_AGE: Duration = Duration::from_secs(1);

    fn new() -> Self {
        Self {
            at: quanta::Instant::now(),
            wall: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
        }
    }

    /// The time since the Unix epoch.
    fn now(&mut self) -> Duration {
        let since = quanta::Instant::now().saturating_duration_since(self.at);
        if since >= Self::ANCHOR_AGE {
            *self = Self::new();
            return self.wall;
        }
        self.wall + since
    }
}

/// `value`'s 16 lowercase hex digits, most significant first.
fn hex16(value: u64) -> [u8; 16] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 16];
    for (i, digit) in out.iter_mut().enumerate() {
        let nibble = (value >> (60 - 4 * i)) & 0xf;
        *digit = DIGITS.get(nibble as usize).copied().unwrap_or(b'0');
    }
    out
}

/// `s` as a JSON string: quoted as it is when nothing in it needs an escape
/// (ids, phases, most messages), else through serde_json.
fn write_str(out: &mut Vec<u8>, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.reserve(s.len() + 2);
        out.push(b'"');
        if s.len() <= SHORT {
            // Node ids are short: pushed, they cost less than a `memcpy` call.
            for b in s.bytes() {
                out.push(b);
            }
        } else {
            out.extend_from_slice(s.as_bytes());
        }
        out.push(b'"');
    } else {
        write_json(out, s);
    }
}

/// Strings up to this many bytes are copied byte by byte (see [`write_str`]).
const SHORT: usize = 16;

/// `n` in decimal, appended digit by digit (a `seq` has a few digits:
/// pushing them costs less than formatting them elsewhere and copying).
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        if let Some(d) = digits.get_mut(at) {
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || at == 0 {
            break;
        }
    }
    for d in digits.get(at..).unwrap_or_default() {
        out.push(*d);
    }
}

/// What changes from one `chain/event` to the next, borrowed.
#[derive(Debug, Clone)]
pub struct ChainEventFields<'a> {
    /// The node concerned.
    pub node_id: &'a str,
    /// The phase.
    pub phase: &'a ChainPhase,
    /// The node's output (`null` unless `done`).
    pub output: &'a Value,
    /// The error message (empty unless `error`).
    pub error: &'a str,
    /// 0, 1, 2, … per chain request.
    pub seq: u64,
}

/// What a line holds from the id's closing quote to `ts`'s decimal point,
/// for second `secs` since the Unix epoch.
fn stamp_for(secs: u64) -> Vec<u8> {
    let mut stamp = b"\",\"version\":\"".to_vec();
    stamp.extend_from_slice(crate::PROTOCOL_VERSION.as_bytes());
    stamp.extend_from_slice(b"\",\"ts\":");
    stamp.extend_from_slice(itoa::Buffer::new().format(secs).as_bytes());
    stamp.push(b'.');
    stamp
}

/// The fraction of `ts` after its decimal point: `micros` as six digits
/// without trailing zeros (`0` on the second). With the seconds before the
/// point that is how the float of that instant prints (a microsecond is
/// wider than the float's step at today's seconds), without formatting a
/// float.
fn write_micros(out: &mut Vec<u8>, micros: u32) {
    if micros == 0 {
        out.push(b'0');
        return;
    }
    let mut rest = micros % 1_000_000;
    let mut digits = [b'0'; 6];
    for digit in digits.iter_mut().rev() {
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    // All six are written (a fixed-size copy), the trailing zeros cut after.
    out.extend_from_slice(&digits);
    let zeros = digits.iter().rev().take_while(|d| **d == b'0').count();
    out.truncate(out.len() - zeros);
}

/// `value` as JSON, appended to `out`. Strings, numbers, a phase and a
/// `Value` always serialise (a `Value`'s keys are strings): nothing to fail.
fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    let _ = serde_json::to_writer(&mut *out, value);
}

fn json_string(value: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.len() + 2);
    write_json(&mut out, value);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chains::ChainEvent;

    #[test]
    fn a_written_event_is_the_line_of_the_owned_one() {
        let output = serde_json::json!({"x": [1, "two\n", {"y": null}], "z": 1.5});
        let mut writer = ChainEventWriter::new("req-\u{e9}\"\u{1}");
        for (phase, output, error) in [
            (ChainPhase::DONE, output, ""),
            (ChainPhase::START, Value::Null, ""),
            (
                ChainPhase::ERROR,
                Value::Null,
                "it \"failed\"\tbadly\u{7f}\u{2028}",
            ),
            (ChainPhase::new("later"), Value::Bool(true), "\u{0}\u{1f}\\"),
        ] {
            let fields = ChainEventFields {
                node_id: "node[3]\r",
                phase: &phase,
                output: &output,
                error,
                seq: 41,
            };
            let mut line = b"before\n".to_vec();
            writer.write_line(&mut line, &fields);
            let back = crate::decode(&line[7..line.len() - 1]).unwrap();
            let crate::Message::ChainEvent(back) = back else {
                panic!("not a chain/event: {back:?}");
            };
            let owned = ChainEvent {
                req_id: "req-\u{e9}\"\u{1}".into(),
                node_id: "node[3]\r".into(),
                phase: phase.clone(),
                output: output.clone(),
                error: error.into(),
                seq: 41,
                id: back.id.clone(),
                ts: back.ts,
                ..ChainEvent::default()
            };
            assert_eq!(back, owned);
            assert_eq!(back.id.len(), 32);
            // Byte for byte the line the message encodes to.
            let mut expected = b"before\n".to_vec();
            expected.extend(crate::Message::from(owned).to_json());
            expected.push(b'\n');
            assert_eq!(
                String::from_utf8_lossy(&line),
                String::from_utf8_lossy(&expected)
            );
        }
    }

    /// A `start` of node `n`, as the first event of a request.
    fn start_of_n() -> ChainEventFields<'static> {
        ChainEventFields {
            node_id: "n",
            phase: &ChainPhase::START,
            output: &Value::Null,
            error: "",
            seq: 0,
        }
    }

    /// The line `writer` writes for `fields`, decoded.
    fn written(writer: &mut ChainEventWriter, fields: &ChainEventFields<'_>) -> ChainEvent {
        let mut line = Vec::new();
        writer.write_line(&mut line, fields);
        match crate::decode(&line[..line.len() - 1]).unwrap() {
            crate::Message::ChainEvent(event) => event,
            other => panic!("not a chain/event: {other:?}"),
        }
    }

    #[test]
    fn event_ids_are_unique_hex_and_ts_is_now() {
        let mut writer = ChainEventWriter::new("r");
        let mut other = writer.clone();
        let fields = start_of_n();
        let mut ids = std::collections::HashSet::new();
        for w in [&mut writer, &mut other] {
            for _ in 0..100 {
                let event = written(w, &fields);
                assert_eq!(event.id.len(), 32);
                assert!(
                    event
                        .id
                        .bytes()
                        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
                );
                assert!(ids.insert(event.id), "ids repeat");
                assert!(
                    (crate::envelope::now() - event.ts).abs() < 5.0,
                    "{}",
                    event.ts
                );
            }
        }
        // The clock's microseconds print as the float of them does.
        for (micros, text) in [
            (0, "1764621234.0"),
            (1, "1764621234.000001"),
            (10, "1764621234.00001"),
            (120_000, "1764621234.12"),
            (999_999, "1764621234.999999"),
            (123_456, "1764621234.123456"),
        ] {
            let since = std::time::Duration::new(1_764_621_234, micros * 1000 + 999);
            let mut out = stamp_for(since.as_secs());
            let stamp = out.len() - "1764621234.".len();
            write_micros(&mut out, since.subsec_micros());
            let out = out.split_off(stamp);
            assert_eq!(String::from_utf8_lossy(&out), text);
            let parsed: f64 = serde_json::from_slice(&out).unwrap();
            assert_eq!(serde_json::to_vec(&parsed).unwrap(), out, "{micros}");
        }
    }

    #[test]
    fn the_seconds_written_follow_the_clock_across_a_second() {
        let mut writer = ChainEventWriter::new("r");
        let fields = start_of_n();
        let ts_of = |writer: &mut ChainEventWriter, wall: Duration| {
            writer.clock = WallClock {
                wall,
                at: quanta::Instant::now(),
            };
            let mut line = Vec::new();
            writer.write_line(&mut line, &fields);
            let text = String::from_utf8(line).unwrap();
            let ts = text.split("\"ts\":").nth(1).unwrap();
            ts.split(',').next().unwrap().to_owned()
        };
        // The stamp made for one second is made again for the next.
        let before = ts_of(&mut writer, Duration::new(1_764_621_233, 999_000_000));
        assert!(before.starts_with("1764621233.999"), "{before}");
        let after = ts_of(&mut writer, Duration::new(1_764_621_234, 0));
        assert!(after.starts_with("1764621234."), "{after}");
        let back = ts_of(&mut writer, Duration::from_secs(7));
        assert!(back.starts_with("7."), "{back}");
    }

    #[test]
    fn calibrating_in_the_background_starts_one_thread_and_leaves_a_working_clock() {
        // The only caller in this test binary: the first call starts it.
        let thread = ChainEventWriter::calibrate_in_background().expect("a thread");
        assert_eq!(thread.thread().name(), Some("a2e-clock-calibration"));
        assert!(ChainEventWriter::calibrate_in_background().is_none());
        thread.join().unwrap();
        let event = written(&mut ChainEventWriter::new("r"), &start_of_n());
        assert!(
            (crate::envelope::now() - event.ts).abs() < 5.0,
            "{}",
            event.ts
        );
    }

    #[test]
    fn decimals_are_pushed_as_itoa_formats_them() {
        for n in [
            0,
            1,
            9,
            10,
            99,
            100,
            12_345,
            1 << 40,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut out = b"x".to_vec();
            push_decimal(&mut out, n);
            assert_eq!(out[1..], *itoa::Buffer::new().format(n).as_bytes(), "{n}");
        }
    }

    #[test]
    fn the_wall_clock_counts_from_its_anchor_and_reanchors_once_old() {
        let system = || SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        // Within its age, a reading is the anchor plus the counter's time.
        let mut clock = WallClock {
            wall: Duration::from_secs(7),
            at: quanta::Instant::now(),
        };
        let read = clock.now();
        assert!(
            read >= Duration::from_secs(7) && read < Duration::from_secs(8),
            "{read:?}"
        );
        // Past it, the system's clock is read again.
        let mut clock = WallClock {
            wall: Duration::from_secs(7),
            at: quanta::Instant::now()
                .checked_sub(WallClock::ANCHOR_AGE * 2)
                .unwrap(),
        };
        let before = system();
        let read = clock.now();
        assert!(
            read >= before && read <= system(),
            "{read:?} against {before:?}"
        );
        assert!(clock.now() >= read);
        // A fresh clock reads what the system's clock reads, and never goes back.
        let mut clock = WallClock::new();
        let mut last = Duration::ZERO;
        for _ in 0..1000 {
            let before = system();
            let read = clock.now();
            let after = system();
            assert!(read >= last, "went back: {read:?} after {last:?}");
            let slack = Duration::from_millis(5);
            assert!(read + slack >= before && read <= after + slack, "{read:?}");
            last = read;
        }
    }
}

//! The global template context and the clock behind `current_date` and
//! `current_time`.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

/// Where "now" comes from. Tests set a [`FixedClock`].
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time.
    fn now(&self) -> SystemTime;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that always reads one instant.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub SystemTime);

impl FixedClock {
    /// A clock fixed at `secs` seconds after the Unix epoch.
    pub fn at_unix(secs: u64) -> FixedClock {
        FixedClock(UNIX_EPOCH + Duration::from_secs(secs))
    }
}

impl Clock for FixedClock {
    fn now(&self) -> SystemTime {
        self.0
    }
}

/// The variables every template can read (`${input}`, `${user_id}`, …).
/// Unset ones stay literal in templates.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Globals {
    /// The user's original text (`${input}`, alias `${userInput}`).
    pub input: String,
    /// `${user_id}`.
    pub user_id: Option<String>,
    /// `${user_name}`.
    pub user_name: Option<String>,
    /// `${user_email}`.
    pub user_email: Option<String>,
    /// `${agent_id}`.
    pub agent_id: Option<String>,
    /// `${task_id}`.
    pub task_id: Option<String>,
    /// `${chat_id}`.
    pub chat_id: Option<String>,
    /// `${current_date}`; when unset, the clock's date in German long form
    /// (`Dienstag, 1. Dezember 2026`).
    pub current_date: Option<String>,
    /// `${current_time}`; when unset, the clock's time as `HH:mm`.
    pub current_time: Option<String>,
    /// Further variables the host provides (`${project_id}`, …).
    pub extra: Map<String, Value>,
}

impl Globals {
    /// Globals with just the user's input.
    pub fn with_input(input: impl Into<String>) -> Globals {
        Globals {
            input: input.into(),
            ..Globals::default()
        }
    }

    /// The variables as a JSON object, dates taken from `now` shifted by
    /// `utc_offset_minutes`.
    pub fn to_map(&self, now: SystemTime, utc_offset_minutes: i32) -> Map<String, Value> {
        let mut m = self.extra.clone();
        let s = |v: &str| Value::String(v.to_owned());
        m.insert("input".into(), s(&self.input));
        m.insert("userInput".into(), s(&self.input));
        for (k, v) in [
            ("user_id", &self.user_id),
            ("user_name", &self.user_name),
            ("user_email", &self.user_email),
            ("agent_id", &self.agent_id),
            ("task_id", &self.task_id),
            ("chat_id", &self.chat_id),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), s(v));
            }
        }
        let (date, time) = german_date_time(now, utc_offset_minutes);
        m.insert(
            "current_date".into(),
            s(self.current_date.as_deref().unwrap_or(&date)),
        );
        m.insert(
            "current_time".into(),
            s(self.current_time.as_deref().unwrap_or(&time)),
        );
        m
    }
}

const WEEKDAYS: [&str; 7] = [
    "Donnerstag",
    "Freitag",
    "Samstag",
    "Sonntag",
    "Montag",
    "Dienstag",
    "Mittwoch",
];
const MONTHS: [&str; 12] = [
    "Januar",
    "Februar",
    "März",
    "April",
    "Mai",
    "Juni",
    "Juli",
    "August",
    "September",
    "Oktober",
    "November",
    "Dezember",
];

/// `("Dienstag, 1. Dezember 2026", "14:05")` for an instant and a UTC offset.
pub fn german_date_time(now: SystemTime, utc_offset_minutes: i32) -> (String, String) {
    let secs: i64 = match now.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX / 2),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX / 2),
    };
    let local = secs.saturating_add(i64::from(utc_offset_minutes) * 60);
    let days = local.div_euclid(86_400);
    let of_day = local.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let weekday = WEEKDAYS
        .get(usize::try_from(days.rem_euclid(7)).unwrap_or(0))
        .copied()
        .unwrap_or_default();
    let month = MONTHS
        .get(usize::try_from(m - 1).unwrap_or(0))
        .copied()
        .unwrap_or_default();
    (
        format!("{weekday}, {d}. {month} {y}"),
        format!("{:02}:{:02}", of_day / 3600, (of_day % 3600) / 60),
    )
}

/// Days since 1970-01-01 → (year, month 1–12, day 1–31), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// A shared clock handle.
pub type SharedClock = Arc<dyn Clock>;

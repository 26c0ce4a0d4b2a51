//! `liked_at` timestamps.
//!
//! Format: RFC 3339 in UTC with exactly three fractional digits and a `Z`
//! (`2026-11-30T20:53:11.123Z`). Fixed width, so string order is time order: DynamoDB sorts the
//! `by_user` and `by_time` index keys as strings.

use chrono::{DateTime, SecondsFormat, Utc};

pub fn format_ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

pub fn now_ts() -> String {
    format_ts(Utc::now())
}

pub fn parse_ts(raw: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(raw)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn fixed_width_and_sortable() {
        let a = Utc.timestamp_millis_opt(1_000).unwrap();
        let b = Utc.timestamp_millis_opt(1_700_000_000_120).unwrap();
        let (fa, fb) = (format_ts(a), format_ts(b));
        assert_eq!(fa, "1970-01-01T00:00:01.000Z");
        assert_eq!(fb, "2023-11-14T22:13:20.120Z");
        assert_eq!(fa.len(), fb.len());
        assert!(fa < fb);
        assert_eq!(parse_ts(&fb), Some(b));
    }
}

//! Times as API.md shows them: RFC 3339 UTC, and seconds left counted from now.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub fn rfc3339(ms: i64) -> String {
    at(ms).format(&Rfc3339).unwrap_or_default()
}

/// The instant `ms` milliseconds after the Unix epoch (the epoch itself if out of range).
pub fn at(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// Milliseconds since the Unix epoch.
pub fn ms(t: OffsetDateTime) -> i64 {
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

pub fn now_ms() -> i64 {
    ms(OffsetDateTime::now_utc())
}

/// Whole seconds from now until `ms`, never negative: what a countdown starts from.
pub fn seconds_until(ms: i64) -> i64 {
    (ms - now_ms()).max(0) / 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(seconds_until(now_ms() - 5_000), 0);
        assert!((59..=60).contains(&seconds_until(now_ms() + 60_000)));
    }
}

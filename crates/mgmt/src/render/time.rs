//! Clock-free time formatting for the rendered text. BIRD's default
//! `timeformat ... iso short ms` prints the time of day as `%T.%3f`; dates
//! (`show status`) as `%F %T.%3f`. Times are shown in UTC plus an offset the
//! caller passes (`RenderOpts::utc_offset_secs`), so no time-zone database
//! is read here.

use base::civil_from_days;
use std::fmt::Write as _;

/// Local milliseconds since the epoch.
fn local_ms(unix_ms: u64, utc_offset_secs: i32) -> i64 {
    let ms = i64::try_from(unix_ms).unwrap_or(i64::MAX);
    ms.saturating_add(i64::from(utc_offset_secs) * 1000)
}

/// `HH:MM:SS.mmm`.
pub fn time_of_day(out: &mut String, unix_ms: u64, utc_offset_secs: i32) {
    let ms = local_ms(unix_ms, utc_offset_secs);
    let in_day = ms.rem_euclid(86_400_000);
    let (h, rest) = (in_day / 3_600_000, in_day % 3_600_000);
    let (m, rest) = (rest / 60_000, rest % 60_000);
    let (s, milli) = (rest / 1000, rest % 1000);
    let _ = write!(out, "{h:02}:{m:02}:{s:02}.{milli:03}");
}

/// `YYYY-MM-DD HH:MM:SS.mmm`.
pub fn date_time(out: &mut String, unix_ms: u64, utc_offset_secs: i32) {
    let ms = local_ms(unix_ms, utc_offset_secs);
    let (y, mo, d) = civil_from_days(ms.div_euclid(86_400_000));
    let _ = write!(out, "{y:04}-{mo:02}-{d:02} ");
    time_of_day(out, unix_ms, utc_offset_secs);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dt(ms: u64, off: i32) -> String {
        let mut s = String::new();
        date_time(&mut s, ms, off);
        s
    }

    #[test]
    fn known_dates() {
        assert_eq!(dt(0, 0), "1970-01-01 00:00:00.000");
        // 2000-02-29 (leap day of a century leap year) 12:34:56.789 UTC.
        assert_eq!(dt(951_827_696_789, 0), "2000-02-29 12:34:56.789");
        // 2024-12-31 23:59:59.999 UTC, then one hour east: next year.
        assert_eq!(dt(1_735_689_599_999, 0), "2024-12-31 23:59:59.999");
        assert_eq!(dt(1_735_689_599_999, 3600), "2025-01-01 00:59:59.999");
        // West of UTC before the epoch's first hour wraps to the day before.
        assert_eq!(dt(0, -3600), "1969-12-31 23:00:00.000");
    }

    #[test]
    fn huge_values_do_not_panic() {
        let mut s = String::new();
        time_of_day(&mut s, u64::MAX, i32::MAX);
        date_time(&mut s, u64::MAX, i32::MIN);
        assert!(!s.is_empty());
    }
}

//! Calendar dates without a date crate or a time-zone database.

/// Civil date (year, month 1-12, day 1-31) of a count of days since
/// 1970-01-01, proleptic Gregorian: Howard Hinnant's `civil_from_days`,
/// counting 400-year eras of 146,097 days from 0000-03-01. Exact for every
/// `i64` day count whose era arithmetic does not overflow (far beyond any
/// timestamp).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, 0..=146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // 0..=365, from March 1
    let mp = (5 * doy + 2) / 153; // 0..=11, March = 0
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32; // 1..=31
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32; // 1..=12
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_days() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        // 2000-02-29 (leap day of a century leap year) and 2100-03-01.
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(47_541), (2100, 3, 1));
        // u32::MAX seconds: 2106-02-07.
        assert_eq!(civil_from_days(i64::from(u32::MAX / 86_400)), (2106, 2, 7));
    }
}

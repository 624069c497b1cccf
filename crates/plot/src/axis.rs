//! Axis ticks: round numbers (1, 2 or 5 times a power of ten) covering a
//! range, and compact tick labels.

/// At most about `max_ticks` round tick values covering `[lo, hi]`: the
/// first tick is at or below `lo`, the last at or above `hi`. A degenerate
/// or non-finite range gets a unit range around it.
pub fn nice_ticks(lo: f64, hi: f64, max_ticks: usize) -> Vec<f64> {
    let (mut lo, mut hi) = if lo.is_finite() && hi.is_finite() {
        (lo.min(hi), lo.max(hi))
    } else {
        (0.0, 1.0)
    };
    if hi - lo < f64::EPSILON * hi.abs().max(1.0) {
        lo -= 0.5;
        hi += 0.5;
    }
    let n = max_ticks.max(2) as f64;
    let raw = (hi - lo) / (n - 1.0);
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| (hi - lo) / s <= n - 1.0)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).floor() * step;
    let mut ticks = Vec::new();
    let mut k = 0.0;
    loop {
        let t = first + k * step;
        // Snap values like 0.30000000000000004 to what they mean.
        let t = (t / step).round() * step;
        ticks.push(if t == 0.0 { 0.0 } else { t });
        if t >= hi - step * 1e-9 || ticks.len() > 100 {
            break;
        }
        k += 1.0;
    }
    ticks
}

/// A short label: integers as is (with k/M suffixes from 10k), fractions
/// with up to 3 significant decimals.
pub fn format_tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e7 && (v / 1e6).fract() == 0.0 {
        format!("{}M", v / 1e6)
    } else if a >= 1e7 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 && (v / 1e3).fract() == 0.0 {
        format!("{}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        let t = nice_ticks(0.0, 97.0, 6);
        assert_eq!(t, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let t = nice_ticks(0.13, 0.91, 5);
        assert!(t[0] <= 0.13 && *t.last().unwrap() >= 0.91, "{t:?}");
        assert!(t.len() <= 6, "{t:?}");
        let t = nice_ticks(5.0, 5.0, 5);
        assert!(t[0] <= 5.0 && *t.last().unwrap() >= 5.0);
        let t = nice_ticks(f64::NAN, 1.0, 5);
        assert!(!t.is_empty());
        let t = nice_ticks(0.0, 1_000_000.0, 6);
        assert_eq!(t.last(), Some(&1_000_000.0));
    }

    #[test]
    fn labels_are_short() {
        assert_eq!(format_tick(0.0), "0");
        assert_eq!(format_tick(250.0), "250");
        assert_eq!(format_tick(20_000.0), "20k");
        assert_eq!(format_tick(1_500_000.0), "1500k");
        assert_eq!(format_tick(20_000_000.0), "20M");
        assert_eq!(format_tick(0.25), "0.25");
        assert_eq!(format_tick(-1.5), "-1.5");
    }
}

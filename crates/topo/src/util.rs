//! Small sampling helpers over [`sim::Rng`].

use sim::Rng;

/// Uniform in `[0, 1)`.
pub(crate) fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Uniform in `lo..=hi` (`lo <= hi`).
pub(crate) fn between(rng: &mut Rng, lo: u32, hi: u32) -> u32 {
    if hi <= lo {
        return lo;
    }
    lo + rng.below(u64::from(hi - lo) + 1) as u32
}

/// A value from a `(value, weight)` table, by its cumulative weights.
pub(crate) fn from_table(rng: &mut Rng, table: &[(u32, u32)]) -> u32 {
    let total: u64 = table.iter().map(|&(_, w)| u64::from(w)).sum();
    if total == 0 {
        return table.first().map(|&(v, _)| v).unwrap_or(0);
    }
    let mut x = rng.below(total);
    for &(v, w) in table {
        if x < u64::from(w) {
            return v;
        }
        x -= u64::from(w);
    }
    table.last().map(|&(v, _)| v).unwrap_or(0)
}

/// Key of an undirected pair, for "at most one link per pair".
pub(crate) fn pair(a: u32, b: u32) -> u64 {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    (u64::from(lo) << 32) | u64::from(hi)
}

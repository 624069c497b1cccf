//! Empirical distributions measured from real tables.
//!
//! IPv4: the full-feed peer (AS30844) of `routeviews.route-views.jinx.ribs.1401487200`
//! (497,321 prefixes). IPv6: every entry of `rib.bz2` (route-views6, 2015,
//! 609,246 entries). Counts were taken with `bgpdump -m` and awk; the weights
//! below are those counts.

use crate::Rng;

/// (prefix length, count) for IPv4.
pub const V4_PREFIX_LEN: &[(u8, u32)] = &[
    (8, 16),
    (9, 12),
    (10, 30),
    (11, 91),
    (12, 258),
    (13, 487),
    (14, 978),
    (15, 1707),
    (16, 12966),
    (17, 7004),
    (18, 11763),
    (19, 24674),
    (20, 34446),
    (21, 37114),
    (22, 53134),
    (23, 46372),
    (24, 265110),
    (25, 138),
    (26, 109),
    (27, 52),
    (28, 97),
    (29, 109),
    (30, 395),
    (32, 230),
];

/// (prefix length, count) for IPv6.
pub const V6_PREFIX_LEN: &[(u8, u32)] = &[
    (16, 24),
    (19, 50),
    (20, 232),
    (21, 78),
    (22, 104),
    (23, 104),
    (24, 470),
    (28, 1706),
    (29, 20376),
    (30, 2567),
    (31, 1572),
    (32, 177738),
    (33, 6238),
    (34, 4337),
    (35, 4891),
    (36, 22723),
    (37, 1729),
    (38, 4858),
    (39, 1587),
    (40, 28913),
    (41, 4261),
    (42, 3781),
    (43, 1452),
    (44, 24608),
    (45, 2626),
    (46, 9279),
    (47, 4189),
    (48, 273489),
    (56, 798),
    (64, 2002),
];

/// (AS-path length in ASNs, count), IPv4 full feed. Lengths above 12 are
/// mostly prepending.
pub const AS_PATH_LEN: &[(u8, u32)] = &[
    (1, 379),
    (2, 22339),
    (3, 147722),
    (4, 194301),
    (5, 73475),
    (6, 26099),
    (7, 13842),
    (8, 7365),
    (9, 4118),
    (10, 2442),
    (11, 1139),
    (12, 886),
    (13, 1815),
    (14, 626),
    (15, 209),
    (16, 125),
    (17, 82),
    (20, 47),
    (32, 150),
];

/// A discrete distribution sampled in O(log n) by a cumulative table.
#[derive(Clone, Debug)]
pub struct Discrete {
    values: Vec<u8>,
    cumulative: Vec<u64>,
}

impl Discrete {
    pub fn new(table: &[(u8, u32)]) -> Discrete {
        let mut total = 0u64;
        let mut values = Vec::with_capacity(table.len());
        let mut cumulative = Vec::with_capacity(table.len());
        for &(v, w) in table {
            total += w as u64;
            values.push(v);
            cumulative.push(total);
        }
        Discrete { values, cumulative }
    }

    pub fn sample(&self, rng: &mut Rng) -> u8 {
        let total = self.cumulative.last().copied().unwrap_or(0);
        if total == 0 {
            return 0;
        }
        let x = rng.below(total);
        let i = self.cumulative.partition_point(|&c| c <= x);
        self.values.get(i).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_follows_the_table() {
        let d = Discrete::new(V4_PREFIX_LEN);
        let mut rng = Rng::new(1);
        let n = 200_000;
        let s24 = (0..n).filter(|_| d.sample(&mut rng) == 24).count();
        // 265110 / 497321 = 53.3%.
        let share = s24 as f64 / n as f64;
        assert!((0.52..0.545).contains(&share), "share of /24: {share}");
        let p = Discrete::new(AS_PATH_LEN);
        let mean: f64 = (0..n).map(|_| p.sample(&mut rng) as f64).sum::<f64>() / n as f64;
        assert!((3.5..5.0).contains(&mean), "mean path length {mean}");
    }
}

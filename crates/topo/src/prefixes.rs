//! Prefixes for the ASes of a generated graph.
//!
//! Counts: [`ORIGIN_COUNTS`], the number of IPv4 prefixes each origin AS
//! announces in the full feed of AS30844 in
//! `routeviews.route-views.jinx.ribs.1401487200` (46,910 origins, 497,197
//! prefixes, mean 10.6 per origin; AS-set origins left out). Lengths:
//! [`sim::dist::V4_PREFIX_LEN`], measured from the same peer of the same
//! table.
//!
//! Addresses are carved from the unicast IPv4 space (1.0.0.0-126.255.255.255
//! and 128.0.0.0-223.255.255.255) in order: all prefixes are sorted by
//! length (shortest first, then by node) and each takes the next aligned
//! block, so they are unique, never overlap, and depend only on the counts
//! and lengths drawn. If the blocks would not fit, the shortest lengths are
//! raised (to /9, /10... ) until they do. These prefixes only ever travel
//! inside the simulator.

use crate::util::from_table;
use crate::Graph;
use base::{Prefix, Prefix4};
use sim::dist::V4_PREFIX_LEN;
use sim::Rng;

/// (prefixes per origin AS, number of origin ASes). Exact up to 32, then
/// bins of about x1.5 represented by their mean. Regenerated with:
///
/// ```text
/// bgpdump -m routeviews.route-views.jinx.ribs.1401487200.bz2 \
///   | awk -F'|' '$5==30844 && $6 !~ /:/ {n=split($7,p," "); o=p[n];
///       if (o ~ /^[0-9]+$/) c[o]++} END {for (o in c) print c[o]}' \
///   | sort -n | uniq -c \
///   | awk '{n=$1; v=$2; if (v<=32) print v, n; else { b=32;
///       while (b*1.5 < v) b=int(b*1.5); s[b]+=n*v; c[b]+=n } }
///       END { for (k in c) print int(s[k]/c[k]+0.5), c[k] }'
/// ```
pub const ORIGIN_COUNTS: &[(u32, u32)] = &[
    (1, 19225),
    (2, 6975),
    (3, 4071),
    (4, 2881),
    (5, 1949),
    (6, 1394),
    (7, 1076),
    (8, 1064),
    (9, 860),
    (10, 633),
    (11, 523),
    (12, 429),
    (13, 386),
    (14, 362),
    (15, 299),
    (16, 326),
    (17, 263),
    (18, 216),
    (19, 209),
    (20, 183),
    (21, 149),
    (22, 134),
    (23, 119),
    (24, 128),
    (25, 116),
    (26, 115),
    (27, 97),
    (28, 109),
    (29, 93),
    (30, 77),
    (31, 83),
    (32, 114),
    (40, 762),
    (59, 524),
    (87, 328),
    (133, 244),
    (198, 149),
    (298, 81),
    (441, 74),
    (670, 33),
    (996, 31),
    (1485, 16),
    (2186, 6),
    (3104, 4),
];

/// Most prefixes [`assign`] makes with fixed counts (memory).
pub const MAX_PREFIXES: u64 = 16_000_000;

/// How many prefixes each AS originates.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Counts {
    /// The same number for every AS.
    PerOrigin(u32),
    /// Drawn from [`ORIGIN_COUNTS`].
    Real,
}

/// The unicast blocks prefixes are carved from: (first address, end).
const SPACE: &[(u64, u64)] = &[(0x0100_0000, 0x7f00_0000), (0x8000_0000, 0xe000_0000)];

/// Why prefixes could not be assigned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpaceError(pub String);

impl std::fmt::Display for SpaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpaceError {}

/// Replace every node's prefixes: counts by `counts`, lengths from the real
/// mix, addresses carved as described above. Deterministic for `seed`.
pub fn assign(g: &mut Graph, counts: Counts, seed: u64) -> Result<(), SpaceError> {
    if let Counts::PerOrigin(k) = counts {
        let total = u64::from(k) * g.nodes.len() as u64;
        if total > MAX_PREFIXES {
            return Err(SpaceError(format!(
                "{total} prefixes: at most {MAX_PREFIXES} in all"
            )));
        }
    }
    let mut rng = Rng::new(seed ^ 0x9e3f_1f0e);
    let lens: Vec<(u32, u32)> = V4_PREFIX_LEN
        .iter()
        .map(|&(l, w)| (u32::from(l), w))
        .collect();
    // (length, node) for every prefix.
    let mut want: Vec<(u8, u32)> = Vec::new();
    for i in 0..g.nodes.len() {
        let k = match counts {
            Counts::PerOrigin(k) => k,
            Counts::Real => from_table(&mut rng, ORIGIN_COUNTS),
        };
        for _ in 0..k {
            let l = from_table(&mut rng, &lens).clamp(8, 32) as u8;
            want.push((l, i as u32));
        }
    }
    let room: u64 = SPACE.iter().map(|&(a, b)| b - a).sum();
    let need = |floor: u8| -> u64 {
        want.iter()
            .map(|&(l, _)| 1u64 << (32 - u32::from(l.max(floor))))
            .sum()
    };
    let mut floor = 8u8;
    while need(floor) > room {
        if floor >= 32 {
            return Err(SpaceError(format!(
                "{} prefixes do not fit in the IPv4 unicast space even as /32s",
                want.len()
            )));
        }
        floor += 1;
    }
    for w in &mut want {
        w.0 = w.0.max(floor);
    }
    want.sort_unstable();
    for n in &mut g.nodes {
        n.prefixes.clear();
    }
    let mut block = 0usize;
    let mut cursor = SPACE.first().map(|s| s.0).unwrap_or(0);
    for &(l, node) in &want {
        let size = 1u64 << (32 - u32::from(l));
        loop {
            let Some(&(_, end)) = SPACE.get(block) else {
                return Err(SpaceError("address space exhausted".into()));
            };
            if cursor + size <= end {
                break;
            }
            block += 1;
            cursor = SPACE.get(block).map(|s| s.0).unwrap_or(u64::MAX / 2);
        }
        let p = Prefix4::new(cursor as u32, l).map_err(|e| SpaceError(e.to_string()))?;
        if let Some(n) = g.nodes.get_mut(node as usize) {
            n.prefixes.push(Prefix::V4(p));
        }
        cursor += size;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Node;
    use std::collections::HashMap;

    fn nodes(n: u32) -> Graph {
        Graph {
            nodes: (0..n)
                .map(|i| Node {
                    asn: i + 1,
                    prefixes: vec![],
                })
                .collect(),
            links: vec![],
        }
    }

    fn v4(p: &Prefix) -> (u64, u64) {
        match p {
            Prefix::V4(p) => {
                let a = u64::from(u32::from(p.addr()));
                (a, a + (1u64 << (32 - p.len())))
            }
            Prefix::V6(_) => panic!("v6"),
        }
    }

    #[test]
    fn real_counts_and_lengths_unique_and_disjoint() {
        let mut g = nodes(5000);
        assign(&mut g, Counts::Real, 1).unwrap();
        let all: Vec<Prefix> = g.nodes.iter().flat_map(|n| n.prefixes.clone()).collect();
        let mean = all.len() as f64 / 5000.0;
        assert!((7.0..15.0).contains(&mean), "mean per origin {mean}");
        let ones = g.nodes.iter().filter(|n| n.prefixes.len() == 1).count() as f64 / 5000.0;
        // 19225 / 46910 = 41% of origins have one prefix.
        assert!((0.37..0.45).contains(&ones), "{ones}");
        let mut by_len: HashMap<u8, usize> = HashMap::new();
        for p in &all {
            *by_len.entry(p.len()).or_default() += 1;
        }
        let s24 = by_len.get(&24).copied().unwrap_or(0) as f64 / all.len() as f64;
        assert!((0.5..0.57).contains(&s24), "{s24}");
        let mut ranges: Vec<(u64, u64)> = all.iter().map(v4).collect();
        ranges.sort_unstable();
        for w in ranges.windows(2) {
            assert!(w[0].1 <= w[1].0, "overlap {w:?}");
        }
        for &(a, b) in &ranges {
            assert!(a >= 0x0100_0000 && b <= 0xe000_0000 && !(a < 0x8000_0000 && b > 0x7f00_0000));
            assert_eq!(a % (b - a), 0, "unaligned");
        }
        let mut h = nodes(5000);
        assign(&mut h, Counts::Real, 1).unwrap();
        assert_eq!(g, h);
    }

    #[test]
    fn too_many_prefixes_get_longer() {
        let mut g = nodes(4);
        assign(&mut g, Counts::PerOrigin(300_000), 2).unwrap();
        let min = g
            .nodes
            .iter()
            .flat_map(|n| n.prefixes.iter())
            .map(|p| p.len())
            .min();
        assert!(min.unwrap() >= 12, "{min:?}");
        assert!(g.nodes.iter().all(|n| n.prefixes.len() == 300_000));
        // Beyond the memory cap: an error, not an allocation.
        assert!(assign(&mut g, Counts::PerOrigin(5_000_000), 2).is_err());
    }
}

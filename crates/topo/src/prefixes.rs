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
use base::{Prefix, Prefix4, Prefix6};
use sim::dist::{V4_PREFIX_LEN, V6_PREFIX_LEN};
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
    /// This many in all, shared out in proportion to counts drawn from
    /// [`ORIGIN_COUNTS`] (largest remainder), every AS getting at least one
    /// when there are enough; with fewer prefixes than ASes, a random
    /// subset of the ASes gets one each.
    Total(u32),
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
    let total = match counts {
        Counts::PerOrigin(k) => u64::from(k) * g.nodes.len() as u64,
        Counts::Total(n) => u64::from(n),
        Counts::Real => 0,
    };
    if total > MAX_PREFIXES {
        return Err(SpaceError(format!(
            "{total} prefixes: at most {MAX_PREFIXES} in all"
        )));
    }
    let mut rng = Rng::new(seed ^ 0x9e3f_1f0e);
    let lens: Vec<(u32, u32)> = V4_PREFIX_LEN
        .iter()
        .map(|&(l, w)| (u32::from(l), w))
        .collect();
    // Fixed counts per node; `Real` draws each node's count just before
    // its lengths (the order earlier seeds were made in).
    let fixed: Option<Vec<u32>> = match counts {
        Counts::PerOrigin(k) => Some(vec![k; g.nodes.len()]),
        Counts::Real => None,
        Counts::Total(n) => Some(share_out(n, g.nodes.len(), &mut rng)),
    };
    // (length, node) for every prefix.
    let mut want: Vec<(u8, u32)> = Vec::new();
    for i in 0..g.nodes.len() {
        let k = match &fixed {
            Some(v) => v.get(i).copied().unwrap_or(0),
            None => from_table(&mut rng, ORIGIN_COUNTS),
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

/// Turns a share of every AS's prefixes into IPv6 ones: each prefix is
/// replaced, with probability `share`, by an IPv6 prefix whose length is
/// drawn from [`sim::dist::V6_PREFIX_LEN`] (route-views6; the jinx RIB the
/// IPv4 figures come from carries no IPv6) and clamped to /16-/64. IPv6
/// prefixes are carved like the IPv4 ones, shortest first, from
/// 2000::/3, so they too are unique and disjoint. Counts per AS do not
/// change. Deterministic for `seed`.
pub fn to_v6(g: &mut Graph, share: f64, seed: u64) -> Result<(), SpaceError> {
    if !(0.0..=1.0).contains(&share) {
        return Err(SpaceError(format!("IPv6 share {share} is not in 0..1")));
    }
    if share == 0.0 {
        return Ok(());
    }
    let mut rng = Rng::new(seed ^ 0x6_6666);
    let lens: Vec<(u32, u32)> = V6_PREFIX_LEN
        .iter()
        .map(|&(l, w)| (u32::from(l), w))
        .collect();
    let cut = (share * (1u64 << 53) as f64) as u64;
    // (length, node, slot) for every prefix turned.
    let mut want: Vec<(u8, u32, u32)> = Vec::new();
    for (i, n) in g.nodes.iter().enumerate() {
        for (j, p) in n.prefixes.iter().enumerate() {
            if matches!(p, Prefix::V4(_)) && (rng.next_u64() >> 11) < cut {
                let l = from_table(&mut rng, &lens).clamp(16, 64) as u8;
                want.push((l, i as u32, j as u32));
            }
        }
    }
    want.sort_unstable();
    // 2000::/3 holds 2^61 /64s: more than MAX_PREFIXES /16s need.
    let mut cursor: u128 = 0x2000u128 << 112;
    let end: u128 = 0x4000u128 << 112;
    for &(l, node, slot) in &want {
        let size = 1u128 << (128 - u32::from(l));
        if cursor + size > end {
            return Err(SpaceError("IPv6 space exhausted".into()));
        }
        let p = Prefix6::new(cursor, l).map_err(|e| SpaceError(e.to_string()))?;
        if let Some(q) = g
            .nodes
            .get_mut(node as usize)
            .and_then(|n| n.prefixes.get_mut(slot as usize))
        {
            *q = Prefix::V6(p);
        }
        cursor += size;
    }
    Ok(())
}

/// `total` prefixes over `nodes` ASes ([`Counts::Total`]).
fn share_out(total: u32, nodes: usize, rng: &mut Rng) -> Vec<u32> {
    let mut k = vec![0u32; nodes];
    if nodes == 0 {
        return k;
    }
    if (total as usize) < nodes {
        // A random subset: a partial Fisher-Yates shuffle.
        let mut idx: Vec<usize> = (0..nodes).collect();
        for i in 0..total as usize {
            let j = i + rng.below((nodes - i) as u64) as usize;
            idx.swap(i, j);
            if let Some(c) = idx.get(i).and_then(|&x| k.get_mut(x)) {
                *c = 1;
            }
        }
        return k;
    }
    // One each, the rest in proportion to (real count - 1).
    let w: Vec<u64> = (0..nodes)
        .map(|_| u64::from(from_table(rng, ORIGIN_COUNTS).saturating_sub(1)))
        .collect();
    let sum: u64 = w.iter().sum();
    let (w, sum) = if sum == 0 {
        (vec![1u64; nodes], nodes as u64)
    } else {
        (w, sum)
    };
    let rest = u64::from(total) - nodes as u64;
    let mut given = 0u64;
    let mut frac: Vec<(u64, usize)> = Vec::with_capacity(nodes);
    for ((i, &wi), c) in w.iter().enumerate().zip(k.iter_mut()) {
        let q = rest * wi;
        let whole = q / sum;
        *c = 1 + whole as u32;
        given += whole;
        frac.push((q % sum, i));
    }
    // Largest remainders first, ties to the lower index.
    frac.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, i) in frac.iter().take((rest - given) as usize) {
        if let Some(c) = k.get_mut(i) {
            *c += 1;
        }
    }
    k
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
    fn a_total_is_shared_out_exactly_with_a_real_skew() {
        let mut g = nodes(1000);
        assign(&mut g, Counts::Total(10_000), 3).unwrap();
        let counts: Vec<usize> = g.nodes.iter().map(|n| n.prefixes.len()).collect();
        assert_eq!(counts.iter().sum::<usize>(), 10_000);
        assert!(counts.iter().all(|&c| c >= 1));
        // Heavy tail: the largest origin has far more than the mean (10).
        assert!(
            *counts.iter().max().unwrap() > 100,
            "{:?}",
            counts.iter().max()
        );
        let ones = counts.iter().filter(|&&c| c == 1).count();
        assert!(ones > 200, "{ones} origins with one prefix");
        let mut g = nodes(1000);
        assign(&mut g, Counts::Total(10), 3).unwrap();
        let counts: Vec<usize> = g.nodes.iter().map(|n| n.prefixes.len()).collect();
        assert_eq!(counts.iter().sum::<usize>(), 10);
        assert!(counts.iter().all(|&c| c <= 1));
        assert!(assign(&mut g, Counts::Total(20_000_000), 3).is_err());
    }

    #[test]
    fn a_share_turns_into_disjoint_ipv6_prefixes() {
        let mut g = nodes(2000);
        assign(&mut g, Counts::Total(20_000), 4).unwrap();
        to_v6(&mut g, 0.25, 4).unwrap();
        let all: Vec<Prefix> = g.nodes.iter().flat_map(|n| n.prefixes.clone()).collect();
        assert_eq!(all.len(), 20_000);
        let v6: Vec<&Prefix> = all.iter().filter(|p| matches!(p, Prefix::V6(_))).collect();
        let share = v6.len() as f64 / all.len() as f64;
        assert!((0.22..0.28).contains(&share), "{share}");
        let mut r: Vec<(u128, u128)> = v6
            .iter()
            .map(|p| match p {
                Prefix::V6(p) => {
                    let a = u128::from(p.addr());
                    (a, a + (1u128 << (128 - u32::from(p.len()))))
                }
                Prefix::V4(_) => unreachable!(),
            })
            .collect();
        r.sort_unstable();
        for w in r.windows(2) {
            assert!(w[0].1 <= w[1].0, "overlap {w:?}");
        }
        assert!(r
            .iter()
            .all(|&(a, b)| a >= 0x2000u128 << 112 && b <= 0x4000u128 << 112));
        let n48 = v6.iter().filter(|p| p.len() == 48).count() as f64 / v6.len() as f64;
        assert!((0.4..0.55).contains(&n48), "/48 share {n48}");
        assert!(to_v6(&mut g, 1.5, 4).is_err());
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

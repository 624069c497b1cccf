//! Small topology inputs for `tessera sim run` until the `topo` crate's
//! generators and readers are merged: a CAIDA AS-relationship reader and
//! a seeded random relationship graph, plus prefix and latency
//! assignment. (Stop-gap: `topo` owns the full formats.)

use std::collections::HashMap;

use base::Prefix;
use sim::Rng;
use topo::{Graph, Link, Node, Rel};

/// Reads the CAIDA AS-relationship format (`A|B|-1` A is a provider of
/// B, `A|B|0` peers; `#` comments; an optional fourth field is ignored).
/// Latencies are 0: see [`assign_latencies`].
pub fn from_caida(text: &str) -> Result<Graph, String> {
    let mut g = Graph::default();
    let mut index: HashMap<u32, u32> = HashMap::new();
    let mut seen = std::collections::HashSet::new();
    let mut node = |g: &mut Graph, asn: u32| -> u32 {
        *index.entry(asn).or_insert_with(|| {
            g.nodes.push(Node {
                asn,
                prefixes: Vec::new(),
            });
            (g.nodes.len() - 1) as u32
        })
    };
    for (ln, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split('|').collect();
        let bad = || format!("line {}: expected A|B|REL, got {line:?}", ln + 1);
        if f.len() < 3 {
            return Err(bad());
        }
        let a: u32 = f[0].trim().parse().map_err(|_| bad())?;
        let b: u32 = f[1].trim().parse().map_err(|_| bad())?;
        let rel = match f[2].trim() {
            "-1" => Rel::ProviderCustomer,
            "0" => Rel::Peer,
            _ => return Err(bad()),
        };
        if a == b || !seen.insert((a.min(b), a.max(b))) {
            continue;
        }
        let (x, y) = (node(&mut g, a), node(&mut g, b));
        g.links.push(Link {
            a: x,
            b: y,
            rel,
            latency_us: 0,
        });
    }
    Ok(g)
}

/// A random relationship graph of `n` ASes (AS 64512 + i... wrapping into
/// 4-octet private ASNs past 65534): node i > 0 buys transit from 1-3
/// earlier nodes (a provider DAG with a few large transit ASes) and about
/// n/2 peer links join random pairs.
pub fn random(n: usize, seed: u64) -> Graph {
    let mut rng = Rng::new(seed ^ 0x5eed_70b0);
    let mut links = Vec::new();
    let mut has = std::collections::HashSet::new();
    for i in 1..n {
        let k = 1 + rng.below(3) as usize;
        for _ in 0..k.min(i) {
            // Prefer early (large) providers: the square of a uniform draw.
            let u = rng.below(i as u64);
            let p = (u * u / i as u64) as usize;
            if has.insert((p, i)) {
                links.push(Link {
                    a: p as u32,
                    b: i as u32,
                    rel: Rel::ProviderCustomer,
                    latency_us: 0,
                });
            }
        }
    }
    for _ in 0..n / 2 {
        let a = rng.below(n as u64) as usize;
        let b = rng.below(n as u64) as usize;
        if a != b && has.insert((a.min(b), a.max(b))) {
            links.push(Link {
                a: a as u32,
                b: b as u32,
                rel: Rel::Peer,
                latency_us: 0,
            });
        }
    }
    let nodes = (0..n)
        .map(|i| Node {
            asn: 4_200_000_000 + i as u32,
            prefixes: Vec::new(),
        })
        .collect();
    Graph { nodes, links }
}

/// Each link gets a latency drawn uniformly from `min_us..=max_us`.
pub fn assign_latencies(g: &mut Graph, min_us: u32, max_us: u32, seed: u64) {
    let mut rng = Rng::new(seed ^ 0x1a7e);
    let span = u64::from(max_us.saturating_sub(min_us)) + 1;
    for l in &mut g.links {
        l.latency_us = min_us + rng.below(span) as u32;
    }
}

/// The `k`-th generated prefix: IPv4 /24s from 1.0.0.0 upwards.
pub fn prefix(k: u32) -> Prefix {
    let a = 0x0100_0000u32.wrapping_add(k << 8);
    match base::Prefix4::new(a, 24) {
        Ok(p) => Prefix::V4(p),
        Err(_) => unreachable!("24 <= 32"),
    }
}

/// Hands out `total` generated prefixes: each AS gets one first (when
/// there are enough), the rest go to random ASes, so that a few ASes
/// originate many (as in the real table).
pub fn assign_prefixes(g: &mut Graph, total: u32, seed: u64) {
    let mut rng = Rng::new(seed ^ 0x9f1c);
    let n = g.nodes.len() as u32;
    if n == 0 {
        return;
    }
    for k in 0..total {
        let x = if k < n {
            k
        } else {
            // Skewed: the square of a uniform draw favours low indexes.
            let u = rng.below(u64::from(n));
            (u * u / u64::from(n)) as u32
        };
        g.nodes[x as usize].prefixes.push(prefix(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caida_lines_become_links_and_bad_ones_are_refused() {
        let g = from_caida("# comment\n1|2|-1\n2|3|0|bgp\n3|2|0\n").unwrap();
        assert_eq!(g.nodes.len(), 3);
        assert_eq!(g.links.len(), 2, "duplicate pair kept once");
        assert_eq!(g.links[0].rel, Rel::ProviderCustomer);
        assert_eq!(g.nodes[g.links[0].a as usize].asn, 1);
        assert_eq!(g.links[1].rel, Rel::Peer);
        assert!(from_caida("1|2|7\n").is_err());
        assert!(from_caida("1|x|0\n").is_err());
    }

    #[test]
    fn generated_prefixes_are_distinct_and_all_handed_out() {
        let mut g = random(50, 1);
        assign_prefixes(&mut g, 500, 1);
        let mut all: Vec<Prefix> = g.nodes.iter().flat_map(|n| n.prefixes.clone()).collect();
        assert_eq!(all.len(), 500);
        assert!(g.nodes.iter().all(|n| !n.prefixes.is_empty()));
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 500);
        // Connected through providers: every node > 0 has one.
        for i in 1..50u32 {
            assert!(g
                .links
                .iter()
                .any(|l| l.b == i && l.rel == Rel::ProviderCustomer));
        }
    }
}

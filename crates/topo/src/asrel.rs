//! An Internet-like AS-relationship graph: a tier-1 clique, transit and
//! stub ASes with customer-provider and peer links, heavy-tailed degrees.
//!
//! Growth model (in the spirit of Elmokashfi et al.'s GENESIS/"Internet-like
//! topologies"; the numbers are ours, chosen to resemble CAIDA's 2014
//! serial-1 graph: about 85% stub ASes, a mean degree near 6):
//! 1. The first `tier1` ASes peer with each other (the clique).
//! 2. Every later AS is transit with probability `transit_share`, else a
//!    stub. It buys transit from 1-4 providers (stubs mostly 1-2, transit
//!    ASes mostly 2-3) among the transit ASes already placed, each chosen
//!    with probability proportional to its customer count plus one
//!    (preferential attachment: the heavy tail). Providers are always
//!    older than their customers, so customer-provider cycles cannot occur.
//! 3. Each non-tier-1 transit AS then peers with a Pareto(1.5)-distributed
//!    number (minimum 2, mean about 6) of other non-tier-1 transit ASes,
//!    again preferentially; 10% of stubs peer with 1-2 (IXP-style).
//!
//! Linear in the number of links: 80,000 ASes take well under a second.
//! Latency: [`crate::latency::draw`].

use crate::latency::draw;
use crate::util::{from_table, pair, unit};
use crate::{asn_for, Graph, Link, Node, Rel};
use sim::Rng;
use std::collections::HashSet;

/// Parameters.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Params {
    /// Number of ASes.
    pub nodes: u32,
    /// Size of the tier-1 clique (capped at `nodes`).
    pub tier1: u32,
    /// Chance a non-tier-1 AS is a transit AS.
    pub transit_share: f64,
    /// RNG seed.
    pub seed: u64,
}

impl Params {
    /// Defaults: 12 tier-1s (about the size of CAIDA's inferred clique),
    /// 15% transit.
    pub fn for_nodes(nodes: u32, seed: u64) -> Params {
        Params {
            nodes,
            tier1: 12,
            transit_share: 0.15,
            seed,
        }
    }
}

/// Number of providers of a stub: (count, weight).
const STUB_PROVIDERS: &[(u32, u32)] = &[(1, 50), (2, 35), (3, 10), (4, 5)];
/// Number of providers of a transit AS.
const TRANSIT_PROVIDERS: &[(u32, u32)] = &[(1, 20), (2, 40), (3, 25), (4, 15)];

/// A generated relationship graph and its tier-1 clique (node ids).
#[derive(Clone, Debug, PartialEq)]
pub struct AsRel {
    /// The graph (provider in `a` of every customer-provider link).
    pub graph: Graph,
    /// The clique.
    pub clique: Vec<u32>,
}

/// Generate.
pub fn generate(p: &Params) -> AsRel {
    let n = p.nodes;
    let t1 = p.tier1.clamp(1, n.max(1)).min(n);
    let mut rng = Rng::new(p.seed);
    let mut links: Vec<Link> = Vec::new();
    let mut linked: HashSet<u64> = HashSet::new();
    let mut add = |rng: &mut Rng, a: u32, b: u32, rel: Rel, links: &mut Vec<Link>| -> bool {
        if a == b || !linked.insert(pair(a, b)) {
            return false;
        }
        links.push(Link {
            a,
            b,
            rel,
            latency_us: draw(rng),
        });
        true
    };
    for a in 0..t1 {
        for b in a + 1..t1 {
            add(&mut rng, a, b, Rel::Peer, &mut links);
        }
    }
    // Ballot: each transit AS once, plus once per customer.
    let mut ballot: Vec<u32> = (0..t1).collect();
    let mut transit: Vec<u32> = (0..t1).collect();
    let mut is_transit = vec![false; n as usize];
    for i in 0..t1 {
        if let Some(x) = is_transit.get_mut(i as usize) {
            *x = true;
        }
    }
    for i in t1..n {
        let tr = rng.chance(p.transit_share);
        let want = from_table(
            &mut rng,
            if tr {
                TRANSIT_PROVIDERS
            } else {
                STUB_PROVIDERS
            },
        )
        .min(transit.len() as u32);
        let mut got = 0;
        let mut tries = 0;
        while got < want && tries < 64 {
            tries += 1;
            let Some(&prov) = ballot.get(rng.below(ballot.len() as u64) as usize) else {
                break;
            };
            if add(&mut rng, prov, i, Rel::ProviderCustomer, &mut links) {
                ballot.push(prov);
                got += 1;
            }
        }
        if tr {
            ballot.push(i);
            transit.push(i);
            if let Some(x) = is_transit.get_mut(i as usize) {
                *x = true;
            }
        }
    }
    // Peering among non-tier-1 transit ASes, and some stubs at IXPs.
    let lower: Vec<u32> = ballot.iter().copied().filter(|&v| v >= t1).collect();
    if !lower.is_empty() {
        for i in t1..n {
            let tr = is_transit.get(i as usize).copied().unwrap_or(false);
            let k = if tr {
                let u = 1.0 - unit(&mut rng);
                ((2.0 / u.powf(1.0 / 1.5)).floor() as u32).min(1000)
            } else if rng.chance(0.1) {
                1 + rng.below(2) as u32
            } else {
                0
            };
            let mut got = 0;
            let mut tries = 0;
            while got < k && tries < k * 4 + 8 {
                tries += 1;
                let Some(&v) = lower.get(rng.below(lower.len() as u64) as usize) else {
                    break;
                };
                if add(&mut rng, i, v, Rel::Peer, &mut links) {
                    got += 1;
                }
            }
        }
    }
    let nodes = (0..n)
        .map(|i| Node {
            asn: asn_for(i),
            prefixes: Vec::new(),
        })
        .collect();
    AsRel {
        graph: Graph { nodes, links },
        clique: (0..t1).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clique_heavy_tail_and_stubs() {
        let r = generate(&Params::for_nodes(20_000, 1));
        let g = &r.graph;
        assert_eq!(g.nodes.len(), 20_000);
        assert_eq!(g.provider_cycle(), None);
        // The clique is fully meshed with peer links.
        let peers: HashSet<u64> = g
            .links
            .iter()
            .filter(|l| l.rel == Rel::Peer)
            .map(|l| pair(l.a, l.b))
            .collect();
        for &a in &r.clique {
            for &b in &r.clique {
                assert!(a == b || peers.contains(&pair(a, b)));
            }
        }
        let deg = g.degrees();
        let mean = deg.iter().map(|&d| f64::from(d)).sum::<f64>() / deg.len() as f64;
        assert!((4.0..9.0).contains(&mean), "mean degree {mean}");
        let max = deg.iter().copied().max().unwrap();
        assert!(f64::from(max) > mean * 50.0, "max {max} mean {mean}");
        // Most ASes have no customers (stubs); no AS outside the clique lacks a provider.
        let mut has_cust = vec![false; g.nodes.len()];
        let mut has_prov = vec![false; g.nodes.len()];
        for l in g.links.iter().filter(|l| l.rel == Rel::ProviderCustomer) {
            has_cust[l.a as usize] = true;
            has_prov[l.b as usize] = true;
        }
        let stubs = has_cust.iter().filter(|&&c| !c).count() as f64 / 20_000.0;
        assert!((0.75..0.95).contains(&stubs), "stub share {stubs}");
        assert!(has_prov.iter().skip(12).all(|&p| p));
    }
}

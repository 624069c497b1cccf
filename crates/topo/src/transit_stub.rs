//! A two-level transit-stub graph (after GT-ITM's transit-stub model and
//! BRITE's top-down hierarchy, at AS level).
//!
//! - `transit` transit ASes form the core: a flat Waxman graph
//!   ([`crate::flat`], BRITE's `m` = 2, so it is connected) on the plane;
//!   core links are settlement-free peerings.
//! - The other `nodes - transit` ASes are stubs, dealt to the transit ASes in
//!   turn and placed on integer points within `stub_radius` plane units of their
//!   first provider. With probability `multihome` a stub buys transit from a
//!   second, randomly chosen, transit AS too.
//! - With probability `stub_peer` a stub peers with another stub of the
//!   same first provider.
//!
//! Providers are always transit and customers always stubs, so there are no
//! customer-provider cycles. Latency is the plane distance.

use crate::flat::{self, Degree, Model, ParamError};
use crate::latency::from_distance;
use crate::util::pair;
use crate::{asn_for, Graph, Link, Node, Point, Rel};
use sim::Rng;
use std::collections::HashSet;

/// Parameters of a transit-stub graph.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Params {
    /// All ASes, transit and stub.
    pub nodes: u32,
    /// Transit ASes (at least 1, at most `nodes`).
    pub transit: u32,
    /// Chance a stub has a second provider.
    pub multihome: f64,
    /// Chance a stub peers with a sibling stub.
    pub stub_peer: f64,
    /// Stubs lie within this many plane units of their provider.
    pub stub_radius: f64,
    /// Plane side.
    pub hs: u32,
    /// RNG seed.
    pub seed: u64,
}

impl Params {
    /// Defaults for `nodes` ASes: one transit AS per 20 (at least 2),
    /// 30% multihomed stubs, 10% stub peerings, stubs within 50 units.
    pub fn for_nodes(nodes: u32, seed: u64) -> Params {
        Params {
            nodes,
            transit: (nodes / 20).max(2).min(nodes),
            multihome: 0.3,
            stub_peer: 0.1,
            stub_radius: 50.0,
            hs: 1000,
            seed,
        }
    }
}

/// A generated transit-stub graph and its plane positions.
pub fn generate(p: &Params) -> Result<flat::Flat, ParamError> {
    if p.transit == 0 || p.transit > p.nodes {
        return Err(ParamError(format!(
            "transit ASes must be between 1 and the {} nodes",
            p.nodes
        )));
    }
    let core = flat::generate(&flat::Params {
        model: Model::Waxman { beta: 0.2 },
        nodes: p.transit,
        degree: Degree::PerNode(2),
        hs: p.hs,
        seed: p.seed,
    })?;
    let mut rng = Rng::new(p.seed ^ 0x7a5e_57ab);
    let mut pos = core.pos;
    let mut links: Vec<Link> = core
        .graph
        .links
        .iter()
        .map(|l| Link {
            rel: Rel::Peer,
            ..*l
        })
        .collect();
    let mut linked: HashSet<u64> = links.iter().map(|l| pair(l.a, l.b)).collect();
    let t = p.transit;
    let mut first = Vec::new();
    let hs = f64::from(p.hs);
    for s in t..p.nodes {
        let home = (s - t) % t;
        let c = pos.get(home as usize).copied().unwrap_or_default();
        let r = p.stub_radius.max(0.0);
        let at = Point {
            x: (c.x + (crate::util::unit(&mut rng) * 2.0 - 1.0) * r)
                .round()
                .clamp(0.0, hs),
            y: (c.y + (crate::util::unit(&mut rng) * 2.0 - 1.0) * r)
                .round()
                .clamp(0.0, hs),
        };
        pos.push(at);
        first.push(home);
        links.push(Link {
            a: home,
            b: s,
            rel: Rel::ProviderCustomer,
            latency_us: from_distance(c, at),
        });
        linked.insert(pair(home, s));
        if t > 1 && rng.chance(p.multihome) {
            let other = (home + 1 + rng.below(u64::from(t - 1)) as u32) % t;
            let oc = pos.get(other as usize).copied().unwrap_or_default();
            links.push(Link {
                a: other,
                b: s,
                rel: Rel::ProviderCustomer,
                latency_us: from_distance(oc, at),
            });
            linked.insert(pair(other, s));
        }
    }
    // Sibling peerings: stub s may peer with the stub dealt to the same
    // transit AS one round earlier or later.
    for s in t..p.nodes {
        if !rng.chance(p.stub_peer) {
            continue;
        }
        let sib = if rng.chance(0.5) {
            s.checked_sub(t)
        } else {
            s.checked_add(t)
        };
        let Some(sib) = sib.filter(|&x| x >= t && x < p.nodes) else {
            continue;
        };
        if linked.insert(pair(s, sib)) {
            let (pa, pb) = (
                pos.get(s as usize).copied().unwrap_or_default(),
                pos.get(sib as usize).copied().unwrap_or_default(),
            );
            links.push(Link {
                a: s,
                b: sib,
                rel: Rel::Peer,
                latency_us: from_distance(pa, pb),
            });
        }
    }
    let nodes = (0..p.nodes)
        .map(|i| Node {
            asn: asn_for(i),
            prefixes: Vec::new(),
        })
        .collect();
    Ok(flat::Flat {
        graph: Graph { nodes, links },
        pos,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stubs_hang_off_transit_and_there_are_no_cycles() {
        let p = Params::for_nodes(400, 5);
        let f = generate(&p).unwrap();
        let g = &f.graph;
        assert_eq!(g.nodes.len(), 400);
        assert_eq!(g.provider_cycle(), None);
        let deg = g.degrees();
        for l in &g.links {
            match l.rel {
                Rel::ProviderCustomer => assert!(l.a < p.transit && l.b >= p.transit),
                Rel::Peer => assert!((l.a < p.transit) == (l.b < p.transit)),
                Rel::Unknown => panic!("unannotated link"),
            }
        }
        // Every stub has a provider; multihoming is near its chance.
        let stubs = 400 - p.transit as usize;
        let up = g
            .links
            .iter()
            .filter(|l| l.rel == Rel::ProviderCustomer)
            .count();
        assert!(up >= stubs);
        let share = (up - stubs) as f64 / stubs as f64;
        assert!((0.2..0.4).contains(&share), "{share}");
        assert!(deg.iter().all(|&d| d >= 1));
        assert_eq!(f, generate(&p).unwrap());
    }
}

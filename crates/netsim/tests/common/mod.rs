//! Graph builders and an independent Gao-Rexford route computation for
//! the simulator's tests.

#![allow(dead_code, clippy::needless_range_loop)]

use std::time::Duration;

use base::Prefix;
use netsim::{Graph, NodeId, Scenario, Sim, SimConfig};
use topo::{Link, Node, Rel};

pub const BASE_ASN: u32 = 65001;

/// Node `i`'s prefix: 10.(i/256).(i%256).0/24.
pub fn prefix_of(i: usize) -> Prefix {
    format!("10.{}.{}.0/24", i / 256, i % 256).parse().unwrap()
}

/// `n` nodes, AS 65001 + i, each originating [`prefix_of`]`(i)`.
pub fn nodes(n: usize) -> Vec<Node> {
    (0..n)
        .map(|i| Node {
            asn: BASE_ASN + i as u32,
            prefixes: vec![prefix_of(i)],
        })
        .collect()
}

pub fn link(a: u32, b: u32, rel: Rel) -> Link {
    Link {
        a,
        b,
        rel,
        latency_us: 1000 + 137 * ((a + b) % 7),
    }
}

/// A random relationship graph: node i > 0 gets 1-3 providers among the
/// nodes before it (so customer-provider edges have no cycle), plus about
/// n/2 peer links between random unlinked pairs.
pub fn random_graph(n: usize, seed: u64) -> Graph {
    let mut rng = sim::Rng::new(seed);
    let mut links: Vec<Link> = Vec::new();
    let mut has = std::collections::HashSet::new();
    for i in 1..n {
        let k = 1 + rng.below(3) as usize;
        for _ in 0..k.min(i) {
            let p = rng.below(i as u64) as usize;
            if has.insert((p.min(i), p.max(i))) {
                let mut l = link(p as u32, i as u32, Rel::ProviderCustomer);
                l.latency_us = 500 + rng.below(40_000) as u32;
                links.push(l);
            }
        }
    }
    for _ in 0..n / 2 {
        let a = rng.below(n as u64) as usize;
        let b = rng.below(n as u64) as usize;
        if a != b && has.insert((a.min(b), a.max(b))) {
            let mut l = link(a as u32, b as u32, Rel::Peer);
            l.latency_us = 500 + rng.below(40_000) as u32;
            links.push(l);
        }
    }
    Graph {
        nodes: nodes(n),
        links,
    }
}

/// No MRAI, no processing delay.
pub fn instant_config() -> SimConfig {
    SimConfig {
        mrai: Duration::ZERO,
        mrai_jitter: false,
        per_update: Duration::ZERO,
        per_prefix: Duration::ZERO,
        ..SimConfig::default()
    }
}

/// Runs `g` with `cfg` and `scenario` to the end.
pub fn run(g: &Graph, cfg: SimConfig, scenario: &Scenario) -> Sim {
    let mut s = Sim::new(g, cfg);
    s.start(scenario).unwrap();
    s.run_to_end(u64::MAX, &mut ());
    s
}

/// The best AS path of node `x` for node `o`'s prefix (None: no route;
/// Some(empty): its own).
pub fn path(s: &Sim, x: usize, o: usize) -> Option<Vec<u32>> {
    s.best_routes(x as NodeId)
        .into_iter()
        .find(|r| r.prefix == prefix_of(o))
        .map(|r| r.as_path)
}

/// ASNs of node indexes.
pub fn asns(v: &[usize]) -> Vec<u32> {
    v.iter().map(|&i| BASE_ASN + i as u32).collect()
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Kind {
    Customer,
    Peer,
    Provider,
}

/// The relationship of neighbour `b` as seen from `a` (Gao-Rexford).
pub fn role(g: &Graph, a: usize, b: usize) -> Option<Kind> {
    g.links.iter().find_map(|l| {
        let (x, y) = (l.a as usize, l.b as usize);
        match l.rel {
            Rel::ProviderCustomer if x == a && y == b => Some(Kind::Customer),
            Rel::ProviderCustomer if x == b && y == a => Some(Kind::Provider),
            Rel::Peer | Rel::Unknown if (x == a && y == b) || (x == b && y == a) => {
                Some(Kind::Peer)
            }
            _ => None,
        }
    })
}

/// Whether the route `path` held by node `x` travelled valley-free: from
/// the origin up customer->provider links, across at most one peer link,
/// then down provider->customer links.
pub fn valley_free(g: &Graph, x: usize, path: &[u32]) -> bool {
    // Hops in travel order: origin ... first hop, then x.
    let mut hops: Vec<usize> = path.iter().rev().map(|a| (a - BASE_ASN) as usize).collect();
    hops.push(x);
    hops.dedup();
    let mut phase = 0; // 0 up, 1 after the peer link, 2 down
    for w in hops.windows(2) {
        // What the sender w[0] is to the receiver w[1].
        match role(g, w[1], w[0]) {
            Some(Kind::Customer) if phase == 0 => {}
            Some(Kind::Peer) if phase == 0 => phase = 1,
            Some(Kind::Provider) => phase = 2,
            _ => return false,
        }
    }
    true
}

/// The stable Gao-Rexford routes towards origin `o`, computed without the
/// simulator: customer routes climb the provider DAG breadth-first, peer
/// routes take one step across, provider routes flow down in node order
/// (providers have lower indexes in [`random_graph`]). Ties: shorter path,
/// then the neighbour with the lower router ID (lower node index). Returns
/// each node's AS path (None: no route).
pub fn reference(g: &Graph, o: usize) -> Vec<Option<Vec<u32>>> {
    let n = g.nodes.len();
    let asn = |i: usize| BASE_ASN + i as u32;
    let mut nb: Vec<Vec<(usize, Kind)>> = vec![Vec::new(); n];
    for x in 0..n {
        for y in 0..n {
            if x != y {
                if let Some(k) = role(g, x, y) {
                    nb[x].push((y, k));
                }
            }
        }
    }
    // (preference class, path); class 0 own, 1 customer, 2 peer, 3 provider.
    let mut best: Vec<Option<(u8, Vec<u32>)>> = vec![None; n];
    best[o] = Some((0, Vec::new()));
    let better = |cur: &Option<(u8, Vec<u32>)>, class: u8, p: &Vec<u32>, from: usize| match cur {
        None => true,
        Some((c, q)) => {
            let qf = q
                .first()
                .map(|a| (a - BASE_ASN) as usize)
                .unwrap_or(usize::MAX);
            (class, p.len(), from) < (*c, q.len(), qf)
        }
    };
    // Customer routes: recompute every node's best customer route from
    // its customers' current ones until nothing changes.
    for _ in 0..=n {
        let mut changed = false;
        for x in 0..n {
            if x == o {
                continue;
            }
            let mut cand: Option<(u8, Vec<u32>)> = None;
            for &(y, k) in &nb[x] {
                if k != Kind::Customer {
                    continue;
                }
                if let Some((c, p)) = &best[y] {
                    if *c <= 1 && !p.contains(&asn(x)) {
                        let mut q = vec![asn(y)];
                        q.extend(p.iter().copied());
                        if better(&cand, 1, &q, y) {
                            cand = Some((1, q));
                        }
                    }
                }
            }
            if cand != best[x] {
                best[x] = cand;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // Peer routes: from peers holding their own or a customer route.
    let snapshot = best.clone();
    for x in 0..n {
        for &(y, k) in &nb[x] {
            if k != Kind::Peer {
                continue;
            }
            if let Some((c, p)) = &snapshot[y] {
                if *c <= 1 && !p.contains(&asn(x)) {
                    let mut q = vec![asn(y)];
                    q.extend(p.iter().copied());
                    if better(&best[x], 2, &q, y) {
                        best[x] = Some((2, q));
                    }
                }
            }
        }
    }
    // Provider routes, providers first.
    for x in 0..n {
        for &(y, k) in &nb[x] {
            if k != Kind::Provider {
                continue;
            }
            assert!(y < x, "reference needs providers before customers");
            if let Some((_, p)) = best[y].clone() {
                if !p.contains(&asn(x)) {
                    let mut q = vec![asn(y)];
                    q.extend(p);
                    if better(&best[x], 3, &q, y) {
                        best[x] = Some((3, q));
                    }
                }
            }
        }
    }
    best.into_iter().map(|b| b.map(|(_, p)| p)).collect()
}

//! Relationships for flat graphs, which have none.
//!
//! Rule: rank the nodes by degree. On each link the end with the higher
//! degree is the provider of the other, except that ends whose degrees
//! are within `peer_tolerance` of each other (`hi <= lo * (1 + tol)`; with
//! the default 0, only equal degrees) are peers. A provider's degree is
//! then always strictly higher than its customer's, so customer-provider
//! cycles cannot occur. Customer cones ([`customer_cones`]) then give each
//! AS its place in the hierarchy: the ASes with the largest cones are the
//! graph's tier-1s.

use crate::{Graph, NodeId, Rel};

/// Set every link's relationship by the degree rule above (links that
/// already have one are re-annotated too). The provider is put in `a`.
pub fn by_degree(g: &mut Graph, peer_tolerance: f64) {
    let deg = g.degrees();
    let tol = if peer_tolerance.is_finite() && peer_tolerance > 0.0 {
        peer_tolerance
    } else {
        0.0
    };
    for l in &mut g.links {
        let da = deg.get(l.a as usize).copied().unwrap_or(0);
        let db = deg.get(l.b as usize).copied().unwrap_or(0);
        let (hi, lo) = (da.max(db), da.min(db));
        if hi == lo || f64::from(hi) <= f64::from(lo) * (1.0 + tol) {
            l.rel = Rel::Peer;
        } else {
            if db > da {
                std::mem::swap(&mut l.a, &mut l.b);
            }
            l.rel = Rel::ProviderCustomer;
        }
    }
}

/// Size of each node's customer cone: itself plus every node reachable by
/// provider-to-customer links. Quadratic in the worst case; used for
/// summaries of graphs up to tens of thousands of nodes (bit sets).
pub fn customer_cones(g: &Graph) -> Vec<u32> {
    let n = g.nodes.len();
    let mut down: Vec<Vec<NodeId>> = vec![Vec::new(); n];
    for l in &g.links {
        if l.rel == Rel::ProviderCustomer {
            if let Some(v) = down.get_mut(l.a as usize) {
                v.push(l.b);
            }
        }
    }
    let mut sizes = vec![0u32; n];
    let mut seen = vec![u32::MAX; n];
    let mut stack = Vec::new();
    for s in 0..n {
        let mut count = 0u32;
        stack.clear();
        stack.push(s);
        if let Some(x) = seen.get_mut(s) {
            *x = s as u32;
        }
        while let Some(u) = stack.pop() {
            count += 1;
            for &v in down.get(u).map(|v| v.as_slice()).unwrap_or(&[]) {
                if let Some(x) = seen.get_mut(v as usize) {
                    if *x != s as u32 {
                        *x = s as u32;
                        stack.push(v as usize);
                    }
                }
            }
        }
        if let Some(x) = sizes.get_mut(s) {
            *x = count;
        }
    }
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Link, Node};

    fn graph(n: u32, edges: &[(u32, u32)]) -> Graph {
        Graph {
            nodes: (0..n)
                .map(|i| Node {
                    asn: i + 1,
                    prefixes: vec![],
                })
                .collect(),
            links: edges
                .iter()
                .map(|&(a, b)| Link {
                    a,
                    b,
                    rel: Rel::Unknown,
                    latency_us: 1,
                })
                .collect(),
        }
    }

    #[test]
    fn tiny_graph_by_hand() {
        // 0 is a hub (degree 3) with 1 and 2 (degree 2, linked to each other)
        // and the leaf 3 (degree 1).
        let mut g = graph(4, &[(1, 0), (0, 2), (1, 2), (3, 0)]);
        by_degree(&mut g, 0.0);
        let rels: Vec<(u32, u32, Rel)> = g.links.iter().map(|l| (l.a, l.b, l.rel)).collect();
        assert_eq!(
            rels,
            vec![
                (0, 1, Rel::ProviderCustomer),
                (0, 2, Rel::ProviderCustomer),
                (1, 2, Rel::Peer),
                (0, 3, Rel::ProviderCustomer),
            ]
        );
        assert_eq!(customer_cones(&g), vec![4, 1, 1, 1]);
        assert_eq!(g.provider_cycle(), None);
        // With a tolerance of 50%, degree 3 and 2 are near-equal: peers.
        by_degree(&mut g, 0.5);
        let peers = g.links.iter().filter(|l| l.rel == Rel::Peer).count();
        assert_eq!(peers, 3);
    }

    #[test]
    fn cones_follow_chains() {
        let mut g = graph(3, &[(0, 1), (1, 2)]);
        for l in &mut g.links {
            l.rel = Rel::ProviderCustomer;
        }
        assert_eq!(customer_cones(&g), vec![3, 2, 1]);
        g.links.push(Link {
            a: 2,
            b: 0,
            rel: Rel::ProviderCustomer,
            latency_us: 1,
        });
        let c = g.provider_cycle().unwrap();
        assert_eq!(c.len(), 3);
    }
}

//! The node the seeds' trace was taken at: "a central node with 12 peers".
//!
//! Centrality is **closeness** on hop counts (links unweighted, every
//! relationship counted): for a node `v` that reaches `r` other nodes at
//! total distance `s`, `C(v) = (r / (n - 1)) * (r / s)` (Wasserman and
//! Faust's form, which is the usual `(n - 1) / s` on a connected graph and
//! does not favour nodes of a small component). Closeness needs one
//! breadth-first search per candidate, and only nodes of the wanted degree
//! are candidates, so picking in a 1000-node graph costs at most 1000
//! searches of 12,000 links: milliseconds. Betweenness would need Brandes'
//! algorithm over all nodes (`O(n m)` with more constant work) and ranks
//! nodes by how much traffic transits them, which says less about how
//! quickly announcements from everywhere reach the vantage point.
//!
//! Ties go to the lower AS number.

use crate::{Graph, NodeId};
use std::collections::VecDeque;

/// The chosen node.
#[derive(Clone, Debug, PartialEq)]
pub struct Pick {
    /// The node.
    pub node: NodeId,
    /// Its AS number.
    pub asn: u32,
    /// Its degree.
    pub degree: u32,
    /// Its closeness.
    pub closeness: f64,
    /// Nodes reachable from it (itself excluded).
    pub reached: u32,
    /// Mean hop distance to the nodes it reaches.
    pub mean_hops: f64,
    /// Whether no node had the wanted degree and the nearest was used.
    pub nearest: bool,
}

/// Closeness of `v` (see the module documentation), nodes reached and mean
/// distance.
pub fn closeness(adj: &[Vec<NodeId>], v: NodeId) -> (f64, u32, f64) {
    let n = adj.len();
    let mut dist = vec![u32::MAX; n];
    let mut q = VecDeque::new();
    if let Some(d) = dist.get_mut(v as usize) {
        *d = 0;
        q.push_back(v);
    }
    let (mut sum, mut reached) = (0u64, 0u32);
    while let Some(u) = q.pop_front() {
        let du = dist.get(u as usize).copied().unwrap_or(0);
        for &w in adj.get(u as usize).map(|a| a.as_slice()).unwrap_or(&[]) {
            if let Some(dw) = dist.get_mut(w as usize) {
                if *dw == u32::MAX {
                    *dw = du + 1;
                    sum += u64::from(du + 1);
                    reached += 1;
                    q.push_back(w);
                }
            }
        }
    }
    if reached == 0 || n < 2 {
        return (0.0, 0, 0.0);
    }
    let r = f64::from(reached);
    let c = (r / (n - 1) as f64) * (r / sum as f64);
    (c, reached, sum as f64 / r)
}

/// The most central node with exactly `degree` links, or of the nearest
/// degree present (lower one on a tie) if none has it. `None` for an empty
/// graph.
pub fn pick(g: &Graph, degree: u32) -> Option<Pick> {
    let deg = g.degrees();
    let mut adj: Vec<Vec<NodeId>> = vec![Vec::new(); g.nodes.len()];
    for l in &g.links {
        if let Some(v) = adj.get_mut(l.a as usize) {
            v.push(l.b);
        }
        if let Some(v) = adj.get_mut(l.b as usize) {
            v.push(l.a);
        }
    }
    let best_deg = deg
        .iter()
        .copied()
        .min_by_key(|&d| (d.abs_diff(degree), d))?;
    let mut best: Option<Pick> = None;
    for (i, &d) in deg.iter().enumerate() {
        if d != best_deg {
            continue;
        }
        let v = i as NodeId;
        let asn = g.nodes.get(i).map(|n| n.asn).unwrap_or(0);
        let (c, reached, mean_hops) = closeness(&adj, v);
        let better = match &best {
            None => true,
            Some(b) => c > b.closeness || (c == b.closeness && asn < b.asn),
        };
        if better {
            best = Some(Pick {
                node: v,
                asn,
                degree: d,
                closeness: c,
                reached,
                mean_hops,
                nearest: d != degree,
            });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Link, Node, Rel};

    fn graph(n: u32, edges: &[(u32, u32)]) -> Graph {
        Graph {
            nodes: (0..n)
                .map(|i| Node {
                    asn: 100 + i,
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
    fn star_and_line() {
        // Star: centre 0 with 5 leaves.
        let star = graph(6, &[(0, 1), (0, 2), (0, 3), (0, 4), (0, 5)]);
        let p = pick(&star, 5).unwrap();
        assert_eq!((p.node, p.asn, p.nearest), (0, 100, false));
        assert!((p.closeness - 1.0).abs() < 1e-12);
        // All leaves are equally central: the lowest AS number wins.
        let p = pick(&star, 1).unwrap();
        assert_eq!(p.node, 1);
        assert!((p.closeness - 5.0 / 9.0).abs() < 1e-12, "{}", p.closeness);
        // No node of degree 3: the nearest degree present, 1 (below, on a tie with 5).
        let p = pick(&star, 3).unwrap();
        assert_eq!((p.degree, p.nearest), (1, true));
        // Line 0-1-2-3-4: among degree-2 nodes the middle one.
        let line = graph(5, &[(0, 1), (1, 2), (2, 3), (3, 4)]);
        let p = pick(&line, 2).unwrap();
        assert_eq!(p.node, 2);
        assert!((p.mean_hops - 1.5).abs() < 1e-12);
        assert_eq!(pick(&graph(0, &[]), 2), None);
    }

    #[test]
    fn disconnected_nodes_are_not_favoured() {
        // A pair 0-1 apart from a line 2-3-4: node 1 (degree 1, its only
        // neighbour at 1 hop) must lose to 2 (reaches two nodes).
        let g = graph(5, &[(0, 1), (2, 3), (3, 4)]);
        let p = pick(&g, 1).unwrap();
        assert_eq!(p.node, 2);
    }
}

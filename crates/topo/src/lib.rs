//! AS-level topologies for trace generation (`tessera sim topo`).
//!
//! A [`Graph`] is a set of ASes ([`Node`]) joined by [`Link`]s, each with a
//! business relationship ([`Rel`]) and a one-way latency. Generators, the
//! relationship annotation of flat graphs, and the file formats live in
//! submodules; the simulation engine reads only this data model.
//!
//! Written here rather than taken from a crate: no maintained Rust crate
//! generates BRITE-style or relationship-annotated AS graphs or reads the
//! CAIDA AS-relationship format, and the data model is what the simulator
//! (our core) is built on.
//!
//! Modules: [`flat`] (BRITE's Waxman and Barabási-Albert models),
//! [`transit_stub`] (a two-level hierarchy), [`asrel`] (an Internet-like
//! customer/provider/peer graph), [`annotate`] (relationships for flat
//! graphs), [`prefixes`] (origin counts and lengths from a real table),
//! [`mod@format`] (CAIDA, BRITE, TopologyZoo GML, GraphViz) and [`centrality`]
//! (the node the seeds' trace was taken at). Everything is pure and
//! deterministic for a seed: same seed, same graph.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

use base::Prefix;
use std::fmt;

pub mod annotate;
pub mod asrel;
pub mod build;
pub mod centrality;
pub mod flat;
pub mod format;
#[doc(hidden)]
pub mod fuzz_support;
pub mod latency;
pub mod prefixes;
pub mod summary;
pub mod transit_stub;
mod util;

/// A parse error in a topology file: `FILE:LINE: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The file name as given to the parser.
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub msg: String,
}

impl ParseError {
    pub(crate) fn new(file: &str, line: usize, msg: impl Into<String>) -> ParseError {
        ParseError {
            file: file.to_string(),
            line,
            msg: msg.into(),
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.msg)
    }
}

impl std::error::Error for ParseError {}

/// A point on BRITE's plane (flat and transit-stub generators, BRITE files).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Point {
    /// Horizontal coordinate, plane units.
    pub x: f64,
    /// Vertical coordinate, plane units.
    pub y: f64,
}

impl Point {
    /// Euclidean distance.
    pub fn dist(self, o: Point) -> f64 {
        ((self.x - o.x).powi(2) + (self.y - o.y).powi(2)).sqrt()
    }
}

/// The AS number generators give the `i`-th node: 1, 2, 3... skipping
/// AS_TRANS (23456) and the documentation, private and reserved ranges
/// (64496-131071), so every number is one a BGP speaker accepts.
pub fn asn_for(i: u32) -> u32 {
    let n = i.saturating_add(1);
    let n = if n >= 23456 { n.saturating_add(1) } else { n };
    if n >= 64496 {
        n.saturating_add(131072 - 64496)
    } else {
        n
    }
}

/// Index of a node in [`Graph::nodes`].
pub type NodeId = u32;

/// The business relationship on a link, read from `a` to `b`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Rel {
    /// `a` is a provider of `b` (CAIDA `-1`).
    ProviderCustomer,
    /// `a` and `b` are settlement-free peers (CAIDA `0`).
    Peer,
    /// No relationship known (flat generators before annotation).
    Unknown,
}

/// What a neighbour is to a node (Gao-Rexford roles).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// The neighbour is our customer: its routes are preferred and exported to everyone.
    Customer,
    /// The neighbour is a settlement-free peer.
    Peer,
    /// The neighbour is our provider.
    Provider,
    /// No relationship known: treated as a peer that exports everything.
    Unknown,
}

/// One AS.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// Its AS number.
    pub asn: u32,
    /// The prefixes it originates.
    pub prefixes: Vec<Prefix>,
}

/// One link between two ASes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// One end.
    pub a: NodeId,
    /// The other end.
    pub b: NodeId,
    /// The relationship, read from `a` to `b`.
    pub rel: Rel,
    /// One-way latency in microseconds.
    pub latency_us: u32,
}

/// A neighbour as seen from a node.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Adj {
    /// The neighbouring node.
    pub node: NodeId,
    /// What it is to us.
    pub role: Role,
    /// One-way latency in microseconds.
    pub latency_us: u32,
}

/// An AS-level topology.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    /// The ASes; a [`NodeId`] indexes this.
    pub nodes: Vec<Node>,
    /// The links (at most one per pair of nodes).
    pub links: Vec<Link>,
}

impl Graph {
    /// Each node's neighbours, in link order (index with a [`NodeId`]).
    pub fn adjacency(&self) -> Vec<Vec<Adj>> {
        let mut adj = vec![Vec::new(); self.nodes.len()];
        for l in &self.links {
            let (ra, rb) = match l.rel {
                Rel::ProviderCustomer => (Role::Customer, Role::Provider),
                Rel::Peer => (Role::Peer, Role::Peer),
                Rel::Unknown => (Role::Unknown, Role::Unknown),
            };
            if let Some(v) = adj.get_mut(l.a as usize) {
                v.push(Adj {
                    node: l.b,
                    role: ra,
                    latency_us: l.latency_us,
                });
            }
            if let Some(v) = adj.get_mut(l.b as usize) {
                v.push(Adj {
                    node: l.a,
                    role: rb,
                    latency_us: l.latency_us,
                });
            }
        }
        adj
    }

    /// Each node's degree (number of links).
    pub fn degrees(&self) -> Vec<u32> {
        let mut d = vec![0u32; self.nodes.len()];
        for l in &self.links {
            for e in [l.a, l.b] {
                if let Some(x) = d.get_mut(e as usize) {
                    *x += 1;
                }
            }
        }
        d
    }

    /// A cycle of customer-to-provider links (each node in the list is a
    /// customer of the next, the last of the first), if there is one. Gao-Rexford
    /// routing assumes there is none.
    pub fn provider_cycle(&self) -> Option<Vec<NodeId>> {
        // Iterative DFS over provider->customer edges with three colours.
        let n = self.nodes.len();
        let mut down: Vec<Vec<NodeId>> = vec![Vec::new(); n];
        for l in &self.links {
            if l.rel == Rel::ProviderCustomer {
                if let Some(v) = down.get_mut(l.a as usize) {
                    v.push(l.b);
                }
            }
        }
        let mut colour = vec![0u8; n];
        let mut parent = vec![u32::MAX; n];
        for start in 0..n {
            if colour.get(start) != Some(&0) {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
            if let Some(c) = colour.get_mut(start) {
                *c = 1;
            }
            while let Some(&mut (u, ref mut next)) = stack.last_mut() {
                let children = down.get(u).map(|v| v.as_slice()).unwrap_or(&[]);
                if let Some(&v) = children.get(*next) {
                    *next += 1;
                    let v = v as usize;
                    match colour.get(v) {
                        Some(0) => {
                            if let Some(c) = colour.get_mut(v) {
                                *c = 1;
                            }
                            if let Some(p) = parent.get_mut(v) {
                                *p = u as u32;
                            }
                            stack.push((v, 0));
                        }
                        Some(1) => {
                            // u -> v closes a cycle: v ... u are providers in turn.
                            let mut cyc = vec![u as NodeId];
                            let mut w = u;
                            while w != v {
                                w = parent.get(w).copied().unwrap_or(u32::MAX) as usize;
                                if w >= n {
                                    break;
                                }
                                cyc.push(w as NodeId);
                            }
                            return Some(cyc);
                        }
                        _ => {}
                    }
                } else {
                    if let Some(c) = colour.get_mut(u) {
                        *c = 2;
                    }
                    stack.pop();
                }
            }
        }
        None
    }

    /// The node with AS number `asn`.
    pub fn by_asn(&self, asn: u32) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.asn == asn)
            .and_then(|i| NodeId::try_from(i).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacency_reads_roles_from_both_ends() {
        let g = Graph {
            nodes: vec![
                Node {
                    asn: 1,
                    prefixes: vec![],
                },
                Node {
                    asn: 2,
                    prefixes: vec![],
                },
            ],
            links: vec![Link {
                a: 0,
                b: 1,
                rel: Rel::ProviderCustomer,
                latency_us: 10,
            }],
        };
        let adj = g.adjacency();
        assert_eq!(adj[0][0].role, Role::Customer);
        assert_eq!(adj[1][0].role, Role::Provider);
        assert_eq!(g.by_asn(2), Some(1));
    }
}

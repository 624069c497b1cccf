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

use base::Prefix;

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

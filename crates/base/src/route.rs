//! The one route type that crosses from the RIB to a forwarding plane.

use std::net::IpAddr;

use crate::Prefix;

/// A change of the best route of a prefix: its new next hop, or `None`
/// when it has no route any more. The RIB produces these
/// (`bgp_core::BestChange`), the FIB consumes them (`fib::Change`), the
/// feed socket carries them; all three are this type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RouteChange {
    /// The prefix.
    pub prefix: Prefix,
    /// Its best next hop now (the BGP NEXT_HOP; for IPv6 the global
    /// address), `None` when it is withdrawn.
    pub next_hop: Option<IpAddr>,
    /// With multipath (ECMP): the next hops of the other paths of the
    /// multipath set, distinct and without `next_hop`, in the RIB's order;
    /// empty for a single path (no allocation then).
    pub ecmp: Vec<IpAddr>,
}

impl RouteChange {
    /// A change with one next hop (or none: a withdrawal).
    pub fn single(prefix: Prefix, next_hop: Option<IpAddr>) -> Self {
        RouteChange {
            prefix,
            next_hop,
            ecmp: Vec::new(),
        }
    }

    /// Every next hop: `next_hop` first, then `ecmp`.
    pub fn next_hops(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.next_hop.into_iter().chain(self.ecmp.iter().copied())
    }
}

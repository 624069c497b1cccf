//! The one route type that crosses from the RIB to a forwarding plane.

use std::net::IpAddr;

use crate::Prefix;

/// A change of the best route of a prefix: its new next hop, or `None`
/// when it has no route any more. The RIB produces these
/// (`bgp_core::BestChange`), the FIB consumes them (`fib::Change`), the
/// feed socket carries them; all three are this type.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct RouteChange {
    /// The prefix.
    pub prefix: Prefix,
    /// Its best next hop now (the BGP NEXT_HOP; for IPv6 the global
    /// address), `None` when it is withdrawn.
    pub next_hop: Option<IpAddr>,
}

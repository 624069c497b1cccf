//! What a RIB core is configured with: which part of the RIB it owns and
//! the router-wide settings. A leaf module: everything else in the crate
//! may use it.

use std::net::Ipv4Addr;

use base::{Asn, Prefix};
use bgp_rib::{BestPathConfig, PeerId};

/// The pseudo-peer that originates static routes.
pub const STATIC_PEER: PeerId = PeerId(0);

/// Which part of the RIB a core owns: the prefixes that
/// [`bgp_rib::shard_for`]`(prefix, count)` maps to `index`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// This part's index, `0..count`.
    pub index: usize,
    /// How many parts the RIB is split into.
    pub count: usize,
}

impl Part {
    /// The whole RIB (sequential pipeline, simulations).
    pub const WHOLE: Part = Part { index: 0, count: 1 };

    /// Whether `prefix` belongs to this part.
    pub fn owns(&self, prefix: &Prefix) -> bool {
        self.count <= 1 || bgp_rib::shard_for(prefix, self.count) == self.index
    }
    /// The part that sends the session commands that must go once.
    pub fn is_primary(&self) -> bool {
        self.index == 0
    }
}

/// Global settings of the RIB.
#[derive(Clone, Debug)]
pub struct RibSettings {
    /// Our BGP Identifier.
    pub router_id: Ipv4Addr,
    /// Our route-reflection cluster ID (RFC 4456).
    pub cluster_id: Ipv4Addr,
    /// Our AS.
    pub local_asn: Asn,
    /// Best-path selection options.
    pub bestpath: BestPathConfig,
}

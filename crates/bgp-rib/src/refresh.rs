//! Enhanced route refresh, receiving side (RFC 7313 §4): on a
//! Beginning-of-RIB-Refresh the session stays up, so only the peer's paths
//! of one address family are flagged stale; its Adj-RIB-Out and
//! pre-policy routes are untouched. Re-announcements clear the flag (as
//! for graceful restart, see `gr.rs`) and the End-of-RIB-Refresh sweeps
//! the rest with [`RibShard::sweep_stale_afi`].
//!
//! Limit: a route that import policy rejected stays in the pre-policy
//! store even if the peer does not re-advertise it; a later policy change
//! that accepts it would bring it back until the next refresh.

use base::Afi;

use crate::shard::RibShard;
use crate::table;
use crate::types::RibError;
use crate::{PeerId, Rib};

impl RibShard {
    /// Flags the paths of `peer` in `afi` stale; returns how many.
    pub fn mark_stale_afi(&mut self, peer: PeerId, afi: Afi) -> Result<usize, RibError> {
        if self.peer_state(peer).is_none() {
            return Err(RibError::UnknownPeer(peer));
        }
        Ok(match afi {
            Afi::Ipv4 => table::mark_stale(&mut self.v4, peer),
            Afi::Ipv6 => table::mark_stale(&mut self.v6, peer),
            Afi::Other(_) => 0,
        })
    }
}

impl Rib {
    /// [`RibShard::mark_stale_afi`] across shards; returns paths flagged.
    pub fn mark_stale_afi(&mut self, peer: PeerId, afi: Afi) -> Result<usize, RibError> {
        let mut n = 0;
        for s in self.shards_mut() {
            n += s.mark_stale_afi(peer, afi)?;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr};

    use base::{Asn, Prefix};
    use bgp_wire::{AttrValue, Origin, PathAttr};

    use crate::{AcceptAll, AttrsBuilder, BestPathConfig, PeerConfig, PeerId, Rib};

    fn pfx(s: &str) -> Prefix {
        s.parse().expect("prefix")
    }

    #[test]
    fn only_the_family_is_flagged_and_reannounced_paths_survive_the_sweep() {
        let mut rib = Rib::new(2, BestPathConfig::default());
        let p = PeerId(1);
        rib.add_peer(
            p,
            PeerConfig {
                asn: Asn(65001),
                bgp_id: Ipv4Addr::new(10, 0, 0, 2),
                addr: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)),
                ebgp: true,
                keep_pre_policy: false,
                export: false,
            },
        );
        let mut b = AttrsBuilder::new();
        b.set(PathAttr::new(AttrValue::Origin(Origin::Igp)));
        b.set_next_hop(bgp_wire::NextHop::V4(Ipv4Addr::new(10, 0, 0, 2)));
        let (a, c, v6) = (
            pfx("198.51.100.0/24"),
            pfx("203.0.113.0/24"),
            pfx("2001:db8::/32"),
        );
        let mut changed = Vec::new();
        let n = bgp_wire::Nlri::new;
        rib.apply_update(
            p,
            &[n(a), n(c), n(v6)],
            Some(&b),
            &[],
            &mut AcceptAll,
            &mut changed,
        )
        .expect("apply");
        assert_eq!(rib.mark_stale_afi(p, base::Afi::Ipv4).expect("mark"), 2);
        assert_eq!(rib.stale_count(p), 2, "the IPv6 path must not be flagged");
        rib.apply_update(p, &[n(a)], Some(&b), &[], &mut AcceptAll, &mut changed)
            .expect("re-announce");
        assert_eq!(rib.stale_count(p), 1);
        changed.clear();
        rib.sweep_stale_afi(p, base::Afi::Ipv4, &mut changed)
            .expect("sweep");
        assert!(rib.lookup(&a).is_some());
        assert!(rib.lookup(&c).is_none());
        assert!(rib.lookup(&v6).is_some());
        assert_eq!(changed, vec![c]);
        assert!(rib.mark_stale_afi(PeerId(9), base::Afi::Ipv4).is_err());
    }
}

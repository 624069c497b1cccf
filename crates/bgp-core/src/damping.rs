//! Route-flap damping in the RIB core (RFC 2439; see
//! [`bgp_rib::damping`]): the unicast RIB damps the peers whose
//! [`PeerMeta::damping`](crate::PeerMeta::damping) is set. Flaps are
//! counted at the time [`RibCore::handle`] is given, suppressed routes are
//! released by [`RibCore::tick`] at their reuse time, and
//! [`RibCore::next_deadline`] includes it. Multicast (SAFI 2) routes are
//! not damped.

use bgp_rib::{DampParams, PeerId};

use crate::core::RibCore;

impl RibCore {
    /// Switches damping on with `params` (new parameters drop every
    /// history), or off with `None` (every suppressed route released);
    /// then damps each peer whose metadata asks for it. What changed goes
    /// out with the next [`Self::propagate`].
    pub fn set_damping(&mut self, params: Option<DampParams>) {
        match params {
            Some(p) => self.rib.enable_damping(p, &mut self.changed),
            None => self.rib.disable_damping(&mut self.changed),
        }
        for i in 0..self.peers.len() {
            self.sync_peer_damping(PeerId(i as u16));
        }
    }

    /// Whether damping is on.
    pub fn damping_enabled(&self) -> bool {
        self.rib.shards().iter().any(|s| s.damping_enabled())
    }

    /// Applies peer `id`'s [`PeerMeta::damping`](crate::PeerMeta::damping)
    /// (after its metadata changed); turning it off releases its routes.
    pub fn sync_peer_damping(&mut self, id: PeerId) {
        let on = self
            .peers
            .get(id.0 as usize)
            .and_then(Option::as_ref)
            .is_some_and(|e| e.meta.damping);
        if on != self.rib.shards().iter().any(|s| s.peer_damped(id)) {
            self.rib.set_peer_damping(id, on, &mut self.changed);
        }
    }
}

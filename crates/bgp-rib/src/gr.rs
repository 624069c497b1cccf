//! Graceful restart, receiving side (RFC 4724 §4.2): when a session that
//! negotiated graceful restart goes down, its routes are kept and flagged
//! stale instead of flushed; re-announcements clear the flag; End-of-RIB
//! from the restarted peer (or the restart timer running out) removes what
//! is still stale.

use base::{Afi, Prefix};

use crate::hash::FastMap;
use crate::shard::RibShard;
use crate::table::{self, SelectCtx};
use crate::types::RibError;
use crate::PeerId;

impl RibShard {
    /// The session with `peer` went down with graceful restart: keep its
    /// routes in the Loc-RIB, flagged stale (selection is unchanged, RFC
    /// 4724 §4.2 says to keep forwarding on them). Its Adj-RIB-Out and
    /// pre-policy routes are dropped as on [`Self::peer_down`], since the
    /// new session starts from nothing. Returns the paths flagged.
    pub fn mark_stale(&mut self, peer: PeerId) -> Result<usize, RibError> {
        let st = self
            .peers
            .get_mut(peer.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(RibError::UnknownPeer(peer))?;
        st.rejected = FastMap::default();
        let mut released = Vec::new();
        if let Some(pre) = st.pre.as_mut() {
            released.extend(pre.take_handles());
        }
        if let Some(out) = st.out.as_mut() {
            released.extend(out.take_handles());
        }
        for h in released {
            self.interner.release(h);
        }
        Ok(table::mark_stale(&mut self.v4, peer) + table::mark_stale(&mut self.v6, peer))
    }

    /// [`Self::mark_stale`], keeping only the families in `keep` (RFC 4724
    /// §4.2: those the peer listed in its graceful restart capability);
    /// the paths of the other families are removed at once, prefixes
    /// whose best changed appended to `changed`. Returns the paths left
    /// stale.
    pub fn mark_stale_families(
        &mut self,
        peer: PeerId,
        keep: &[Afi],
        changed: &mut Vec<Prefix>,
    ) -> Result<usize, RibError> {
        let marked = self.mark_stale(peer)?;
        let mut flushed = 0;
        for afi in [Afi::Ipv4, Afi::Ipv6] {
            if !keep.contains(&afi) {
                flushed += self.sweep(peer, Some(afi), changed)?;
            }
        }
        Ok(marked - flushed)
    }

    /// Removes the paths of `peer` still flagged stale (End-of-RIB for
    /// every family, or the restart/stale timer expired) and reselects;
    /// appends prefixes whose best changed to `changed`. Returns the paths
    /// removed.
    pub fn sweep_stale(
        &mut self,
        peer: PeerId,
        changed: &mut Vec<Prefix>,
    ) -> Result<usize, RibError> {
        let n = self.sweep(peer, None, changed)?;
        Ok(n)
    }

    /// [`Self::sweep_stale`] for one address family (End-of-RIB is per
    /// AFI/SAFI, RFC 4724 §4.2; the RIB holds unicast only).
    pub fn sweep_stale_afi(
        &mut self,
        peer: PeerId,
        afi: Afi,
        changed: &mut Vec<Prefix>,
    ) -> Result<usize, RibError> {
        self.sweep(peer, Some(afi), changed)
    }

    fn sweep(
        &mut self,
        peer: PeerId,
        afi: Option<Afi>,
        changed: &mut Vec<Prefix>,
    ) -> Result<usize, RibError> {
        if self.peer_state(peer).is_none() {
            return Err(RibError::UnknownPeer(peer));
        }
        let mut released = Vec::new();
        let ctx = SelectCtx {
            interner: &self.interner,
            peers: &self.peers,
            cfg: &self.cfg,
        };
        let mut n = 0;
        let mut others = (self.add_path_peers > 0).then_some(&mut self.path_changed);
        if afi.is_none_or(|a| a == Afi::Ipv4) {
            let o = others.as_deref_mut();
            n += table::remove_peer(&mut self.v4, peer, true, &ctx, &mut released, changed, o);
        }
        if afi.is_none_or(|a| a == Afi::Ipv6) {
            n += table::remove_peer(
                &mut self.v6,
                peer,
                true,
                &ctx,
                &mut released,
                changed,
                others,
            );
        }
        self.paths = self.paths.saturating_sub(n);
        if let Some(Some(st)) = self.peers.get_mut(peer.0 as usize) {
            st.accepted = st.accepted.saturating_sub(n as u64);
        }
        for h in released {
            self.interner.release(h);
        }
        Ok(n)
    }

    /// Stale paths of `peer` in this shard.
    pub fn stale_count(&self, peer: PeerId) -> usize {
        let v4 = self.v4.values().flat_map(|e| e.paths().iter());
        let v6 = self.v6.values().flat_map(|e| e.paths().iter());
        v4.chain(v6).filter(|p| p.peer == peer && p.stale).count()
    }
}

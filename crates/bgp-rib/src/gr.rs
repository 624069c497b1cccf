//! Graceful restart, receiving side (RFC 4724 §4.2): when a session that
//! negotiated graceful restart goes down, its routes are kept and flagged
//! stale instead of flushed; re-announcements clear the flag; End-of-RIB
//! from the restarted peer (or the restart timer running out) removes what
//! is still stale.

use base::{Afi, Prefix};
use bgp_wire::consts::attr_type as at;
use bgp_wire::{AttrValue, Community, PathAttr};

use crate::bestpath::BestPathConfig;
use crate::hash::FastMap;
use crate::intern::{AttrHandle, Interner};
use crate::nht::NhTable;
use crate::peer::PeerState;
use crate::shard::RibShard;
use crate::table::{self, Key, SelectCtx, Table};
use crate::types::RibError;
use crate::PeerId;

impl RibShard {
    /// The session with `peer` went down with graceful restart: keep its
    /// routes in the Loc-RIB, flagged stale (selection is unchanged, RFC
    /// 4724 §4.2 says to keep forwarding on them). Its Adj-RIB-Out and
    /// pre-policy routes are dropped as on [`Self::peer_down`], since the
    /// new session starts from nothing. Returns the paths flagged.
    pub fn mark_stale(&mut self, peer: PeerId) -> Result<usize, RibError> {
        if self.peer_state(peer).is_none() {
            return Err(RibError::UnknownPeer(peer));
        }
        let mut released = self.clear_adj_out(peer);
        let st = self
            .peers
            .get_mut(peer.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(RibError::UnknownPeer(peer))?;
        st.rejected = FastMap::default();
        if let Some(pre) = st.pre.as_mut() {
            released.extend(pre.take_handles());
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
            nht: self.nht.as_ref(),
        };
        let mut n = 0;
        let mut others = self.tracks_paths().then_some(&mut self.path_changed);
        let track = ctx.nht.is_some();
        let mut gone: Vec<(Prefix, AttrHandle)> = Vec::new();
        let mut rel = |p: Prefix, h: AttrHandle| {
            if track {
                gone.push((p, h));
            }
            released.push(h);
        };
        if afi.is_none_or(|a| a == Afi::Ipv4) {
            let o = others.as_deref_mut();
            n += table::remove_peer(&mut self.v4, peer, true, &ctx, &mut rel, changed, o);
        }
        if afi.is_none_or(|a| a == Afi::Ipv6) {
            n += table::remove_peer(&mut self.v6, peer, true, &ctx, &mut rel, changed, others);
        }
        if let Some(Some(st)) = self.peers.get_mut(peer.0 as usize) {
            st.accepted = st.accepted.saturating_sub(n as u64);
        }
        for (p, h) in gone {
            self.index_remove(h, p);
        }
        for h in released {
            self.interner.release(h);
        }
        Ok(n)
    }

    /// Long-lived graceful restart (RFC 9494): the stale paths of
    /// `peer` in family `afi` enter the long-lived stale phase. Those
    /// carrying NO_LLGR are removed; the others get the LLGR_STALE
    /// community, which makes them least preferred (RFC 9494) and
    /// keeps them from peers that did not negotiate LLGR. Prefixes whose
    /// best changed are appended to `changed`. Returns (paths kept,
    /// paths removed).
    pub fn enter_llgr(
        &mut self,
        peer: PeerId,
        afi: Afi,
        changed: &mut Vec<Prefix>,
    ) -> Result<(usize, usize), RibError> {
        if self.peer_state(peer).is_none() {
            return Err(RibError::UnknownPeer(peer));
        }
        let mut released = Vec::new();
        let mut gone = Vec::new();
        let others = self.tracks_paths().then_some(&mut self.path_changed);
        let mut l = Llgr {
            peer,
            interner: &mut self.interner,
            peers: &self.peers,
            cfg: &self.cfg,
            nht: self.nht.as_ref(),
            released: &mut released,
            gone: &mut gone,
            changed,
            others,
        };
        let (kept, removed) = match afi {
            Afi::Ipv4 => l.table(&mut self.v4),
            Afi::Ipv6 => l.table(&mut self.v6),
            _ => (0, 0),
        };
        if let Some(Some(st)) = self.peers.get_mut(peer.0 as usize) {
            st.accepted = st.accepted.saturating_sub(removed as u64);
        }
        // Removed paths leave the next-hop index (while their attribute
        // sets are still interned, so their next hops can be read).
        for (h, prefix) in gone {
            self.index_remove(h, prefix);
        }
        for h in released {
            self.interner.release(h);
        }
        Ok((kept, removed))
    }

    /// Stale paths of `peer` in this shard.
    pub fn stale_count(&self, peer: PeerId) -> usize {
        let v4 = self.v4.values().flat_map(|e| e.paths().iter());
        let v6 = self.v6.values().flat_map(|e| e.paths().iter());
        v4.chain(v6).filter(|p| p.peer == peer && p.stale()).count()
    }
}

/// One family's pass of [`RibShard::enter_llgr`].
struct Llgr<'a> {
    peer: PeerId,
    interner: &'a mut Interner,
    peers: &'a [Option<PeerState>],
    cfg: &'a BestPathConfig,
    nht: Option<&'a NhTable>,
    released: &'a mut Vec<AttrHandle>,
    gone: &'a mut Vec<(AttrHandle, Prefix)>,
    changed: &'a mut Vec<Prefix>,
    others: Option<&'a mut Vec<Prefix>>,
}

impl Llgr<'_> {
    /// The attribute set of `h` with LLGR_STALE added (a new reference),
    /// or `None` when it carries NO_LLGR (or is unknown).
    fn restamp(&mut self, h: AttrHandle) -> Option<AttrHandle> {
        let set = self.interner.get(h)?;
        if set.summary().no_llgr() {
            return None;
        }
        let mut b = set.to_builder();
        let mut list = match b.get(at::COMMUNITIES).map(|a| &a.value) {
            Some(AttrValue::Communities(c)) => c.clone(),
            _ => Vec::new(),
        };
        if !list.contains(&Community::LLGR_STALE) {
            list.push(Community::LLGR_STALE);
        }
        b.set(PathAttr::new(AttrValue::Communities(list)));
        Some(self.interner.intern(&b))
    }

    fn table<K: Key>(&mut self, t: &mut Table<K>) -> (usize, usize) {
        let peer = self.peer;
        let hit = |p: &crate::types::PathEntry| p.peer == peer && p.stale();
        let keys: Vec<K> = t
            .iter()
            .filter(|(_, e)| e.paths().iter().any(hit))
            .map(|(k, _)| *k)
            .collect();
        let (mut kept, mut removed) = (0, 0);
        for k in keys {
            t.edit(&k, |e| self.entry(k, e, &mut kept, &mut removed));
        }
        (kept, removed)
    }

    /// One prefix of [`Self::table`]: restamps or drops the stale paths of
    /// the peer in `e` and reselects (an entry left empty is dropped by
    /// the table).
    fn entry<K: Key>(
        &mut self,
        k: K,
        e: &mut crate::table::PrefixEntry,
        kept: &mut usize,
        removed: &mut usize,
    ) {
        let peer = self.peer;
        let hit = |p: &crate::types::PathEntry| p.peer == peer && p.stale();
        let old = e.best_path().copied();
        let mut drop = false;
        for p in e.paths_mut().iter_mut().filter(|p| hit(p)) {
            match self.restamp(p.attrs) {
                Some(h) => {
                    self.released.push(p.attrs);
                    p.attrs = h;
                    p.set_key_index(self.interner.sel_index(h));
                    *kept += 1;
                }
                None => drop = true,
            }
        }
        if drop {
            let mut v = e.take_paths();
            v.retain(|p| {
                let gone = hit(p)
                    && self
                        .interner
                        .get(p.attrs)
                        .is_none_or(|s| s.summary().no_llgr());
                if gone {
                    self.released.push(p.attrs);
                    self.gone.push((p.attrs, k.into()));
                    *removed += 1;
                }
                !gone
            });
            e.set_paths(v);
            if e.paths().is_empty() {
                self.changed.push(k.into());
                return;
            }
        }
        let ctx = SelectCtx {
            interner: self.interner,
            peers: self.peers,
            cfg: self.cfg,
            nht: self.nht,
        };
        if table::reselect(e, old, &ctx) {
            self.changed.push(k.into());
        } else if let Some(o) = self.others.as_deref_mut() {
            o.push(k.into());
        }
    }
}

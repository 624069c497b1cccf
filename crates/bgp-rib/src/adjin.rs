//! The pre-policy Adj-RIB-In ("soft reconfiguration inbound"): what a peer
//! sent before import policy, so that a policy change can be applied
//! without asking the peer for a ROUTE-REFRESH (RFC 2918).
//!
//! Stored as a difference: most routes leave import policy unchanged, and
//! then their post-policy path already holds the very same interned set
//! (the handle is shared). Only routes that policy rejected or modified
//! keep an entry of their own; the pre-policy set of every other route is
//! its (non-stale) path in the table. That costs nothing per unchanged
//! route, where a full copy cost a hash-map slot per path (more than
//! everything else the RIB keeps for it).

use base::Prefix;

use crate::attrs::AttrSet;
use crate::hash::FastMap;
use crate::intern::AttrHandle;
use crate::key::PKey;
use crate::policy::{ImportPolicy, Verdict};
use crate::shard::RibShard;
use crate::table::{Key, PrefixEntry, Table};
use crate::types::RibError;
use crate::PeerId;

/// The non-stale path of (`peer`, `pid`) in `e`, if any.
fn live_path(e: &PrefixEntry, peer: PeerId, pid: u32) -> Option<AttrHandle> {
    e.paths()
        .iter()
        .find(|p| p.peer == peer && p.path_id == pid && !p.stale())
        .map(|p| p.attrs)
}

/// Every non-stale path of `peer` whose key `skip` does not hold.
fn collect_live<K: Key>(
    t: &Table<K>,
    peer: PeerId,
    skip: &FastMap<(PKey, u32), AttrHandle>,
    out: &mut Vec<((Prefix, u32), AttrHandle)>,
) {
    for (k, e) in t.iter() {
        let prefix: Prefix = (*k).into();
        for p in e.paths().iter().filter(|p| p.peer == peer && !p.stale()) {
            if skip.is_empty() || !skip.contains_key(&(PKey::from(prefix), p.path_id)) {
                out.push(((prefix, p.path_id), p.attrs));
            }
        }
    }
}

impl RibShard {
    /// Records the pre-policy set of a route after import: `pre` is what the
    /// peer sent, `stored` the handle its path now holds (None: rejected,
    /// withdrawn or not stored). An entry is kept only when they differ;
    /// `pre` None forgets the route.
    pub(crate) fn note_pre_policy(
        &mut self,
        peer: PeerId,
        prefix: Prefix,
        pid: u32,
        pre: Option<AttrHandle>,
        stored: Option<AttrHandle>,
    ) {
        let Some(Some(p)) = self.peers.get_mut(peer.0 as usize) else {
            return;
        };
        let Some(store) = p.pre.as_mut() else {
            return;
        };
        let keep = pre.filter(|&h| !store.loc_is_pre || stored != Some(h));
        let key = PKey::from(prefix);
        let old = match keep {
            Some(h) => {
                self.interner.acquire(h);
                if pid != 0 {
                    let l = store.pids.entry(key).or_default();
                    if !l.contains(&pid) {
                        l.push(pid);
                    }
                }
                store.diff.insert((key, pid), h)
            }
            None if store.diff.is_empty() => None,
            None => {
                let o = store.diff.remove(&(key, pid));
                if pid != 0 && o.is_some() {
                    if let Some(l) = store.pids.get_mut(&key) {
                        l.retain(|&x| x != pid);
                        if l.is_empty() {
                            store.pids.remove(&key);
                        }
                    }
                }
                o
            }
        };
        if let Some(o) = old {
            self.interner.release(o);
        }
    }

    /// Routes of `peer` whose pre-policy set is stored apart from its path
    /// (import policy rejected or modified them); 0 without the store.
    pub fn pre_policy_kept(&self, peer: PeerId) -> usize {
        self.peer_state(peer)
            .and_then(|p| p.pre.as_ref())
            .map_or(0, |s| s.diff.len())
    }

    /// Whether [`Self::reimport`] would see every route of `peer`: the store
    /// is on and was on since the peer's routes were last flushed.
    pub fn pre_policy_complete(&self, peer: PeerId) -> bool {
        self.peer_state(peer)
            .and_then(|p| p.pre.as_ref())
            .is_some_and(|s| s.loc_is_pre)
    }

    /// Whether some peer keeps a pre-policy route for `prefix` apart from
    /// its paths (one that import policy rejected or modified).
    pub fn has_pre_policy(&self, prefix: &Prefix) -> bool {
        let key = PKey::from(prefix.masked());
        self.peers
            .iter()
            .flatten()
            .filter_map(|p| p.pre.as_ref())
            .any(|s| s.diff.contains_key(&(key, 0)) || s.pids.contains_key(&key))
    }

    /// The pre-policy attributes of a route, when the peer keeps them.
    pub fn pre_policy(&self, peer: PeerId, prefix: &Prefix, path_id: u32) -> Option<&AttrSet> {
        let store = self.peer_state(peer)?.pre.as_ref()?;
        if let Some(&h) = store.diff.get(&(PKey::from(*prefix), path_id)) {
            return self.interner.get(h);
        }
        if !store.loc_is_pre {
            return None;
        }
        let e = match prefix.masked() {
            Prefix::V4(k) => self.v4.get(&k),
            Prefix::V6(k) => self.v6.get(&k),
        }?;
        self.interner.get(live_path(e, peer, path_id)?)
    }

    /// Calls `f` on every route of `peer`'s pre-policy Adj-RIB-In in this
    /// shard (the routes import policy rejected or changed included, as
    /// received): what a monitoring station's table dump reports (RFC 7854
    /// §5). False, calling nothing, when the store is off or incomplete
    /// ([`Self::pre_policy_complete`]).
    pub fn for_each_pre_policy(
        &self,
        peer: PeerId,
        mut f: impl FnMut(&Prefix, u32, &AttrSet),
    ) -> bool {
        let Some(store) = self.peer_state(peer).and_then(|p| p.pre.as_ref()) else {
            return false;
        };
        if !store.loc_is_pre {
            return false;
        }
        for ((k, pid), h) in &store.diff {
            if let (Some(prefix), Some(set)) = (k.prefix(), self.interner.get(*h)) {
                f(&prefix, *pid, set);
            }
        }
        let mut live = Vec::new();
        collect_live(&self.v4, peer, &store.diff, &mut live);
        collect_live(&self.v6, peer, &store.diff, &mut live);
        for ((prefix, pid), h) in live {
            if let Some(set) = self.interner.get(h) {
                f(&prefix, pid, set);
            }
        }
        true
    }

    /// Calls `f` on every route of `peer` that import policy rejected, as
    /// received (the looking glass's "filtered" routes): the pre-policy
    /// routes that hold no path in the table. False, calling nothing, when
    /// the store is off or incomplete ([`Self::pre_policy_complete`]).
    pub fn for_each_filtered(
        &self,
        peer: PeerId,
        mut f: impl FnMut(&Prefix, u32, &AttrSet),
    ) -> bool {
        let Some(store) = self.peer_state(peer).and_then(|p| p.pre.as_ref()) else {
            return false;
        };
        if !store.loc_is_pre {
            return false;
        }
        for ((k, pid), h) in &store.diff {
            let Some(prefix) = k.prefix() else { continue };
            let entry = match prefix.masked() {
                Prefix::V4(k) => self.v4.get(&k),
                Prefix::V6(k) => self.v6.get(&k),
            };
            if entry.and_then(|e| live_path(e, peer, *pid)).is_some() {
                continue; // accepted, with attributes changed by policy
            }
            if let Some(set) = self.interner.get(*h) {
                f(&prefix, *pid, set);
            }
        }
        true
    }

    /// Re-runs import policy over a peer's pre-policy Adj-RIB-In ("soft
    /// reconfiguration inbound", the stored alternative to asking the peer
    /// for a ROUTE-REFRESH, RFC 2918). Does nothing for peers without
    /// `keep_pre_policy`.
    pub fn reimport<P: ImportPolicy + ?Sized>(
        &mut self,
        peer: PeerId,
        import: &mut P,
        changed: &mut Vec<Prefix>,
    ) -> Result<(), RibError> {
        let st = self.peer_state(peer).ok_or(RibError::UnknownPeer(peer))?;
        let Some(store) = st.pre.as_ref() else {
            return Ok(());
        };
        let mut routes: Vec<((Prefix, u32), AttrHandle)> = store
            .diff
            .iter()
            .filter_map(|((k, pid), h)| Some(((k.prefix()?, *pid), *h)))
            .collect();
        if store.loc_is_pre {
            collect_live(&self.v4, peer, &store.diff, &mut routes);
            collect_live(&self.v6, peer, &store.diff, &mut routes);
        }
        self.reimport_routes(peer, routes, import, changed);
        Ok(())
    }

    /// [`Self::reimport`] for one prefix only (every path of `peer` there):
    /// what a change of the RPKI VRP set re-evaluates, without walking the
    /// peer's routes. Does nothing for peers without `keep_pre_policy`.
    pub fn reimport_prefix<P: ImportPolicy + ?Sized>(
        &mut self,
        peer: PeerId,
        prefix: Prefix,
        import: &mut P,
        changed: &mut Vec<Prefix>,
    ) -> Result<(), RibError> {
        let st = self.peer_state(peer).ok_or(RibError::UnknownPeer(peer))?;
        let Some(store) = st.pre.as_ref() else {
            return Ok(());
        };
        let prefix = prefix.masked();
        let key = PKey::from(prefix);
        let mut routes: Vec<((Prefix, u32), AttrHandle)> = Vec::new();
        let extra = store.pids.get(&key).map_or(&[][..], Vec::as_slice);
        for &pid in std::iter::once(&0).chain(extra) {
            if let Some(&h) = store.diff.get(&(key, pid)) {
                routes.push(((prefix, pid), h));
            }
        }
        if store.loc_is_pre {
            let e = match prefix {
                Prefix::V4(k) => self.v4.get(&k),
                Prefix::V6(k) => self.v6.get(&k),
            };
            for p in e.map_or(&[][..], |e| e.paths()) {
                if p.peer == peer && !p.stale() && !store.diff.contains_key(&(key, p.path_id)) {
                    routes.push(((prefix, p.path_id), p.attrs));
                }
            }
        }
        self.reimport_routes(peer, routes, import, changed);
        Ok(())
    }

    fn reimport_routes<P: ImportPolicy + ?Sized>(
        &mut self,
        peer: PeerId,
        routes: Vec<((Prefix, u32), AttrHandle)>,
        import: &mut P,
        changed: &mut Vec<Prefix>,
    ) {
        // Each route's update below may drop the last reference its old
        // path or entry held; keep every collected set alive until done.
        for (_, h) in &routes {
            self.interner.acquire(*h);
        }
        for &((prefix, pid), h) in &routes {
            let Some(set) = self.interner.get(h) else {
                continue;
            };
            let mut b = set.to_builder();
            b.mark_clean();
            match import.import(peer, &prefix, &mut b) {
                Verdict::Accept => {
                    let nh = if b.is_dirty() {
                        self.interner.intern(&b)
                    } else {
                        self.interner.acquire(h);
                        h
                    };
                    self.note_rejected(peer, prefix, pid, false);
                    let stored = self.insert_owned(peer, prefix, pid, nh, changed);
                    self.note_pre_policy(peer, prefix, pid, Some(h), stored.then_some(nh));
                }
                Verdict::Reject => {
                    self.remove_path(peer, prefix, pid, changed);
                    self.note_rejected(peer, prefix, pid, true);
                    self.note_pre_policy(peer, prefix, pid, Some(h), None);
                }
            }
        }
        for (_, h) in routes {
            self.interner.release(h);
        }
    }
}

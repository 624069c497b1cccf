//! One shard of the RIB: the prefixes it owns, their paths from every peer
//! (Adj-RIB-In, post-policy), the selected best (Loc-RIB), per-peer export
//! state (Adj-RIB-Out) and its own attribute interner.

use std::net::IpAddr;

use base::Prefix;
use bgp_wire::Nlri;

use crate::adjout::{AdjOut, Group};
use crate::attrs::{AttrSet, AttrsBuilder};
use crate::bestpath::BestPathConfig;
use crate::hash::FastMap;
use crate::intern::{AttrHandle, Interner};
use crate::key::PKey;
use crate::nht::{nexthop_ip, NexthopInfo, NexthopWatch, NhState, NhTable};
use crate::peer::{PeerState, PreIn};
use crate::policy::{ImportPolicy, Verdict};
use crate::table::{self, Change, PrefixEntry, SelectCtx, Table};
use crate::types::{PathEntry, PeerConfig, PeerCounts, RibError};
use crate::PeerId;

/// Prefixes of an UPDATE whose table entries are touched ahead of their
/// edits ([`RibShard::touch_all`]); as many misses as the core keeps in
/// flight, about.
const LOOKAHEAD: usize = 16;

/// One shard: see the module docs.
#[derive(Debug, Default)]
pub struct RibShard {
    pub(crate) v4: Table<base::Prefix4>,
    pub(crate) v6: Table<base::Prefix6>,
    pub(crate) interner: Interner,
    pub(crate) peers: Vec<Option<PeerState>>,
    pub(crate) cfg: BestPathConfig,
    /// Peers whose Adj-RIB-Out keeps several paths per prefix (ADD-PATH
    /// send); while zero, changes to non-best paths are not tracked.
    pub(crate) add_path_peers: usize,
    /// Prefixes where a path other than the best changed since the last
    /// [`Self::export_changes`]: only ADD-PATH peers need to hear of them.
    pub(crate) path_changed: Vec<Prefix>,
    /// Export verdicts of the current export call for prefix-independent
    /// policies, by (to, from, source set); each `Some` holds a reference.
    /// Emptied when the call ends (see `export.rs`).
    pub(crate) export_cache: FastMap<(PeerId, PeerId, AttrHandle), Option<AttrHandle>>,
    /// Next-hop states and the next hop -> prefix index; `None`: next-hop
    /// tracking is off and every next hop is reachable (see `nht.rs`).
    pub(crate) nht: Option<NhTable>,
    /// Update groups: Adj-RIB-Out tables shared by peers with the same
    /// export (see `group.rs`); a free index is `None`.
    pub(crate) groups: Vec<Option<Group>>,
    /// Route-flap damping, when on (see `damp_shard.rs`).
    pub(crate) damp: Option<Box<crate::damping::ShardDamp>>,
    /// Views follow this shard ([`Self::set_view_tracking`]): changes of
    /// non-best paths are collected for them.
    pub(crate) views: bool,
    /// A drain step's prefixes ([`RibShard::drain_updates_max`]), kept so
    /// that a step does not allocate them.
    pub(crate) drain_buf: Vec<Prefix>,
}

/// Estimated heap bytes of one shard by structure ([`RibShard::heap_bytes`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct HeapBytes {
    /// The prefix table with every peer's paths (post-policy Adj-RIB-In
    /// and the Loc-RIB choice).
    pub loc_rib: usize,
    /// Attribute sets: arena, digest index and their bytes.
    pub interner: usize,
    /// Pre-policy Adj-RIB-In differences and the rejected routes' keys.
    pub adj_in: usize,
    /// Adj-RIB-Out tables of single peers (not in a group; a member's
    /// overrides).
    pub adj_out_private: usize,
    /// Update groups' shared Adj-RIB-Out tables.
    pub groups: usize,
    /// Changes queued per peer, not drained yet.
    pub pending: usize,
}

/// A prefix's paths as stored, with the Loc-RIB choice.
#[derive(Copy, Clone, Debug)]
pub struct RouteRef<'a> {
    /// The prefix.
    pub prefix: Prefix,
    /// Its paths, in storage order.
    pub paths: &'a [PathEntry],
    /// Index of the best path in `paths`.
    pub best: Option<usize>,
    interner: &'a Interner,
}

impl<'a> RouteRef<'a> {
    /// The best path and its attributes; `None` when there is no best path.
    pub fn best(&self) -> Option<(PathEntry, &'a AttrSet)> {
        let p = *self.paths.get(self.best?)?;
        Some((p, self.interner.get(p.attrs)?))
    }
    /// Every path with its attributes.
    pub fn iter(&self) -> impl Iterator<Item = (PathEntry, &'a AttrSet)> + 'a {
        let i = self.interner;
        self.paths
            .iter()
            .filter_map(move |p| Some((*p, i.get(p.attrs)?)))
    }
}

fn route_ref<'a>(prefix: Prefix, e: &'a PrefixEntry, interner: &'a Interner) -> RouteRef<'a> {
    RouteRef {
        prefix,
        paths: e.paths(),
        best: e.best_index(),
        interner,
    }
}

impl RibShard {
    /// An empty shard using `cfg` for selection.
    pub fn new(cfg: BestPathConfig) -> RibShard {
        RibShard {
            cfg,
            ..RibShard::default()
        }
    }

    /// The selection configuration.
    pub fn config(&self) -> &BestPathConfig {
        &self.cfg
    }

    /// Whether changes of non-best paths are collected (for ADD-PATH peers,
    /// and for the forwarding plane's multipath sets).
    pub(crate) fn tracks_paths(&self) -> bool {
        self.add_path_peers > 0 || self.cfg.multipath.enabled() || self.views
    }

    /// Prefixes where a path other than the best changed since the last
    /// [`Self::export_changes`] (collected while ADD-PATH peers or
    /// multipath need them): their multipath set may have changed.
    pub fn pending_path_changes(&self) -> &[Prefix] {
        &self.path_changed
    }

    /// The multipath set of `prefix` (see [`crate::multipath`]): indices
    /// into its [`RouteRef::paths`], the best first; empty without a best.
    pub fn multipath(&self, prefix: &Prefix) -> Vec<usize> {
        let p = prefix.masked();
        let e = match p {
            Prefix::V4(k) => self.v4.get(&k),
            Prefix::V6(k) => self.v6.get(&k),
        };
        let mut out = Vec::new();
        if let Some(e) = e {
            let ctx = SelectCtx {
                interner: &self.interner,
                peers: &self.peers,
                cfg: &self.cfg,
                nht: self.nht.as_ref(),
            };
            table::multipath(e, &ctx, &mut out);
        }
        out
    }

    /// Switches next-hop tracking on (before any route is stored): paths
    /// are then eligible only once their next hop is reported reachable
    /// with [`Self::nexthop_update`] (RFC 4271 §9.1.2.1), and the reported
    /// cost is their interior cost (§9.1.2.2 e).
    pub fn enable_nexthop_tracking(&mut self) {
        self.nht.get_or_insert_with(NhTable::default);
    }

    /// Whether next-hop tracking is on.
    pub fn nexthop_tracking(&self) -> bool {
        self.nht.is_some()
    }

    /// Records the state of `nexthop` and re-runs selection for the
    /// prefixes with a path through it (only those, through the index);
    /// appends prefixes whose best changed to `changed`. Ignored when no
    /// path uses it or tracking is off.
    pub fn nexthop_update(&mut self, nexthop: IpAddr, st: NhState, changed: &mut Vec<Prefix>) {
        let Some(t) = self.nht.as_mut() else {
            return;
        };
        let mut affected = Vec::new();
        t.set(nexthop, st, &mut affected);
        let ctx = SelectCtx {
            interner: &self.interner,
            peers: &self.peers,
            cfg: &self.cfg,
            nht: self.nht.as_ref(),
        };
        let track = self.tracks_paths();
        for p in affected {
            let reselect = |e: &mut PrefixEntry| {
                let old = e.best_path().copied();
                table::reselect(e, old, &ctx)
            };
            let best_changed = match p {
                Prefix::V4(k) => self.v4.edit(&k, reselect),
                Prefix::V6(k) => self.v6.edit(&k, reselect),
            };
            match best_changed {
                Some(true) => changed.push(p),
                // A non-best path became (in)eligible.
                Some(false) if track => self.path_changed.push(p),
                _ => {}
            }
        }
    }

    /// Moves the next hops this shard started or stopped using since the
    /// last call to `out` (the runtime resolves the new ones).
    pub fn drain_nexthop_watch(&mut self, out: &mut Vec<NexthopWatch>) {
        if let Some(t) = self.nht.as_mut() {
            t.drain_watch(out);
        }
    }

    /// The tracked next hops, in table order.
    pub fn nexthops(&self) -> impl Iterator<Item = NexthopInfo> + '_ {
        self.nht.iter().flat_map(NhTable::iter)
    }

    /// The next hop of the set behind `h`, when tracking is on.
    fn tracked_nexthop(&self, h: AttrHandle) -> Option<IpAddr> {
        self.nht.as_ref()?;
        Some(nexthop_ip(self.interner.get(h)?.next_hop()?))
    }

    fn index_add(&mut self, h: AttrHandle, prefix: Prefix) {
        if let Some(nh) = self.tracked_nexthop(h) {
            if let Some(t) = self.nht.as_mut() {
                t.add(nh, prefix);
            }
        }
    }

    pub(crate) fn index_remove(&mut self, h: AttrHandle, prefix: Prefix) {
        if let Some(nh) = self.tracked_nexthop(h) {
            if let Some(t) = self.nht.as_mut() {
                t.remove(nh, prefix);
            }
        }
    }

    /// Replaces the selection configuration and re-runs selection for every
    /// prefix; appends those whose best changed to `changed` (to export).
    pub fn set_config(&mut self, cfg: BestPathConfig, changed: &mut Vec<Prefix>) {
        if cfg == self.cfg {
            return;
        }
        // A new multipath limit changes the forwarded set of every prefix
        // with several paths, whether or not its best changes.
        let mp_changed = cfg.multipath != self.cfg.multipath;
        self.cfg = cfg;
        let ctx = SelectCtx {
            interner: &self.interner,
            peers: &self.peers,
            cfg: &self.cfg,
            nht: self.nht.as_ref(),
        };
        if mp_changed {
            // Every prefix with several paths goes out as changed (export
            // sends peers nothing new for an unchanged best), so the
            // forwarding plane hears the new set even with multipath now
            // off.
            let mut several = Vec::new();
            table::reselect_all(&mut self.v4, &ctx, changed, Some(&mut several));
            table::reselect_all(&mut self.v6, &ctx, changed, Some(&mut several));
            changed.append(&mut several);
            return;
        }
        let mut others = self.tracks_paths().then_some(&mut self.path_changed);
        table::reselect_all(&mut self.v4, &ctx, changed, others.as_deref_mut());
        table::reselect_all(&mut self.v6, &ctx, changed, others);
    }

    /// Registers (or reconfigures) a peer. Reconfiguring keeps its routes
    /// but does not reselect; call [`Self::peer_down`] first to flush.
    pub fn add_peer(&mut self, id: PeerId, cfg: PeerConfig) {
        let i = id.0 as usize;
        if self.peers.len() <= i {
            self.peers.resize_with(i + 1, || None);
        }
        if let Some(Some(p)) = self.peers.get_mut(i) {
            if cfg.keep_pre_policy && p.pre.is_none() {
                // Routes already stored may be post-policy sets.
                let empty = p.accepted == 0 && p.rejected.is_empty();
                p.pre = Some(if empty {
                    PreIn::complete()
                } else {
                    PreIn::partial()
                });
            }
            if cfg.export && p.out.is_none() {
                p.out = Some(AdjOut::default());
            }
            p.cfg = cfg;
            return;
        }
        let st = PeerState {
            pre: cfg.keep_pre_policy.then(PreIn::complete),
            out: cfg.export.then(AdjOut::default),
            cfg,
            accepted: 0,
            rejected: FastMap::default(),
        };
        if let Some(slot) = self.peers.get_mut(i) {
            *slot = Some(st);
        }
    }

    /// The configuration of peer `id`, if registered.
    pub fn peer(&self, id: PeerId) -> Option<&PeerConfig> {
        self.peer_state(id).map(|p| &p.cfg)
    }

    pub(crate) fn peer_state(&self, id: PeerId) -> Option<&PeerState> {
        self.peers.get(id.0 as usize)?.as_ref()
    }

    fn peer_state_mut(&mut self, id: PeerId) -> Result<&mut PeerState, RibError> {
        self.peers
            .get_mut(id.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(RibError::UnknownPeer(id))
    }

    /// This shard's attribute interner.
    pub fn interner(&self) -> &Interner {
        &self.interner
    }
    /// Interns a set in this shard (one reference, owned by the caller;
    /// give it back with [`Self::release`]).
    pub fn intern(&mut self, b: &AttrsBuilder) -> AttrHandle {
        self.interner.intern(b)
    }
    /// Gives back one reference taken with [`Self::intern`].
    pub fn release(&mut self, h: AttrHandle) {
        self.interner.release(h);
    }
    /// The set behind `h`, if it is live.
    pub fn attrs(&self, h: AttrHandle) -> Option<&AttrSet> {
        self.interner.get(h)
    }
    /// For tests: caps this shard's table of selection keys at `n - 1`
    /// keys (`intern.rs`), so that paths whose key finds no room, and are
    /// ranked from their sets instead, come up with a handful of sets.
    /// Takes effect for keys not in the table yet.
    #[doc(hidden)]
    pub fn limit_sel_keys(&mut self, n: usize) {
        self.interner.limit_sel_keys(n);
    }

    /// Applies one UPDATE's worth of changes from `peer`: withdrawals first,
    /// then announcements, so a prefix in both ends up announced (RFC 4271
    /// §4.3 says to treat such an UPDATE as if it were not withdrawn).
    /// `attrs` are the UPDATE's attributes; the shard drops what eBGP routes
    /// may not carry ([`AttrsBuilder::strip_ebgp_ingress`]) and runs `import` per
    /// announced prefix. Prefixes whose best path changed are appended to
    /// `changed` (a prefix touched twice in a batch may appear twice).
    pub fn apply_update<P: ImportPolicy + ?Sized>(
        &mut self,
        peer: PeerId,
        announce: &[Nlri],
        attrs: Option<&AttrsBuilder>,
        withdraw: &[Nlri],
        import: &mut P,
        changed: &mut Vec<Prefix>,
    ) -> Result<(), RibError> {
        let ebgp = self.peer_state_mut(peer)?.cfg.ebgp;
        for chunk in withdraw.chunks(LOOKAHEAD) {
            self.touch_all(chunk);
            for w in chunk {
                self.withdraw_one(peer, w.prefix, w.path_id.unwrap_or(0), changed);
            }
        }
        if announce.is_empty() {
            return Ok(());
        }
        let attrs = attrs.ok_or(RibError::MissingAttributes)?;
        // Sessions strip what eBGP routes may not carry before the split
        // over shards; this copy only runs for input that did not come
        // through a session's decoder.
        let stripped;
        let base = if ebgp && attrs.needs_ebgp_strip() {
            let mut b = attrs.clone();
            b.strip_ebgp_ingress();
            stripped = b;
            &stripped
        } else {
            attrs
        };
        let base_h = self.interner.intern(base);
        if import.accepts_all() {
            // Every prefix takes the UPDATE's set: no editable copy.
            for chunk in announce.chunks(LOOKAHEAD) {
                // Every prefix of the chunk gets a path below, so its
                // entry can be made now: the slots' misses overlap too.
                self.reserve_all(chunk);
                for n in chunk {
                    let prefix = n.prefix.masked();
                    let pid = n.path_id.unwrap_or(0);
                    self.interner.acquire(base_h);
                    self.note_rejected(peer, prefix, pid, false);
                    self.damp_announce(peer, prefix, pid, base_h);
                    let stored = self.insert_owned(peer, prefix, pid, base_h, changed);
                    let kept = stored.then_some(base_h);
                    self.note_pre_policy(peer, prefix, pid, Some(base_h), kept);
                }
            }
            self.interner.release(base_h);
            return Ok(());
        }
        // The policy edits `work`; `is_dirty` tells whether it did.
        let mut work = base.clone();
        work.mark_clean();
        for (i, n) in announce.iter().enumerate() {
            if i % LOOKAHEAD == 0 {
                self.touch_all(announce.get(i..).unwrap_or_default());
            }
            let prefix = n.prefix.masked();
            let pid = n.path_id.unwrap_or(0);
            match import.import(peer, &prefix, &mut work) {
                Verdict::Accept => {
                    let h = if work.is_dirty() {
                        let h = self.interner.intern(&work);
                        work.clone_from(base);
                        work.mark_clean();
                        h
                    } else {
                        self.interner.acquire(base_h);
                        base_h
                    };
                    self.note_rejected(peer, prefix, pid, false);
                    self.damp_announce(peer, prefix, pid, h);
                    let stored = self.insert_owned(peer, prefix, pid, h, changed);
                    self.note_pre_policy(peer, prefix, pid, Some(base_h), stored.then_some(h));
                }
                Verdict::Reject => {
                    if work.is_dirty() {
                        work.clone_from(base);
                        work.mark_clean();
                    }
                    self.remove_path(peer, prefix, pid, changed);
                    self.note_rejected(peer, prefix, pid, true);
                    self.note_pre_policy(peer, prefix, pid, Some(base_h), None);
                }
            }
        }
        self.interner.release(base_h);
        Ok(())
    }

    /// Like [`Self::apply_update`] with an already interned set and no
    /// import policy (for routes policy has already seen, and for
    /// benchmarks). The caller keeps its own reference to `attrs`.
    pub fn apply_interned(
        &mut self,
        peer: PeerId,
        announce: &[Nlri],
        attrs: AttrHandle,
        withdraw: &[Nlri],
        changed: &mut Vec<Prefix>,
    ) -> Result<(), RibError> {
        self.peer_state_mut(peer)?;
        if !announce.is_empty() && self.interner.get(attrs).is_none() {
            return Err(RibError::DeadHandle(attrs));
        }
        for (i, w) in withdraw.iter().enumerate() {
            if i % LOOKAHEAD == 0 {
                self.touch_all(withdraw.get(i..).unwrap_or_default());
            }
            self.withdraw_one(peer, w.prefix, w.path_id.unwrap_or(0), changed);
        }
        for (i, n) in announce.iter().enumerate() {
            if i % LOOKAHEAD == 0 {
                self.touch_all(announce.get(i..).unwrap_or_default());
            }
            let prefix = n.prefix.masked();
            let pid = n.path_id.unwrap_or(0);
            self.note_rejected(peer, prefix, pid, false);
            self.damp_announce(peer, prefix, pid, attrs);
            self.interner.acquire(attrs);
            let stored = self.insert_owned(peer, prefix, pid, attrs, changed);
            self.note_pre_policy(peer, prefix, pid, Some(attrs), stored.then_some(attrs));
        }
        Ok(())
    }

    /// Touches the table entries of the first [`LOOKAHEAD`] prefixes of
    /// `nlri` ([`Table::touch`]), ahead of their edits. Each new prefix of a
    /// large table costs a cache miss in the probe; touched one after the
    /// other in a loop of independent loads, up to `LOOKAHEAD` misses are
    /// in flight at once, where the edits, each depending on its own miss,
    /// waited for them one by one (issue 17, scenario (a): the Loc-RIB
    /// insert was a fifth of the daemon's CPU time, nearly all of it
    /// waiting for memory).
    fn touch_all(&self, nlri: &[Nlri]) {
        for n in nlri.iter().take(LOOKAHEAD) {
            match n.prefix.masked() {
                Prefix::V4(p) => self.v4.touch(&p),
                Prefix::V6(p) => self.v6.touch(&p),
            }
        }
    }

    /// [`Self::touch_all`], storing an empty entry for each prefix that has
    /// none ([`Table::reserve`]): a new prefix's slot is a miss of its own
    /// after the probe's, and made here, side by side, those misses
    /// overlap as well. Only where every prefix is then given a path.
    fn reserve_all(&mut self, nlri: &[Nlri]) {
        for n in nlri.iter().take(LOOKAHEAD) {
            match n.prefix.masked() {
                Prefix::V4(p) => self.v4.reserve(p),
                Prefix::V6(p) => self.v6.reserve(p),
            }
        }
    }

    fn withdraw_one(&mut self, peer: PeerId, prefix: Prefix, pid: u32, changed: &mut Vec<Prefix>) {
        let prefix = prefix.masked();
        self.damp_withdraw(peer, prefix, pid);
        self.note_pre_policy(peer, prefix, pid, None, None);
        self.note_rejected(peer, prefix, pid, false);
        self.remove_path(peer, prefix, pid, changed);
    }

    pub(crate) fn note_rejected(&mut self, peer: PeerId, prefix: Prefix, pid: u32, rejected: bool) {
        let Ok(p) = self.peer_state_mut(peer) else {
            return;
        };
        if rejected {
            p.rejected.insert((PKey::from(prefix), pid), ());
        } else if !p.rejected.is_empty() {
            p.rejected.remove(&(PKey::from(prefix), pid));
        }
    }

    /// Stores a path whose reference the caller hands over; false when it
    /// could not be stored (the per-prefix path cap).
    pub(crate) fn insert_owned(
        &mut self,
        peer: PeerId,
        prefix: Prefix,
        path_id: u32,
        h: AttrHandle,
        changed: &mut Vec<Prefix>,
    ) -> bool {
        // Its selection key index is set by `table::upsert` from the set.
        let mut path = PathEntry::new(peer, path_id, h);
        path.set_suppressed(self.damp_suppressed(peer, prefix, path_id));
        let ctx = SelectCtx {
            interner: &self.interner,
            peers: &self.peers,
            cfg: &self.cfg,
            nht: self.nht.as_ref(),
        };
        let ch = match prefix {
            Prefix::V4(p) => table::upsert(&mut self.v4, p, path, &ctx),
            Prefix::V6(p) => table::upsert(&mut self.v6, p, path, &ctx),
        };
        if self.nht.is_some() && (ch.added || ch.replaced) {
            if let (true, Some(old)) = (ch.replaced, ch.released) {
                self.index_remove(old, prefix);
            }
            // The first path through a next hop not resolved yet is not
            // eligible; it is reselected when the state arrives.
            self.index_add(h, prefix);
        }
        self.finish(peer, prefix, ch, changed);
        !ch.full
    }

    pub(crate) fn remove_path(
        &mut self,
        peer: PeerId,
        prefix: Prefix,
        pid: u32,
        changed: &mut Vec<Prefix>,
    ) {
        let ctx = SelectCtx {
            interner: &self.interner,
            peers: &self.peers,
            cfg: &self.cfg,
            nht: self.nht.as_ref(),
        };
        let ch = match prefix {
            Prefix::V4(p) => table::remove(&mut self.v4, p, peer, pid, &ctx),
            Prefix::V6(p) => table::remove(&mut self.v6, p, peer, pid, &ctx),
        };
        if let (true, Some(old)) = (ch.removed, ch.released) {
            self.index_remove(old, prefix);
        }
        self.finish(peer, prefix, ch, changed);
    }

    fn finish(&mut self, peer: PeerId, prefix: Prefix, ch: Change, changed: &mut Vec<Prefix>) {
        if let Some(h) = ch.released {
            self.interner.release(h);
        }
        if let Ok(p) = self.peer_state_mut(peer) {
            if ch.added {
                p.accepted += 1;
            }
            if ch.removed {
                p.accepted = p.accepted.saturating_sub(1);
            }
        }
        if ch.best_changed {
            changed.push(prefix);
        } else if self.tracks_paths() && (ch.added || ch.removed || ch.replaced) {
            self.path_changed.push(prefix);
        }
    }

    /// Removes every route of `peer` (session down) and reselects. The peer
    /// stays registered with empty Adj-RIBs. Appends prefixes whose best
    /// changed to `changed`.
    pub fn peer_down(&mut self, peer: PeerId, changed: &mut Vec<Prefix>) -> Result<(), RibError> {
        // A session reset is not counted as flaps of its routes; their
        // histories go with them.
        self.damping_forget_peer(peer, changed);
        self.peer_state_mut(peer)?;
        // The mode (ADD-PATH or not) stays until the next session sets it.
        let mut released: Vec<AttrHandle> = self.clear_adj_out(peer);
        let st = self.peer_state_mut(peer)?;
        st.accepted = 0;
        st.rejected = FastMap::default();
        if let Some(pre) = st.pre.as_mut() {
            released.extend(pre.take_handles());
        }
        let ctx = SelectCtx {
            interner: &self.interner,
            peers: &self.peers,
            cfg: &self.cfg,
            nht: self.nht.as_ref(),
        };
        let mut others = self.tracks_paths().then_some(&mut self.path_changed);
        let (v4, v6) = (&mut self.v4, &mut self.v6);
        let track = ctx.nht.is_some();
        let mut gone: Vec<(Prefix, AttrHandle)> = Vec::new();
        let mut rel = |p: Prefix, h: AttrHandle| {
            if track {
                gone.push((p, h));
            }
            released.push(h);
        };
        table::remove_peer(
            v4,
            peer,
            false,
            &ctx,
            &mut rel,
            changed,
            others.as_deref_mut(),
        );
        table::remove_peer(v6, peer, false, &ctx, &mut rel, changed, others);
        for (p, h) in gone {
            self.index_remove(h, p);
        }
        for h in released {
            self.interner.release(h);
        }
        Ok(())
    }

    /// The paths of one prefix (host bits ignored).
    pub fn lookup(&self, prefix: &Prefix) -> Option<RouteRef<'_>> {
        let p = prefix.masked();
        let e = match p {
            Prefix::V4(k) => self.v4.get(&k),
            Prefix::V6(k) => self.v6.get(&k),
        }?;
        Some(route_ref(p, e, &self.interner))
    }

    /// Every prefix, IPv4 first, in table order (sort for display).
    pub fn iter(&self) -> impl Iterator<Item = RouteRef<'_>> + '_ {
        let i = &self.interner;
        let v4 = self
            .v4
            .iter()
            .map(move |(k, e)| route_ref(Prefix::V4(*k), e, i));
        let v6 = self
            .v6
            .iter()
            .map(move |(k, e)| route_ref(Prefix::V6(*k), e, i));
        v4.chain(v6)
    }

    /// Prefixes stored.
    pub fn prefix_count(&self) -> usize {
        self.v4.len() + self.v6.len()
    }
    /// Paths stored (post-policy Adj-RIB-In, all peers).
    pub fn path_count(&self) -> usize {
        (self.v4.path_total() + self.v6.path_total()) as usize
    }

    /// Prefixes and paths stored per family: IPv4 then IPv6, each
    /// (prefixes, paths); kept as routes change, no walk (`counted.rs`).
    pub fn family_counts(&self) -> [(u64, u64); 2] {
        [
            (self.v4.len() as u64, self.v4.path_total()),
            (self.v6.len() as u64, self.v6.path_total()),
        ]
    }

    /// Estimated heap bytes of this shard by structure, from table
    /// capacities (no allocator overhead): for memory accounting
    /// (`examples/adjout_mem.rs`, docs/BENCHMARKS.md, issue 17).
    pub fn heap_bytes(&self) -> HeapBytes {
        use crate::hash::table_bytes;
        let many = |e: &PrefixEntry| match e {
            PrefixEntry::Many { paths, .. } => {
                std::mem::size_of::<Vec<PathEntry>>()
                    + paths.capacity() * std::mem::size_of::<PathEntry>()
            }
            _ => 0,
        };
        let mut h = HeapBytes {
            loc_rib: self.v4.heap_bytes()
                + self.v6.heap_bytes()
                + self.v4.values().map(many).sum::<usize>()
                + self.v6.values().map(many).sum::<usize>(),
            interner: self.interner.heap_bytes(),
            groups: self.shared_adj_out_heap_bytes(),
            ..HeapBytes::default()
        };
        for st in self.peers.iter().flatten() {
            h.adj_in += table_bytes::<((PKey, u32), ())>(st.rejected.capacity());
            if let Some(pre) = &st.pre {
                h.adj_in += table_bytes::<((PKey, u32), AttrHandle)>(pre.diff.capacity())
                    + table_bytes::<(PKey, Vec<u32>)>(pre.pids.capacity());
            }
            if let Some(out) = &st.out {
                let (sent, pending) = out.heap_bytes();
                h.adj_out_private += sent;
                h.pending += pending;
            }
        }
        h
    }

    /// `peer`'s route counts in this shard; `None` for an unknown peer.
    pub fn peer_counts(&self, peer: PeerId) -> Option<PeerCounts> {
        let p = self.peer_state(peer)?;
        Some(PeerCounts {
            received: p.accepted + p.rejected.len() as u64,
            accepted: p.accepted,
            advertised: p.out.as_ref().map_or(0, |o| o.sent_len() as u64),
            best: self.v4.best_of(peer) + self.v6.best_of(peer),
        })
    }
}

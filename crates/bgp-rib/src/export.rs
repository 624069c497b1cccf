//! Adj-RIB-Out: per peer, what was last sent (or queued) for each prefix,
//! and the queue of changes not yet drained, packed by attribute set so that
//! one UPDATE carries every prefix that shares a set (RFC 4271 §9.2: an
//! UPDATE advertises prefixes sharing one set of attributes).
//!
//! A peer without ADD-PATH send keeps one handle per prefix
//! ([`crate::adjout::BestOut`], filled by this module); a peer with it
//! keeps a set of paths per prefix ([`crate::adjout::PathsOut`], filled by
//! [`crate::addpath`]). The mode is per peer, so the cost of ADD-PATH is
//! paid only by the peers that negotiated it. Both stores are defined in
//! [`crate::adjout`]; this module holds the `RibShard` operations on them.

use base::Prefix;

use crate::adjout::AdjOut;
use crate::attrs::AttrSet;
use crate::hash::FastMap;
use crate::intern::AttrHandle;
use crate::policy::{ExportPolicy, ExportVerdict};
use crate::shard::RibShard;
use crate::types::{ExportBatch, RibError};
use crate::PeerId;

/// Prefixes whose best paths an export round looks up ahead of exporting
/// them (see [`RibShard::export_changes`]).
const LOOKAHEAD: usize = 16;

/// What the checks before the export policy found.
enum Gate {
    /// No best path (or an unknown peer).
    NoBest,
    /// The best path came from the target.
    Source,
    /// iBGP to iBGP without propagation rules (RFC 4271 §9.2).
    Ibgp,
    /// Ask the policy: the best path's attributes and source.
    Go(AttrHandle, PeerId),
}

/// Why a best path is not exported to a peer ([`RibShard::held_back`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HeldBack {
    /// Learned from an internal peer and the target is internal too, with
    /// no route reflection (RFC 4271 §9.2).
    IbgpToIbgp,
    /// Rejected by the export decision's policy: the target's export
    /// policy, or a propagation rule (NO_EXPORT, NO_ADVERTISE,
    /// NO_EXPORT_SUBCONFED, route reflection, route server, RFC 9234 OTC,
    /// LLGR, `summary_only` aggregates), or the target is not Established.
    Policy,
}

/// Whether two attribute sets encode alike towards an eBGP peer: the
/// encoder drops LOCAL_PREF, ORIGINATOR_ID and CLUSTER_LIST there
/// (`encode.rs`), so sets that differ only in those send the same UPDATE.
pub(crate) fn same_towards_ebgp(a: &AttrSet, b: &AttrSet) -> bool {
    use bgp_wire::consts::attr_type as at;
    let sent = |r: &Result<bgp_wire::RawAttr<'_>, _>| !matches!(r, Ok(x) if matches!(x.type_code, at::LOCAL_PREF | at::ORIGINATOR_ID | at::CLUSTER_LIST));
    let (mut x, mut y) = (a.attrs().filter(sent), b.attrs().filter(sent));
    loop {
        match (x.next(), y.next()) {
            (None, None) => return true,
            (Some(Ok(p)), Some(Ok(q)))
                if (p.flags, p.type_code, p.value) == (q.flags, q.type_code, q.value) => {}
            _ => return false,
        }
    }
}

impl RibShard {
    /// Recomputes what every exporting peer should have for each prefix in
    /// `changed` (the output of the update operations) and queues the
    /// differences.
    ///
    /// ADD-PATH peers also get the prefixes where only a non-best path
    /// changed, which the shard collects itself (callers need not know);
    /// call this even with `changed` empty while
    /// [`Self::path_changes_pending`] is true.
    pub fn export_changes<E: ExportPolicy + ?Sized>(&mut self, changed: &[Prefix], policy: &mut E) {
        let others = std::mem::take(&mut self.path_changed);
        for i in 0..self.peers.len() {
            self.sync_group(PeerId(i as u16), policy);
        }
        // Update groups: each changed prefix once per group.
        for gi in 0..self.groups.len() {
            let Some(Some(g)) = self.groups.get(gi) else {
                continue;
            };
            // Nothing to send and nothing sent: neither in the group's
            // table nor in a member's overrides (a member that moved here
            // keeps what it was sent there until it is corrected).
            let idle = g.is_empty()
                && g.members.iter().flatten().all(|m| {
                    policy.rejects_all(*m)
                        && matches!(self.peer_state(*m).and_then(|p| p.out.as_ref()),
                            Some(AdjOut::Best(o)) if !o.has_private())
                });
            if idle {
                continue;
            }
            // The best paths of a few prefixes are looked up ahead of
            // their exports, in a loop of independent lookups: each is a
            // cache miss in a table of a million prefixes, and one at a
            // time inside the export's longer work they were 12 % of
            // scenario (a)'s CPU time (issue 17); side by side the
            // misses overlap. The Loc-RIB does not change meanwhile. The
            // group's own entries of the same prefixes are loaded beside
            // them, for the same reason (`Group::touch`; with the one
            // probe of `Group::update` no CPU-s change was measurable in
            // (a): the stall moved to the other misses, docs/BENCHMARKS.md
            // "Issue 17, export side").
            for chunk in changed.chunks(LOOKAHEAD) {
                let mut best = [None; LOOKAHEAD];
                for (b, p) in best.iter_mut().zip(chunk) {
                    let p = p.masked();
                    *b = self.best_of(&p);
                    if let Some(Some(g)) = self.groups.get(gi) {
                        g.touch(&p);
                    }
                }
                for (p, b) in chunk.iter().zip(best) {
                    self.group_export_of(gi, p.masked(), b, policy, None);
                }
            }
        }
        for i in 0..self.peers.len() {
            let to = PeerId(i as u16);
            let Some(out) = self.peer_state(to).and_then(|p| p.out.as_ref()) else {
                continue;
            };
            if matches!(out, AdjOut::Best(o) if o.member.is_some()) {
                continue;
            }
            let paths = out.is_paths();
            // Nothing to send and nothing sent that would need a withdrawal.
            if policy.rejects_all(to) && out.is_empty() {
                continue;
            }
            if paths {
                for p in changed {
                    self.export_one(to, p.masked(), policy);
                }
            } else {
                // Not in a group (members were skipped above): the best
                // paths looked up ahead, as for a group.
                for chunk in changed.chunks(LOOKAHEAD) {
                    let mut best = [None; LOOKAHEAD];
                    for (b, p) in best.iter_mut().zip(chunk) {
                        *b = self.best_of(&p.masked());
                    }
                    for (p, b) in chunk.iter().zip(best) {
                        self.export_private(to, p.masked(), b, policy);
                    }
                }
            }
            if paths {
                for p in &others {
                    self.export_one(to, *p, policy);
                }
            }
        }
        // Keep the allocation for the next batch.
        self.path_changed = others;
        self.path_changed.clear();
        self.clear_export_cache();
    }

    /// Drops the per-call verdict cache and the references it holds (the
    /// source sets it is keyed by may be freed after the call).
    fn clear_export_cache(&mut self) {
        for (_, h) in self.export_cache.drain() {
            if let Some(h) = h {
                self.interner.release(h);
            }
        }
    }

    /// Whether prefixes with changes that only ADD-PATH peers see are
    /// waiting for [`Self::export_changes`].
    pub fn path_changes_pending(&self) -> bool {
        !self.path_changed.is_empty()
    }

    /// Queues the whole Loc-RIB towards `to` (session up, or a ROUTE-REFRESH
    /// from it, RFC 2918 §4).
    pub fn export_full<E: ExportPolicy + ?Sized>(
        &mut self,
        to: PeerId,
        policy: &mut E,
    ) -> Result<(), RibError> {
        if self.peer_state(to).is_none() {
            return Err(RibError::UnknownPeer(to));
        }
        if policy.rejects_all(to)
            && self
                .peer_state(to)
                .and_then(|p| p.out.as_ref())
                .is_none_or(AdjOut::is_empty)
        {
            return Ok(());
        }
        self.sync_group(to, policy);
        let all: Vec<Prefix> = self.iter().map(|r| r.prefix).collect();
        match self.group_of(to) {
            // The group's set of every prefix, recomputed; members that
            // already have it see no change.
            Some(gi) => {
                for p in all {
                    self.group_export(gi, p, policy, Some(to));
                }
            }
            None => {
                for p in all {
                    self.export_one(to, p, policy);
                }
            }
        }
        self.clear_export_cache();
        Ok(())
    }

    /// The update group `peer` is a member of in this shard (an index
    /// stable while it stays a member), if any.
    pub fn update_group_of(&self, peer: PeerId) -> Option<usize> {
        self.group_of(peer)
    }

    /// The update group `peer` is a member of.
    fn group_of(&self, peer: PeerId) -> Option<usize> {
        match self.peer_state(peer)?.out.as_ref()? {
            AdjOut::Best(o) => o.member.map(|m| m.group as usize),
            AdjOut::Paths(_) => None,
        }
    }

    /// Empties the Adj-RIB-Out of `peer` (session gone), leaving its
    /// update group; returns the references to release.
    pub(crate) fn clear_adj_out(&mut self, peer: PeerId) -> Vec<AttrHandle> {
        let mut released = self.leave_group(peer, false);
        if let Some(Some(st)) = self.peers.get_mut(peer.0 as usize) {
            if let Some(out) = st.out.as_mut() {
                released.extend(out.take_handles());
            }
        }
        released
    }

    /// The checks of the export decision before the policy: the best path
    /// of `prefix` (its attributes and source) when it may go to `to`.
    fn export_gate<E: ExportPolicy + ?Sized>(
        &self,
        to: PeerId,
        prefix: &Prefix,
        policy: &E,
    ) -> Gate {
        self.gate_of(to, self.best_of(prefix), policy)
    }

    /// The best path of `prefix`: its attributes and source (from the
    /// table entry alone: the set itself is not read).
    pub(crate) fn best_of(&self, prefix: &Prefix) -> Option<(AttrHandle, PeerId)> {
        let e = match prefix.masked() {
            Prefix::V4(k) => self.v4.get(&k),
            Prefix::V6(k) => self.v6.get(&k),
        }?;
        let best = e.best_path()?;
        Some((best.attrs, best.peer))
    }

    /// [`Self::export_gate`] for a best path already looked up (one
    /// Loc-RIB lookup per prefix and export round for a whole update
    /// group, not one per step: a lookup in a table of a million
    /// prefixes is a cache miss, 13 % of scenario (a)'s CPU time).
    fn gate_of<E: ExportPolicy + ?Sized>(
        &self,
        to: PeerId,
        best: Option<(AttrHandle, PeerId)>,
        policy: &E,
    ) -> Gate {
        let Some((attrs, from)) = best else {
            return Gate::NoBest;
        };
        // Not echoed back to the peer it came from.
        if from == to {
            return Gate::Source;
        }
        let (Some(f), Some(t)) = (self.peer_state(from), self.peer_state(to)) else {
            return Gate::NoBest;
        };
        // RFC 4271 §9.2: routes learned from an internal peer are not sent
        // to other internal peers, unless the policy does route reflection.
        if !f.cfg.ebgp && !t.cfg.ebgp && !policy.propagation_rules() {
            return Gate::Ibgp;
        }
        Gate::Go(attrs, from)
    }

    /// Why `to` is not sent the best path of `prefix`, by the same
    /// decision the export makes ([`Self::export_gate`], then the policy:
    /// the user's export policy inside the propagation rules, well-known
    /// communities included). `None` when it is sent, when there is no
    /// best path, or when the best path came from `to` itself (never
    /// echoed back: not held back from it). Asks the policy without the
    /// export's verdict cache, so it changes nothing.
    pub fn held_back<E: ExportPolicy + ?Sized>(
        &self,
        to: PeerId,
        prefix: &Prefix,
        policy: &mut E,
    ) -> Option<HeldBack> {
        match self.export_gate(to, prefix, policy) {
            Gate::NoBest | Gate::Source => None,
            Gate::Ibgp => Some(HeldBack::IbgpToIbgp),
            Gate::Go(attrs, from) => {
                let set = self.interner.get(attrs)?;
                match policy.export(to, prefix, from, set) {
                    ExportVerdict::Reject => Some(HeldBack::Policy),
                    ExportVerdict::Accept | ExportVerdict::Replace(_) => None,
                }
            }
        }
    }

    /// What `to` should have for `prefix`, with one reference held, for
    /// `prefix`'s best path `best`, already looked up ([`Self::best_of`]).
    pub(crate) fn desired_of<E: ExportPolicy + ?Sized>(
        &mut self,
        to: PeerId,
        prefix: Prefix,
        best: Option<(AttrHandle, PeerId)>,
        policy: &mut E,
    ) -> Option<AttrHandle> {
        let Gate::Go(attrs, from) = self.gate_of(to, best, policy) else {
            return None;
        };
        // The prefixes of one UPDATE share (from, set): ask the policy once
        // (and intern its rewrite once) when it does not look at prefixes.
        let key = (to, from, attrs);
        let cacheable = policy.prefix_independent(to);
        if cacheable {
            if let Some(&hit) = self.export_cache.get(&key) {
                if let Some(h) = hit {
                    self.interner.acquire(h);
                }
                return hit;
            }
        }
        let set = self.interner.get(attrs)?;
        let want = match policy.export(to, &prefix, from, set) {
            ExportVerdict::Reject => None,
            ExportVerdict::Accept => {
                self.interner.acquire(attrs);
                Some(attrs)
            }
            ExportVerdict::Replace(b) => Some(self.interner.intern(&b)),
        };
        if cacheable {
            if let Some(h) = want {
                self.interner.acquire(h);
            }
            self.export_cache.insert(key, want);
        }
        want
    }

    pub(crate) fn export_one<E: ExportPolicy + ?Sized>(
        &mut self,
        to: PeerId,
        prefix: Prefix,
        policy: &mut E,
    ) {
        let paths = self
            .peer_state(to)
            .and_then(|p| p.out.as_ref())
            .is_some_and(AdjOut::is_paths);
        if paths {
            self.export_paths(to, prefix, policy);
            return;
        }
        if let Some(gi) = self.group_of(to) {
            self.group_export(gi, prefix, policy, Some(to));
            return;
        }
        let best = self.best_of(&prefix);
        self.export_private(to, prefix, best, policy);
    }

    /// [`Self::export_one`] to a single-path peer in no update group, for
    /// `prefix`'s best path `best` ([`Self::best_of`]).
    fn export_private<E: ExportPolicy + ?Sized>(
        &mut self,
        to: PeerId,
        prefix: Prefix,
        best: Option<(AttrHandle, PeerId)>,
        policy: &mut E,
    ) {
        let want = self.desired_of(to, prefix, best, policy);
        let ebgp = self.peer_state(to).is_some_and(|p| p.cfg.ebgp);
        let Some(Some(st)) = self.peers.get_mut(to.0 as usize) else {
            if let Some(h) = want {
                self.interner.release(h);
            }
            return;
        };
        let Some(AdjOut::Best(out)) = st.out.as_mut() else {
            if let Some(h) = want {
                self.interner.release(h);
            }
            return;
        };
        let old = out.sent.get(&prefix);
        let (drop_ref, change) = out.sent.set(prefix, want);
        if let Some(c) = change {
            // Towards eBGP a new set that encodes like the one sent (only
            // LOCAL_PREF, ORIGINATOR_ID or CLUSTER_LIST differ: an import
            // policy or iBGP change) is recorded but not sent again.
            let same_on_wire = ebgp
                && !out.pending.contains(&prefix)
                && match (old, c) {
                    (Some(o), Some(n)) => match (self.interner.get(o), self.interner.get(n)) {
                        (Some(a), Some(b)) => same_towards_ebgp(a, b),
                        _ => false,
                    },
                    _ => false,
                };
            if !same_on_wire {
                out.pending.insert(prefix);
            }
        }
        if let Some(h) = drop_ref {
            self.interner.release(h);
        }
    }

    /// Queues everything the Adj-RIB-Out of `peer` holds to be sent again
    /// (ROUTE-REFRESH, RFC 2918 §4). Follow with [`Self::export_full`] so
    /// that routes whose export changed meanwhile are corrected too.
    pub fn resend_all(&mut self, peer: PeerId) {
        let RibShard { peers, groups, .. } = self;
        let Some(Some(st)) = peers.get_mut(peer.0 as usize) else {
            return;
        };
        let out = match st.out.as_mut() {
            Some(AdjOut::Best(out)) => out,
            Some(AdjOut::Paths(out)) => return out.resend_all(),
            None => return,
        };
        // Queued in prefix order, not in the order of whichever table
        // holds them (a group's, a member's overrides, a private table):
        // a drain of part of the queue then takes the same prefixes
        // whether the peer is in an update group or not (the property
        // test in `tests/group.rs` compares partial drains).
        let mut all: Vec<Prefix> = Vec::with_capacity(out.sent_len());
        if let Some(m) = out.member {
            if let Some(Some(g)) = groups.get(m.group as usize) {
                all.extend(g.prefixes_of(m.bit));
            }
        }
        // A member's overrides (see `group.rs`), or a private table.
        all.extend(out.sent.iter().filter_map(|(p, _)| p.prefix()));
        all.sort_unstable();
        for p in all {
            out.pending.insert(p);
        }
    }

    /// Takes the queued changes for `peer`, packed by attribute set.
    pub fn drain_updates(&mut self, peer: PeerId) -> ExportBatch {
        self.drain_updates_max(peer, usize::MAX)
    }

    /// Changes queued towards `peer` and not yet drained (prefixes; with
    /// ADD-PATH, paths).
    pub fn pending_updates(&self, peer: PeerId) -> usize {
        match self.peer_state(peer).and_then(|p| p.out.as_ref()) {
            Some(AdjOut::Best(out)) => out.pending.len(),
            Some(AdjOut::Paths(out)) => out.pending_len(),
            None => 0,
        }
    }

    /// [`Self::drain_updates`] of at most `max` prefixes (ADD-PATH peers:
    /// all of their paths at once): the rest stays queued, as prefixes
    /// rather than encoded bytes, for a later call (the caller pulls as
    /// the session's socket drains).
    pub fn drain_updates_max(&mut self, peer: PeerId, max: usize) -> ExportBatch {
        let mut batch = ExportBatch::default();
        let RibShard {
            peers,
            groups: update_groups,
            drain_buf: taken,
            ..
        } = self;
        let Some(Some(st)) = peers.get_mut(peer.0 as usize) else {
            return batch;
        };
        let out = match st.out.as_mut() {
            Some(AdjOut::Best(out)) => out,
            Some(AdjOut::Paths(out)) => {
                out.drain(&mut batch);
                return batch;
            }
            None => return batch,
        };
        let mut groups: FastMap<AttrHandle, usize> = FastMap::default();
        let crate::adjout::BestOut {
            sent,
            pending,
            member,
            ..
        } = &mut **out;
        // What the peer was sent: its bit in its group's table, or its own.
        let group =
            member.and_then(|m| Some((update_groups.get(m.group as usize)?.as_ref()?, m.bit)));
        let state = |p: &Prefix| match group {
            Some((g, bit)) => g.sent(bit, p).or_else(|| sent.get(p)),
            None => sent.get(p),
        };
        // The step's prefixes first, then what each was sent, looked up
        // side by side (independent cache misses overlap, as in
        // `export_changes`), then packed by set.
        taken.clear();
        pending.take(max, |p| taken.push(p));
        let mut now = [None; LOOKAHEAD];
        for chunk in taken.chunks(LOOKAHEAD) {
            for (s, p) in now.iter_mut().zip(chunk) {
                *s = state(p);
            }
            for (&p, s) in chunk.iter().zip(now) {
                match s {
                    None => batch.withdraw.push(p),
                    Some(h) => {
                        let n = batch.announce.len();
                        let i = *groups.entry(h).or_insert(n);
                        match batch.announce.get_mut(i) {
                            Some((_, v)) => v.push(p),
                            None => batch.announce.push((h, vec![p])),
                        }
                    }
                }
            }
        }
        batch.announce.sort_unstable_by_key(|(h, _)| *h);
        for (_, v) in &mut batch.announce {
            v.sort_unstable();
        }
        batch.withdraw.sort_unstable();
        batch
    }

    /// What a single-path peer was sent for `prefix`.
    fn best_out_get(&self, out: &crate::adjout::BestOut, prefix: &Prefix) -> Option<AttrHandle> {
        match out.member {
            Some(m) => self
                .groups
                .get(m.group as usize)?
                .as_ref()?
                .sent(m.bit, prefix)
                .or_else(|| out.sent.get(prefix)),
            None => out.sent.get(prefix),
        }
    }

    /// Estimated heap bytes this shard keeps for `peer`'s Adj-RIB-Out
    /// alone, as (what was sent, the changes pending): hash table bucket
    /// arrays from their capacities, without allocator overhead. For
    /// memory accounting (`examples/adjout_mem.rs`).
    pub fn adj_out_heap_bytes(&self, peer: PeerId) -> (usize, usize) {
        self.peer_state(peer)
            .and_then(|p| p.out.as_ref())
            .map_or((0, 0), AdjOut::heap_bytes)
    }

    /// What the Adj-RIB-Out of `peer` holds for `prefix` (with ADD-PATH,
    /// the path with the lowest identifier; see [`Self::adj_out_paths`]).
    pub fn adj_out(&self, peer: PeerId, prefix: &Prefix) -> Option<&AttrSet> {
        match self.peer_state(peer)?.out.as_ref()? {
            AdjOut::Best(out) => self.interner.get(self.best_out_get(out, prefix)?),
            AdjOut::Paths(out) => {
                let first = out.paths_of(prefix).min_by_key(|(id, _)| *id)?;
                self.interner.get(first.1)
            }
        }
    }

    /// Every path the Adj-RIB-Out of `peer` holds for `prefix`, as (path
    /// identifier, attributes), sorted by identifier. Without ADD-PATH
    /// send, the one path with identifier 0.
    pub fn adj_out_paths(&self, peer: PeerId, prefix: &Prefix) -> Vec<(u32, &AttrSet)> {
        let mut v: Vec<(u32, &AttrSet)> = match self.peer_state(peer).and_then(|p| p.out.as_ref()) {
            Some(AdjOut::Best(out)) => self
                .best_out_get(out, prefix)
                .and_then(|h| self.interner.get(h))
                .map(|s| (0, s))
                .into_iter()
                .collect(),
            Some(AdjOut::Paths(out)) => out
                .paths_of(prefix)
                .filter_map(|(id, h)| Some((id, self.interner.get(h)?)))
                .collect(),
            None => Vec::new(),
        };
        v.sort_unstable_by_key(|(id, _)| *id);
        v
    }
}

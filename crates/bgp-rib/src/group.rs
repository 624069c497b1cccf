//! Shared Adj-RIB-Out of an update group (issue 17, docs/adr/0005).
//!
//! Peers whose export verdicts are the same for every route (the export
//! policy says so through [`ExportPolicy::export_group`]: the same key
//! means the same verdict and rewrite for every prefix, source and set,
//! routes never going back to their source aside) and who agree on
//! eBGP/iBGP share one table: prefix -> (the attribute set the group
//! exports, one bit per member: "exported to this member"). A member's
//! Adj-RIB-Out is its bits: what it was sent for a prefix is the entry's
//! set where its bit is set, nothing otherwise. This is BIRD's per-peer
//! export bit, with the exported set kept once per group instead of being
//! recomputed from the Loc-RIB, so that a member's state between export
//! rounds (a drain reads it) does not move with the Loc-RIB.
//!
//! * An entry exists while some member's bit is set; it holds one
//!   reference on its set (a private table holds one per peer).
//! * Each member keeps its own pending set and drains at its own pace
//!   (pull export, ADR 0004); a drain reads the entry at drain time, as
//!   a private peer's reads its `sent` table.
//! * A peer is in the group its key names: a new session joins with an
//!   empty Adj-RIB-Out. When its key changes (a policy change on reload, a
//!   reconfigured peer) it moves at once: its bits become overrides of
//!   what it was sent (its private table) and it joins the group of its
//!   new key (or founds one) with no bit set. The following full export
//!   ([`RibShard::export_full`], which the reload runs) folds each override
//!   whose set equals the new group's entry into its bit and queues only
//!   the prefixes where what it was sent differs, as a route refresh out
//!   would; the other members of both groups see nothing.
//! * An export round computes a group's set for each changed prefix once
//!   (asking the policy on behalf of a member that is not the route's
//!   source) and then only flips bits and queues the prefix for the
//!   members whose state changed, exactly as each member's private table
//!   would have (the property test in `tests/group.rs` checks this
//!   against peers kept private).
//! * [`RibShard::export_full`] for one member recomputes the group's set
//!   for every prefix: if the policy no longer gives what the entry holds
//!   (it changed without the key changing, which a correct key rules
//!   out), every member with the bit is re-sent the new set, where
//!   private tables would have kept the old one until the prefix changed.
//!
//! * Overrides: a member exported to alone (a new session's full export)
//!   while a change of a prefix has not reached the other members yet
//!   needs a set other than the entry's; it keeps that one in its private
//!   table (its bit clear) until the next export of the prefix to the
//!   whole group folds it back. A member's state is its bit, else its
//!   private table.
//!
//! The group's storage ([`Group`]) is defined in `adjout.rs` with the
//! other Adj-RIB-Out stores; this module holds the `RibShard` operations.
//!
//! A group has at most [`crate::adjout::MEMBERS`] members (the bits of a `u32`); more
//! peers with the same key form further groups.

use base::Prefix;

use crate::adjout::{AdjOut, Group, GroupKey, Member, Slot};
use crate::export::same_towards_ebgp;
use crate::intern::AttrHandle;
use crate::policy::ExportPolicy;
use crate::shard::RibShard;
use crate::PeerId;

impl RibShard {
    /// The group key of `to` under `policy` (`None`: keeps a private
    /// table).
    fn group_key<E: ExportPolicy + ?Sized>(&self, to: PeerId, policy: &E) -> Option<GroupKey> {
        let ebgp = self.peer_state(to)?.cfg.ebgp;
        Some((policy.export_group(to)?, ebgp))
    }

    /// Puts `to` in the group its key names, moving it out of one whose
    /// key is no longer its own (what it was sent comes along as its
    /// overrides; see the module docs). ADD-PATH peers and
    /// peers without an Adj-RIB-Out are left alone.
    pub(crate) fn sync_group<E: ExportPolicy + ?Sized>(&mut self, to: PeerId, policy: &E) {
        let key = self.group_key(to, policy);
        let Some(AdjOut::Best(out)) = self.peer_state(to).and_then(|p| p.out.as_ref()) else {
            return;
        };
        match out.member {
            Some(m) => {
                let same = self
                    .groups
                    .get(m.group as usize)
                    .and_then(Option::as_ref)
                    .is_some_and(|g| Some(g.key) == key);
                if !same {
                    let released = self.leave_group(to, true);
                    for h in released {
                        self.interner.release(h);
                    }
                    if let Some(k) = key {
                        self.join_group(to, k);
                    }
                }
            }
            None if out.solo.is_some() => {
                // A lone peer of its key whose key changed: its private
                // table stops standing for the old key and moves to the
                // new one.
                if out.solo != key {
                    if let Some(Some(st)) = self.peers.get_mut(to.0 as usize) {
                        if let Some(AdjOut::Best(out)) = st.out.as_mut() {
                            out.solo = None;
                        }
                    }
                    if let Some(k) = key {
                        self.join_group(to, k);
                    }
                }
            }
            None => {
                if let Some(k) = key {
                    self.join_group(to, k);
                }
            }
        }
    }

    /// Puts `to` (no group; what it was sent, if anything, is its private
    /// table, which stays as its overrides with no bit set) in a group of
    /// `key`: one with room, or
    /// a new one with the peer that was alone with that key (its private
    /// table becomes the group's), or, when it is the first, nowhere yet:
    /// it keeps its private table (a lone peer's 9-byte IPv4 slots, where
    /// a group's are 10 to 13 by its width), marked `solo` for the next
    /// peer of its key.
    fn join_group(&mut self, to: PeerId, key: GroupKey) {
        let free = |g: &Group| g.members.iter().position(Option::is_none);
        let found = self.groups.iter().enumerate().find_map(|(i, g)| {
            let g = g.as_ref().filter(|g| g.key == key)?;
            Some((i, free(g)?))
        });
        let alone = |st: &Option<crate::peer::PeerState>| matches!(st.as_ref().and_then(|s| s.out.as_ref()), Some(AdjOut::Best(o)) if o.solo == Some(key));
        let first = match found {
            Some(_) => None,
            None => match (self.peers.iter().enumerate())
                .find(|(i, st)| *i != to.0 as usize && alone(st))
            {
                Some((i, _)) => Some(PeerId(i as u16)),
                None => {
                    if let Some(Some(st)) = self.peers.get_mut(to.0 as usize) {
                        if let Some(AdjOut::Best(out)) = st.out.as_mut() {
                            out.solo = Some(key);
                        }
                    }
                    return;
                }
            },
        };
        let (gi, bit) = match found {
            Some(x) => x,
            None => {
                let gi = match self.groups.iter().position(Option::is_none) {
                    Some(i) => i,
                    None => {
                        self.groups.push(None);
                        self.groups.len() - 1
                    }
                };
                if gi > usize::from(u16::MAX) {
                    return;
                }
                let mut g = Group::new(key);
                // The lone peer's table becomes the group's, its
                // references with it; it is member 0, `to` member 1.
                if let Some(q) = first {
                    if let Some(Some(st)) = self.peers.get_mut(q.0 as usize) {
                        if let Some(AdjOut::Best(out)) = st.out.as_mut() {
                            let sent = std::mem::take(&mut out.sent);
                            let mut n = 0;
                            for (p, h) in sent.into_entries() {
                                g.set(p, Some(Slot { h, mask: 1 }));
                                n += 1;
                            }
                            out.solo = None;
                            out.member = Some(Member {
                                group: gi as u16,
                                bit: 0,
                                advertised: n,
                            });
                            g.members[0] = Some(q);
                        }
                    }
                }
                if let Some(slot) = self.groups.get_mut(gi) {
                    *slot = Some(g);
                }
                (gi, usize::from(first.is_some()))
            }
        };
        let Some(Some(g)) = self.groups.get_mut(gi) else {
            return;
        };
        let Some(m) = g.members.get_mut(bit) else {
            return;
        };
        *m = Some(to);
        g.make_room(bit);
        if let Some(Some(st)) = self.peers.get_mut(to.0 as usize) {
            if let Some(AdjOut::Best(out)) = st.out.as_mut() {
                out.member = Some(Member {
                    group: gi as u16,
                    bit: bit as u8,
                    advertised: 0,
                });
            }
        }
    }

    /// Takes `peer` out of its group. With `materialize`, what it was sent
    /// becomes its private table (references acquired); without, it is
    /// forgotten. Returns the references the caller must release (sets no
    /// member holds any more).
    pub(crate) fn leave_group(&mut self, peer: PeerId, materialize: bool) -> Vec<AttrHandle> {
        let mut freed = Vec::new();
        let RibShard {
            groups,
            peers,
            interner,
            ..
        } = self;
        let Some(Some(st)) = peers.get_mut(peer.0 as usize) else {
            return freed;
        };
        let Some(AdjOut::Best(out)) = st.out.as_mut() else {
            return freed;
        };
        let Some(m) = out.member.take() else {
            return freed;
        };
        let Some(slot) = groups.get_mut(m.group as usize) else {
            return freed;
        };
        let Some(g) = slot.as_mut() else {
            return freed;
        };
        if let Some(x) = g.members.get_mut(m.bit as usize) {
            *x = None;
        }
        let sent = &mut out.sent;
        let mut had = |p: Prefix, h: AttrHandle| {
            if materialize {
                interner.acquire(h);
                let (dropped, _) = sent.set(p, Some(h));
                if let Some(d) = dropped {
                    // Not reached: a member's override is never for a
                    // prefix where its bit is set.
                    interner.release(d);
                }
            }
        };
        g.clear_bit(m.bit, &mut had, &mut freed);
        if g.members.iter().all(Option::is_none) {
            // Every entry had no member left and is gone.
            *slot = None;
        }
        freed
    }

    /// Exports `prefix` to the members of group `gi` (`only`: to that
    /// member alone, as [`Self::export_full`] does for a new session): the
    /// group's set is computed once, then each member's bit (or override)
    /// and pending set change as its private table would have.
    ///
    /// A member that must have a set other than the entry's while other
    /// members keep the entry's (only when exporting to one member, before
    /// a change of the prefix reached the others) keeps it in its private
    /// table, an override; the next export of the prefix to the whole
    /// group folds it back.
    pub(crate) fn group_export<E: ExportPolicy + ?Sized>(
        &mut self,
        gi: usize,
        prefix: Prefix,
        policy: &mut E,
        only: Option<PeerId>,
    ) {
        let best = self.best_of(&prefix);
        self.group_export_of(gi, prefix, best, policy, only);
    }

    /// [`Self::group_export`] for `prefix`'s best path `best`, already
    /// looked up ([`Self::best_of`]).
    pub(crate) fn group_export_of<E: ExportPolicy + ?Sized>(
        &mut self,
        gi: usize,
        prefix: Prefix,
        best: Option<(AttrHandle, PeerId)>,
        policy: &mut E,
        only: Option<PeerId>,
    ) {
        let Some(Some(g)) = self.groups.get(gi) else {
            return;
        };
        let members = g.members;
        let from = best.map(|(_, p)| p);
        // Asked on behalf of a member the route did not come from (it is
        // never sent back there): the one exported to, or any (all were
        // put in the groups their keys name before an export round; a
        // member exported to alone may share the group with others whose
        // keys changed since).
        let rep = match only {
            Some(o) => (Some(o) != from).then_some(o),
            None => members
                .iter()
                .flatten()
                .find(|m| Some(**m) != from)
                .copied(),
        };
        let want = match (from, rep) {
            (Some(_), Some(r)) => self.desired_of(r, prefix, best, policy),
            _ => None,
        };
        let RibShard {
            groups,
            peers,
            interner,
            ..
        } = self;
        let Some(Some(g)) = groups.get_mut(gi) else {
            if let Some(h) = want {
                interner.release(h);
            }
            return;
        };
        let ebgp = g.key.1;
        let only_bit = only.and_then(|o| members.iter().position(|m| *m == Some(o)));
        // One probe of the group's table: the closure gets the old entry
        // and returns the new one, written in place (issue 17, scenario
        // (a): a `get` and a `set` per prefix were two probes of a table
        // of a million prefixes).
        let mut step = |old: Option<Slot>| -> (Option<Slot>, bool) {
            let old_mask = old.map_or(0, |s| s.mask);
            // The entry's set after this step: the old one while members
            // that are not being exported to still have it.
            let keep_old = match (only, only_bit) {
                (None, _) => false,
                (Some(_), Some(b)) => old_mask & !(1u32 << b) != 0,
                (Some(_), None) => old_mask != 0,
            };
            let value = if keep_old { old.map(|s| s.h) } else { want };
            let mut mask = 0u32;
            for (j, m) in members.iter().enumerate() {
                let Some(m) = *m else {
                    continue;
                };
                let bit = 1u32 << j;
                if only.is_some_and(|o| o != m) {
                    mask |= old_mask & bit;
                    continue;
                }
                let Some(Some(st)) = peers.get_mut(m.0 as usize) else {
                    continue;
                };
                let Some(AdjOut::Best(out)) = st.out.as_mut() else {
                    continue;
                };
                let had_bit = old_mask & bit != 0;
                // The member's override, if it has any: almost never, and
                // then its table is empty and not probed (`Sent::get`).
                let private = out.sent.get(&prefix);
                let was = if had_bit { old.map(|s| s.h) } else { private };
                let now = if Some(m) == from { None } else { want };
                let to_bit = now.is_some() && now == value;
                if to_bit {
                    mask |= bit;
                }
                // The override: what `now` is when it is not the entry's
                // set. A reference it drops is released after the
                // comparison below reads the set.
                let over = if to_bit { None } else { now };
                let mut dropped = None;
                if over.is_some() || private.is_some() {
                    if let Some(h) = over {
                        interner.acquire(h);
                    }
                    dropped = out.sent.set(prefix, over).0;
                }
                if let Some(me) = out.member.as_mut() {
                    match (had_bit, to_bit) {
                        (false, true) => me.advertised += 1,
                        (true, false) => me.advertised = me.advertised.saturating_sub(1),
                        _ => {}
                    }
                }
                if was != now {
                    // As for a private table (`export_one`): towards eBGP a
                    // set that encodes like the one sent is recorded, not
                    // sent again. Only a set replacing a set can be; the
                    // pending set is probed only then.
                    let same_on_wire = ebgp
                        && match (was, now) {
                            (Some(o), Some(n)) => {
                                !out.pending.contains(&prefix)
                                    && match (interner.get(o), interner.get(n)) {
                                        (Some(a), Some(b)) => same_towards_ebgp(a, b),
                                        _ => false,
                                    }
                            }
                            _ => false,
                        };
                    if !same_on_wire {
                        out.pending.insert(prefix);
                    }
                }
                if let Some(d) = dropped {
                    interner.release(d);
                }
            }
            let slot = match value {
                Some(h) if mask != 0 => Some(Slot { h, mask }),
                _ => None,
            };
            (slot, keep_old)
        };
        let mut kept = (false, false);
        let prev = g.update(prefix, |old| {
            let (slot, keep_old) = step(old);
            kept = (slot.is_some(), keep_old);
            slot
        });
        // References: the old entry held one on its set and `want` came
        // with one; the new entry keeps the one of the set it holds.
        let (keep_prev, keep_want) = match kept {
            (false, _) => (false, false),
            (true, keep_old) => (keep_old, !keep_old),
        };
        if let (Some(p), false) = (prev, keep_prev) {
            interner.release(p.h);
        }
        if let (Some(h), false) = (want, keep_want) {
            interner.release(h);
        }
    }
    /// Estimated heap bytes of this shard's update-group tables, shared by
    /// their members (see [`Self::adj_out_heap_bytes`] for what each peer
    /// keeps alone).
    pub fn shared_adj_out_heap_bytes(&self) -> usize {
        self.groups.iter().flatten().map(Group::heap_bytes).sum()
    }

    /// The update groups of this shard, as the peers of each (for tests
    /// and the CLI).
    pub fn update_groups(&self) -> Vec<Vec<PeerId>> {
        self.groups
            .iter()
            .flatten()
            .map(|g| g.members.iter().flatten().copied().collect())
            .collect()
    }
}

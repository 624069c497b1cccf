//! Adj-RIB-Out: per peer, what was last sent (or queued) for each prefix,
//! and the queue of changes not yet drained, packed by attribute set so that
//! one UPDATE carries every prefix that shares a set (RFC 4271 §9.2: an
//! UPDATE advertises prefixes sharing one set of attributes).

use std::collections::hash_map::Entry;

use base::Prefix;

use crate::attrs::AttrSet;
use crate::hash::FastMap;
use crate::intern::AttrHandle;
use crate::key::PKey;
use crate::policy::{ExportPolicy, ExportVerdict};
use crate::shard::{RibError, RibShard};
use crate::PeerId;

/// One peer's Adj-RIB-Out. `sent` holds a reference on each handle;
/// `pending` maps each changed prefix to its new state (`None`: withdraw),
/// which always equals `sent`'s, so `pending` holds no references.
#[derive(Debug, Default)]
pub(crate) struct AdjOut {
    sent: FastMap<PKey, AttrHandle>,
    pending: FastMap<PKey, Option<AttrHandle>>,
}

impl AdjOut {
    pub(crate) fn sent_len(&self) -> usize {
        self.sent.len()
    }
    pub(crate) fn into_handles(self) -> impl Iterator<Item = AttrHandle> {
        self.sent.into_values()
    }
}

/// The queued changes for one peer. The handles are live until the next
/// mutating call on the shard (the Adj-RIB-Out holds them); look them up with
/// [`RibShard::attrs`] and encode right away.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportBatch {
    /// Prefixes to announce, grouped by attribute set; groups ordered by
    /// handle, prefixes sorted.
    pub announce: Vec<(AttrHandle, Vec<Prefix>)>,
    /// Prefixes to withdraw, sorted.
    pub withdraw: Vec<Prefix>,
}

impl ExportBatch {
    pub fn is_empty(&self) -> bool {
        self.announce.is_empty() && self.withdraw.is_empty()
    }
}

impl RibShard {
    /// Recomputes what every exporting peer should have for each prefix in
    /// `changed` (the output of the update operations) and queues the
    /// differences.
    pub fn export_changes<E: ExportPolicy + ?Sized>(&mut self, changed: &[Prefix], policy: &mut E) {
        for i in 0..self.peers.len() {
            let to = PeerId(i as u16);
            let exporting = self.peer_state(to).is_some_and(|p| p.out.is_some());
            if !exporting {
                continue;
            }
            for p in changed {
                self.export_one(to, p.masked(), policy);
            }
        }
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
        let all: Vec<Prefix> = self.iter().map(|r| r.prefix).collect();
        for p in all {
            self.export_one(to, p, policy);
        }
        Ok(())
    }

    /// What `to` should have for `prefix`, with one reference held.
    fn desired<E: ExportPolicy + ?Sized>(
        &mut self,
        to: PeerId,
        prefix: Prefix,
        policy: &mut E,
    ) -> Option<AttrHandle> {
        let r = self.lookup(&prefix)?;
        let (best, set) = r.best()?;
        let from = best.peer;
        // Not echoed back to the peer it came from.
        if from == to {
            return None;
        }
        let from_ibgp = !self.peer_state(from)?.cfg.ebgp;
        let to_ibgp = !self.peer_state(to)?.cfg.ebgp;
        // RFC 4271 §9.2: routes learned from an internal peer are not sent
        // to other internal peers, unless the policy does route reflection.
        if from_ibgp && to_ibgp && !policy.propagation_rules() {
            return None;
        }
        let verdict = policy.export(to, &prefix, from, set);
        match verdict {
            ExportVerdict::Reject => None,
            ExportVerdict::Accept => {
                self.interner.acquire(best.attrs);
                Some(best.attrs)
            }
            ExportVerdict::Replace(b) => Some(self.interner.intern(&b)),
        }
    }

    fn export_one<E: ExportPolicy + ?Sized>(&mut self, to: PeerId, prefix: Prefix, policy: &mut E) {
        let want = self.desired(to, prefix, policy);
        let Some(Some(st)) = self.peers.get_mut(to.0 as usize) else {
            if let Some(h) = want {
                self.interner.release(h);
            }
            return;
        };
        let Some(out) = st.out.as_mut() else {
            if let Some(h) = want {
                self.interner.release(h);
            }
            return;
        };
        let mut drop_ref = None;
        let key = PKey::from(prefix);
        match (out.sent.entry(key), want) {
            (Entry::Occupied(o), Some(h)) if *o.get() == h => drop_ref = Some(h),
            (Entry::Occupied(mut o), Some(h)) => {
                drop_ref = Some(o.insert(h));
                out.pending.insert(key, Some(h));
            }
            (Entry::Occupied(o), None) => {
                drop_ref = Some(o.remove());
                out.pending.insert(key, None);
            }
            (Entry::Vacant(v), Some(h)) => {
                v.insert(h);
                out.pending.insert(key, Some(h));
            }
            (Entry::Vacant(_), None) => {}
        }
        if let Some(h) = drop_ref {
            self.interner.release(h);
        }
    }

    /// Queues everything the Adj-RIB-Out of `peer` holds to be sent again
    /// (ROUTE-REFRESH, RFC 2918 §4). Follow with [`Self::export_full`] so
    /// that routes whose export changed meanwhile are corrected too.
    pub fn resend_all(&mut self, peer: PeerId) {
        let Some(Some(st)) = self.peers.get_mut(peer.0 as usize) else {
            return;
        };
        let Some(out) = st.out.as_mut() else {
            return;
        };
        for (p, h) in &out.sent {
            out.pending.insert(*p, Some(*h));
        }
    }

    /// Takes the queued changes for `peer`, packed by attribute set.
    pub fn drain_updates(&mut self, peer: PeerId) -> ExportBatch {
        let mut batch = ExportBatch::default();
        let Some(Some(st)) = self.peers.get_mut(peer.0 as usize) else {
            return batch;
        };
        let Some(out) = st.out.as_mut() else {
            return batch;
        };
        let mut groups: FastMap<AttrHandle, usize> = FastMap::default();
        for (k, h) in out.pending.drain() {
            let Some(p) = k.prefix() else {
                continue;
            };
            match h {
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
        batch.announce.sort_unstable_by_key(|(h, _)| *h);
        for (_, v) in &mut batch.announce {
            v.sort_unstable();
        }
        batch.withdraw.sort_unstable();
        batch
    }

    /// What the Adj-RIB-Out of `peer` holds for `prefix`.
    pub fn adj_out(&self, peer: PeerId, prefix: &Prefix) -> Option<&AttrSet> {
        let out = self.peer_state(peer)?.out.as_ref()?;
        self.interner.get(*out.sent.get(&PKey::from(*prefix))?)
    }
}

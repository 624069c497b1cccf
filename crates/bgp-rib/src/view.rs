//! Best paths among a subset of the source peers: a "view" of the RIB
//! (the routes of a virtual router fed by some neighbours only, issue 19).
//!
//! A view's best path of a prefix is what the Loc-RIB's decision process
//! picks when only the paths of the view's peers are eligible: the same
//! [`crate::bestpath::select_by`] over the same candidates (damping,
//! next-hop reachability and the selection options included), with the
//! other peers' paths made not eligible, and with multipath on, the same
//! [`crate::multipath::select_by`] around that best. Nothing is stored
//! per view: a view's answer is computed from the stored paths on demand,
//! so the Loc-RIB pays nothing for views.
//!
//! Storage order matters for RFC 5004's "prefer the oldest" (with
//! `compare_router_id` off): the paths of a subset keep their relative
//! order in the full list, so a view answers what a RIB fed only its
//! peers' routes would have selected (`tests/view.rs` checks it).

use base::Prefix;

use crate::shard::RibShard;
use crate::table::{self, PrefixEntry, SelectCtx};
use crate::{PeerId, Rib};

/// A set of source peers, one bit per [`PeerId`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerSet {
    bits: Vec<u64>,
}

impl PeerSet {
    /// The empty set.
    pub fn new() -> PeerSet {
        PeerSet::default()
    }
    /// Adds `id`.
    pub fn insert(&mut self, id: PeerId) {
        let (w, b) = (usize::from(id.0) / 64, id.0 % 64);
        if self.bits.len() <= w {
            self.bits.resize(w + 1, 0);
        }
        if let Some(x) = self.bits.get_mut(w) {
            *x |= 1 << b;
        }
    }
    /// Whether `id` is in the set.
    pub fn contains(&self, id: PeerId) -> bool {
        let (w, b) = (usize::from(id.0) / 64, id.0 % 64);
        self.bits.get(w).is_some_and(|x| x & (1 << b) != 0)
    }
    /// Whether no peer is in the set.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|x| *x == 0)
    }
}

impl FromIterator<PeerId> for PeerSet {
    fn from_iter<I: IntoIterator<Item = PeerId>>(it: I) -> PeerSet {
        let mut s = PeerSet::new();
        for id in it {
            s.insert(id);
        }
        s
    }
}

/// Appends to `out` the best path of `e` among the paths of `peers` and,
/// with multipath on, the rest of its multipath set (indices into the
/// stored paths, the best first); nothing when no path of `peers` is
/// eligible.
pub(crate) fn select_among(
    e: &PrefixEntry,
    ctx: &SelectCtx<'_>,
    peers: &PeerSet,
    out: &mut Vec<usize>,
) {
    let paths = e.paths();
    let get = |i: usize| {
        let p = paths.get(i)?;
        if !peers.contains(p.peer) {
            return None;
        }
        table::candidate(p, ctx)
    };
    let Some(best) = crate::bestpath::select_by(paths.len(), get, ctx.cfg) else {
        return;
    };
    if ctx.cfg.multipath.enabled() {
        crate::multipath::select_by(paths.len(), get, best, ctx.cfg, out);
    } else {
        out.push(best);
    }
}

impl RibShard {
    /// Collects changes of non-best paths too ([`Self::pending_path_changes`],
    /// consumed by the next [`Self::export_changes`]) while `on`: a view's
    /// best may change where the Loc-RIB's does not. Export to peers
    /// without ADD-PATH does not read them, so the cost is the list.
    pub fn set_view_tracking(&mut self, on: bool) {
        self.views = on;
    }

    /// The best path of `prefix` among the paths learned from `peers`,
    /// chosen by the Loc-RIB's decision process (see [`crate::view`]),
    /// then, with multipath on, the other members of its multipath set:
    /// indices into the prefix's [`crate::RouteRef::paths`], appended to
    /// `out`. Appends nothing when no path of `peers` is eligible. With
    /// every peer in `peers` this is the Loc-RIB best and
    /// [`Self::multipath`].
    pub fn best_among(&self, prefix: &Prefix, peers: &PeerSet, out: &mut Vec<usize>) {
        let e = match prefix.masked() {
            Prefix::V4(k) => self.v4.get(&k),
            Prefix::V6(k) => self.v6.get(&k),
        };
        let Some(e) = e else {
            return;
        };
        let ctx = SelectCtx {
            interner: &self.interner,
            peers: &self.peers,
            cfg: &self.cfg,
            nht: self.nht.as_ref(),
        };
        select_among(e, &ctx, peers, out);
    }
}

impl Rib {
    /// [`RibShard::set_view_tracking`] in every shard.
    pub fn set_view_tracking(&mut self, on: bool) {
        for s in self.shards_mut() {
            s.set_view_tracking(on);
        }
    }

    /// [`RibShard::best_among`] in the shard that owns `prefix`.
    pub fn best_among(&self, prefix: &Prefix, peers: &PeerSet, out: &mut Vec<usize>) {
        if let Some(s) = self.shards().get(self.shard_of(prefix)) {
            s.best_among(prefix, peers, out);
        }
    }
}

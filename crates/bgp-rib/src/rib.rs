//! The whole RIB as S shards driven from one thread: splits each batch by
//! [`shard_for`] and forwards it. A threaded pipeline does the same split
//! and sends each part to the thread that owns the shard instead.

use base::Prefix;
use bgp_wire::Nlri;

use crate::attrs::AttrsBuilder;
use crate::bestpath::BestPathConfig;
use crate::hash::shard_for;
use crate::policy::ImportPolicy;
use crate::shard::{RibShard, RouteRef};
use crate::types::{AddPathSend, PeerConfig, PeerCounts, RibError};
use crate::PeerId;

/// S shards; see the crate docs.
#[derive(Debug)]
pub struct Rib {
    shards: Vec<RibShard>,
    /// Per-shard scratch for splitting batches: (announce, withdraw).
    split: Vec<(Vec<Nlri>, Vec<Nlri>)>,
}

impl Rib {
    /// A RIB of `shards` shards (at least one).
    pub fn new(shards: usize, cfg: BestPathConfig) -> Rib {
        let n = shards.max(1);
        Rib {
            shards: (0..n).map(|_| RibShard::new(cfg)).collect(),
            split: (0..n).map(|_| (Vec::new(), Vec::new())).collect(),
        }
    }

    /// The shards, by index.
    pub fn shards(&self) -> &[RibShard] {
        &self.shards
    }
    /// The shards, mutably.
    pub fn shards_mut(&mut self) -> &mut [RibShard] {
        &mut self.shards
    }
    /// The shard that holds `prefix` ([`shard_for`] over the shard count).
    pub fn shard_of(&self, prefix: &Prefix) -> usize {
        shard_for(prefix, self.shards.len())
    }

    /// [`RibShard::set_config`] in every shard.
    pub fn set_config(&mut self, cfg: BestPathConfig, changed: &mut Vec<Prefix>) {
        for s in &mut self.shards {
            s.set_config(cfg, changed);
        }
    }

    /// Registers (or reconfigures) a peer in every shard.
    pub fn add_peer(&mut self, id: PeerId, cfg: PeerConfig) {
        for s in &mut self.shards {
            s.add_peer(id, cfg.clone());
        }
    }

    /// [`RibShard::apply_update`] across shards.
    pub fn apply_update<P: ImportPolicy + ?Sized>(
        &mut self,
        peer: PeerId,
        announce: &[Nlri],
        attrs: Option<&AttrsBuilder>,
        withdraw: &[Nlri],
        import: &mut P,
        changed: &mut Vec<Prefix>,
    ) -> Result<(), RibError> {
        let n = self.shards.len();
        if let [s] = self.shards.as_mut_slice() {
            // One shard (each RIB thread of the daemon): no split, no copy.
            if announce.is_empty() && withdraw.is_empty() {
                return Ok(());
            }
            return s.apply_update(peer, announce, attrs, withdraw, import, changed);
        }
        for (a, w) in &mut self.split {
            a.clear();
            w.clear();
        }
        for x in announce {
            if let Some((a, _)) = self.split.get_mut(shard_for(&x.prefix, n)) {
                a.push(*x);
            }
        }
        for x in withdraw {
            if let Some((_, w)) = self.split.get_mut(shard_for(&x.prefix, n)) {
                w.push(*x);
            }
        }
        for (s, (a, w)) in self.shards.iter_mut().zip(&self.split) {
            if a.is_empty() && w.is_empty() {
                continue;
            }
            s.apply_update(peer, a, attrs, w, import, changed)?;
        }
        Ok(())
    }

    /// Removes every route of `peer` in every shard; appends prefixes whose best changed to
    /// `changed`.
    pub fn peer_down(&mut self, peer: PeerId, changed: &mut Vec<Prefix>) -> Result<(), RibError> {
        for s in &mut self.shards {
            s.peer_down(peer, changed)?;
        }
        Ok(())
    }

    /// [`RibShard::set_add_path_send`] across shards.
    pub fn set_add_path_send(
        &mut self,
        peer: PeerId,
        cfg: Option<AddPathSend>,
    ) -> Result<(), RibError> {
        for s in &mut self.shards {
            s.set_add_path_send(peer, cfg)?;
        }
        Ok(())
    }

    /// Whether any shard has changes only ADD-PATH peers see waiting for
    /// [`RibShard::export_changes`] (see there).
    pub fn path_changes_pending(&self) -> bool {
        self.shards.iter().any(RibShard::path_changes_pending)
    }

    /// [`RibShard::enable_nexthop_tracking`] in every shard.
    pub fn enable_nexthop_tracking(&mut self) {
        for s in &mut self.shards {
            s.enable_nexthop_tracking();
        }
    }

    /// [`RibShard::nexthop_update`] across shards.
    pub fn nexthop_update(
        &mut self,
        nexthop: std::net::IpAddr,
        st: crate::NhState,
        changed: &mut Vec<Prefix>,
    ) {
        for s in &mut self.shards {
            s.nexthop_update(nexthop, st, changed);
        }
    }

    /// [`RibShard::drain_nexthop_watch`] across shards.
    pub fn drain_nexthop_watch(&mut self, out: &mut Vec<crate::NexthopWatch>) {
        for s in &mut self.shards {
            s.drain_nexthop_watch(out);
        }
    }

    /// [`RibShard::resend_all`] across shards.
    pub fn resend_all(&mut self, peer: PeerId) {
        for s in &mut self.shards {
            s.resend_all(peer);
        }
    }

    /// Stale paths of `peer`, summed over shards.
    pub fn stale_count(&self, peer: PeerId) -> usize {
        self.shards.iter().map(|s| s.stale_count(peer)).sum()
    }

    /// [`RibShard::mark_stale`] across shards; returns paths flagged.
    pub fn mark_stale(&mut self, peer: PeerId) -> Result<usize, RibError> {
        let mut n = 0;
        for s in &mut self.shards {
            n += s.mark_stale(peer)?;
        }
        Ok(n)
    }

    /// [`RibShard::mark_stale_families`] across shards; returns paths
    /// left stale.
    pub fn mark_stale_families(
        &mut self,
        peer: PeerId,
        keep: &[base::Afi],
        changed: &mut Vec<Prefix>,
    ) -> Result<usize, RibError> {
        let mut n = 0;
        for s in &mut self.shards {
            n += s.mark_stale_families(peer, keep, changed)?;
        }
        Ok(n)
    }

    /// [`RibShard::enter_llgr`] across shards; returns (paths kept, paths
    /// removed).
    pub fn enter_llgr(
        &mut self,
        peer: PeerId,
        afi: base::Afi,
        changed: &mut Vec<Prefix>,
    ) -> Result<(usize, usize), RibError> {
        let (mut kept, mut removed) = (0, 0);
        for s in &mut self.shards {
            let (k, r) = s.enter_llgr(peer, afi, changed)?;
            kept += k;
            removed += r;
        }
        Ok((kept, removed))
    }

    /// [`RibShard::sweep_stale`] across shards; returns paths removed.
    pub fn sweep_stale(
        &mut self,
        peer: PeerId,
        changed: &mut Vec<Prefix>,
    ) -> Result<usize, RibError> {
        let mut n = 0;
        for s in &mut self.shards {
            n += s.sweep_stale(peer, changed)?;
        }
        Ok(n)
    }

    /// [`RibShard::sweep_stale_afi`] across shards; returns paths removed.
    pub fn sweep_stale_afi(
        &mut self,
        peer: PeerId,
        afi: base::Afi,
        changed: &mut Vec<Prefix>,
    ) -> Result<usize, RibError> {
        let mut n = 0;
        for s in &mut self.shards {
            n += s.sweep_stale_afi(peer, afi, changed)?;
        }
        Ok(n)
    }

    /// The stored paths of `prefix`, if any.
    pub fn lookup(&self, prefix: &Prefix) -> Option<RouteRef<'_>> {
        self.shards.get(self.shard_of(prefix))?.lookup(prefix)
    }

    /// The multipath set of `prefix`: indices into the paths of
    /// [`Self::lookup`], the best first (see [`crate::multipath`]).
    pub fn multipath(&self, prefix: &Prefix) -> Vec<usize> {
        self.shards
            .get(self.shard_of(prefix))
            .map(|s| s.multipath(prefix))
            .unwrap_or_default()
    }

    /// Every prefix of every shard (unordered).
    pub fn iter(&self) -> impl Iterator<Item = RouteRef<'_>> + '_ {
        self.shards.iter().flat_map(RibShard::iter)
    }

    /// Prefixes stored, over all shards.
    pub fn prefix_count(&self) -> usize {
        self.shards.iter().map(RibShard::prefix_count).sum()
    }
    /// Paths stored, over all shards.
    pub fn path_count(&self) -> usize {
        self.shards.iter().map(RibShard::path_count).sum()
    }
    /// [`RibShard::family_counts`] summed over shards: IPv4 then IPv6,
    /// each (prefixes, paths).
    pub fn family_counts(&self) -> [(u64, u64); 2] {
        let mut t = [(0, 0); 2];
        for s in &self.shards {
            for (a, b) in t.iter_mut().zip(s.family_counts()) {
                a.0 += b.0;
                a.1 += b.1;
            }
        }
        t
    }
    /// Distinct attribute sets, summed over shards (a set used in two shards
    /// counts twice: shards share nothing).
    pub fn attr_set_count(&self) -> usize {
        self.shards.iter().map(|s| s.interner().len()).sum()
    }

    /// `peer`'s route counts summed over shards; `None` for an unknown peer.
    pub fn peer_counts(&self, peer: PeerId) -> Option<PeerCounts> {
        let mut total = PeerCounts::default();
        for s in &self.shards {
            let c = s.peer_counts(peer)?;
            total.received += c.received;
            total.accepted += c.accepted;
            total.advertised += c.advertised;
            total.best += c.best;
        }
        Some(total)
    }
}

//! Route-flap damping in a shard: the [`DampTable`] of the routes this
//! shard owns, fed by [`RibShard::apply_update`] and
//! [`RibShard::apply_interned`] for peers with damping on. A suppressed
//! route stays in the Adj-RIB-In (its [`PathEntry::suppressed`] set) and
//! is not eligible for selection; [`RibShard::damping_due`] releases it at
//! its reuse time and runs selection again. The shard does not read a
//! clock: the caller sets the time with [`RibShard::damping_time`] before
//! applying updates.
//!
//! [`PathEntry::suppressed`]: crate::PathEntry::suppressed

use base::{Instant, Prefix};

use crate::damping::{DampParams, DampTable, FigureOfMerit, Flap};
use crate::intern::AttrHandle;
use crate::shard::RibShard;
use crate::table;
use crate::PeerId;

use crate::damping::{DampKey, ShardDamp};

impl RibShard {
    /// Switches route-flap damping on with `params`. New parameters for
    /// a shard already damping drop every history and release the
    /// suppressed routes (into `changed`): penalties counted under other
    /// thresholds mean nothing under the new ones. No peer is damped until
    /// [`Self::set_peer_damping`].
    pub fn enable_damping(&mut self, params: DampParams, changed: &mut Vec<Prefix>) {
        match self.damp.as_mut() {
            Some(d) if *d.table.params() == params => {}
            Some(d) => {
                let mut old = std::mem::replace(&mut d.table, DampTable::new(params));
                for (peer, prefix, pid) in old.remove_where(|_| true) {
                    self.set_suppressed(peer, prefix, pid, false, changed);
                }
            }
            None => {
                self.damp = Some(Box::new(ShardDamp {
                    table: DampTable::new(params),
                    peers: Vec::new(),
                    now: Instant::ZERO,
                }))
            }
        }
    }

    /// Switches damping off: every route is released into `changed`.
    pub fn disable_damping(&mut self, changed: &mut Vec<Prefix>) {
        if let Some(mut d) = self.damp.take() {
            for (peer, prefix, pid) in d.table.remove_where(|_| true) {
                self.set_suppressed(peer, prefix, pid, false, changed);
            }
        }
    }

    /// Whether damping is on.
    pub fn damping_enabled(&self) -> bool {
        self.damp.is_some()
    }

    /// Damps `peer`'s routes (or stops; its histories go, its suppressed
    /// routes are released into `changed`). Ignored while damping is off.
    pub fn set_peer_damping(&mut self, peer: PeerId, on: bool, changed: &mut Vec<Prefix>) {
        let Some(d) = self.damp.as_mut() else {
            return;
        };
        let i = peer.0 as usize;
        if d.peers.len() <= i {
            d.peers.resize(i + 1, false);
        }
        d.peers[i] = on;
        if !on {
            self.damping_forget_peer(peer, changed);
        }
    }

    /// Whether `peer`'s routes are damped.
    pub fn peer_damped(&self, peer: PeerId) -> bool {
        self.damp
            .as_ref()
            .is_some_and(|d| d.peers.get(peer.0 as usize).copied().unwrap_or(false))
    }

    /// The current time for the flaps of the next updates.
    pub fn damping_time(&mut self, now: Instant) {
        if let Some(d) = self.damp.as_mut() {
            d.now = d.now.max(now);
        }
    }

    /// The damping state of one route, if it has a history.
    pub fn damping_state(
        &self,
        peer: PeerId,
        prefix: Prefix,
        path_id: u32,
    ) -> Option<FigureOfMerit> {
        self.damp
            .as_ref()?
            .table
            .get(&(peer, prefix.masked(), path_id))
            .copied()
    }

    /// The damping parameters, when damping is on.
    pub fn damping_params(&self) -> Option<&DampParams> {
        self.damp.as_ref().map(|d| d.table.params())
    }

    /// Every route with a damping history (suppressed or not).
    pub fn damping_histories(&self) -> impl Iterator<Item = (DampKey, FigureOfMerit)> + '_ {
        self.damp
            .iter()
            .flat_map(|d| d.table.iter().map(|(k, f)| (*k, *f)))
    }

    /// The next reuse or forget deadline.
    pub fn damping_next_deadline(&self) -> Option<Instant> {
        self.damp.as_ref()?.table.next_deadline()
    }

    /// Releases the routes whose reuse time has come by `now` and runs
    /// selection for them; appends prefixes whose best changed.
    pub fn damping_due(&mut self, now: Instant, changed: &mut Vec<Prefix>) {
        let Some(d) = self.damp.as_mut() else {
            return;
        };
        d.now = d.now.max(now);
        let mut released = Vec::new();
        d.table.due(now, &mut released);
        for (peer, prefix, pid) in released {
            self.set_suppressed(peer, prefix, pid, false, changed);
        }
    }

    /// Drops `peer`'s histories, releasing its suppressed routes.
    pub(crate) fn damping_forget_peer(&mut self, peer: PeerId, changed: &mut Vec<Prefix>) {
        let Some(d) = self.damp.as_mut() else {
            return;
        };
        let was = d.table.remove_where(|k| k.0 == peer);
        for (peer, prefix, pid) in was {
            self.set_suppressed(peer, prefix, pid, false, changed);
        }
    }

    fn damped_now(&self, peer: PeerId) -> Option<Instant> {
        let d = self.damp.as_ref()?;
        d.peers
            .get(peer.0 as usize)
            .copied()
            .unwrap_or(false)
            .then_some(d.now)
    }

    /// The attribute set of the stored path of (`peer`, `pid`).
    fn stored(&self, peer: PeerId, prefix: Prefix, pid: u32) -> Option<AttrHandle> {
        let e = match prefix {
            Prefix::V4(k) => self.v4.get(&k),
            Prefix::V6(k) => self.v6.get(&k),
        }?;
        e.paths()
            .iter()
            .find(|p| p.peer == peer && p.path_id == pid)
            .map(|p| p.attrs)
    }

    /// Before storing `h` for (`peer`, `prefix`, `pid`): a re-announcement
    /// after a withdrawal or a change of attributes is a flap.
    pub(crate) fn damp_announce(&mut self, peer: PeerId, prefix: Prefix, pid: u32, h: AttrHandle) {
        let Some(now) = self.damped_now(peer) else {
            return;
        };
        let key = (peer, prefix, pid);
        let flap = match self.stored(peer, prefix, pid) {
            Some(old) if old == h => return,
            Some(_) => Flap::AttrChange,
            None => match self.damp.as_ref().and_then(|d| d.table.get(&key)) {
                Some(f) if f.withdrawn => Flap::Readvertise,
                _ => return,
            },
        };
        if let Some(d) = self.damp.as_mut() {
            d.table.flap(now, key, flap);
        }
    }

    /// Before removing the path of (`peer`, `prefix`, `pid`) because the
    /// peer withdrew it: a flap, when there was one.
    pub(crate) fn damp_withdraw(&mut self, peer: PeerId, prefix: Prefix, pid: u32) {
        let Some(now) = self.damped_now(peer) else {
            return;
        };
        if self.stored(peer, prefix, pid).is_none() {
            return;
        }
        if let Some(d) = self.damp.as_mut() {
            d.table.flap(now, (peer, prefix, pid), Flap::Withdraw);
        }
    }

    /// Whether a path stored now for (`peer`, `prefix`, `pid`) is
    /// suppressed.
    pub(crate) fn damp_suppressed(&self, peer: PeerId, prefix: Prefix, pid: u32) -> bool {
        self.damp
            .as_ref()
            .is_some_and(|d| d.table.is_suppressed(&(peer, prefix, pid)))
    }

    /// Sets the stored path's flag and reselects.
    fn set_suppressed(
        &mut self,
        peer: PeerId,
        prefix: Prefix,
        pid: u32,
        on: bool,
        changed: &mut Vec<Prefix>,
    ) {
        let ctx = table::SelectCtx {
            interner: &self.interner,
            peers: &self.peers,
            cfg: &self.cfg,
            nht: self.nht.as_ref(),
        };
        // `None`: no such path, or its flag was already `on`.
        let flip = |e: &mut table::PrefixEntry| {
            let old = e.best_path().copied();
            let p = e
                .paths_mut()
                .iter_mut()
                .find(|p| p.peer == peer && p.path_id == pid)?;
            if p.suppressed() == on {
                return None;
            }
            p.set_suppressed(on);
            Some(table::reselect(e, old, &ctx))
        };
        let best_changed = match prefix {
            Prefix::V4(k) => self.v4.edit(&k, flip),
            Prefix::V6(k) => self.v6.edit(&k, flip),
        };
        match best_changed.flatten() {
            Some(true) => changed.push(prefix),
            Some(false) if self.tracks_paths() => self.path_changed.push(prefix),
            _ => {}
        }
    }
}

/// Damping over every shard of a [`Rib`](crate::Rib).
impl crate::Rib {
    /// [`RibShard::enable_damping`] in every shard.
    pub fn enable_damping(&mut self, params: DampParams, changed: &mut Vec<Prefix>) {
        for s in self.shards_mut() {
            s.enable_damping(params, changed);
        }
    }
    /// [`RibShard::disable_damping`] in every shard.
    pub fn disable_damping(&mut self, changed: &mut Vec<Prefix>) {
        for s in self.shards_mut() {
            s.disable_damping(changed);
        }
    }
    /// [`RibShard::set_peer_damping`] in every shard.
    pub fn set_peer_damping(&mut self, peer: PeerId, on: bool, changed: &mut Vec<Prefix>) {
        for s in self.shards_mut() {
            s.set_peer_damping(peer, on, changed);
        }
    }
    /// [`RibShard::damping_time`] in every shard.
    pub fn damping_time(&mut self, now: Instant) {
        for s in self.shards_mut() {
            s.damping_time(now);
        }
    }
    /// [`RibShard::damping_due`] in every shard.
    pub fn damping_due(&mut self, now: Instant, changed: &mut Vec<Prefix>) {
        for s in self.shards_mut() {
            s.damping_due(now, changed);
        }
    }
    /// The earliest [`RibShard::damping_next_deadline`].
    pub fn damping_next_deadline(&self) -> Option<Instant> {
        self.shards()
            .iter()
            .filter_map(RibShard::damping_next_deadline)
            .min()
    }
    /// [`RibShard::damping_state`] in the shard owning `prefix`.
    pub fn damping_state(
        &self,
        peer: PeerId,
        prefix: Prefix,
        path_id: u32,
    ) -> Option<FigureOfMerit> {
        self.shards()
            .get(self.shard_of(&prefix))?
            .damping_state(peer, prefix, path_id)
    }
    /// The damping parameters, when damping is on.
    pub fn damping_params(&self) -> Option<&DampParams> {
        self.shards().first()?.damping_params()
    }
    /// Every damping history of every shard.
    pub fn damping_histories(&self) -> impl Iterator<Item = (DampKey, FigureOfMerit)> + '_ {
        self.shards().iter().flat_map(RibShard::damping_histories)
    }
}

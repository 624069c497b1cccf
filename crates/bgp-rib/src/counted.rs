//! The per-family prefix table with its counts kept as it changes: paths
//! stored, and per peer the prefixes whose best path is that peer's (BIRD's
//! "preferred"). `show protocols`, `show route count` and every `/metrics`
//! scrape read these instead of walking the Loc-RIB (issue 17: a walk per
//! scrape was 6 % of scenario (b)'s CPU and 15 % of (c10)'s, scraped
//! every second).
//!
//! Why a wrapper rather than counter updates where routes change: the best
//! path moves in many places (an announcement, a withdrawal, a peer reset,
//! graceful-restart and LLGR sweeps, damping, next-hop changes, selection
//! option changes, policy re-evaluation), and each of them edits entries
//! in its own way. Here every mutable access goes through [`Counted::edit`],
//! [`Counted::edit_or_insert`] or [`Counted::retain`], which compare the
//! entry's path count and best peer before and after the edit, so no
//! caller can forget to count, and an entry left without paths is removed.
//! Reads go through `Deref` to the map. Cost: two reads of the entry's
//! best path per edit, no allocation (the per-peer vector grows only when
//! a new peer id first holds a best path).
//!
//! `tests/counters.rs` checks the counts against a walk after random
//! operation sequences.

use std::collections::hash_map::Entry;
use std::hash::Hash;

use crate::entry::PrefixEntry;
use crate::split::SplitMap;
use crate::PeerId;

/// A family's prefix table and its counts (see the module docs).
pub(crate) struct Counted<K> {
    map: SplitMap<K, PrefixEntry>,
    /// Paths stored, over all prefixes.
    paths: u64,
    /// By peer id: prefixes whose best path is that peer's.
    best: Vec<u64>,
}

impl<K> Default for Counted<K> {
    fn default() -> Self {
        Counted {
            map: SplitMap::default(),
            paths: 0,
            best: Vec::new(),
        }
    }
}

impl<K: std::fmt::Debug> std::fmt::Debug for Counted<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counted")
            .field("paths", &self.paths)
            .field("best", &self.best)
            .field("map", &self.map)
            .finish()
    }
}

impl<K> std::ops::Deref for Counted<K> {
    type Target = SplitMap<K, PrefixEntry>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

/// What the counts read of one entry: its path count and best peer.
#[derive(Copy, Clone, PartialEq, Eq)]
struct Seen(u64, Option<PeerId>);

const GONE: Seen = Seen(0, None);

fn seen(e: &PrefixEntry) -> Seen {
    Seen(e.paths().len() as u64, e.best_path().map(|p| p.peer))
}

/// Moves the counts from `before` to `after` (free of the map's borrow).
fn account(paths: &mut u64, best: &mut Vec<u64>, before: Seen, after: Seen) {
    *paths = (*paths + after.0).saturating_sub(before.0);
    if before.1 == after.1 {
        return;
    }
    if let Some(p) = before.1 {
        if let Some(c) = best.get_mut(usize::from(p.0)) {
            *c = c.saturating_sub(1);
        }
    }
    if let Some(p) = after.1 {
        let i = usize::from(p.0);
        if best.len() <= i {
            best.resize(i + 1, 0);
        }
        if let Some(c) = best.get_mut(i) {
            *c += 1;
        }
    }
}

impl<K> Counted<K> {
    /// Paths stored in this table.
    pub(crate) fn path_total(&self) -> u64 {
        self.paths
    }

    /// Prefixes whose best path is `peer`'s.
    pub(crate) fn best_of(&self, peer: PeerId) -> u64 {
        self.best.get(usize::from(peer.0)).copied().unwrap_or(0)
    }

    /// [`SplitMap::retain`], counted: `f` may edit each entry (paths and
    /// best) and drops it by returning false; an entry it leaves without
    /// paths is dropped too.
    pub(crate) fn retain(&mut self, mut f: impl FnMut(&K, &mut PrefixEntry) -> bool) {
        let (paths, best) = (&mut self.paths, &mut self.best);
        self.map.retain(|k, e| {
            let before = seen(e);
            let keep = f(k, e) && !e.paths().is_empty();
            let after = if keep { seen(e) } else { GONE };
            account(paths, best, before, after);
            keep
        });
    }
}

impl<K: Hash + Eq> Counted<K> {
    /// Runs `f` on the entry of `k`, if there is one, and counts what it
    /// changed; the entry is removed when `f` leaves it without paths.
    pub(crate) fn edit<R>(&mut self, k: &K, f: impl FnOnce(&mut PrefixEntry) -> R) -> Option<R> {
        let e = self.map.get_mut(k)?;
        let before = seen(e);
        let r = f(e);
        let after = seen(e);
        if after.0 == 0 {
            self.map.remove(k);
        }
        account(&mut self.paths, &mut self.best, before, after);
        Some(r)
    }

    /// [`Self::edit`] on the entry of `k`, created empty when missing.
    ///
    /// A missing entry is built on the stack and then moved into its
    /// slot, never read back from it (editing it in place loaded the slot,
    /// a cache miss in a million-prefix table, before the edit could
    /// start). One probe in both cases: an edit that empties an existing
    /// entry removes it through the same entry. The store into a new slot
    /// still waits for its line (x86 commits stores in order, so a
    /// missing one holds up the store buffer): in the profile of scenario
    /// (a) that store was most of this function's time (docs/BENCHMARKS.md,
    /// "issue 17, import side"). `std`'s map gives no slot address to
    /// prefetch, so the accept-all import makes the entries of a chunk of
    /// prefixes first ([`Self::reserve`]), side by side, and their misses
    /// overlap.
    pub(crate) fn edit_or_insert<R>(&mut self, k: K, f: impl FnOnce(&mut PrefixEntry) -> R) -> R {
        match self.map.entry(k) {
            Entry::Occupied(mut o) => {
                let e = o.get_mut();
                let before = seen(e);
                let r = f(e);
                let after = seen(e);
                if after.0 == 0 {
                    o.remove();
                }
                account(&mut self.paths, &mut self.best, before, after);
                r
            }
            Entry::Vacant(v) => {
                let mut e = PrefixEntry::default();
                let r = f(&mut e);
                let after = seen(&e);
                if after.0 != 0 {
                    v.insert(e);
                }
                account(&mut self.paths, &mut self.best, GONE, after);
                r
            }
        }
    }

    /// Makes sure `k` has an entry, an empty one when it had none, so that
    /// a caller about to store a path under each of several prefixes can
    /// have their slots' cache lines fetched together (see `shard.rs`,
    /// `LOOKAHEAD`). An entry left empty is counted as none and removed by
    /// the next [`Self::edit`] or [`Self::edit_or_insert`] of `k`; callers
    /// edit every prefix they reserve.
    #[inline]
    pub(crate) fn reserve(&mut self, k: K) {
        self.map.entry(k).or_default();
    }

    /// Loads the table's probe group for `k` (and `k`'s slot when it is
    /// there) without changing anything: a caller about to edit several
    /// prefixes touches them first, so that their cache misses overlap
    /// instead of coming one after the other (see `shard.rs`,
    /// `LOOKAHEAD`).
    #[inline]
    pub(crate) fn touch(&self, k: &K) {
        std::hint::black_box(self.map.get(k).is_some());
    }
}

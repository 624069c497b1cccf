//! Per-prefix storage: a hash table from a family's prefix type to the
//! 12-byte path records of each prefix and the best index.
//!
//! The vector is kept at its length rounded up to even ([`even`]) and
//! reallocated when it grows past that or shrinks below it. Per prefix that
//! costs a copy of a handful of 12-byte records on every second insert, and
//! saves the growth slack a doubling `Vec` would keep for each of millions
//! of prefixes.
//!
//! # Incremental selection
//!
//! The best index is kept equal to what [`bestpath::select_by`] returns
//! over all the paths in storage order (the full reselection), without
//! running it on every change. In the plain scan (no deterministic MED,
//! or always-compare-MED; no next-hop tracking) that is exact because:
//!
//! * the scan's winner after one more path is the old winner or the new
//!   path, whichever [`bestpath::replaces`] keeps (a scan is a fold), so an
//!   arriving path is compared with the best only;
//! * steps 0-3 (the path's [`SelKey`] rank, found through the key index
//!   the path carries, see `intern.rs`) compare every pair whatever the
//!   options, so the winner has the lowest rank, and only the paths of that
//!   rank (the *top class*) can decide it: a path ranked below the best can
//!   be added, changed or removed without changing the best, and a path
//!   ranked above it becomes the best at once.
//!
//! MED (§9.1.2.2 c) only between paths of one neighbouring AS makes the
//! relation within the top class not transitive, so the scan over it
//! depends on order: a change to a path of the top class other than a new
//! last path, or to the best itself (withdrawn, or changed without
//! becoming strictly better in rank), reselects, over the top class only.
//! Deterministic MED (grouped by neighbouring AS, where the order of the
//! groups depends on every path) and next-hop tracking (eligibility that
//! the key does not carry) always reselect over every path.

use std::hash::Hash;

use base::{Prefix, Prefix4, Prefix6};

use crate::bestpath::{self, BestPathConfig, Candidate, SelKey};
use crate::intern::SEL_NONE;
use crate::intern::{AttrHandle, Interner};
use crate::nht::{nexthop_ip, NhTable};
use crate::peer::PeerState;
use crate::types::PathEntry;
use crate::PeerId;

pub(crate) use crate::entry::{PrefixEntry, MAX_PATHS, NO_BEST};

pub(crate) trait Key: Copy + Eq + Hash + Into<Prefix> {}
impl Key for Prefix4 {}
impl Key for Prefix6 {}

/// A family's table: prefixes to their paths, with the counts
/// `show route count` and `show protocols` read (see `counted.rs`).
pub(crate) type Table<K> = crate::counted::Counted<K>;

/// What selection reads besides the paths.
pub(crate) struct SelectCtx<'a> {
    pub(crate) interner: &'a Interner,
    pub(crate) peers: &'a [Option<PeerState>],
    pub(crate) cfg: &'a BestPathConfig,
    /// Next-hop states, when next-hop tracking is on.
    pub(crate) nht: Option<&'a NhTable>,
}

/// Outcome of changing one prefix's path list.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Change {
    /// The handle that is no longer referenced by the table.
    pub(crate) released: Option<AttrHandle>,
    /// Whether a path was added (not replaced).
    pub(crate) added: bool,
    /// Whether a path was removed.
    pub(crate) removed: bool,
    /// Whether a stored path got a different attribute set.
    pub(crate) replaced: bool,
    /// Whether the best path (its identity or attributes) changed.
    pub(crate) best_changed: bool,
    /// The path could not be stored (per-prefix path cap).
    pub(crate) full: bool,
}

/// The selection input for `p`. Paths of unknown peers or with dead
/// handles are not eligible; neither happens unless the shard's
/// bookkeeping is wrong. With next-hop tracking, a path whose next hop is
/// unreachable or not resolved yet is not eligible (RFC 4271 §9.1.2.1)
/// and the tracked cost is its interior cost (§9.1.2.2 e); a path without
/// a next hop (a static route sent with our own address) is eligible at
/// cost 0.
pub(crate) fn candidate<'a>(p: &PathEntry, ctx: &SelectCtx<'a>) -> Option<Candidate<'a>> {
    if p.suppressed() {
        // Damped (RFC 2439): in the Adj-RIB-In, not eligible.
        return None;
    }
    let peer = ctx.peers.get(p.peer.0 as usize)?.as_ref()?;
    let set = ctx.interner.get(p.attrs)?;
    // The next hop only with next-hop tracking: finding it walks the
    // set's attributes, and without tracking that walk for every
    // candidate of every reselection was a fifth of the daemon's CPU time
    // in scenario (f) (20 paths per prefix; docs/BENCHMARKS.md, issue 17).
    let igp_cost = match ctx.nht {
        Some(t) => match set.next_hop() {
            Some(nh) => t.cost(nexthop_ip(nh))?,
            None => 0,
        },
        None => set.summary().igp_metric(),
    };
    Some(Candidate {
        summary: set.summary(),
        igp_cost,
        ebgp: peer.cfg.ebgp,
        peer_bgp_id: u32::from(peer.cfg.bgp_id),
        peer_addr: peer.cfg.addr,
        path_id: p.path_id,
    })
}

/// The selection key of a path with the attribute set `h` (the default
/// for a dead handle, which is never eligible).
pub(crate) fn key_of(h: AttrHandle, interner: &Interner) -> SelKey {
    interner
        .get(h)
        .map_or_else(SelKey::default, |s| SelKey::of(s.summary()))
}

/// Steps 0-3 of `p` as one number ([`SelKey::rank`]): from the interner's
/// key table through the path's index, else (no index: the table was
/// full) from its set.
#[inline]
fn rank_of(p: &PathEntry, ctx: &SelectCtx<'_>) -> u64 {
    match ctx.interner.sel_key(p.key_index()) {
        Some(k) => k.rank(ctx.cfg),
        None => key_of(p.attrs, ctx.interner).rank(ctx.cfg),
    }
}

/// Whether the best can be maintained incrementally (module docs).
fn incremental(ctx: &SelectCtx<'_>) -> bool {
    ctx.nht.is_none() && (!ctx.cfg.deterministic_med || ctx.cfg.always_compare_med)
}

/// The rank of `p` (steps 0-3, lower preferred) when it may be eligible,
/// read from the entry, the key table and the peer table; `None`: not
/// eligible. A path with a dead handle gets a rank here and no candidate.
fn top_rank(p: &PathEntry, ctx: &SelectCtx<'_>) -> Option<u64> {
    if p.suppressed() || !matches!(ctx.peers.get(p.peer.0 as usize), Some(Some(_))) {
        return None;
    }
    Some(rank_of(p, ctx))
}

/// The full reselection: [`bestpath::select_by`] over every path.
pub(crate) fn select_all(paths: &[PathEntry], ctx: &SelectCtx<'_>) -> Option<usize> {
    let get = |i: usize| candidate(paths.get(i)?, ctx);
    bestpath::select_by(paths.len(), get, ctx.cfg)
}

/// The same result as [`select_all`]; in incremental mode the scan runs
/// over the top class only, found from the inline keys (module docs).
fn select(paths: &[PathEntry], ctx: &SelectCtx<'_>) -> Option<usize> {
    if !incremental(ctx) {
        return select_all(paths, ctx);
    }
    let (mut top, mut first, mut ties) = (u64::MAX, None, 0usize);
    for (i, p) in paths.iter().enumerate() {
        match top_rank(p, ctx) {
            Some(r) if r < top => (top, first, ties) = (r, Some(i), 1),
            Some(r) if r == top => ties += 1,
            _ => {}
        }
    }
    let first = first?;
    let dead = std::cell::Cell::new(false);
    let get = |i: usize| {
        let p = paths.get(i)?;
        if top_rank(p, ctx) != Some(top) {
            return None;
        }
        let c = candidate(p, ctx);
        dead.set(dead.get() || c.is_none());
        c
    };
    let best = if ties == 1 {
        get(first).map(|_| first)
    } else {
        bestpath::select_by(paths.len(), get, ctx.cfg)
    };
    if dead.get() {
        // A dead handle in the top class (the shard's bookkeeping is
        // wrong): the class was ranked wrongly; scan everything.
        return select_all(paths, ctx);
    }
    best
}

/// Recomputes the best index; returns whether the best differs from `old`
/// (the best path before the list was modified).
pub(crate) fn reselect(e: &mut PrefixEntry, old: Option<PathEntry>, ctx: &SelectCtx<'_>) -> bool {
    e.set_best(select(e.paths(), ctx).map_or(NO_BEST, |i| i as u16));
    old != e.best_path().copied()
}

/// How one prefix's path list changed.
#[derive(Copy, Clone, Debug)]
enum Edit {
    /// A path was added at the end.
    Appended,
    /// The path at `i`, before the change `was`, changed in place.
    Changed { i: usize, was: PathEntry },
    /// The path at `i` (`was`) was removed.
    Removed { i: usize, was: PathEntry },
    /// The path at `i` (`was`) was removed and its new version added at
    /// the end (new attributes make a path the newest, RFC 5004).
    Moved { i: usize, was: PathEntry },
}

/// The best index after `edit`, from `best` (before it, valid then)
/// without a scan where that is exact (module docs); `None`: reselect.
/// The edited path's handle is live (the caller holds it).
fn incremental_best(
    paths: &[PathEntry],
    best: Option<(usize, PathEntry)>,
    edit: Edit,
    ctx: &SelectCtx<'_>,
) -> Option<Option<usize>> {
    let top = best.map(|(_, b)| rank_of(&b, ctx));
    let in_top = |p: &PathEntry| top.is_some() && top_rank(p, ctx) == top;
    match edit {
        Edit::Appended => {
            let last = paths.len().checked_sub(1)?;
            appended(paths, best.map(|(b, _)| b), top, last, ctx)
        }
        Edit::Removed { i, was } => {
            if best.is_some_and(|(b, _)| b == i) || in_top(&was) {
                return None;
            }
            Some(best.map(|(b, _)| if b > i { b - 1 } else { b }))
        }
        Edit::Moved { i, was } => {
            if best.is_some_and(|(b, _)| b == i) || in_top(&was) {
                return None;
            }
            let b = best.map(|(b, _)| if b > i { b - 1 } else { b });
            appended(paths, b, top, paths.len().checked_sub(1)?, ctx)
        }
        Edit::Changed { i, was } => {
            let now = top_rank(paths.get(i)?, ctx);
            let Some((b, _)) = best else {
                // Nothing was eligible: the changed path is the only one
                // that can be.
                return Some(now.map(|_| i));
            };
            match (now, top) {
                // Strictly better in rank: alone at the top.
                (Some(r), Some(t)) if r < t => Some(Some(i)),
                _ if b == i || in_top(&was) => None,
                (Some(r), Some(t)) if r == t => None,
                _ => Some(Some(b)),
            }
        }
    }
}

/// The scan's next step: the best after the eligible or ineligible path at
/// `last` joined a list whose best was `best` with rank `top`.
fn appended(
    paths: &[PathEntry],
    best: Option<usize>,
    top: Option<u64>,
    last: usize,
    ctx: &SelectCtx<'_>,
) -> Option<Option<usize>> {
    let p = paths.get(last)?;
    let Some(r) = top_rank(p, ctx) else {
        return Some(best);
    };
    let (Some(b), Some(t)) = (best, top) else {
        return Some(Some(last));
    };
    if r != t {
        return Some(Some(if r < t { last } else { b }));
    }
    let (c, cb) = (candidate(p, ctx)?, candidate(paths.get(b)?, ctx)?);
    Some(Some(if bestpath::replaces(&c, &cb, ctx.cfg) {
        last
    } else {
        b
    }))
}

/// Updates the best index after `edit`; `best` is the best index and path
/// before it. Returns whether the best path changed.
fn update_best(
    e: &mut PrefixEntry,
    best: Option<(usize, PathEntry)>,
    edit: Edit,
    ctx: &SelectCtx<'_>,
) -> bool {
    let old = best.map(|(_, p)| p);
    let inc = if incremental(ctx) {
        incremental_best(e.paths(), best, edit, ctx)
    } else {
        None
    };
    match inc {
        Some(b) => {
            e.set_best(b.map_or(NO_BEST, |i| i as u16));
            old != e.best_path().copied()
        }
        None => reselect(e, old, ctx),
    }
}

fn best_of(e: &PrefixEntry) -> Option<(usize, PathEntry)> {
    let b = e.best_index()?;
    Some((b, *e.paths().get(b)?))
}

/// Appends to `out` the multipath set of `e` (see [`crate::multipath`]),
/// the best first; nothing without a best.
pub(crate) fn multipath(e: &PrefixEntry, ctx: &SelectCtx<'_>, out: &mut Vec<usize>) {
    let Some(best) = e.best_index() else {
        return;
    };
    let paths = e.paths();
    let get = |i: usize| candidate(paths.get(i)?, ctx);
    crate::multipath::select_by(paths.len(), get, best, ctx.cfg, out);
}

/// Appends to `out` the indices of the `n` most preferred eligible paths of
/// `e`, best first: the Loc-RIB best, then the best of the rest, and so on
/// (the decision process run again without the paths already taken, as
/// FRR's `addpath-tx-best-selected` does). O(n × paths).
pub(crate) fn rank(e: &PrefixEntry, n: usize, ctx: &SelectCtx<'_>, out: &mut Vec<usize>) {
    let Some(best) = e.best_index() else {
        return;
    };
    let start = out.len();
    out.push(best);
    let paths = e.paths();
    while out.len() - start < n {
        let taken = out.get(start..).unwrap_or_default();
        let get = |i: usize| {
            if taken.contains(&i) {
                return None;
            }
            candidate(paths.get(i)?, ctx)
        };
        match bestpath::select_by(paths.len(), get, ctx.cfg) {
            Some(i) => out.push(i),
            None => break,
        }
    }
}

/// Adds or replaces the path of (`peer`, `path_id`) under `key` (its
/// selection key index is set here, from its set).
pub(crate) fn upsert<K: Key>(
    t: &mut Table<K>,
    key: K,
    mut path: PathEntry,
    ctx: &SelectCtx<'_>,
) -> Change {
    let set = ctx.interner.get(path.attrs);
    let live = set.is_some();
    path.set_key_index(set.map_or(SEL_NONE, |s| s.sel()));
    t.edit_or_insert(key, |e| upsert_in(e, path, live, ctx))
}

/// [`upsert`] on the prefix's entry (`live`: the path's set is interned).
fn upsert_in(e: &mut PrefixEntry, path: PathEntry, live: bool, ctx: &SelectCtx<'_>) -> Change {
    let mut ch = Change::default();
    let best = best_of(e);
    let same = |p: &PathEntry| p.peer == path.peer && p.path_id == path.path_id;
    let edit = if let Some(i) = e.paths().iter().position(same) {
        let Some(p) = e.paths_mut().get_mut(i) else {
            return ch;
        };
        let was = *p;
        if p.attrs == path.attrs {
            // Duplicate announcement: the caller's new reference is the one
            // to drop. A re-announcement after a graceful restart clears
            // the stale flag; selection does not read it.
            p.set_stale(path.stale());
            ch.released = Some(path.attrs);
            if p.suppressed() != path.suppressed() {
                p.set_suppressed(path.suppressed());
                let edit = Edit::Changed { i, was };
                ch.best_changed = if live {
                    update_best(e, best, edit, ctx)
                } else {
                    reselect(e, best.map(|(_, p)| p), ctx)
                };
            }
            return ch;
        }
        ch.released = Some(p.attrs);
        ch.replaced = true;
        *p = path;
        if ctx.cfg.compare_router_id {
            Edit::Changed { i, was }
        } else {
            // Paths are kept in arrival order for RFC 5004's "oldest
            // wins": new attributes make the path the newest.
            if let Some(tail) = e.paths_mut().get_mut(i..) {
                tail.rotate_left(1);
            }
            Edit::Moved { i, was }
        }
    } else {
        if e.paths().len() >= MAX_PATHS {
            ch.full = true;
            ch.released = Some(path.attrs);
            return ch;
        }
        e.push_path(path);
        ch.added = true;
        Edit::Appended
    };
    ch.best_changed = if live {
        update_best(e, best, edit, ctx)
    } else {
        reselect(e, best.map(|(_, p)| p), ctx)
    };
    ch
}

/// Removes the path of (`peer`, `path_id`) under `key`, dropping the prefix
/// when it was the last.
pub(crate) fn remove<K: Key>(
    t: &mut Table<K>,
    key: K,
    peer: PeerId,
    path_id: u32,
    ctx: &SelectCtx<'_>,
) -> Change {
    t.edit(&key, |e| remove_in(e, peer, path_id, ctx))
        .unwrap_or_default()
}

/// [`remove`] on the prefix's entry; an entry left empty is dropped by
/// the table.
fn remove_in(e: &mut PrefixEntry, peer: PeerId, path_id: u32, ctx: &SelectCtx<'_>) -> Change {
    let mut ch = Change::default();
    let Some(i) = e
        .paths()
        .iter()
        .position(|p| p.peer == peer && p.path_id == path_id)
    else {
        return ch;
    };
    ch.removed = true;
    let best = best_of(e);
    let was = e.remove_path(i);
    ch.released = was.map(|p| p.attrs);
    if e.paths().is_empty() {
        ch.best_changed = true;
        return ch;
    }
    ch.best_changed = match was {
        Some(was) => update_best(e, best, Edit::Removed { i, was }, ctx),
        None => reselect(e, best.map(|(_, p)| p), ctx),
    };
    ch
}

/// Re-runs selection for every prefix of `t` (after the selection options
/// changed); appends the prefixes whose best changed to `changed` and, when
/// given, every other prefix with several paths to `others` (an ADD-PATH
/// peer's ranking may have changed).
pub(crate) fn reselect_all<K: Key>(
    t: &mut Table<K>,
    ctx: &SelectCtx<'_>,
    changed: &mut Vec<Prefix>,
    mut others: Option<&mut Vec<Prefix>>,
) {
    t.retain(|k, e| {
        let old = e.best_path().copied();
        if reselect(e, old, ctx) {
            changed.push((*k).into());
        } else if e.paths().len() > 1 {
            if let Some(o) = others.as_deref_mut() {
                o.push((*k).into());
            }
        }
        true
    });
}

/// Flags every path of `peer` stale; returns how many.
pub(crate) fn mark_stale<K: Key>(t: &mut Table<K>, peer: PeerId) -> usize {
    let mut n = 0;
    t.retain(|_, e| {
        for p in e.paths_mut().iter_mut().filter(|p| p.peer == peer) {
            p.set_stale(true);
            n += 1;
        }
        true
    });
    n
}

/// Removes every path of `peer` (only the stale ones with `only_stale`);
/// hands each removed path's prefix and handle to `released`, collects
/// each prefix whose best changed in `changed` and, when given, each other
/// prefix that lost a path in `others` (what ADD-PATH peers must hear
/// about). Returns paths removed.
pub(crate) fn remove_peer<K: Key>(
    t: &mut Table<K>,
    peer: PeerId,
    only_stale: bool,
    ctx: &SelectCtx<'_>,
    released: &mut dyn FnMut(Prefix, AttrHandle),
    changed: &mut Vec<Prefix>,
    mut others: Option<&mut Vec<Prefix>>,
) -> usize {
    let mut n = 0;
    let hit = |p: &PathEntry| p.peer == peer && (p.stale() || !only_stale);
    t.retain(|k, e| {
        if !e.paths().iter().any(hit) {
            return true;
        }
        let old = e.best_path().copied();
        let mut v = e.take_paths();
        v.retain(|p| {
            if hit(p) {
                released((*k).into(), p.attrs);
                n += 1;
                false
            } else {
                true
            }
        });
        e.set_paths(v);
        if e.paths().is_empty() {
            changed.push((*k).into());
            return false;
        }
        if reselect(e, old, ctx) {
            changed.push((*k).into());
        } else if let Some(o) = others.as_deref_mut() {
            o.push((*k).into());
        }
        true
    });
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(peer: u16) -> PathEntry {
        PathEntry::new(PeerId(peer), 0, AttrHandle(u32::from(peer)))
    }

    /// The two flags and the key index share one word without touching
    /// each other; an index past 14 bits is stored as none.
    #[test]
    fn path_flags_and_key_index_are_independent() {
        let mut p = path(7);
        p.set_key_index(0x3fff);
        assert!(!p.stale() && !p.suppressed());
        p.set_stale(true);
        p.set_suppressed(true);
        assert_eq!(p.key_index(), 0x3fff);
        p.set_key_index(5);
        assert!(p.stale() && p.suppressed());
        assert_eq!(p.key_index(), 5);
        p.set_stale(false);
        assert!(!p.stale() && p.suppressed());
        assert_eq!(p.key_index(), 5);
        p.set_suppressed(false);
        assert!(!p.stale() && !p.suppressed());
        p.set_key_index(0x4000);
        assert_eq!(p.key_index(), SEL_NONE);
        assert_eq!((p.peer, p.path_id, p.attrs), (PeerId(7), 0, AttrHandle(7)));
    }

    /// One path inline, more on the heap, the best index kept through
    /// every change of representation; no bigger than the boxed slice.
    #[test]
    fn prefix_entry_inline_and_boxed() {
        assert_eq!(std::mem::size_of::<PathEntry>(), 12);
        assert_eq!(std::mem::size_of::<PrefixEntry>(), 16);
        assert_eq!(std::mem::size_of::<(Prefix4, PrefixEntry)>(), 24);
        let mut e = PrefixEntry::default();
        assert!(e.paths().is_empty() && e.best_index().is_none());
        e.push_path(path(1));
        assert!(matches!(e, PrefixEntry::One { .. }));
        assert_eq!(e.best_raw(), NO_BEST);
        e.set_best(0);
        e.push_path(path(2));
        e.push_path(path(3));
        assert!(matches!(e, PrefixEntry::Many { .. }));
        assert_eq!(e.paths().len(), 3);
        // Grown two records at a time; shrunk to even.
        let cap = |e: &PrefixEntry| match e {
            PrefixEntry::Many { paths, .. } => paths.capacity(),
            _ => 0,
        };
        assert_eq!(cap(&e), 4);
        e.push_path(path(4));
        assert_eq!(cap(&e), 4);
        e.push_path(path(5));
        assert_eq!(cap(&e), 6);
        assert_eq!(e.remove_path(4).map(|p| p.peer), Some(PeerId(5)));
        assert_eq!(e.remove_path(3).map(|p| p.peer), Some(PeerId(4)));
        assert_eq!(e.remove_path(3), None);
        assert_eq!(cap(&e), 4);
        assert_eq!(e.best_path().map(|p| p.peer), Some(PeerId(1)));
        let mut v = e.take_paths();
        v.retain(|p| p.peer == PeerId(3));
        e.set_paths(v);
        assert!(matches!(e, PrefixEntry::One { .. }));
        assert_eq!(e.best_path().map(|p| p.peer), Some(PeerId(3)));
        e.paths_mut()[0].set_stale(true);
        assert!(e.paths()[0].stale());
        e.set_paths(Vec::new());
        assert!(e.best_path().is_none());
        assert!(matches!(e, PrefixEntry::Empty { .. }));
    }
}

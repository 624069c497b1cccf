//! The write side: the control entries (array of short routes, sorted
//! per-slot vectors of long ones) are the truth; the direct array and the
//! subtrees are derived from them. An update to a prefix longer than
//! [`DIRECT_BITS`] patches one leaf (`patch`), repaints the one node group
//! where the prefix ends (`repaint`), or else rebuilds the one subtree
//! under its direct slot; a shorter
//! prefix repaints the direct slots it covers and rebuilds the subtrees of
//! those slots whose inherited route changed. Removal therefore always falls
//! back to the covering route, whatever was inserted in between.

use base::{Prefix4, Prefix6};

use super::pool::Pool;
use super::replay::{self, Op};
use super::{
    has_popcnt, prefetch, prefetch_node, short_index, short_prefix, Node, Poptrie, Slot, Sub,
    DIRECT_BITS, LEAF, NO_LEN, NO_ROUTE, NO_SUB, SHORT_SLOTS,
};
use crate::key::Key;
use crate::publish::Delta;
use crate::{LpmError, LpmMut, NextHop};

const EMPTY_SUB: Sub = Sub {
    node: 0,
    leaf: 0,
    nclass: NO_SUB,
    lclass: NO_SUB,
    llen: 0,
};

impl<K> Slot<K> {
    /// A slot with no route and no subtree.
    fn empty() -> Self {
        Slot {
            long: Vec::new(),
            sub: EMPTY_SUB,
            best: NO_ROUTE,
            best_len: NO_LEN,
        }
    }
}

/// Scratch stacks for [`build_node`]: each level pushes its painted
/// positions and child bitmaps and pops them when done, so a rebuild
/// allocates nothing once the stacks are warm.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scratch {
    vals: Vec<u32>,
    inter: Vec<u64>,
}

/// Builds the node group at `nodes[at..at + 2^g]` (`g` the group bits of
/// trie level `level`) for the bit offset `depth`, from the routes inside
/// it (all longer than `depth`, sorted by (address, length)), with
/// `default` as the value of positions no route covers. The group resolves
/// `g + 6` bits: node `w` of the group holds positions `64 w..64 w + 63`,
/// with its own `base0`/`base1`, so the group's leaves and children are
/// each one contiguous run. Child groups are appended to `nodes`, leaves
/// to `leaves`. A leaf run may continue from one node of the group into
/// the next (a node whose first leaf positions continue the previous run
/// has rank 0 there, which reads the leaf just before its `base0`).
#[allow(clippy::too_many_arguments)]
fn build_node<K: Key>(
    routes: &[(K, u8, u32)],
    depth: u32,
    level: u32,
    default: u32,
    nodes: &mut Vec<Node>,
    leaves: &mut Vec<u32>,
    at: usize,
    sc: &mut Scratch,
) {
    let g = Poptrie::<K>::gbits(level);
    let gn = Poptrie::<K>::gbits(level + 1);
    let stride = g + 6;
    let lim = depth + stride;
    let npos = 1usize << stride;
    let vb = sc.vals.len();
    sc.vals.resize(vb + npos, default);
    let ib = sc.inter.len();
    sc.inter.resize(ib + (1 << g), 0);
    // Paint in (address, length) order: a covering route is painted before
    // the longer routes inside it, so the longest one wins.
    for &(a, l, v) in routes {
        let c = a.chunk(depth, stride) as usize;
        let l = u32::from(l);
        if l <= lim {
            let span = 1usize << (lim - l).min(stride);
            if let Some(x) = sc.vals.get_mut(vb + c..(vb + c + span).min(vb + npos)) {
                x.fill(v);
            }
        } else if let Some(w) = sc.inter.get_mut(ib + (c >> 6)) {
            *w |= 1u64 << (c & 63);
        }
    }
    let nchild: usize = sc
        .inter
        .get(ib..)
        .unwrap_or(&[])
        .iter()
        .map(|w| w.count_ones() as usize)
        .sum();
    let base1 = nodes.len();
    nodes.resize(base1 + (nchild << gn), Node::default());
    let mut prev = None;
    let mut before = 0usize;
    for w in 0..1usize << g {
        let word = sc.inter.get(ib + w).copied().unwrap_or(0);
        let base0 = leaves.len() as u32;
        let mut leafvec = 0u64;
        let vals = sc.vals.get(vb + w * 64..vb + w * 64 + 64).unwrap_or(&[]);
        for (i, &v) in vals.iter().enumerate() {
            if (word >> i) & 1 == 0 && prev != Some(v) {
                leafvec |= 1u64 << i;
                leaves.push(v);
                prev = Some(v);
            }
        }
        if let Some(n) = nodes.get_mut(at + w) {
            *n = Node {
                vector: word,
                leafvec,
                base0,
                base1: (base1 + (before << gn)) as u32,
            };
        }
        before += word.count_ones() as usize;
    }
    // Children: the routes of position `c` are contiguous (sorted by
    // address); those of length <= lim come first (they start at the
    // position's first address) and were painted above, so skip them.
    let mut rest = routes;
    let mut child = base1;
    for w in 0..1usize << g {
        let mut bits = sc.inter.get(ib + w).copied().unwrap_or(0);
        while bits != 0 {
            let c = (w << 6) as u32 | bits.trailing_zeros();
            bits &= bits - 1;
            let start = rest
                .iter()
                .position(|r| r.0.chunk(depth, stride) == c)
                .unwrap_or(rest.len());
            let group = rest.get(start..).unwrap_or(&[]);
            let end = group
                .iter()
                .position(|r| r.0.chunk(depth, stride) != c)
                .unwrap_or(group.len());
            let (mine, tail) = group.split_at(end);
            rest = tail;
            let deep = mine
                .iter()
                .position(|r| u32::from(r.1) > lim)
                .unwrap_or(mine.len());
            let mine = mine.get(deep..).unwrap_or(&[]);
            let d = sc.vals.get(vb + c as usize).copied().unwrap_or(default);
            build_node(mine, lim, level + 1, d, nodes, leaves, child, sc);
            child += 1 << gn;
        }
    }
    sc.vals.truncate(vb);
    sc.inter.truncate(ib);
}

// Plain 64-ary nodes (IPv4: no groups) keep the builder as it was before
// the groups: the generic `build_node` (scratch stacks, group words)
// measured about 1.5x slower on the bulk build of the real IPv4 table, and
// subtree rebuilds are a large part of every route change.
/// Builds the node at `nodes[at]` for the bit offset `depth`, from the
/// routes inside it (all longer than `depth`, sorted by (address, length)),
/// with `default` as the value of positions no route covers. Children are
/// appended to `nodes` as one contiguous run, leaves to `leaves`.
fn build_node_flat<K: Key>(
    routes: &[(K, u8, u32)],
    depth: u32,
    default: u32,
    nodes: &mut Vec<Node>,
    leaves: &mut Vec<u32>,
    at: usize,
) {
    let lim = depth + 6;
    let mut vals = [default; 64];
    let mut internal = 0u64;
    // Paint in (address, length) order: a covering route is painted before
    // the longer routes inside it, so the longest one wins.
    for &(a, l, v) in routes {
        let c = a.chunk6(depth) as usize;
        let l = u32::from(l);
        if l <= lim {
            let span = 1usize << (lim - l).min(6);
            for x in vals.iter_mut().skip(c).take(span) {
                *x = v;
            }
        } else {
            internal |= 1u64 << c;
        }
    }
    let base0 = leaves.len() as u32;
    let mut leafvec = 0u64;
    let mut prev = None;
    for (i, &v) in vals.iter().enumerate() {
        if (internal >> i) & 1 == 0 && prev != Some(v) {
            leafvec |= 1u64 << i;
            leaves.push(v);
            prev = Some(v);
        }
    }
    let base1 = nodes.len();
    nodes.resize(base1 + internal.count_ones() as usize, Node::default());
    if let Some(n) = nodes.get_mut(at) {
        *n = Node {
            vector: internal,
            leafvec,
            base0,
            base1: base1 as u32,
        };
    }
    // Children: the routes of position `i` are contiguous (sorted by
    // address); those of length <= lim come first (they start at the
    // position's first address) and were painted above, so skip them.
    let mut rest = routes;
    let mut child = base1;
    let mut bits = internal;
    while bits != 0 {
        let i = bits.trailing_zeros();
        bits &= bits - 1;
        let start = rest
            .iter()
            .position(|r| r.0.chunk6(depth) == i)
            .unwrap_or(rest.len());
        let group = rest.get(start..).unwrap_or(&[]);
        let end = group
            .iter()
            .position(|r| r.0.chunk6(depth) != i)
            .unwrap_or(group.len());
        let (mine, tail) = group.split_at(end);
        rest = tail;
        let deep = mine
            .iter()
            .position(|r| u32::from(r.1) > lim)
            .unwrap_or(mine.len());
        let mine = mine.get(deep..).unwrap_or(&[]);
        let d = vals.get(i as usize).copied().unwrap_or(default);
        build_node_flat(mine, lim, d, nodes, leaves, child);
        child += 1;
    }
}

impl<K: Key> Default for Poptrie<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Key> Poptrie<K> {
    /// An empty table (allocates the 1 MiB direct array, the 16 MiB of
    /// control lines and the 2 MiB short-route array).
    pub fn new() -> Self {
        let n = 1usize << DIRECT_BITS;
        Poptrie {
            direct: vec![LEAF | NO_ROUTE; n],
            nodes: Pool::new(),
            leaves: Pool::new(),
            short: vec![NO_ROUTE; SHORT_SLOTS],
            n_short: 0,
            slots: (0..n).map(|_| Slot::empty()).collect(),
            n_long: 0,
            scratch_nodes: Vec::new(),
            scratch_leaves: Vec::new(),
            scratch: Scratch::default(),
            batch_order: Vec::new(),
            batch_changes: Vec::new(),
            batch_sorted: Vec::new(),
            popcnt: has_popcnt(),
            log: replay::Log::default(),
            lineage: replay::new_lineage(),
            version: 0,
        }
    }

    /// Builds a table from routes in one pass (much faster than inserting
    /// them one by one). Later duplicates of a prefix replace earlier ones.
    fn build(routes: impl IntoIterator<Item = (K, u8, NextHop)>) -> Result<Self, LpmError> {
        let mut t = Self::new();
        let mut all: Vec<(K, u8, u32)> = Vec::new();
        for (a, l, nh) in routes {
            if nh.0 > NextHop::MAX_VALID {
                return Err(LpmError::NextHopTooLarge);
            }
            let l = l.min(K::BITS as u8);
            all.push((a.masked(l), l, nh.0));
        }
        // Stable sort, then keep the last of each run of equal prefixes.
        all.sort_by_key(|&(a, l, _)| (a, l));
        let mut dedup: Vec<(K, u8, u32)> = Vec::with_capacity(all.len());
        for r in all {
            match dedup.last_mut() {
                Some(last) if (last.0, last.1) == (r.0, r.1) => *last = r,
                _ => dedup.push(r),
            }
        }
        // (address, length) order is a valid paint order: a covering route
        // sorts before the routes it covers.
        for &(a, l, v) in &dedup {
            if u32::from(l) <= DIRECT_BITS {
                paint(&mut t.slots, a, l, v);
                if let Some(x) = t.short.get_mut(short_index(a, l)) {
                    *x = v;
                    t.n_short += 1;
                }
            } else if let Some(slot) = t.slots.get_mut(a.top(DIRECT_BITS)) {
                slot.long.push((a, l, v));
                t.n_long += 1;
            }
        }
        for (d, x) in t.direct.iter_mut().zip(&t.slots) {
            *d = LEAF | x.best;
        }
        for s in 0..t.slots.len() {
            if t.slots.get(s).is_some_and(|x| !x.long.is_empty()) {
                t.rebuild_slot(s)?;
            }
        }
        Ok(t)
    }

    /// Rebuilds the subtree of direct slot `s` from its long routes.
    fn rebuild_slot(&mut self, s: usize) -> Result<(), LpmError> {
        #[cfg(test)]
        tests::REBUILDS.with(|r| r.set(r.get() + 1));
        // `install` does not read `long`, so lend the slot's vector out.
        let Some(v) = self.slots.get_mut(s).map(|x| std::mem::take(&mut x.long)) else {
            return Ok(());
        };
        let r = install(self, s, &v);
        if let Some(slot) = self.slots.get_mut(s) {
            slot.long = v;
        }
        r
    }

    /// Brings slot `s` in line with `best[s]` after a short route changed.
    fn refresh(&mut self, s: usize) -> Result<(), LpmError> {
        if self.slots.get(s).is_some_and(|x| x.sub.nclass != NO_SUB) {
            self.rebuild_slot(s)
        } else {
            if let (Some(d), Some(x)) = (self.direct.get_mut(s), self.slots.get(s)) {
                *d = LEAF | x.best;
            }
            Ok(())
        }
    }

    /// Applies the map change for `(a, l)` to the lookup structures.
    fn apply(&mut self, a: K, l: u8) -> Result<(), LpmError> {
        let first = a.top(DIRECT_BITS);
        if u32::from(l) > DIRECT_BITS {
            if self.repaint(first, a, l) {
                return Ok(());
            }
            return self.rebuild_slot(first);
        }
        let last = a.last(l).top(DIRECT_BITS);
        // The route of length <= l that now covers the prefix: itself if
        // present, else the longest shorter route covering it.
        let (v, vl) = (0..=l)
            .rev()
            .find_map(|m| self.short_get(a, m).map(|v| (v, m)))
            .unwrap_or((NO_ROUTE, NO_LEN));
        for s in first..=last {
            let Some((b, bl)) = self.slots.get(s).map(|x| (x.best, x.best_len)) else {
                break;
            };
            // Slots owned by a longer route keep it; the others take `v`.
            let owned_by_longer = bl != NO_LEN && bl > l;
            if owned_by_longer || (b, bl) == (v, vl) {
                continue;
            }
            if let Some(x) = self.slots.get_mut(s) {
                x.best = v;
                x.best_len = vl;
            }
            // Also covers `refresh`'s write of the direct entry (the copy
            // takes the final state of both).
            self.note(Op::Slot(s as u32));
            self.refresh(s)?;
        }
        Ok(())
    }

    /// Sets the control entry of `a/l` (`Some`) or removes it (`None`);
    /// returns the previous value.
    fn set_control(&mut self, a: K, l: u8, v: Option<u32>) -> Option<u32> {
        if u32::from(l) <= DIRECT_BITS {
            let i = short_index(a, l);
            let x = self.short.get_mut(i)?;
            let old = std::mem::replace(x, v.unwrap_or(NO_ROUTE));
            let (was, is) = (old != NO_ROUTE, v.is_some());
            self.n_short = self.n_short + usize::from(is) - usize::from(was);
            self.note(Op::Short {
                i: i as u32,
                v: v.unwrap_or(NO_ROUTE),
            });
            return was.then_some(old);
        }
        let s = a.top(DIRECT_BITS);
        let slot = &mut self.slots.get_mut(s)?.long;
        let (s, at) = (s as u32, |i: usize| i as u32);
        let (old, op) = match (slot.binary_search_by_key(&(a, l), |r| (r.0, r.1)), v) {
            (Ok(i), Some(v)) => (
                slot.get_mut(i).map(|r| std::mem::replace(&mut r.2, v)),
                Op::LongSet { s, i: at(i), v },
            ),
            (Ok(i), None) => {
                self.n_long -= 1;
                (Some(slot.remove(i).2), Op::LongRemove { s, i: at(i) })
            }
            (Err(i), Some(v)) => {
                slot.insert(i, (a, l, v));
                self.n_long += 1;
                self.note_insert(s, at(i), (a, l, v));
                return None;
            }
            (Err(_), None) => return None,
        };
        self.note(op);
        old
    }

    fn insert_raw(&mut self, a: K, l: u8, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        if nh.0 > NextHop::MAX_VALID {
            return Err(LpmError::NextHopTooLarge);
        }
        let l = l.min(K::BITS as u8);
        let a = a.masked(l);
        if let Some(old) = self.patch(a.top(DIRECT_BITS), a, l, nh.0) {
            return Ok(Some(NextHop(old)));
        }
        let old = self.set_control(a, l, Some(nh.0));
        if old == Some(nh.0) {
            return Ok(old.map(NextHop));
        }
        if let Err(e) = self.apply(a, l) {
            // Out of pool space: put the control entry back and rebuild,
            // which needs no more space than before.
            self.set_control(a, l, old);
            let _ = self.apply(a, l);
            return Err(e);
        }
        Ok(old.map(NextHop))
    }

    fn remove_raw(&mut self, a: K, l: u8) -> Option<NextHop> {
        let l = l.min(K::BITS as u8);
        let a = a.masked(l);
        let old = self.set_control(a, l, None)?;
        // A rebuild after a removal needs no more space than the table
        // already holds (freed blocks are reused first), so it cannot fail
        // in practice; if it ever did, the route is gone from the control
        // side and the next rebuild of the slot repairs the lookup side.
        let _ = self.apply(a, l);
        Some(NextHop(old))
    }

    /// Applies a batch of changes (`None`: remove) with the result of
    /// applying them one by one: routes of up to [`DIRECT_BITS`] bits one
    /// by one in order; longer routes sorted by direct slot (stable), each
    /// slot's control vector edited for all its changes and its subtree
    /// rebuilt once. Changes to different slots commute, and a short
    /// route's repaint rebuilds a slot from the vector as it is then, which
    /// the slot's own rebuild later brings up to date, so the result equals
    /// the one-by-one order. If a slot's rebuild runs out of pool space,
    /// its changes are undone and replayed one by one, so exactly the
    /// changes that one-by-one application refuses are refused.
    fn apply_batch(
        &mut self,
        ds: impl Iterator<Item = (K, u8, Option<NextHop>)>,
    ) -> Result<(), LpmError> {
        self.log_begin();
        let mut r = Ok(());
        let mut order = std::mem::take(&mut self.batch_order);
        let mut changes = std::mem::take(&mut self.batch_changes);
        order.clear();
        changes.clear();
        for (a, l, nh) in ds {
            let l = l.min(K::BITS as u8);
            let a = a.masked(l);
            if u32::from(l) <= DIRECT_BITS {
                let x = match nh {
                    Some(nh) => self.insert_raw(a, l, nh).map(|_| ()),
                    None => {
                        self.remove_raw(a, l);
                        Ok(())
                    }
                };
                if let Err(e) = x {
                    r = r.and(Err(e));
                }
                continue;
            }
            if nh.is_some_and(|nh| nh.0 > NextHop::MAX_VALID) {
                r = r.and(Err(LpmError::NextHopTooLarge));
                continue;
            }
            order.push(((a.top(DIRECT_BITS) as u64) << 32) | changes.len() as u64);
            changes.push(Change {
                addr: a,
                len: l,
                new: nh.map(|n| n.0),
                old: None,
            });
        }
        // (slot, index): by slot, and within a slot in batch order.
        sort_by_slot(&mut order, &mut self.batch_sorted);
        // A change costs a few cache misses (the slot's control line, then
        // its route vector and its subtree's root node, then the leaf or
        // child node where the change ends), which the sorted order lets
        // us prefetch: the control lines `FAR` changes ahead, what they
        // point to `NEAR` ahead, and the root node's leaf or child for the
        // change's address `CLOSE` ahead, by then in cache (issue 19,
        // sixth attempt: patch and repaint waited on that leaf).
        const FAR: usize = 16;
        const NEAR: usize = 8;
        const CLOSE: usize = 4;
        let (mut far, mut near, mut close) = (0, 0, 0);
        let mut i = 0;
        while let Some(&first) = order.get(i) {
            let s = (first >> 32) as usize;
            let run = order
                .get(i..)
                .unwrap_or(&[])
                .iter()
                .take_while(|&&k| k >> 32 == first >> 32)
                .count();
            while far < (i + run + FAR).min(order.len()) {
                if let Some(&k) = order.get(far) {
                    self.prefetch_slot((k >> 32) as usize);
                }
                far += 1;
            }
            while near < (i + run + NEAR).min(order.len()) {
                if let Some(&k) = order.get(near) {
                    self.prefetch_slot_data((k >> 32) as usize);
                }
                near += 1;
            }
            while close < (i + run + CLOSE).min(order.len()) {
                if let Some(&k) = order.get(close) {
                    if let Some(c) = changes.get(k as u32 as usize) {
                        self.prefetch_change((k >> 32) as usize, c.addr);
                    }
                }
                close += 1;
            }
            let mut changed = false;
            for &k in order.get(i..i + run).unwrap_or(&[]) {
                if let Some(c) = changes.get_mut(k as u32 as usize) {
                    // A next-hop change is patched in place while the
                    // subtree still matches the control vector (no other
                    // change of this slot is waiting for the rebuild).
                    if !changed {
                        if let Some(old) = c.new.and_then(|v| self.patch(s, c.addr, c.len, v)) {
                            c.old = Some(old);
                            continue;
                        }
                    }
                    c.old = self.set_control(c.addr, c.len, c.new);
                    if c.old != c.new && (changed || !self.repaint(s, c.addr, c.len)) {
                        changed = true;
                    }
                }
            }
            if changed {
                if let Err(e) = self.rebuild_slot(s) {
                    r = r.and(Err(e));
                    self.replay_slot(s, order.get(i..i + run).unwrap_or(&[]), &changes);
                }
            }
            i += run;
        }
        self.batch_order = order;
        self.batch_changes = changes;
        self.log_end(r);
        r
    }

    /// A next-hop change of the existing route `a/l` (longer than
    /// [`DIRECT_BITS`], in slot `s`) to `v`, made in place when the leaves
    /// allow it: the route has no longer route nested inside it (so every
    /// position it paints at its node is a leaf holding its value, and its
    /// value is no child's default), and those positions are one whole leaf
    /// run (the run starts at the route's first position, and the next
    /// leaf position of the node group after the route starts a run of its
    /// own). Then the change is one leaf write and the control entry's
    /// value, and the node bitmaps stay as they are. Returns the previous
    /// value, or `None` (nothing changed) when the subtree must be rebuilt.
    ///
    /// Adjacent runs may end up with equal values (the leaves are then not
    /// fully compressed); lookups read the same answers, and the next
    /// rebuild of the slot compresses them again. The other copy of a
    /// [`crate::publish`] pair copies the leaf and the route's value from
    /// this one (`replay.rs`), so they stay equal.
    fn patch(&mut self, s: usize, a: K, l: u8, v: u32) -> Option<u32> {
        if u32::from(l) <= DIRECT_BITS {
            return None;
        }
        let routes = &self.slots.get(s)?.long;
        let i = routes.binary_search_by_key(&(a, l), |r| (r.0, r.1)).ok()?;
        let old = routes.get(i)?.2;
        if old == v {
            return Some(old);
        }
        // Routes nested in a/l sort right after it.
        let last = a.last(l);
        if routes.get(i + 1).is_some_and(|r| r.0 <= last) {
            return None;
        }
        let (gb, g, c, span) = self.group_of(s, a, l)?;
        let leaf = self.whole_run(gb, 1 << g, c, span)?;
        let x = self.leaves.items.get_mut(leaf)?;
        if *x != old {
            return None;
        }
        *x = v;
        if let Some(r) = self.slots.get_mut(s).and_then(|x| x.long.get_mut(i)) {
            r.2 = v;
        }
        self.note(Op::LongSet {
            s: s as u32,
            i: i as u32,
            v,
        });
        self.note(Op::Range {
            leaf: true,
            start: leaf as u32,
            len: 1,
        });
        Some(old)
    }

    /// The node group of slot `s`'s subtree where the route `a/l` (longer
    /// than [`DIRECT_BITS`]) is painted: (index of its first node, group
    /// bits, the route's first position in the group, its positions), if
    /// every position on the way down is a child.
    fn group_of(&self, s: usize, a: K, l: u8) -> Option<(usize, u32, usize, usize)> {
        // The root group from the slot's control line, not from the direct
        // entry: they name the same node (`install` writes both), and the
        // line is already in cache, where the direct entry was one more
        // miss per change (issue 19, sixth attempt).
        let sub = self.slots.get(s)?.sub;
        if sub.nclass == NO_SUB {
            return None;
        }
        let (mut gb, mut off) = (sub.node as usize, DIRECT_BITS);
        for level in 0..Self::MAX_LEVELS {
            let g = Self::gbits(level);
            let lim = off + g + 6;
            let c = a.chunk(off, g + 6) as usize;
            if u32::from(l) <= lim {
                return Some((gb, g, c, 1usize << (lim - u32::from(l))));
            }
            let n = self.nodes.items.get(gb + (c >> 6))?;
            let b = (c & 63) as u32;
            if (n.vector >> b) & 1 == 0 {
                return None;
            }
            let rank = ((n.vector & super::upto(b)).count_ones() as usize).checked_sub(1)?;
            gb = n.base1 as usize + (rank << Self::gbits(level + 1));
            off = lim;
        }
        None
    }

    /// Brings the lookup side in line with the control vector after the
    /// route `a/l` (longer than [`DIRECT_BITS`], slot `s`) was added,
    /// changed or removed there, by repainting only the node group where
    /// the route ends: its positions take the route's value (or, once it
    /// is gone, the value of the longest route covering it), and that
    /// group's leaf runs are recomputed. The other groups keep their nodes;
    /// if the group's leaf count changed, the leaves after it in the slot's
    /// leaf block move and the nodes pointing at them are adjusted. Returns
    /// false, having changed nothing, when the subtree must be rebuilt
    /// instead: a route nested inside `a/l` (its positions are not all
    /// leaves, or its value is a child's default), no node group where
    /// `a/l` ends (a new level is needed), an empty vector (the slot goes
    /// back to a direct leaf), or a leaf block too small for the new runs.
    ///
    /// A group whose last route is removed keeps its node (all its
    /// positions then hold the covering value); the next rebuild of the
    /// slot drops it. Records the ranges it wrote, which the other copy of
    /// a [`crate::publish`] pair copies (`replay.rs`).
    fn repaint(&mut self, s: usize, a: K, l: u8) -> bool {
        self.try_repaint(s, a, l).is_some()
    }

    fn try_repaint(&mut self, s: usize, a: K, l: u8) -> Option<()> {
        if u32::from(l) <= DIRECT_BITS {
            return None;
        }
        let routes = &self.slots.get(s)?.long;
        if routes.is_empty() {
            return None;
        }
        let (nv, next) = match routes.binary_search_by_key(&(a, l), |r| (r.0, r.1)) {
            Ok(i) => (routes.get(i)?.2, i + 1),
            Err(i) => {
                // The longest route covering a/l sorts last among those
                // before it; none: the slot's inherited short route.
                let cover = routes
                    .get(..i)?
                    .iter()
                    .rev()
                    .find(|r| r.1 < l && a.masked(r.1) == r.0);
                let nv = match cover {
                    Some(r) => r.2,
                    None => self.slots.get(s)?.best,
                };
                (nv, i)
            }
        };
        // Routes nested in a/l sort right after it.
        let last = a.last(l);
        if routes.get(next).is_some_and(|r| r.0 <= last) {
            return None;
        }
        let (gb, g, c, span) = self.group_of(s, a, l)?;
        let sub = self.slots.get(s)?.sub;
        if sub.nclass == NO_SUB {
            return None;
        }
        if g == 0 {
            return self.repaint_node(s, sub, gb, c, span, nv);
        }
        let nn = 1usize << g;
        let npos = nn << 6;
        const INTERNAL: u32 = u32::MAX;
        // The group's current value per position (INTERNAL for children).
        let mut vals = std::mem::take(&mut self.scratch.vals);
        let mut fresh = std::mem::take(&mut self.scratch_leaves);
        let r = (|| {
            vals.clear();
            fresh.clear();
            let group = self.nodes.items.get(gb..gb + nn)?;
            let l0 = group.first()?.base0 as usize;
            let mut n_old = 0usize;
            for n in group {
                n_old += n.leafvec.count_ones() as usize;
                for b in 0..64u32 {
                    if (n.vector >> b) & 1 != 0 {
                        vals.push(INTERNAL);
                    } else {
                        let rank = (n.leafvec & super::upto(b)).count_ones() as usize;
                        let i = (n.base0 as usize + rank).checked_sub(1)?;
                        vals.push(*self.leaves.items.get(i)?);
                    }
                }
            }
            let range = vals.get_mut(c..c + span)?;
            if range.contains(&INTERNAL) {
                return None;
            }
            range.fill(nv);
            // New runs, as `build_node` makes them.
            let mut lv = [(0u64, 0u32); 4];
            let mut lvs = Vec::new();
            let lvs: &mut [(u64, u32)] = if nn <= lv.len() {
                &mut lv[..nn]
            } else {
                lvs.resize(nn, (0u64, 0u32));
                &mut lvs[..]
            };
            let mut prev = INTERNAL;
            for (w, x) in lvs.iter_mut().enumerate() {
                x.1 = fresh.len() as u32;
                for (b, &v) in vals.get(w << 6..(w << 6) + 64)?.iter().enumerate() {
                    if v != INTERNAL && v != prev {
                        x.0 |= 1u64 << b;
                        fresh.push(v);
                        prev = v;
                    }
                }
            }
            let n_new = fresh.len();
            let (lstart, lend) = (sub.leaf as usize, sub.leaf as usize + sub.llen as usize);
            let cap = lstart + (1usize << sub.lclass);
            let tail = l0 + n_old;
            let (nstart, nend) = (
                sub.node as usize,
                sub.node as usize + (1usize << sub.nclass),
            );
            if tail > lend
                || l0 < lstart
                || lend - n_old + n_new > cap
                || npos != vals.len()
                || cap > self.leaves.items.len()
                || nend > self.nodes.items.len()
            {
                return None;
            }
            if n_new != n_old {
                // Move the leaves after the group; nodes of the block whose
                // leaves come after the group's follow them.
                self.leaves
                    .items
                    .get_mut(lstart..cap)?
                    .copy_within(tail - lstart..lend - lstart, l0 + n_new - lstart);
                let nodes = self.nodes.items.get_mut(nstart..nend)?;
                for (k, n) in nodes.iter_mut().enumerate() {
                    let in_group = (k + nstart).wrapping_sub(gb) < nn;
                    if !in_group && n.base0 as usize >= tail {
                        n.base0 = (n.base0 as usize + n_new - n_old) as u32;
                    }
                }
                if let Some(x) = self.slots.get_mut(s) {
                    x.sub.llen = (lend - n_old + n_new - lstart) as u32;
                }
            }
            self.leaves
                .items
                .get_mut(l0..l0 + n_new)?
                .copy_from_slice(&fresh);
            for (n, &(leafvec, rel)) in self
                .nodes
                .items
                .get_mut(gb..gb + nn)?
                .iter_mut()
                .zip(lvs.iter())
            {
                n.leafvec = leafvec;
                n.base0 = l0 as u32 + rel;
            }
            // What changed: the group's leaves (and, if their count
            // changed, every leaf after them and every node of the block).
            let moved = n_new != n_old;
            let (leaves, nodes) = if moved {
                (lend - n_old + n_new - l0, (nstart, nend - nstart))
            } else {
                (n_new, (gb, nn))
            };
            self.note_rewrite(s, moved, l0, leaves, nodes);
            Some(())
        })();
        self.scratch.vals = vals;
        self.scratch_leaves = fresh;
        r
    }

    /// The leaf index of positions `c..c + span` of the node group at
    /// `nodes[gb..gb + nn]`, if they are all leaves and exactly one run.
    fn whole_run(&self, gb: usize, nn: usize, c: usize, span: usize) -> Option<usize> {
        let nodes = self.nodes.items.get(gb..gb + nn)?;
        let end = c + span;
        let mut p = c;
        // Every position of the range: a leaf, and no run starts after `c`.
        while p < end {
            let n = nodes.get(p >> 6)?;
            let b = p & 63;
            let k = (64 - b).min(end - p);
            let m = (u64::MAX >> (64 - k)) << b;
            let starts = n.leafvec & m;
            let expect = if p == c { 1u64 << b } else { 0 };
            if n.vector & m != 0 || starts != expect {
                return None;
            }
            p += k;
        }
        // The next leaf position of the group, if any, starts a run.
        while p < nn << 6 {
            let n = nodes.get(p >> 6)?;
            let b = p & 63;
            let leaves = !n.vector & (u64::MAX << b);
            if leaves != 0 {
                if (n.leafvec >> leaves.trailing_zeros()) & 1 == 0 {
                    return None;
                }
                break;
            }
            p = (p | 63) + 1;
        }
        let n = nodes.get(c >> 6)?;
        let rank = (n.leafvec & super::upto((c & 63) as u32)).count_ones() as usize;
        (n.base0 as usize + rank).checked_sub(1)
    }

    /// [`Self::try_repaint`] for a single node (no group): positions
    /// `c..c + span` of `nodes[at]` take the value `nv`. Only the runs from the
    /// range to the next leaf position after it change, so the new leaf
    /// runs come from bit operations on `leafvec` and two leaf reads: the
    /// run before the range (does the range continue it?) and the one at
    /// the next leaf position (does it now start a run?).
    fn repaint_node(
        &mut self,
        s: usize,
        sub: Sub,
        at: usize,
        c: usize,
        span: usize,
        nv: u32,
    ) -> Option<()> {
        let n = *self.nodes.items.get(at)?;
        let range = if span >= 64 {
            u64::MAX
        } else {
            ((1u64 << span) - 1) << c
        };
        if n.vector & range != 0 || c + span > 64 {
            return None;
        }
        let leafpos = !n.vector;
        let value = |p: u32| -> Option<u32> {
            let rank = (n.leafvec & super::upto(p)).count_ones() as usize;
            let i = (n.base0 as usize + rank).checked_sub(1)?;
            self.leaves.items.get(i).copied()
        };
        let before = leafpos & ((1u64 << c) - 1);
        let after = if c + span >= 64 {
            0
        } else {
            leafpos & (u64::MAX << (c + span))
        };
        // Does the range start a run, and does the next leaf position?
        let start = match before {
            0 => true,
            b => value(63 - b.leading_zeros())? != nv,
        };
        let q = (after != 0).then(|| after.trailing_zeros());
        let q_val = match q {
            Some(q) => Some(value(q)?),
            None => None,
        };
        let q_start = q_val.is_some_and(|v| v != nv);
        // Old runs starting in the range or at q are replaced by the new.
        let span_q = match q {
            Some(q) => super::upto(q) & !((1u64 << c) - 1),
            None => u64::MAX << c,
        };
        let a = (n.leafvec & ((1u64 << c) - 1)).count_ones() as usize;
        let b_old = (n.leafvec & span_q).count_ones() as usize;
        let mut new_leafvec = n.leafvec & !span_q;
        let mut fresh = [0u32; 2];
        let mut b_new = 0;
        if start {
            new_leafvec |= 1u64 << c;
            fresh[0] = nv;
            b_new = 1;
        }
        if let (true, Some(q), Some(v)) = (q_start, q, q_val) {
            new_leafvec |= 1u64 << q;
            if let Some(x) = fresh.get_mut(b_new) {
                *x = v;
            }
            b_new += 1;
        }
        let n_old = n.leafvec.count_ones() as usize;
        let l0 = n.base0 as usize;
        let (lstart, lend) = (sub.leaf as usize, sub.leaf as usize + sub.llen as usize);
        let cap = lstart + (1usize << sub.lclass);
        let (nstart, nend) = (
            sub.node as usize,
            sub.node as usize + (1usize << sub.nclass),
        );
        let tail = l0 + n_old;
        let (from, to) = (l0 + a + b_old, l0 + a + b_new);
        if l0 < lstart
            || tail > lend
            || from > lend
            || lend - b_old + b_new > cap
            || cap > self.leaves.items.len()
            || nend > self.nodes.items.len()
        {
            return None;
        }
        if b_new != b_old {
            self.leaves
                .items
                .get_mut(lstart..cap)?
                .copy_within(from - lstart..lend - lstart, to - lstart);
            for (k, x) in self
                .nodes
                .items
                .get_mut(nstart..nend)?
                .iter_mut()
                .enumerate()
            {
                if k + nstart != at && x.base0 as usize >= tail {
                    x.base0 = (x.base0 as usize + b_new - b_old) as u32;
                }
            }
            if let Some(x) = self.slots.get_mut(s) {
                x.sub.llen = (lend - b_old + b_new - lstart) as u32;
            }
        }
        self.leaves
            .items
            .get_mut(l0 + a..l0 + a + b_new)?
            .copy_from_slice(fresh.get(..b_new)?);
        if let Some(x) = self.nodes.items.get_mut(at) {
            x.leafvec = new_leafvec;
        }
        // What changed: the node's new runs (and, if their count changed,
        // every leaf after them and every node of the block).
        let moved = b_new != b_old;
        let (leaves, nodes) = if moved {
            (lend - b_old + b_new - (l0 + a), (nstart, nend - nstart))
        } else {
            (b_new, (at, 1))
        };
        self.note_rewrite(s, moved, l0 + a, leaves, nodes);
        Some(())
    }

    /// Prefetches slot `s`'s control line (route vector header, subtree
    /// blocks, inherited route). The direct entry is not read by a change
    /// (`group_of` takes the root from the line), only written by a
    /// rebuild, so it is not prefetched.
    #[inline(always)]
    fn prefetch_slot(&self, s: usize) {
        prefetch(self.slots.as_ptr().wrapping_add(s));
    }

    /// Prefetches what slot `s`'s entries point to: its route vector and
    /// its subtree's first node and leaves (read by the rebuild, and
    /// rewritten when the blocks are reused).
    #[inline(always)]
    fn prefetch_slot_data(&self, s: usize) {
        let Some(slot) = self.slots.get(s) else {
            return;
        };
        // The whole vector, up to 16 lines: the binary search of a change
        // (or the patch's) otherwise waits for each line it probes (the
        // patch spent 3/4 of its time on one compare).
        let p = slot.long.as_ptr().cast::<u8>();
        let bytes = std::mem::size_of_val(slot.long.as_slice());
        for off in (0..bytes.min(16 * 64)).step_by(64) {
            prefetch(p.wrapping_add(off));
        }
        prefetch(p.wrapping_add(bytes.saturating_sub(1)));
        let x = slot.sub;
        if x.nclass != NO_SUB {
            prefetch(self.nodes.items.as_ptr().wrapping_add(x.node as usize));
            prefetch(self.leaves.items.as_ptr().wrapping_add(x.leaf as usize));
        }
    }

    /// Prefetches where a change to a route of slot `s` at address `a`
    /// leaves the subtree's root node group: the leaf that `patch` and
    /// `repaint` read, or the child node that `group_of` goes on to. Reads
    /// the root node, which [`Self::prefetch_slot_data`] fetched earlier.
    #[inline(always)]
    fn prefetch_change(&self, s: usize, a: K) {
        let Some(sub) = self.slots.get(s).map(|x| x.sub) else {
            return;
        };
        if sub.nclass == NO_SUB {
            return;
        }
        let Some(n) = self.nodes.items.get(Self::root_of(a, sub.node) as usize) else {
            return;
        };
        let ch = DIRECT_BITS + K::ROOT_GROUP;
        let gn = Self::gbits(1);
        let (is_child, child, leaf) = n.ranks(a.chunk6(ch), gn, a.chunk(ch + 6, gn));
        if is_child {
            prefetch_node(self.nodes.items.as_ptr().wrapping_add(child as usize));
        } else {
            prefetch(self.leaves.items.as_ptr().wrapping_add(leaf as usize));
        }
    }

    /// After slot `s`'s batched rebuild failed: undoes its changes (keys
    /// `run` into `changes`), rebuilds it as it was, and applies them one by
    /// one, each refused on its own if the pools are full.
    fn replay_slot(&mut self, s: usize, run: &[u64], changes: &[Change<K>]) {
        for &k in run.iter().rev() {
            if let Some(c) = changes.get(k as u32 as usize) {
                self.set_control(c.addr, c.len, c.old);
            }
        }
        let _ = self.rebuild_slot(s);
        for &k in run {
            if let Some(c) = changes.get(k as u32 as usize) {
                match c.new {
                    Some(v) => {
                        let _ = self.insert_raw(c.addr, c.len, NextHop(v));
                    }
                    None => {
                        self.remove_raw(c.addr, c.len);
                    }
                }
            }
        }
    }

    /// Number of routes.
    fn count(&self) -> usize {
        self.n_short + self.n_long
    }

    /// The value of the short route `a/l` (`l <= DIRECT_BITS`; host bits
    /// of `a` ignored), if there is one.
    #[inline(always)]
    fn short_get(&self, a: K, l: u8) -> Option<u32> {
        self.short
            .get(short_index(a, l))
            .copied()
            .filter(|&v| v != NO_ROUTE)
    }

    /// Every route: those of up to [`DIRECT_BITS`] bits by length, then
    /// address; then the longer ones in (address, length) order.
    pub fn iter(&self) -> impl Iterator<Item = (K, u8, NextHop)> + '_ {
        self.short
            .iter()
            .enumerate()
            .filter(|&(_, &v)| v != NO_ROUTE)
            .map(|(i, &v)| {
                let (a, l) = short_prefix::<K>(i);
                (a, l, NextHop(v))
            })
            .chain(
                self.slots
                    .iter()
                    .flat_map(|x| x.long.iter())
                    .map(|&(a, l, v)| (a, l, NextHop(v))),
            )
    }
}

/// One change to a route longer than [`DIRECT_BITS`] in a batch.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Change<K> {
    addr: K,
    len: u8,
    /// The new value (`None`: remove) and, once applied, the previous one.
    new: Option<u32>,
    old: Option<u32>,
}

/// Sorts batch keys `(slot << 32) | index`, which are distinct and come
/// in increasing index order, as `sort_unstable` would: a stable LSD radix
/// sort on the slot (two passes of 9 bits; slots have `DIRECT_BITS`),
/// keeping the index order within a slot. `tmp` is reused scratch. The
/// comparison sort was 6 % of a 10,000-change batch's first application
/// (issue 19, sixth attempt); a small batch keeps it.
fn sort_by_slot(keys: &mut Vec<u64>, tmp: &mut Vec<u64>) {
    const BITS: u32 = DIRECT_BITS.div_ceil(2);
    const BUCKETS: usize = 1 << BITS;
    if keys.len() < 256 {
        keys.sort_unstable();
        return;
    }
    tmp.clear();
    tmp.resize(keys.len(), 0);
    for pass in 0..2 {
        let shift = 32 + pass * BITS;
        let digit = |k: u64| ((k >> shift) as usize) & (BUCKETS - 1);
        let mut at = [0usize; BUCKETS];
        for &k in keys.iter() {
            if let Some(c) = at.get_mut(digit(k)) {
                *c += 1;
            }
        }
        let mut sum = 0;
        for c in at.iter_mut() {
            sum += std::mem::replace(c, sum);
        }
        for &k in keys.iter() {
            if let Some(c) = at.get_mut(digit(k)) {
                if let Some(x) = tmp.get_mut(*c) {
                    *x = k;
                }
                *c += 1;
            }
        }
        std::mem::swap(keys, tmp);
    }
}

/// Sets `best`/`best_len` over the direct slots that `a/l` covers
/// (`l <= DIRECT_BITS`); called in (address, length) order.
fn paint<K: Key>(slots: &mut [Slot<K>], a: K, l: u8, v: u32) {
    let first = a.top(DIRECT_BITS);
    let last = a.last(l).top(DIRECT_BITS);
    let n = (last + 1).saturating_sub(first);
    for x in slots.iter_mut().skip(first).take(n) {
        x.best = v;
        x.best_len = l;
    }
}

/// Replaces slot `s`'s subtree by one built from `routes` (the slot's routes
/// longer than `DIRECT_BITS`, sorted), or by a direct leaf if there are none.
fn install<K: Key>(t: &mut Poptrie<K>, s: usize, routes: &[(K, u8, u32)]) -> Result<(), LpmError> {
    let Some((old, default)) = t.slots.get(s).map(|x| (x.sub, x.best)) else {
        return Ok(());
    };
    if old.nclass != NO_SUB {
        t.nodes.free(old.node, old.nclass);
        t.leaves.free(old.leaf, old.lclass);
        t.note(Op::Free {
            leaf: false,
            start: old.node,
            class: old.nclass,
        });
        t.note(Op::Free {
            leaf: true,
            start: old.leaf,
            class: old.lclass,
        });
    }
    let mut sub = EMPTY_SUB;
    let entry = if routes.is_empty() {
        LEAF | default
    } else {
        let mut nodes = std::mem::take(&mut t.scratch_nodes);
        let mut leaves = std::mem::take(&mut t.scratch_leaves);
        let mut sc = std::mem::take(&mut t.scratch);
        nodes.clear();
        leaves.clear();
        nodes.resize(1 << K::ROOT_GROUP, Node::default());
        if K::ROOT_GROUP == 0 && K::GROUP == 0 {
            build_node_flat(routes, DIRECT_BITS, default, &mut nodes, &mut leaves, 0);
        } else {
            build_node(
                routes,
                DIRECT_BITS,
                0,
                default,
                &mut nodes,
                &mut leaves,
                0,
                &mut sc,
            );
        }
        t.scratch = sc;
        let r = place(t, &nodes, &leaves);
        t.scratch_nodes = nodes;
        t.scratch_leaves = leaves;
        sub = r?;
        sub.node
    };
    if let (Some(d), Some(x)) = (t.direct.get_mut(s), t.slots.get_mut(s)) {
        *d = entry;
        x.sub = sub;
    }
    t.note(Op::Slot(s as u32));
    Ok(())
}

/// Copies a subtree built with block-relative indices into fresh blocks.
fn place<K: Key>(t: &mut Poptrie<K>, nodes: &[Node], leaves: &[u32]) -> Result<Sub, LpmError> {
    let (ns, nc) = t.nodes.alloc(nodes.len())?;
    t.note(Op::Alloc {
        leaf: false,
        start: ns,
        class: nc,
    });
    let (ls, lc) = match t.leaves.alloc(leaves.len()) {
        Ok(x) => x,
        Err(e) => {
            t.nodes.free(ns, nc);
            t.note(Op::Free {
                leaf: false,
                start: ns,
                class: nc,
            });
            return Err(e);
        }
    };
    t.note(Op::Alloc {
        leaf: true,
        start: ls,
        class: lc,
    });
    for (dst, src) in t.nodes.block_mut(ns, nodes.len()).iter_mut().zip(nodes) {
        *dst = Node {
            base0: src.base0.wrapping_add(ls),
            base1: src.base1.wrapping_add(ns),
            ..*src
        };
    }
    t.leaves.block_mut(ls, leaves.len()).copy_from_slice(leaves);
    t.note(Op::Range {
        leaf: false,
        start: ns,
        len: nodes.len() as u32,
    });
    t.note(Op::Range {
        leaf: true,
        start: ls,
        len: leaves.len() as u32,
    });
    Ok(Sub {
        node: ns,
        leaf: ls,
        nclass: nc,
        lclass: lc,
        llen: leaves.len() as u32,
    })
}

impl Poptrie<u32> {
    /// Builds an IPv4 table from routes in one pass.
    pub fn from_routes(
        routes: impl IntoIterator<Item = (Prefix4, NextHop)>,
    ) -> Result<Self, LpmError> {
        Self::build(
            routes
                .into_iter()
                .map(|(p, nh)| (p.addr_bits(), p.len(), nh)),
        )
    }
}

impl Poptrie<u128> {
    /// Builds an IPv6 table from routes in one pass.
    pub fn from_routes(
        routes: impl IntoIterator<Item = (Prefix6, NextHop)>,
    ) -> Result<Self, LpmError> {
        Self::build(
            routes
                .into_iter()
                .map(|(p, nh)| (p.addr_bits(), p.len(), nh)),
        )
    }
}

/// A publication delta as (address, length, value; `None` removes).
fn raw<P: Copy, K>(d: &Delta<P>, f: impl Fn(P) -> (K, u8)) -> (K, u8, Option<NextHop>) {
    match *d {
        Delta::Insert(p, nh) => {
            let (a, l) = f(p);
            (a, l, Some(nh))
        }
        Delta::Remove(p) => {
            let (a, l) = f(p);
            (a, l, None)
        }
    }
}

impl LpmMut<Prefix4> for Poptrie<u32> {
    fn insert(&mut self, p: Prefix4, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        self.log_forget();
        self.insert_raw(p.addr_bits(), p.len(), nh)
    }
    fn apply_all(&mut self, deltas: &[Delta<Prefix4>]) -> Result<(), LpmError> {
        self.apply_batch(deltas.iter().map(|d| raw(d, |p| (p.addr_bits(), p.len()))))
    }
    /// Copies what `done`'s [`LpmMut::apply_all`] of `deltas` wrote, when
    /// `done` is this table's other copy one batch ahead (`replay.rs`);
    /// else applies `deltas`.
    fn apply_again(&mut self, deltas: &[Delta<Prefix4>], done: &Self) -> Result<(), LpmError> {
        match self.again(done) {
            Some(r) => r,
            None => self.apply_all(deltas),
        }
    }
    fn remove(&mut self, p: Prefix4) -> Option<NextHop> {
        self.log_forget();
        self.remove_raw(p.addr_bits(), p.len())
    }
    fn len(&self) -> usize {
        self.count()
    }
}

impl LpmMut<Prefix6> for Poptrie<u128> {
    fn insert(&mut self, p: Prefix6, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        self.log_forget();
        self.insert_raw(p.addr_bits(), p.len(), nh)
    }
    fn apply_all(&mut self, deltas: &[Delta<Prefix6>]) -> Result<(), LpmError> {
        self.apply_batch(deltas.iter().map(|d| raw(d, |p| (p.addr_bits(), p.len()))))
    }
    /// Copies what `done`'s [`LpmMut::apply_all`] of `deltas` wrote, when
    /// `done` is this table's other copy one batch ahead (`replay.rs`);
    /// else applies `deltas`.
    fn apply_again(&mut self, deltas: &[Delta<Prefix6>], done: &Self) -> Result<(), LpmError> {
        match self.again(done) {
            Some(r) => r,
            None => self.apply_all(deltas),
        }
    }
    fn remove(&mut self, p: Prefix6) -> Option<NextHop> {
        self.log_forget();
        self.remove_raw(p.addr_bits(), p.len())
    }
    fn len(&self) -> usize {
        self.count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Lpm, Poptrie4};
    use std::cell::Cell;

    thread_local! {
        /// Subtree rebuilds on this thread (tests run one per thread).
        pub(super) static REBUILDS: Cell<usize> = const { Cell::new(0) };
    }

    fn rebuilds() -> usize {
        REBUILDS.with(Cell::get)
    }

    fn p(a: u32, l: u8) -> Prefix4 {
        Prefix4::new(a, l).unwrap()
    }

    #[test]
    fn radix_sort_orders_batches_as_the_comparison_sort() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut tmp = Vec::new();
        for n in [0, 1, 255, 256, 1000, 10_000] {
            // Few slots (many changes per slot) and all of them.
            for slots in [3u64, 1 << DIRECT_BITS] {
                let mut keys: Vec<u64> = (0..n as u64)
                    .map(|i| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        ((x % slots) << 32) | i
                    })
                    .collect();
                let mut want = keys.clone();
                want.sort_unstable();
                sort_by_slot(&mut keys, &mut tmp);
                assert!(keys == want, "{n} keys over {slots} slots");
            }
        }
    }

    #[test]
    fn short_routes_have_one_entry_each() {
        // Every short prefix has its own entry, and the entry gives the
        // prefix back (`iter` reads them so).
        let mut seen = vec![false; SHORT_SLOTS];
        for l in 0..=DIRECT_BITS as u8 {
            for top in 0..1usize << l {
                let a4 = u32::from_top(top, u32::from(l));
                let a6 = u128::from_top(top, u32::from(l));
                let i = short_index(a4, l);
                assert_eq!(i, short_index(a6, l));
                assert!(
                    !std::mem::replace(&mut seen[i], true),
                    "/{l} entry {i} shared"
                );
                assert_eq!(short_prefix::<u32>(i), (a4, l));
                assert_eq!(short_prefix::<u128>(i), (a6, l));
                // Host bits do not move the entry.
                assert_eq!(short_index(a4 | !u32::MAX.masked(l), l), i);
            }
        }
        assert_eq!(short_index(0xffff_ffffu32, 0), 1);
        assert_eq!(seen.iter().filter(|&&x| x).count(), SHORT_SLOTS - 1);
        // Routes and their count through the public side.
        let mut t = Poptrie4::new();
        let p = |a: u32, l: u8| Prefix4::new(a, l).expect("len");
        t.insert(p(0, 0), NextHop(1)).expect("insert");
        t.insert(p(0x0a00_0000, 8), NextHop(2)).expect("insert");
        t.insert(p(0x0a40_0000, 18), NextHop(3)).expect("insert");
        assert_eq!(
            t.insert(p(0x0a00_0000, 8), NextHop(4)),
            Ok(Some(NextHop(2)))
        );
        assert_eq!(t.len(), 3);
        assert_eq!(t.lookup(0x0a40_0001), Some(NextHop(3)));
        assert_eq!(t.lookup(0x0a80_0001), Some(NextHop(4)));
        assert_eq!(t.lookup(0x0b00_0001), Some(NextHop(1)));
        let mut all: Vec<_> = t.iter().collect();
        all.sort_unstable();
        assert_eq!(
            all,
            [
                (0, 0, NextHop(1)),
                (0x0a00_0000, 8, NextHop(4)),
                (0x0a40_0000, 18, NextHop(3))
            ]
        );
        assert_eq!(t.remove(p(0x0a00_0000, 8)), Some(NextHop(4)));
        assert_eq!(t.remove(p(0x0a00_0000, 8)), None);
        assert_eq!(t.len(), 2);
        assert_eq!(t.lookup(0x0a80_0001), Some(NextHop(1)));
    }

    #[test]
    fn slot_control_is_one_cache_line() {
        // A change reads the whole control entry of its slot: one line,
        // one miss, one prefetch.
        assert_eq!(std::mem::size_of::<Slot<u32>>(), 64);
        assert_eq!(std::mem::align_of::<Slot<u32>>(), 64);
        assert_eq!(std::mem::size_of::<Slot<u128>>(), 64);
        let t = Poptrie4::new();
        assert_eq!(t.slots.as_ptr() as usize % 64, 0);
    }

    #[test]
    fn next_hop_change_patches_one_leaf_in_place() {
        let mut t = Poptrie4::from_routes([
            (p(0x0a00_0000, 24), NextHop(1)),
            (p(0x0a00_0100, 24), NextHop(2)),
            (p(0x0a00_0200, 24), NextHop(3)),
        ])
        .unwrap();
        let (nodes, leaves) = (t.nodes.items.clone(), t.leaves.items.clone());
        let r0 = rebuilds();
        assert_eq!(
            t.insert(p(0x0a00_0100, 24), NextHop(9)).unwrap(),
            Some(NextHop(2))
        );
        // Same nodes, one leaf rewritten.
        assert_eq!(t.nodes.items, nodes);
        let diff = |t: &Poptrie4| {
            leaves
                .iter()
                .zip(&t.leaves.items)
                .filter(|(a, b)| a != b)
                .count()
        };
        assert_eq!(diff(&t), 1);
        assert_eq!(t.lookup(0x0a00_0105), Some(NextHop(9)));
        // Through a batch too, and next to a run of the same value (the
        // runs stay apart: still in place).
        t.apply_all(&[Delta::Insert(p(0x0a00_0200, 24), NextHop(9))])
            .unwrap();
        assert_eq!(t.nodes.items, nodes);
        assert_eq!(diff(&t), 2);
        assert_eq!(t.lookup(0x0a00_02ff), Some(NextHop(9)));
        assert_eq!(t.lookup(0x0a00_0001), Some(NextHop(1)));
        assert_eq!(t.lookup(0x0a00_0301), None);
        assert_eq!(t.iter().filter(|r| r.2 == NextHop(9)).count(), 2);
        assert_eq!(rebuilds(), r0, "no subtree rebuilt");
    }

    #[test]
    fn shared_runs_and_nested_routes_are_rebuilt() {
        // Two neighbours with the same next hop share one leaf: changing
        // one must not change the other.
        let mut t = Poptrie4::from_routes([
            (p(0x0a00_0000, 24), NextHop(1)),
            (p(0x0a00_0100, 24), NextHop(1)),
        ])
        .unwrap();
        t.insert(p(0x0a00_0100, 24), NextHop(5)).unwrap();
        assert_eq!(t.lookup(0x0a00_0001), Some(NextHop(1)));
        assert_eq!(t.lookup(0x0a00_0101), Some(NextHop(5)));
        // A route with a longer one inside: its value is that child's
        // default, so the change must reach below the node.
        t.insert(p(0x0a00_0180, 25), NextHop(7)).unwrap();
        t.insert(p(0x0a00_0180, 28), NextHop(8)).unwrap();
        t.apply_all(&[Delta::Insert(p(0x0a00_0180, 25), NextHop(6))])
            .unwrap();
        t.insert(p(0x0a00_0100, 24), NextHop(4)).unwrap();
        assert_eq!(t.lookup(0x0a00_0101), Some(NextHop(4)));
        assert_eq!(t.lookup(0x0a00_01a1), Some(NextHop(6)));
        assert_eq!(t.lookup(0x0a00_0181), Some(NextHop(8)));
        // A route covering the slot's default: the default run is shared.
        t.insert(p(0x0a00_0000, 16), NextHop(1)).unwrap();
        t.insert(p(0x0a00_0000, 24), NextHop(2)).unwrap();
        assert_eq!(t.lookup(0x0a00_0001), Some(NextHop(2)));
        assert_eq!(t.lookup(0x0a00_0201), Some(NextHop(1)));
    }

    #[test]
    fn inserts_and_removes_repaint_one_node() {
        let mut t = Poptrie4::from_routes([
            (p(0x0a00_0000, 24), NextHop(1)),
            (p(0x0a00_0200, 24), NextHop(3)),
            (p(0x0a00_1000, 20), NextHop(4)),
            (p(0x0a00_1100, 28), NextHop(5)),
        ])
        .unwrap();
        let sub = t.slots[0x0a00_0000 >> 14].sub;
        let vectors: Vec<u64> = t.nodes.items.iter().map(|n| n.vector).collect();
        let r0 = rebuilds();
        // A new /24 between two others: three more leaf runs in the root,
        // the child's leaves move up.
        t.apply_all(&[Delta::Insert(p(0x0a00_0100, 24), NextHop(2))])
            .unwrap();
        let same = |t: &Poptrie4| {
            let x = t.slots[0x0a00_0000 >> 14].sub;
            (x.node, x.leaf) == (sub.node, sub.leaf)
                && t.nodes
                    .items
                    .iter()
                    .map(|n| n.vector)
                    .eq(vectors.iter().copied())
        };
        assert!(same(&t), "repainted in place");
        let want = [
            (0x0a00_0001, Some(1)),
            (0x0a00_0101, Some(2)),
            (0x0a00_0201, Some(3)),
            (0x0a00_0301, None),
            (0x0a00_1001, Some(4)),
            (0x0a00_1101, Some(5)),
            (0x0a00_1111, Some(4)),
        ];
        let check = |t: &Poptrie4, want: &[(u32, Option<u32>)]| {
            for &(a, nh) in want {
                assert_eq!(t.lookup(a), nh.map(NextHop), "{a:#x}");
                let mut out = [None];
                t.lookup_batch(&[a], &mut out);
                assert_eq!(out[0], nh.map(NextHop), "batch {a:#x}");
            }
        };
        check(&t, &want);
        // Removals fall back to the covering route, also in the child.
        t.remove(p(0x0a00_0200, 24));
        t.apply_all(&[Delta::Remove(p(0x0a00_1100, 28))]).unwrap();
        assert!(same(&t), "repainted in place");
        check(
            &t,
            &[
                (0x0a00_0101, Some(2)),
                (0x0a00_0201, None),
                (0x0a00_1101, Some(4)),
                (0x0a00_1001, Some(4)),
            ],
        );
        assert_eq!(rebuilds(), r0, "no subtree rebuilt");
        // A route needing a new level is rebuilt.
        t.insert(p(0x0a00_0140, 26), NextHop(6)).unwrap();
        assert_eq!(rebuilds(), r0 + 1);
        check(&t, &[(0x0a00_0141, Some(6)), (0x0a00_0101, Some(2))]);
    }
}

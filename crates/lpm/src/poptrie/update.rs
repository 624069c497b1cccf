//! The write side: the control entries (hash map of short routes, sorted
//! per-slot vectors of long ones) are the truth; the direct array and the
//! subtrees are derived from them. An update to a prefix longer than
//! [`DIRECT_BITS`] rebuilds the one subtree under its direct slot; a shorter
//! prefix repaints the direct slots it covers and rebuilds the subtrees of
//! those slots whose inherited route changed. Removal therefore always falls
//! back to the covering route, whatever was inserted in between.

use std::collections::HashMap;

use base::{Prefix4, Prefix6};

use super::pool::{Pool, WORDS};
use super::{
    has_popcnt, Node, Poptrie, Slot, DIRECT_BITS, LEAF, NODE_WORDS, NO_LEN, NO_ROUTE, NO_SUB,
    NO_WIDE,
};
use crate::key::Key;
use crate::{LpmError, LpmMut, NextHop};

/// A route under a direct slot: address, length, value.
pub(crate) type Route<K> = (K, u8, u32);

/// A slot's routes, sorted: a few inline (in the slot's cache line), more
/// on the heap. A slot that spilled to the heap stays there (no
/// allocation when a route flaps at the boundary).
#[derive(Clone, Debug)]
pub(crate) enum Routes<K: Key> {
    Inline(u8, K::InlineRoutes),
    Heap(Vec<Route<K>>),
}

impl<K: Key> Default for Routes<K> {
    fn default() -> Self {
        Routes::Inline(0, K::InlineRoutes::default())
    }
}

impl<K: Key> Routes<K> {
    pub(crate) fn as_slice(&self) -> &[Route<K>] {
        match self {
            Routes::Inline(n, a) => a.as_ref().get(..usize::from(*n)).unwrap_or(&[]),
            Routes::Heap(v) => v,
        }
    }

    fn get_mut(&mut self, i: usize) -> Option<&mut Route<K>> {
        match self {
            Routes::Inline(n, a) => a.as_mut().get_mut(..usize::from(*n))?.get_mut(i),
            Routes::Heap(v) => v.get_mut(i),
        }
    }

    fn insert(&mut self, i: usize, r: Route<K>) {
        match self {
            Routes::Inline(n, a) => {
                let len = usize::from(*n);
                let a = a.as_mut();
                if len < a.len() && i <= len {
                    if let Some(tail) = a.get_mut(i..=len) {
                        tail.rotate_right(1);
                        if let Some(x) = tail.first_mut() {
                            *x = r;
                        }
                        *n += 1;
                    }
                } else {
                    let mut v = Vec::with_capacity((len + 1).max(8));
                    v.extend_from_slice(a.get(..len).unwrap_or(&[]));
                    v.insert(i.min(len), r);
                    *self = Routes::Heap(v);
                }
            }
            Routes::Heap(v) => v.insert(i.min(v.len()), r),
        }
    }

    fn remove(&mut self, i: usize) -> Option<Route<K>> {
        match self {
            Routes::Inline(n, a) => {
                let len = usize::from(*n);
                let tail = a.as_mut().get_mut(i..len)?;
                let r = *tail.first()?;
                tail.rotate_left(1);
                *n -= 1;
                Some(r)
            }
            Routes::Heap(v) => (i < v.len()).then(|| v.remove(i)),
        }
    }

    fn push(&mut self, r: Route<K>) {
        let n = self.as_slice().len();
        self.insert(n, r);
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Routes::Inline(..) => 0,
            Routes::Heap(v) => v.capacity() * std::mem::size_of::<Route<K>>(),
        }
    }
}

impl<K: Key> Slot<K> {
    fn empty() -> Self {
        Slot {
            best: NO_ROUTE,
            best_len: NO_LEN,
            class: NO_SUB,
            block: 0,
            nodes: 0,
            wide: NO_WIDE,
            routes: Routes::default(),
        }
    }
}

/// Builds the node at `nodes[at]` for the bit offset `depth`, from the
/// routes inside it (all longer than `depth`, sorted by (address, length)),
/// with `default` as the value of positions no route covers. Children are
/// appended to `nodes` as one contiguous run, leaves to `leaves`.
fn build_node<K: Key>(
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
        build_node(mine, lim, d, nodes, leaves, child);
        child += 1;
    }
}

impl<K: Key> Default for Poptrie<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Key> Poptrie<K> {
    /// An empty table (allocates the 1 MiB direct array and the per-slot
    /// control array).
    pub fn new() -> Self {
        let n = 1usize << DIRECT_BITS;
        Poptrie {
            direct: vec![LEAF | NO_ROUTE; n],
            pool: Pool::new(),
            short: HashMap::new(),
            slots: vec![Slot::empty(); n],
            n_long: 0,
            n_nodes: 0,
            scratch_nodes: Vec::new(),
            scratch_leaves: Vec::new(),
            scratch_wide: Vec::new(),
            popcnt: has_popcnt(),
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
        t.short.reserve(dedup.len() / 16);
        // (address, length) order is a valid paint order: a covering route
        // sorts before the routes it covers.
        for &(a, l, v) in &dedup {
            if u32::from(l) <= DIRECT_BITS {
                paint(&mut t.slots, a, l, v);
                t.short.insert((a, l), v);
            } else if let Some(slot) = t.slots.get_mut(a.top(DIRECT_BITS)) {
                slot.routes.push((a, l, v));
                t.n_long += 1;
            }
        }
        for (d, b) in t.direct.iter_mut().zip(&t.slots) {
            *d = LEAF | b.best;
        }
        for s in 0..t.slots.len() {
            if t.slots
                .get(s)
                .is_some_and(|x| !x.routes.as_slice().is_empty())
            {
                t.rebuild_slot(s)?;
            }
        }
        Ok(t)
    }

    /// Rebuilds the subtree of direct slot `s` from its long routes.
    fn rebuild_slot(&mut self, s: usize) -> Result<(), LpmError> {
        // `install` does not read the routes, so lend them out (a move of
        // the inline array or the vector header, no allocation).
        let Some(v) = self.slots.get_mut(s).map(|x| std::mem::take(&mut x.routes)) else {
            return Ok(());
        };
        let r = install(self, s, v.as_slice());
        if let Some(slot) = self.slots.get_mut(s) {
            slot.routes = v;
        }
        r
    }

    /// Brings slot `s` in line with `best[s]` after a short route changed.
    fn refresh(&mut self, s: usize) -> Result<(), LpmError> {
        match self.slots.get(s) {
            Some(x) if x.class != NO_SUB => self.rebuild_slot(s),
            Some(x) => {
                if let Some(d) = self.direct.get_mut(s) {
                    *d = LEAF | x.best;
                }
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// Applies the map change for `(a, l)` to the lookup structures.
    fn apply(&mut self, a: K, l: u8) -> Result<(), LpmError> {
        let first = a.top(DIRECT_BITS);
        if u32::from(l) > DIRECT_BITS {
            return self.rebuild_slot(first);
        }
        let last = a.last(l).top(DIRECT_BITS);
        // The route of length <= l that now covers the prefix: itself if
        // present, else the longest shorter route covering it.
        let (v, vl) = match self.short.get(&(a, l)) {
            Some(&v) => (v, l),
            None => (0..l)
                .rev()
                .find_map(|m| self.short.get(&(a.masked(m), m)).map(|&v| (v, m)))
                .unwrap_or((NO_ROUTE, NO_LEN)),
        };
        for s in first..=last {
            let Some(x) = self.slots.get_mut(s) else {
                break;
            };
            // Slots owned by a longer route keep it; the others take `v`.
            let owned_by_longer = x.best_len != NO_LEN && x.best_len > l;
            if owned_by_longer || (x.best, x.best_len) == (v, vl) {
                continue;
            }
            x.best = v;
            x.best_len = vl;
            self.refresh(s)?;
        }
        Ok(())
    }

    /// Sets the control entry of `a/l` (`Some`) or removes it (`None`);
    /// returns the previous value.
    fn set_control(&mut self, a: K, l: u8, v: Option<u32>) -> Option<u32> {
        if u32::from(l) <= DIRECT_BITS {
            return match v {
                Some(v) => self.short.insert((a, l), v),
                None => self.short.remove(&(a, l)),
            };
        }
        let slot = &mut self.slots.get_mut(a.top(DIRECT_BITS))?.routes;
        match (
            slot.as_slice()
                .binary_search_by_key(&(a, l), |r| (r.0, r.1)),
            v,
        ) {
            (Ok(i), Some(v)) => slot.get_mut(i).map(|r| std::mem::replace(&mut r.2, v)),
            (Ok(i), None) => {
                self.n_long -= 1;
                slot.remove(i).map(|r| r.2)
            }
            (Err(i), Some(v)) => {
                slot.insert(i, (a, l, v));
                self.n_long += 1;
                None
            }
            (Err(_), None) => None,
        }
    }

    fn insert_raw(&mut self, a: K, l: u8, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        if nh.0 > NextHop::MAX_VALID {
            return Err(LpmError::NextHopTooLarge);
        }
        let l = l.min(K::BITS as u8);
        let a = a.masked(l);
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

    /// Starts loading the control slot and direct entry a change of a
    /// route at `a` will touch ([`LpmMut::prefetch`]).
    fn prefetch_raw(&self, a: K) {
        let s = a.top(DIRECT_BITS);
        super::prefetch(self.slots.as_ptr().wrapping_add(s));
        super::prefetch(self.direct.as_ptr().wrapping_add(s));
    }

    /// Number of routes.
    fn count(&self) -> usize {
        self.short.len() + self.n_long
    }

    /// Every route: those of up to [`DIRECT_BITS`] bits in no defined
    /// order, then the longer ones in (address, length) order.
    pub fn iter(&self) -> impl Iterator<Item = (K, u8, NextHop)> + '_ {
        self.short
            .iter()
            .map(|(&(a, l), &v)| (a, l, NextHop(v)))
            .chain(
                self.slots
                    .iter()
                    .flat_map(|s| s.routes.as_slice())
                    .map(|&(a, l, v)| (a, l, NextHop(v))),
            )
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

/// Lines of a wide root array (`2^K::WIDE_BITS` entries of 4 bytes).
fn wide_lines<K: Key>() -> usize {
    (1usize << K::WIDE_BITS) / 2 / WORDS
}

/// Frees slot `s`'s wide root array, if any, and makes its direct entry
/// the leaf `default` with no subtree.
fn clear_slot<K: Key>(t: &mut Poptrie<K>, s: usize, wide: u32, default: u32) {
    if wide != NO_WIDE {
        t.pool.free(wide, super::pool::class_of(wide_lines::<K>()));
    }
    if let (Some(d), Some(x)) = (t.direct.get_mut(s), t.slots.get_mut(s)) {
        *d = LEAF | default;
        x.class = NO_SUB;
        x.nodes = 0;
        x.wide = NO_WIDE;
    }
}

/// Replaces slot `s`'s subtree by one built from `routes` (the slot's routes
/// longer than `DIRECT_BITS`, sorted), or by a direct leaf if there are none.
fn install<K: Key>(t: &mut Poptrie<K>, s: usize, routes: &[Route<K>]) -> Result<(), LpmError> {
    let Some(old) = t.slots.get(s) else {
        return Ok(());
    };
    let (default, old_class, old_block, old_nodes) = (old.best, old.class, old.block, old.nodes);
    let mut wide = old.wide;
    if old_class != NO_SUB {
        t.pool.free(old_block, old_class);
        t.n_nodes -= old_nodes as usize;
    }
    if routes.is_empty() {
        clear_slot(t, s, wide, default);
        return Ok(());
    }
    let mut nodes = std::mem::take(&mut t.scratch_nodes);
    let mut leaves = std::mem::take(&mut t.scratch_leaves);
    let mut wents = std::mem::take(&mut t.scratch_wide);
    nodes.clear();
    leaves.clear();
    wents.clear();
    if K::WIDE_BITS == 0 {
        nodes.push(Node::default());
        build_node(routes, DIRECT_BITS, default, &mut nodes, &mut leaves, 0);
    } else {
        build_wide(routes, default, &mut wents, &mut nodes, &mut leaves);
    }
    let mut r = Ok(());
    if K::WIDE_BITS > 0 && wide == NO_WIDE {
        match t.pool.alloc(wide_lines::<K>()) {
            Ok((w, _)) => wide = w,
            Err(e) => r = Err(e),
        }
    }
    let placed = r.and_then(|()| place(&mut t.pool, &nodes, &leaves));
    if let (Ok((block, _)), true) = (&placed, wide != NO_WIDE) {
        write_wide(&mut t.pool, wide, &wents, *block);
    }
    let n = nodes.len() as u32;
    t.scratch_nodes = nodes;
    t.scratch_leaves = leaves;
    t.scratch_wide = wents;
    let (block, class) = match placed {
        Ok(x) => x,
        Err(e) => {
            // The old blocks are free: the slot reads as having none.
            clear_slot(t, s, wide, default);
            return Err(e);
        }
    };
    t.n_nodes += n as usize;
    // IPv4: the root node's word; IPv6: the wide array's first `u32`.
    let entry = if K::WIDE_BITS > 0 {
        wide * 2 * WORDS as u32
    } else {
        block * WORDS as u32
    };
    if let (Some(d), Some(x)) = (t.direct.get_mut(s), t.slots.get_mut(s)) {
        *d = entry;
        x.class = class;
        x.block = block;
        x.nodes = n;
        x.wide = wide;
    }
    Ok(())
}

/// Builds the wide root array of an IPv6 slot (one entry per /32 under
/// the /18) into `wide`: routes of up to `NODE_START` bits are painted
/// (in (address, length) order, so the longest wins), then each /32 with
/// longer routes gets a root node (appended to `nodes`, its children and
/// leaves after it) and its entry becomes that node's index, relative and
/// without `LEAF`, for `write_wide` to make absolute.
fn build_wide<K: Key>(
    routes: &[Route<K>],
    default: u32,
    wide: &mut Vec<u32>,
    nodes: &mut Vec<Node>,
    leaves: &mut Vec<u32>,
) {
    let start = DIRECT_BITS + K::WIDE_BITS;
    wide.resize(1usize << K::WIDE_BITS, LEAF | default);
    for &(a, l, v) in routes {
        if u32::from(l) <= start {
            let lo = a.bits(DIRECT_BITS, K::WIDE_BITS) as usize;
            let hi = a.last(l).bits(DIRECT_BITS, K::WIDE_BITS) as usize;
            for e in wide.iter_mut().take(hi + 1).skip(lo) {
                *e = LEAF | v;
            }
        }
    }
    // The longer routes of one /32 are contiguous in (address, length)
    // order (its own shorter routes sort before them).
    let mut rest = routes;
    while let Some(i) = rest.iter().position(|r| u32::from(r.1) > start) {
        let tail = rest.get(i..).unwrap_or(&[]);
        let pos = tail
            .first()
            .map_or(0, |r| r.0.bits(DIRECT_BITS, K::WIDE_BITS));
        let end = tail
            .iter()
            .position(|r| u32::from(r.1) <= start || r.0.bits(DIRECT_BITS, K::WIDE_BITS) != pos)
            .unwrap_or(tail.len());
        let (group, after) = tail.split_at(end);
        rest = after;
        let Some(e) = wide.get_mut(pos as usize) else {
            continue;
        };
        let at = nodes.len();
        nodes.push(Node::default());
        build_node(group, start, *e & !LEAF, nodes, leaves, at);
        *e = at as u32;
    }
}

/// Writes the wide root array `wents` into its block at line `wide`;
/// node entries become word indexes into the node block at line `block`.
fn write_wide(pool: &mut Pool, wide: u32, wents: &[u32], block: u32) {
    let nbase = block * WORDS as u32;
    let abs = |e: u32| {
        if e & LEAF != 0 {
            e
        } else {
            nbase.wrapping_add(e.wrapping_mul(NODE_WORDS as u32))
        }
    };
    let words = pool.block_mut(wide, wents.len().div_ceil(2 * WORDS));
    for (dst, pair) in words.iter_mut().zip(wents.chunks(2)) {
        let lo = abs(pair.first().copied().unwrap_or(LEAF | NO_ROUTE));
        let hi = abs(pair.get(1).copied().unwrap_or(LEAF | NO_ROUTE));
        *dst = u64::from(lo) | (u64::from(hi) << 32);
    }
}

/// Copies a subtree built with subtree-relative indexes into a fresh block
/// (nodes first, then the leaves two per word); returns the block's first
/// line and class.
fn place(pool: &mut Pool, nodes: &[Node], leaves: &[u32]) -> Result<(u32, u8), LpmError> {
    let node_words = nodes.len() * NODE_WORDS;
    let words = node_words + leaves.len().div_ceil(2);
    let lines = words.div_ceil(WORDS);
    let (start, class) = pool.alloc(lines)?;
    let w0 = start as usize * WORDS;
    // Absolute word index of the first node and `u32` index of the first
    // leaf (both below 2^30, see `pool.rs`).
    let (nbase, lbase) = (w0 as u32, (2 * (w0 + node_words)) as u32);
    let block = pool.block_mut(start, lines);
    let (nw, lw) = block.split_at_mut(node_words.min(block.len()));
    for (dst, src) in nw.chunks_exact_mut(NODE_WORDS).zip(nodes) {
        let base0 = src.base0.wrapping_add(lbase);
        let base1 = nbase.wrapping_add(src.base1.wrapping_mul(NODE_WORDS as u32));
        dst.copy_from_slice(&[
            src.vector,
            src.leafvec,
            u64::from(base0) | (u64::from(base1) << 32),
        ]);
    }
    for (dst, pair) in lw.iter_mut().zip(leaves.chunks(2)) {
        let lo = pair.first().copied().unwrap_or(NO_ROUTE);
        let hi = pair.get(1).copied().unwrap_or(NO_ROUTE);
        *dst = u64::from(lo) | (u64::from(hi) << 32);
    }
    Ok((start, class))
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

impl LpmMut<Prefix4> for Poptrie<u32> {
    fn insert(&mut self, p: Prefix4, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        self.insert_raw(p.addr_bits(), p.len(), nh)
    }
    fn remove(&mut self, p: Prefix4) -> Option<NextHop> {
        self.remove_raw(p.addr_bits(), p.len())
    }
    fn prefetch(&self, p: Prefix4) {
        self.prefetch_raw(p.addr_bits());
    }
    fn len(&self) -> usize {
        self.count()
    }
}

impl LpmMut<Prefix6> for Poptrie<u128> {
    fn insert(&mut self, p: Prefix6, nh: NextHop) -> Result<Option<NextHop>, LpmError> {
        self.insert_raw(p.addr_bits(), p.len(), nh)
    }
    fn remove(&mut self, p: Prefix6) -> Option<NextHop> {
        self.remove_raw(p.addr_bits(), p.len())
    }
    fn prefetch(&self, p: Prefix6) {
        self.prefetch_raw(p.addr_bits());
    }
    fn len(&self) -> usize {
        self.count()
    }
}

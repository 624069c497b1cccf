//! Poptrie (Asai & Ohara, SIGCOMM 2015): a direct-pointing array on the
//! first [`DIRECT_BITS`] address bits, then 64-ary nodes that find a child
//! or a leaf by the population count of a bitmap.
//!
//! One generic implementation serves IPv4 ([`Poptrie4`]) and IPv6
//! ([`Poptrie6`]); `update.rs` holds the write side (control map, subtree
//! rebuilds), this file the read side.

mod huge;
mod pool;
mod replay;
mod update;

use crate::key::Key;
use crate::{Lpm, NextHop};
use pool::Pool;

/// Bits resolved by the direct-pointing array: `2^18` entries of 4 bytes
/// (1 MiB). Every prefix of this length or shorter is expanded into it.
pub const DIRECT_BITS: u32 = 18;

/// Direct entry flag: the low 31 bits are a leaf value, not a node index.
const LEAF: u32 = 1 << 31;
/// Leaf value meaning "no route" (next hops are at most 2^20 - 1).
pub(crate) const NO_ROUTE: u32 = LEAF - 1;
/// Batched-lookup lane state: a leaf index whose leaf is prefetched but not
/// yet read (pool indices stay below 2^30, see `pool.rs`).
const PENDING: u32 = 1 << 30;
/// Lookups of a batch advanced together (their misses overlap). At most
/// 64: the lanes of a group are tracked in a `u64` bit mask.
const GROUP: usize = 64;
/// Stand-in visited by batched lanes that are already done.
const EMPTY_NODE: Node = Node {
    vector: 0,
    leafvec: 0,
    base0: 0,
    base1: 0,
};

/// An internal node: 64 positions, each either a child node or a leaf.
///
/// Position `i` is a child when bit `i` of `vector` is set; the child is
/// `nodes[base1 + rank(vector, i) - 1]` where `rank` counts set bits at
/// positions `0..=i`. Leaves are compressed: runs of positions with the same
/// next hop share one leaf, and bit `i` of `leafvec` marks the first leaf
/// position of each run, so a leaf position's value is
/// `leaves[base0 + rank(leafvec, i) - 1]`. 24 bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Node {
    pub(crate) vector: u64,
    pub(crate) leafvec: u64,
    pub(crate) base0: u32,
    pub(crate) base1: u32,
}

/// Where a direct slot's subtree lives in the pools.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Sub {
    node: u32,
    leaf: u32,
    /// Size classes; `nclass == NO_SUB` when the slot has no subtree.
    nclass: u8,
    lclass: u8,
    /// Leaves in use at the start of the leaf block (a repaint that
    /// changes a node group's leaf count moves the ones after it).
    llen: u32,
}

impl Node {
    /// For position `ch`: whether it is a child, and both candidate
    /// indexes (child node, leaf), computed without a branch so that the
    /// batched walks can prefetch either ([`Poptrie::walk`] is the
    /// branching form for one address). Children are groups of `2^gn`
    /// nodes; `sub` (`< 2^gn`) picks the node of the child's group.
    #[inline(always)]
    fn ranks(&self, ch: u32, gn: u32, sub: u32) -> (bool, u32, u32) {
        let m = upto(ch);
        let is_child = (self.vector >> ch) & 1 != 0;
        let child = self
            .base1
            .wrapping_add(
                (self.vector & m)
                    .count_ones()
                    .wrapping_sub(1)
                    .wrapping_shl(gn),
            )
            .wrapping_add(sub);
        let leaf = self
            .base0
            .wrapping_add((self.leafvec & m).count_ones())
            .wrapping_sub(1);
        (is_child, child, leaf)
    }
}

const NO_SUB: u8 = u8::MAX;

/// The write side's state of one direct slot, alone on one cache line: a
/// route change reads all of it, so one miss (and one prefetch) brings it
/// in, where four arrays (route vectors, subtree blocks, inherited value,
/// inherited length) cost four (issue 19, fourth attempt).
#[derive(Clone, Debug)]
#[repr(align(64))]
pub(crate) struct Slot<K> {
    /// The slot's routes longer than [`DIRECT_BITS`], sorted by (address,
    /// length), which is the order `build_node` paints in (a covering route
    /// first). A change edits this small vector and repaints or rebuilds
    /// the slot's subtree from it.
    pub(crate) long: Vec<(K, u8, u32)>,
    /// Where the slot's subtree lives.
    pub(crate) sub: Sub,
    /// Value and length of the longest route of length `<= DIRECT_BITS`
    /// covering the slot (`NO_ROUTE`/`NO_LEN` if none).
    pub(crate) best: u32,
    pub(crate) best_len: u8,
}

/// The generic table; use [`Poptrie4`] or [`Poptrie6`].
#[derive(Clone, Debug)]
pub struct Poptrie<K: Key> {
    /// `2^DIRECT_BITS` entries: `LEAF | value`, or a root node index.
    direct: Vec<u32>,
    nodes: Pool<Node>,
    leaves: Pool<u32>,
    /// Control plane, the truth the lookup side is derived from. Routes of
    /// `DIRECT_BITS` or fewer bits, indexed by (length, address) as
    /// [`short_index`] numbers them (`2^(DIRECT_BITS + 1)` entries, 2 MiB;
    /// `NO_ROUTE`: no route): a change looks up the routes covering it by
    /// exact key, one array read each, where a hash map hashed the key
    /// with SipHash for every probe (issue 19, sixth attempt: 6 % of the
    /// batch's first application and 11 % of its replay).
    short: Vec<u32>,
    /// Routes in `short`.
    n_short: usize,
    /// Per direct slot, one cache line each ([`Slot`]): the slot's longer
    /// routes, its subtree's blocks and its inherited short route.
    slots: Vec<Slot<K>>,
    n_long: usize,
    /// Scratch space reused by rebuilds (no allocation per update once warm).
    scratch_nodes: Vec<Node>,
    scratch_leaves: Vec<u32>,
    scratch: update::Scratch,
    /// Batched updates ([`crate::LpmMut::apply_all`]): sort keys (slot,
    /// index) and the long-route changes of the batch, reused.
    batch_order: Vec<u64>,
    batch_changes: Vec<update::Change<K>>,
    /// The radix sort's second buffer for `batch_order`.
    batch_sorted: Vec<u64>,
    /// The CPU has a POPCNT instruction (checked once at construction).
    popcnt: bool,
    /// What the last batch wrote, for the other copy of a
    /// [`crate::publish`] pair to copy instead of recomputing
    /// (`replay.rs`).
    log: replay::Log<K>,
    /// Which table this is a copy of (kept by clones) and how many changes
    /// it has seen: a log applies only to a copy of the same lineage at
    /// the version it was recorded from.
    lineage: u64,
    version: u64,
}

const NO_LEN: u8 = u8::MAX;

/// Entries of the short-route array: one per prefix of up to
/// [`DIRECT_BITS`] bits.
const SHORT_SLOTS: usize = 1 << (DIRECT_BITS + 1);

/// Where the route `a/l` (`l <= DIRECT_BITS`) lives in the short-route
/// array: `2^l + (the first l bits of a)`, so each length has its own
/// block and no two prefixes share an entry (`/0` is entry 1).
#[inline(always)]
pub(crate) fn short_index<K: Key>(a: K, l: u8) -> usize {
    let l = u32::from(l).min(DIRECT_BITS);
    // `top(0)` reads one bit; the mask makes it 0.
    (1usize << l) | (a.top(l) & ((1usize << l) - 1))
}

/// The prefix of short-route entry `i` (the inverse of [`short_index`]).
pub(crate) fn short_prefix<K: Key>(i: usize) -> (K, u8) {
    let l = i.max(1).ilog2();
    (K::from_top(i & ((1usize << l) - 1), l), l as u8)
}

/// IPv4 Poptrie.
pub type Poptrie4 = Poptrie<u32>;
/// IPv6 Poptrie.
pub type Poptrie6 = Poptrie<u128>;

/// Sizes of a table's parts, in bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// What lookups touch: direct array, node pool and leaf pool (capacity).
    pub lookup: usize,
    /// Bytes of node entries in live blocks (allocation rounding included).
    pub live_nodes: usize,
    /// Bytes of leaf entries in live blocks (allocation rounding included).
    pub live_leaves: usize,
    /// Estimate of the write side: short-route array, route vectors,
    /// per-slot control lines and the last batch's write log.
    pub control: usize,
}

fn has_popcnt() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("popcnt")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[inline(always)]
fn decode(v: u32) -> Option<NextHop> {
    if v >= NO_ROUTE {
        None
    } else {
        Some(NextHop(v))
    }
}

/// Hints the CPU to fetch the cache line holding `p`. Prefetching never
/// faults, so any address is fine; elsewhere than x86_64 it does nothing.
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: PREFETCHT0 is a hint: it does not dereference `p` in the
        // language sense and never faults, even on an invalid address; SSE is
        // part of the x86_64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = p;
    }
}

/// Prefetches the 24 bytes at `p`, which may straddle two cache lines.
#[inline(always)]
fn prefetch_node<T>(p: *const T) {
    prefetch(p);
    prefetch(p.cast::<u8>().wrapping_add(std::mem::size_of::<Node>() - 1));
}

/// Writes the positions of the set bits of `bits` to `act`; returns how
/// many.
#[inline(always)]
fn list(act: &mut [u8], mut bits: u64) -> usize {
    let mut k = 0;
    while bits != 0 {
        if let Some(x) = act.get_mut(k) {
            *x = bits.trailing_zeros() as u8;
        }
        k += 1;
        bits &= bits - 1;
    }
    k
}

/// Bits `0..=i` of a 64-bit map.
#[inline(always)]
fn upto(i: u32) -> u64 {
    u64::MAX >> (63 - (i & 63))
}

impl<K: Key> Poptrie<K> {
    /// Most node levels a lookup can visit (past the direct array): the
    /// first resolves `ROOT_GROUP + 6` bits, every further one `GROUP + 6`.
    const MAX_LEVELS: u32 = 1 + (K::BITS - DIRECT_BITS - 6 - K::ROOT_GROUP).div_ceil(6 + K::GROUP);

    /// Group bits of node level `level` (0 = just below the direct array).
    #[inline(always)]
    fn gbits(level: u32) -> u32 {
        if level == 0 {
            K::ROOT_GROUP
        } else {
            K::GROUP
        }
    }

    /// The node of the root group at `d` (a direct entry) that `a` visits.
    #[inline(always)]
    fn root_of(a: K, d: u32) -> u32 {
        if K::ROOT_GROUP == 0 {
            d
        } else {
            d.wrapping_add(a.chunk(DIRECT_BITS, K::ROOT_GROUP)) & !(LEAF | PENDING)
        }
    }

    /// Walks nodes from node `idx` of the first level; returns the leaf
    /// value.
    #[inline(always)]
    fn walk(&self, a: K, mut idx: usize) -> u32 {
        if K::ROOT_GROUP == 0 && K::GROUP == 0 {
            return self.walk_flat(a, idx);
        }
        // The first levels unrolled (constant bit offsets, as in the
        // batched rounds), then a loop.
        macro_rules! at {
            ($l:expr) => {
                if $l >= Self::MAX_LEVELS {
                    return NO_ROUTE;
                }
                match self.step(a, idx, $l) {
                    Ok(next) => idx = next,
                    Err(v) => return v,
                }
            };
        }
        at!(0);
        at!(1);
        at!(2);
        at!(3);
        for level in 4..Self::MAX_LEVELS {
            at!(level);
        }
        NO_ROUTE
    }

    /// The IPv4 form of [`Self::walk`] (no node groups), the loop as it
    /// was before the IPv6 levels were unrolled, so that IPv4 lookups keep
    /// their code.
    #[inline(always)]
    fn walk_flat(&self, a: K, mut idx: usize) -> u32 {
        let nodes = &self.nodes.items[..];
        let mut off = DIRECT_BITS;
        for level in 0..Self::MAX_LEVELS {
            let Some(n) = nodes.get(idx) else {
                return NO_ROUTE;
            };
            let c = a.chunk6(off + Self::gbits(level));
            off += Self::gbits(level) + 6;
            let m = upto(c);
            if (n.vector >> c) & 1 != 0 {
                let gn = Self::gbits(level + 1);
                idx = (n.base1 as usize)
                    .wrapping_add(((n.vector & m).count_ones() as usize).wrapping_sub(1) << gn)
                    .wrapping_add(a.chunk(off, gn) as usize);
            } else {
                let i = (n.base0 as usize)
                    .wrapping_add((n.leafvec & m).count_ones() as usize)
                    .wrapping_sub(1);
                return self.leaves.items.get(i).copied().unwrap_or(NO_ROUTE);
            }
        }
        NO_ROUTE
    }

    /// One node of [`Self::walk`] at node level `level`: the child's
    /// index, or the leaf value where the walk ends.
    #[inline(always)]
    fn step(&self, a: K, idx: usize, level: u32) -> Result<usize, u32> {
        let Some(n) = self.nodes.items.get(idx) else {
            return Err(NO_ROUTE);
        };
        let off = Self::level_off(level);
        let c = a.chunk6(off + Self::gbits(level));
        let m = upto(c);
        if (n.vector >> c) & 1 != 0 {
            let gn = Self::gbits(level + 1);
            Ok((n.base1 as usize)
                .wrapping_add(((n.vector & m).count_ones() as usize).wrapping_sub(1) << gn)
                .wrapping_add(a.chunk(off + Self::gbits(level) + 6, gn) as usize))
        } else {
            let i = (n.base0 as usize)
                .wrapping_add((n.leafvec & m).count_ones() as usize)
                .wrapping_sub(1);
            Err(self.leaves.items.get(i).copied().unwrap_or(NO_ROUTE))
        }
    }

    #[inline(always)]
    fn lookup_body(&self, a: K) -> u32 {
        let d = self
            .direct
            .get(a.top(DIRECT_BITS))
            .copied()
            .unwrap_or(LEAF | NO_ROUTE);
        if d & LEAF != 0 {
            return d & !LEAF;
        }
        self.walk(a, Self::root_of(a, d) as usize)
    }

    /// Batched lookup in groups of lanes advanced in lock step,
    /// one trie level per round: a round visits the node of every lane that
    /// still has one (its cache line was prefetched in the previous round)
    /// and prefetches where each lane goes next, so the misses of a group
    /// overlap instead of queueing. The per-lane work is branch-free (selects
    /// instead of `if`), because whether an address ends in the direct array
    /// or in a node is close to random and mispredicted branches would cost
    /// more than the memory they hide.
    #[inline(always)]
    fn batch_body(&self, addrs: &[K], out: &mut [Option<NextHop>]) {
        // 64 lanes measured best for both families (16 and 32 were as good
        // or slower; docs/BENCHMARKS.md, LPM section), now that lanes which
        // are done are skipped.
        for (ac, oc) in addrs.chunks(GROUP).zip(out.chunks_mut(GROUP)) {
            if K::ROOT_GROUP == 0 && K::GROUP == 0 {
                self.group_flat::<GROUP>(ac, oc);
            } else {
                self.group::<GROUP>(ac, oc);
            }
        }
    }

    /// Bit offset where node level `level` starts (level 0 just below the
    /// direct array). With `level` a constant (the unrolled rounds below),
    /// every shift of the address by it is a constant shift.
    #[inline(always)]
    const fn level_off(level: u32) -> u32 {
        if level == 0 {
            DIRECT_BITS
        } else {
            DIRECT_BITS + K::ROOT_GROUP + 6 + (level - 1) * (K::GROUP + 6)
        }
    }

    /// One sparse round at node level `level`: visits the `k` lanes listed
    /// in `act`, returns the mask of those that went on to a child.
    #[inline(always)]
    fn sparse_round(&self, ac: &[K], cur: &mut [u32], act: &[u8], k: usize, level: u32) -> u64 {
        let nodes = &self.nodes.items[..];
        let np = nodes.as_ptr();
        let lp = self.leaves.items.as_ptr();
        let ch = Self::level_off(level) + Self::gbits(level);
        let (noff, gn) = (ch + 6, Self::gbits(level + 1));
        let mut next_mask = 0u64;
        for &i in act.iter().take(k) {
            let i = usize::from(i);
            let (Some(c), Some(a)) = (cur.get_mut(i), ac.get(i)) else {
                continue;
            };
            let n = nodes.get(*c as usize).unwrap_or(&EMPTY_NODE);
            let (is_child, child, leaf) = n.ranks(a.chunk6(ch), gn, a.chunk(noff, gn));
            *c = if is_child {
                child & !(LEAF | PENDING)
            } else {
                PENDING | (leaf & !(LEAF | PENDING))
            };
            prefetch_node(if is_child {
                np.wrapping_add(child as usize).cast::<u8>()
            } else {
                lp.wrapping_add(leaf as usize).cast::<u8>()
            });
            next_mask |= u64::from(is_child) << (i & 63);
        }
        next_mask
    }

    /// The rounds of a group where few lanes are at a node, from node
    /// level `level`: the node lanes (`mask`) are listed once, each round
    /// visits only the listed ones, then lists those that went on to a
    /// child. The first levels are unrolled, so that their bit offsets are
    /// constants (a shift of a 128-bit address by a variable amount costs
    /// several instructions and a branch-free select; by a constant, one or
    /// two); deeper levels (IPv6 routes longer than /56) loop.
    #[inline(always)]
    fn sparse_rounds(&self, ac: &[K], cur: &mut [u32], mask: u64, level: u32) {
        let mut act = [0u8; 64];
        let mut k = list(&mut act, mask);
        let mut level = level;
        macro_rules! at {
            ($l:expr) => {
                if level == $l && k != 0 && $l < Self::MAX_LEVELS {
                    let m = self.sparse_round(ac, cur, &act, k, $l);
                    k = list(&mut act, m);
                    level += 1;
                }
            };
        }
        at!(0);
        at!(1);
        at!(2);
        at!(3);
        at!(4);
        while k != 0 && level < Self::MAX_LEVELS {
            let m = self.sparse_round(ac, cur, &act, k, level);
            k = list(&mut act, m);
            level += 1;
        }
    }

    /// One dense round at node level `level`: visits every lane (a lane
    /// that is done visits a stand-in and keeps its state), returns the
    /// mask of lanes that went on to a child.
    #[inline(always)]
    fn dense_round(&self, ac: &[K], cur: &mut [u32], level: u32) -> u64 {
        let nodes = &self.nodes.items[..];
        let np = nodes.as_ptr();
        let lp = self.leaves.items.as_ptr();
        let ch = Self::level_off(level) + Self::gbits(level);
        let (noff, gn) = (ch + 6, Self::gbits(level + 1));
        let mut any = 0u64;
        for (i, (c, a)) in cur.iter_mut().zip(ac).enumerate() {
            let v = *c;
            let is_node = v & (LEAF | PENDING) == 0;
            let n = nodes
                .get(if is_node { v as usize } else { 0 })
                .unwrap_or(&EMPTY_NODE);
            let (is_child, child, leaf) = n.ranks(a.chunk6(ch), gn, a.chunk(noff, gn));
            let next = if is_child {
                child & !(LEAF | PENDING)
            } else {
                PENDING | (leaf & !(LEAF | PENDING))
            };
            *c = if is_node { next } else { v };
            // Lanes going on to another node keep the group going.
            any |= u64::from(is_node & is_child) << (i & 63);
            let p = if !is_node {
                np.cast::<u8>()
            } else if is_child {
                np.wrapping_add(child as usize).cast::<u8>()
            } else {
                lp.wrapping_add(leaf as usize).cast::<u8>()
            };
            prefetch_node(p);
        }
        any
    }

    /// One group of at most `N` addresses. Lane state `cur`: `LEAF |
    /// value` (done), `PENDING | leaf index` (leaf prefetched, not yet
    /// read) or a node index (node prefetched, not yet visited).
    #[inline(always)]
    fn group<const N: usize>(&self, ac: &[K], oc: &mut [Option<NextHop>]) {
        let direct = &self.direct[..];
        let nodes = &self.nodes.items[..];
        let leaves = &self.leaves.items[..];
        let np = nodes.as_ptr();
        let mut cur = [LEAF | NO_ROUTE; N];
        let mut mask = 0u64;
        for (i, (c, a)) in cur.iter_mut().zip(ac).enumerate() {
            let d = direct
                .get(a.top(DIRECT_BITS))
                .copied()
                .unwrap_or(LEAF | NO_ROUTE);
            let is_node = d & (LEAF | PENDING) == 0;
            let v = if is_node { Self::root_of(*a, d) } else { d };
            *c = v;
            // A leaf's "node" is index 0: a harmless prefetch, no branch.
            prefetch_node(np.wrapping_add(if is_node { v as usize } else { 0 }));
            // (N <= 64: the lanes fit a bit mask.)
            mask |= u64::from(is_node) << (i & 63);
        }
        let few = |m: u64| (m.count_ones() as usize) * 4 < ac.len() * 3;
        // Dense rounds while at least 3/4 of the lanes are at a node, then
        // sparse ones (IPv6 lanes end at different depths). Unrolled for
        // the first levels, as in `sparse_rounds`.
        let mut level = 0;
        macro_rules! at {
            ($l:expr) => {
                if level == $l && $l < Self::MAX_LEVELS {
                    if mask == 0 {
                        Self::finish(&cur, oc, leaves);
                        return;
                    }
                    if few(mask) {
                        self.sparse_rounds(ac, &mut cur, mask, $l);
                        Self::finish(&cur, oc, leaves);
                        return;
                    }
                    mask = self.dense_round(ac, &mut cur, $l);
                    level += 1;
                }
            };
        }
        at!(0);
        at!(1);
        at!(2);
        at!(3);
        while mask != 0 && level < Self::MAX_LEVELS {
            if few(mask) {
                self.sparse_rounds(ac, &mut cur, mask, level);
                break;
            }
            mask = self.dense_round(ac, &mut cur, level);
            level += 1;
        }
        Self::finish(&cur, oc, leaves);
    }

    // The IPv4 form (no node groups) of `sparse_rounds` and `group`, as
    // they were before the groups: the generic form, with the group terms
    // constant zero, measured 1.2x slower on uniform IPv4 destinations
    // (codegen, not layout: the tables are identical), so plain 64-ary
    // tries keep this copy.
    /// The rounds of a group where few lanes are at a node, from bit offset
    /// `off`: the node lanes (`mask`) are listed once, each round visits
    /// only the listed ones, then lists those that went on to a child.
    #[inline(always)]
    fn sparse_rounds_flat(&self, ac: &[K], cur: &mut [u32], mask: u64, mut off: u32) {
        let nodes = &self.nodes.items[..];
        let np = nodes.as_ptr();
        let lp = self.leaves.items.as_ptr();
        let mut act = [0u8; 64];
        let mut k = list(&mut act, mask);
        for _ in 0..Self::MAX_LEVELS {
            if k == 0 {
                break;
            }
            let mut next_mask = 0u64;
            for &i in act.iter().take(k) {
                let i = usize::from(i);
                let (Some(c), Some(a)) = (cur.get_mut(i), ac.get(i)) else {
                    continue;
                };
                let n = nodes.get(*c as usize).unwrap_or(&EMPTY_NODE);
                let (is_child, child, leaf) = n.ranks(a.chunk6(off), 0, 0);
                *c = if is_child {
                    child & !(LEAF | PENDING)
                } else {
                    PENDING | (leaf & !(LEAF | PENDING))
                };
                prefetch_node(if is_child {
                    np.wrapping_add(child as usize).cast::<u8>()
                } else {
                    lp.wrapping_add(leaf as usize).cast::<u8>()
                });
                next_mask |= u64::from(is_child) << (i & 63);
            }
            k = list(&mut act, next_mask);
            off += 6;
        }
    }

    /// One group of at most `N` addresses. Lane state `cur`: `LEAF |
    /// value` (done), `PENDING | leaf index` (leaf prefetched, not yet
    /// read) or a node index (node prefetched, not yet visited).
    #[inline(always)]
    fn group_flat<const N: usize>(&self, ac: &[K], oc: &mut [Option<NextHop>]) {
        let direct = &self.direct[..];
        let nodes = &self.nodes.items[..];
        let leaves = &self.leaves.items[..];
        let np = nodes.as_ptr();
        let lp = leaves.as_ptr();
        let mut cur = [LEAF | NO_ROUTE; N];
        let mut mask = 0u64;
        for (i, (c, a)) in cur.iter_mut().zip(ac).enumerate() {
            let v = direct
                .get(a.top(DIRECT_BITS))
                .copied()
                .unwrap_or(LEAF | NO_ROUTE);
            *c = v;
            let is_node = v & (LEAF | PENDING) == 0;
            // A leaf's "node" is index 0: a harmless prefetch, no branch.
            prefetch_node(np.wrapping_add(if is_node { v as usize } else { 0 }));
            // (N <= 64: the lanes fit a bit mask.)
            mask |= u64::from(is_node) << (i & 63);
        }
        if (mask.count_ones() as usize) * 4 < ac.len() * 3 {
            // Few lanes at a node (destinations in short routes or in no
            // route): visit only those.
            self.sparse_rounds_flat(ac, &mut cur, mask, DIRECT_BITS);
            Self::finish(&cur, oc, leaves);
            return;
        }
        let mut off = DIRECT_BITS;
        for _ in 0..Self::MAX_LEVELS {
            let mut any = 0u64;
            for (i, (c, a)) in cur.iter_mut().zip(ac).enumerate() {
                let v = *c;
                let is_node = v & (LEAF | PENDING) == 0;
                let n = nodes
                    .get(if is_node { v as usize } else { 0 })
                    .unwrap_or(&EMPTY_NODE);
                let (is_child, child, leaf) = n.ranks(a.chunk6(off), 0, 0);
                let next = if is_child {
                    child & !(LEAF | PENDING)
                } else {
                    PENDING | (leaf & !(LEAF | PENDING))
                };
                *c = if is_node { next } else { v };
                // Lanes going on to another node keep the group going.
                any |= u64::from(is_node & is_child) << (i & 63);
                let p = if !is_node {
                    np.cast::<u8>()
                } else if is_child {
                    np.wrapping_add(child as usize).cast::<u8>()
                } else {
                    lp.wrapping_add(leaf as usize).cast::<u8>()
                };
                prefetch_node(p);
            }
            if any == 0 {
                break;
            }
            off += 6;
            if (any.count_ones() as usize) * 4 < ac.len() * 3 {
                // Most lanes are done (IPv6 lanes end at different depths):
                // go on with only the others.
                self.sparse_rounds_flat(ac, &mut cur, any, off);
                break;
            }
        }
        Self::finish(&cur, oc, leaves);
    }

    /// Reads the pending leaves and writes the answers.
    #[inline(always)]
    fn finish(cur: &[u32], oc: &mut [Option<NextHop>], leaves: &[u32]) {
        for (c, o) in cur.iter().zip(oc.iter_mut()) {
            let v = *c;
            let pending = v & LEAF == 0 && v & PENDING != 0;
            let l = leaves
                .get(if pending { (v & !PENDING) as usize } else { 0 })
                .copied()
                .unwrap_or(NO_ROUTE);
            let r = if v & LEAF != 0 {
                v & !LEAF
            } else if pending {
                l
            } else {
                // Still at a node after MAX_LEVELS rounds: impossible for a
                // well-formed trie; answer "no route" rather than loop.
                NO_ROUTE
            };
            *o = decode(r);
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn lookup_popcnt(&self, a: K) -> u32 {
        self.lookup_body(a)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn batch_popcnt(&self, addrs: &[K], out: &mut [Option<NextHop>]) {
        self.batch_body(addrs, out)
    }

    /// Sizes of the lookup structures and the control side.
    pub fn memory(&self) -> MemoryUsage {
        // The short-route array; a long route is one vector element.
        let per_long = std::mem::size_of::<(K, u8, u32)>();
        MemoryUsage {
            lookup: self.direct.capacity() * 4 + self.nodes.bytes() + self.leaves.bytes(),
            live_nodes: self.nodes.live() * std::mem::size_of::<Node>(),
            live_leaves: self.leaves.live() * 4,
            control: self.short.capacity() * 4
                + self.slots.iter().map(|x| x.long.capacity()).sum::<usize>() * per_long
                + self.slots.capacity() * std::mem::size_of::<Slot<K>>()
                + self.log.bytes(),
        }
    }
}

impl<K: Key> Lpm<K> for Poptrie<K> {
    #[inline]
    fn lookup(&self, addr: K) -> Option<NextHop> {
        #[cfg(target_arch = "x86_64")]
        if self.popcnt {
            // SAFETY: `popcnt` is true only when the CPU reported POPCNT.
            return decode(unsafe { self.lookup_popcnt(addr) });
        }
        decode(self.lookup_body(addr))
    }

    fn lookup_batch(&self, addrs: &[K], out: &mut [Option<NextHop>]) {
        #[cfg(target_arch = "x86_64")]
        if self.popcnt {
            // SAFETY: `popcnt` is true only when the CPU reported POPCNT.
            unsafe { self.batch_popcnt(addrs, out) };
            return;
        }
        self.batch_body(addrs, out)
    }
}

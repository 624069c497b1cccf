//! Poptrie (Asai & Ohara, SIGCOMM 2015): a direct-pointing array on the
//! first [`DIRECT_BITS`] address bits, then 64-ary nodes that find a child
//! or a leaf by the population count of a bitmap.
//!
//! One generic implementation serves IPv4 ([`Poptrie4`]) and IPv6
//! ([`Poptrie6`]); `update.rs` holds the write side (control map, subtree
//! rebuilds), this file the read side.

mod huge;
mod pool;
mod update;

use std::collections::HashMap;

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
/// Batched-lookup lane state: a leaf index whose leaf is
/// prefetched but not yet read (leaf indexes stay below 2^30, see
/// `pool.rs`).
const PENDING: u32 = 1 << 30;
/// Lookups of a batch advanced together (their misses overlap). At most
/// 64: the lanes of a group are tracked in a `u64` bit mask.
const GROUP: usize = 64;
/// An internal node as the builder produces it (`update.rs`), with
/// indexes relative to its subtree: 64 positions, each either a child node
/// or a leaf.
///
/// Position `i` is a child when bit `i` of `vector` is set; the child is
/// node `base1 + rank(vector, i) - 1` where `rank` counts set bits at
/// positions `0..=i`. Leaves are compressed: runs of positions with the same
/// next hop share one leaf, and bit `i` of `leafvec` marks the first leaf
/// position of each run, so a leaf position's value is leaf
/// `base0 + rank(leafvec, i) - 1`.
///
/// In the pool a node is three words: `vector`, `leafvec`, and `base0 |
/// base1 << 32` where `base0` is the absolute `u32` index of its first leaf
/// (two leaves per word, the even one in the low half) and `base1` the
/// absolute word index of its first child (children are 3 words apart).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) vector: u64,
    pub(crate) leafvec: u64,
    pub(crate) base0: u32,
    pub(crate) base1: u32,
}

/// Words per node in the pool.
pub(crate) const NODE_WORDS: usize = 3;

/// For position `ch` of the node `(vector, leafvec, bases)`: whether it is a
/// child, and both candidate indexes (child word, leaf), computed without a
/// branch so that the batched walks can prefetch either.
#[inline(always)]
fn ranks(n: [u64; 3], ch: u32) -> (bool, u32, u32) {
    let [vector, leafvec, bases] = n;
    let m = upto(ch);
    let is_child = (vector >> ch) & 1 != 0;
    let child = ((bases >> 32) as u32)
        .wrapping_add(3 * (vector & m).count_ones())
        .wrapping_sub(3);
    let leaf = (bases as u32)
        .wrapping_add((leafvec & m).count_ones())
        .wrapping_sub(1);
    (is_child, child, leaf)
}

/// The node at word `w`, or an empty node (no children, no leaves) if `w`
/// is out of range.
#[inline(always)]
fn node_at(words: &[u64], w: usize) -> [u64; 3] {
    match words.get(w..w.wrapping_add(NODE_WORDS)) {
        Some(&[a, b, c]) => [a, b, c],
        _ => [0; 3],
    }
}

/// Wide root entry `j` (a `u32` index, as for leaves): `LEAF | value` or a
/// node's word index; "no route" if out of range.
#[inline(always)]
fn wide_at(words: &[u64], j: usize) -> u32 {
    match words.get(j >> 1) {
        Some(&w) => (w >> ((j & 1) * 32)) as u32,
        None => LEAF | NO_ROUTE,
    }
}

/// Leaf `j` (a `u32` index: word `j / 2`, low half when `j` is even), or
/// "no route" if out of range.
#[inline(always)]
fn leaf_at(words: &[u64], j: usize) -> u32 {
    match words.get(j >> 1) {
        Some(&w) => (w >> ((j & 1) * 32)) as u32,
        None => NO_ROUTE,
    }
}

/// Control state of one direct slot, on one cache line for IPv4: what a
/// route change under the slot reads and writes, apart from the direct
/// entry and the new subtree block.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub(crate) struct Slot<K: Key> {
    /// Value and length of the longest route of length `<= DIRECT_BITS`
    /// covering the slot (`NO_ROUTE`/`NO_LEN` if none).
    best: u32,
    best_len: u8,
    /// Size class of the subtree block; `NO_SUB` when there is none.
    class: u8,
    /// First line of the subtree block.
    block: u32,
    /// Nodes in the subtree (for [`Poptrie::memory`]).
    nodes: u32,
    /// First line of the wide root array (`K::WIDE_BITS > 0` only), or
    /// `NO_WIDE`. Kept while the slot has longer routes and rewritten in
    /// place by rebuilds (they only ever touch the copy no reader sees).
    wide: u32,
    /// The slot's routes longer than `DIRECT_BITS`, sorted by (address,
    /// length), the order `build_node` paints in (a covering route first).
    routes: update::Routes<K>,
}

const NO_SUB: u8 = u8::MAX;
/// `Slot::wide` when the slot has no wide root array.
const NO_WIDE: u32 = u32::MAX;

/// The generic table; use [`Poptrie4`] or [`Poptrie6`].
#[derive(Clone, Debug)]
pub struct Poptrie<K: Key> {
    /// `2^DIRECT_BITS` entries: `LEAF | value`, or the word index of a root
    /// node in `pool`.
    direct: Vec<u32>,
    /// Subtrees, one block per direct slot: its nodes, then its leaves.
    pool: Pool,
    /// Control plane, the truth the lookup side is derived from. Routes of
    /// `DIRECT_BITS` or fewer bits, by (address, length): a change looks up
    /// the routes covering it by exact key.
    short: HashMap<(K, u8), u32>,
    /// Per direct slot: the longer routes and what the slot inherits.
    slots: Vec<Slot<K>>,
    n_long: usize,
    /// Nodes in all subtrees.
    n_nodes: usize,
    /// Scratch space reused by rebuilds (no allocation per update once warm).
    scratch_nodes: Vec<Node>,
    scratch_leaves: Vec<u32>,
    scratch_wide: Vec<u32>,
    /// The CPU has a POPCNT instruction (checked once at construction).
    popcnt: bool,
}

const NO_LEN: u8 = u8::MAX;

/// IPv4 Poptrie.
pub type Poptrie4 = Poptrie<u32>;
/// IPv6 Poptrie.
pub type Poptrie6 = Poptrie<u128>;

/// Sizes of a table's parts, in bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryUsage {
    /// What lookups touch: direct array, node pool and leaf pool (capacity).
    pub lookup: usize,
    /// Bytes of node entries in live blocks.
    pub live_nodes: usize,
    /// Bytes of leaf entries in live blocks, with the blocks' allocation
    /// rounding (nodes and leaves share a block).
    pub live_leaves: usize,
    /// Estimate of the write side: route map and per-slot control arrays.
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
    /// Bit offset of the root nodes: past the direct array and, for IPv6,
    /// the wide root arrays.
    const NODE_START: u32 = DIRECT_BITS + K::WIDE_BITS;
    /// Most node levels a lookup can visit (past the direct array).
    const MAX_LEVELS: u32 = (K::BITS - Self::NODE_START) / 6 + 1;

    /// The wide root entry index for address `a` under a direct entry `d`
    /// (which is the `u32` index of the slot's wide array).
    #[inline(always)]
    fn wide_index(d: u32, a: K) -> usize {
        (d as usize).wrapping_add(a.bits(DIRECT_BITS, K::WIDE_BITS) as usize)
    }

    /// Walks nodes from word `idx` at bit offset `off`; returns the leaf
    /// value.
    #[inline(always)]
    fn walk(&self, a: K, mut idx: usize, mut off: u32) -> u32 {
        let words = self.pool.words();
        for _ in 0..Self::MAX_LEVELS {
            let n = node_at(words, idx);
            let (is_child, child, leaf) = ranks(n, a.chunk6(off));
            if !is_child {
                return leaf_at(words, leaf as usize);
            }
            idx = child as usize;
            off += 6;
        }
        NO_ROUTE
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
        let root = if K::WIDE_BITS > 0 {
            let e = wide_at(self.pool.words(), Self::wide_index(d, a));
            if e & LEAF != 0 {
                return e & !LEAF;
            }
            e
        } else {
            d
        };
        self.walk(a, root as usize, Self::NODE_START)
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
            self.group::<GROUP>(ac, oc);
        }
    }

    /// The rounds of a group where few lanes are at a node, from bit offset
    /// `off`: the node lanes (`mask`) are listed once, each round visits
    /// only the listed ones, then lists those that went on to a child.
    #[inline(always)]
    fn sparse_rounds(&self, ac: &[K], cur: &mut [u32], mask: u64, mut off: u32) {
        let words = self.pool.words();
        let wp = words.as_ptr();
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
                let n = node_at(words, *c as usize);
                let (is_child, child, leaf) = ranks(n, a.chunk6(off));
                // Prefetch the leaf and read it in `finish`: reading it here
                // stalls whenever it is not on the node's line.
                *c = if is_child {
                    child & !(LEAF | PENDING)
                } else {
                    PENDING | (leaf & !(LEAF | PENDING))
                };
                // A child node may straddle two lines, a leaf never does.
                let p = wp.wrapping_add(if is_child {
                    child as usize
                } else {
                    leaf as usize >> 1
                });
                prefetch(p);
                prefetch(p.cast::<u8>().wrapping_add(if is_child {
                    NODE_WORDS * 8 - 1
                } else {
                    0
                }));
                next_mask |= u64::from(is_child) << (i & 63);
            }
            k = list(&mut act, next_mask);
            off += 6;
        }
    }

    /// One group of at most `N` addresses. Lane state `cur`: `LEAF |
    /// value` (done), `PENDING | leaf index` (leaf prefetched, not yet
    /// read) or a node's word index (node prefetched,
    /// not yet visited).
    #[inline(always)]
    fn group<const N: usize>(&self, ac: &[K], oc: &mut [Option<NextHop>]) {
        let direct = &self.direct[..];
        let words = self.pool.words();
        let wp = words.as_ptr();
        let mut cur = [LEAF | NO_ROUTE; N];
        let mut mask = 0u64;
        for (i, (c, a)) in cur.iter_mut().zip(ac).enumerate() {
            let v = direct
                .get(a.top(DIRECT_BITS))
                .copied()
                .unwrap_or(LEAF | NO_ROUTE);
            *c = v;
            let is_node = v & LEAF == 0;
            // A leaf's "node" is word 0: a harmless prefetch, no branch.
            let p = if !is_node {
                0
            } else if K::WIDE_BITS > 0 {
                Self::wide_index(v, *a) >> 1
            } else {
                v as usize
            };
            prefetch_node(wp.wrapping_add(p));
            // (N <= 64: the lanes fit a bit mask.)
            mask |= u64::from(is_node) << (i & 63);
        }
        if K::WIDE_BITS > 0 && mask != 0 {
            // IPv6: one round through the wide root arrays, whose entries
            // were prefetched above; lanes at a node go on at NODE_START.
            let wide = mask;
            mask = 0;
            for (i, (c, a)) in cur.iter_mut().zip(ac).enumerate() {
                let v = *c;
                let is_wide = (wide >> (i & 63)) & 1 != 0;
                let e = wide_at(
                    words,
                    if is_wide {
                        Self::wide_index(v, *a)
                    } else {
                        usize::MAX
                    },
                );
                let nv = if is_wide { e } else { v };
                *c = nv;
                let is_node = nv & LEAF == 0;
                prefetch_node(wp.wrapping_add(if is_node { nv as usize } else { 0 }));
                mask |= u64::from(is_node) << (i & 63);
            }
        }
        if (mask.count_ones() as usize) * 4 < ac.len() * 3 {
            // Few lanes at a node (destinations in short routes or in no
            // route): visit only those.
            self.sparse_rounds(ac, &mut cur, mask, Self::NODE_START);
            Self::finish(&cur, oc, words);
            return;
        }
        let mut off = Self::NODE_START;
        for _ in 0..Self::MAX_LEVELS {
            let mut any = 0u64;
            for (i, (c, a)) in cur.iter_mut().zip(ac).enumerate() {
                let v = *c;
                let is_node = v & (LEAF | PENDING) == 0;
                let n = node_at(words, if is_node { v as usize } else { usize::MAX });
                let (is_child, child, leaf) = ranks(n, a.chunk6(off));
                // Prefetch the leaf and read it in `finish`, so that the
                // misses overlap (reading it here stalls whenever it is not
                // on the node's line: measured 1.25x slower in-route).
                let next = if is_child {
                    child & !(LEAF | PENDING)
                } else {
                    PENDING | (leaf & !(LEAF | PENDING))
                };
                *c = if is_node { next } else { v };
                // Lanes going on to another node keep the group going.
                any |= u64::from(is_node & is_child) << (i & 63);
                let p = if !is_node {
                    0
                } else if is_child {
                    child as usize
                } else {
                    leaf as usize >> 1
                };
                // The second line only for a child node that straddles
                // two (a leaf never does; done lanes prefetch word 0).
                let p = wp.wrapping_add(p);
                prefetch(p);
                prefetch(p.cast::<u8>().wrapping_add(if is_node & is_child {
                    NODE_WORDS * 8 - 1
                } else {
                    0
                }));
            }
            if any == 0 {
                break;
            }
            off += 6;
            if (any.count_ones() as usize) * 4 < ac.len() * 3 {
                // Most lanes are done (IPv6 lanes end at different depths):
                // go on with only the others.
                self.sparse_rounds(ac, &mut cur, any, off);
                break;
            }
        }
        Self::finish(&cur, oc, words);
    }

    /// Reads the pending leaves and writes the answers.
    #[inline(always)]
    fn finish(cur: &[u32], oc: &mut [Option<NextHop>], words: &[u64]) {
        for (c, o) in cur.iter().zip(oc.iter_mut()) {
            let v = *c;
            let pending = v & LEAF == 0 && v & PENDING != 0;
            let l = leaf_at(
                words,
                if pending {
                    (v & !PENDING) as usize
                } else {
                    usize::MAX
                },
            );
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
        // Hash map slot plus control byte and load-factor slack.
        let per_short = (std::mem::size_of::<((K, u8), u32)>() + 1) * 8 / 7;
        let nodes = self.n_nodes * NODE_WORDS * 8;
        MemoryUsage {
            lookup: self.direct.capacity() * 4 + self.pool.bytes(),
            live_nodes: nodes,
            live_leaves: self.pool.live_bytes().saturating_sub(nodes),
            control: self.short.capacity() * per_short
                + self.slots.capacity() * std::mem::size_of::<Slot<K>>()
                + self
                    .slots
                    .iter()
                    .map(|s| s.routes.heap_bytes())
                    .sum::<usize>(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_slot_control_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Slot<u32>>(), 64);
        assert_eq!(std::mem::align_of::<Slot<u32>>(), 64);
    }

    #[test]
    fn leaves_pack_two_per_word() {
        let w = [u64::from(7u32) | (u64::from(9u32) << 32)];
        assert_eq!(leaf_at(&w, 0), 7);
        assert_eq!(leaf_at(&w, 1), 9);
        assert_eq!(leaf_at(&w, 2), NO_ROUTE);
        assert_eq!(node_at(&w, 0), [0; 3]);
        assert_eq!(node_at(&w, usize::MAX), [0; 3]);
    }
}

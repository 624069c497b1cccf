//! Longest-prefix match for the forwarding plane.
//!
//! Every implementation answers the same question: given a destination
//! address, which next hop does the longest matching prefix carry? Next hops
//! are small integers ([`NextHop`]) indexing a next-hop table that lives
//! elsewhere (crate `fib`), so a table entry stays 4 bytes or less.
//!
//! * [`Lpm`] is the read side, used by forwarding workers: `lookup` and
//!   `lookup_batch` (which may prefetch). It takes `&self` and never locks.
//! * [`LpmMut`] is the write side: incremental insert and remove, used off
//!   the forwarding cores; publication to workers is by [`publish`]
//!   (left-right: two copies, an atomic index, per-reader epochs).
//! * [`reference`](mod@reference) holds the naive implementations every fast one is tested
//!   against.
//!
//! # The fast tables: [`Poptrie4`] and [`Poptrie6`]
//!
//! One generic [`Poptrie`] (Asai & Ohara, "Poptrie: A Compressed Trie with
//! Population Count for Fast and Scalable Software IP Routing Table Lookup",
//! SIGCOMM 2015) serves both families.
//!
//! **Lookup structures.** A direct-pointing array indexed by the first
//! [`DIRECT_BITS`] (18) address bits: `2^18` `u32` entries (1 MiB), each either
//! a leaf (bit 31 set; the next hop, or "no route") or the index of a root
//! node. Below it, 64-ary nodes of 24 bytes (`vector`, `leafvec`: `u64`;
//! `base0`, `base1`: `u32`) consume 6 address bits each. A position whose
//! `vector` bit is set is an internal child at `nodes[base1 + popcount(vector
//! up to the position) - 1]`; other positions are leaves, run-length
//! compressed by `leafvec` into `leaves[base0 + popcount(leafvec up to the
//! position) - 1]` (`u32`). Children of a node are contiguous, and so are its
//! leaves, so a node costs one cache line and no pointers. IPv4 needs at most
//! 3 node levels (18 + 6 + 6 + 6 >= 32).
//!
//! **IPv6 node groups.** IPv6 levels are *groups* of `2^g` such nodes
//! ([`Key::ROOT_GROUP`], [`Key::GROUP`]): the next `g` address bits pick
//! the node of the group, the 6 after them its position, so a level
//! resolves `g + 6` bits in one node read. A group's nodes carry their own
//! `base0`/`base1`, so its children (whole groups) and its leaves stay one
//! contiguous run each, and a leaf run may continue from one node of the
//! group into the next. The first IPv6 level is a group of 256 nodes over
//! bits 18 to 32, every further one a group of 4 over 8 bits (32, 40,
//! 48, ...): a /32 route ends at the first node, a /48 at the third (the
//! plain 6-bit strides needed 3 and 5). IPv4 keeps plain nodes (g = 0),
//! with a batched lookup and a subtree builder of its own (the generic
//! ones, with the group terms constant zero, measured 1.2x slower on
//! uniform IPv4 destinations and 1.5x slower to build).
//! IPv6 needs at most 13 levels.
//!
//! **Lookup cost.** Most IPv4 destinations end in the direct array or at the
//! first node: 2-3 dependent memory reads. `lookup_batch` advances a group
//! of 64 lanes one trie level per round: each round
//! visits every lane's node, whose line the previous round prefetched, and
//! prefetches where the lane goes next, so the misses of a group overlap;
//! once fewer than 3/4 of the lanes are still at a node, the rounds visit
//! only those (listed from a bit mask).
//! The per-lane work uses selects, not branches: whether an address ends in
//! the direct array or in a node is close to random, and mispredictions
//! cost more than the misses they hide. On x86_64 a POPCNT build of both
//! paths is selected at run time. The IPv6 rounds (and the single-address
//! walk) are unrolled for their first node levels (dense rounds 0-3,
//! sparse rounds 0-4, then a loop), so that each level's bit offsets are
//! constants: cutting a 128-bit address at a variable offset took several
//! instructions and selects per lane and round, at a constant one it is a
//! byte or word load and a shift (issue 19, branch lpm6: 0.73-0.82x the
//! lookup's instruction cost, 0.87-0.95x its time on the 200k table; see
//! `docs/BENCHMARKS.md`). A literal second direct stage at /32 (bits 32
//! to 48 resolved in one read) was measured and not kept: the 200k table
//! has 15,081 /32s holding longer routes, so a `u32` array per /32 would
//! take 3.7 GiB and a node group of 1,024 nodes per /32 took 566 MB of
//! nodes, and was slower on the cold path than the two group reads it
//! replaces. The node and leaf pools are advised for
//! transparent huge pages (`MADV_HUGEPAGE`; Debian's THP mode is
//! `madvise`), since a random lookup otherwise misses the TLB on every
//! array; so are the second copy's of a [`publish`] pair, a clone (a
//! derived clone allocated them without the advice before issue 19's
//! fourth attempt).
//!
//! **Updates.** The control side is the truth; the lookup side is derived
//! from it. Routes of up to 18 bits live in an array with one entry per
//! possible prefix (`2^19` entries of 4 bytes, indexed by length, then
//! address: one read per exact-key probe, where a SipHash map cost 6 % of
//! a batch and 11 % of its replay; issue 19, sixth attempt); longer routes
//! live in one sorted vector per direct slot. A
//! slot's control state (that vector's header, where its subtree's blocks
//! are, the short route it inherits) is one 64-byte line, so a change
//! misses once on it, not once per array. Each
//! slot's subtree has its own pool blocks (power-of-two size classes with
//! free lists). A route longer than 18 bits edits its slot's vector, then
//! changes only what it must (issue 19, third attempt):
//!
//! * a **next-hop change** of a route with no longer route inside it,
//!   whose positions form one whole leaf run, rewrites that one leaf in
//!   place (the bitmaps stay; neighbouring runs may end up with equal
//!   values, which lookups do not mind and the next rebuild compresses);
//! * otherwise, an **insert, removal or next-hop change** of a route with
//!   nothing nested inside it, ending in an existing node (group),
//!   **repaints that node only**: its positions take the route's value (or
//!   the covering route's, once it is gone), the node's leaf runs are
//!   recomputed (for a single node from `leafvec` bit operations and two
//!   leaf reads), and if the node's leaf count changed, the leaves after it
//!   in the slot's leaf block move and the nodes pointing at them follow
//!   (a removal may leave a node with no route of its own below it: it
//!   answers the covering value until the next rebuild drops it);
//! * anything else (a nested route, a new node level, a leaf block too
//!   small, the slot's last long route) **rebuilds the slot's subtree**
//!   (typically one node and up to 64 leaves).
//!
//! A route of 18 bits or fewer repaints the direct slots it covers where no
//! longer short route owns them (the covering route is found by up to 18
//! exact-key probes) and rebuilds the subtrees below them. Removing a route
//! therefore restores whatever covers it. A bulk build ([`Poptrie4::
//! from_routes`]) sorts once and builds every slot once. A batch of
//! changes ([`LpmMut::apply_all`], what [`publish`] calls) applies the short
//! routes in order, then the long ones sorted by slot: a slot's changes are
//! patched or repainted one by one until one needs a rebuild, then the
//! slot's vector takes the rest and its subtree is rebuilt once; the
//! sorted order (a radix sort on the slot) lets the next slots' control and
//! subtree lines (the whole route vector, up to 16 lines), and then the
//! leaf or child node each change reaches from its root node, be
//! prefetched while the current one is updated. A change finds its
//! subtree's root in the slot's control line, not in the direct array.
//!
//! **Publication.** [`publish`] keeps two copies (left-right): the writer
//! applies a batch of deltas to the copy readers are not using, swaps an
//! atomic index, waits for readers still in the old copy (per-reader
//! epochs), and brings the old copy up to date. Readers never lock and
//! never do an atomic read-modify-write; a batch becomes visible all at
//! once. The old copy does not recompute the batch (issue 19, churn): the
//! first application records a write log (route-vector edits by index,
//! short-route entries written, pool blocks allocated and freed, the node and
//! leaf ranges and the slots it wrote), and the second replays it, copying
//! the written ranges, control lines and direct entries from the copy
//! readers now use (`poptrie/replay.rs`; [`LpmMut::apply_again`]). The
//! copies end equal word for word; a log is used only by the other copy
//! of the same table at the version it was recorded from, otherwise the
//! batch is applied again.
//!
//! **Memory** (497k-route IPv4 table, see `docs/BENCHMARKS.md`): lookup
//! side 4.5 MiB (1 MiB direct array, 1.1 MiB live nodes, 1.8 MiB live
//! leaves, the rest pool slack); control side 24.3 MiB (the 16 MiB of
//! per-slot control lines dominate; 4.75 MiB more than the four per-slot
//! arrays they replaced). The 200k-route IPv6
//! table: lookup side 29.7 MiB (17.3 MiB live nodes: the groups of 256 and
//! of 4 nodes; 17.0 MiB with plain nodes). [`Poptrie::memory`]
//! reports both. Left-right publication doubles everything. Once a batch
//! has run, its write log stays on the control side until the next: 16
//! bytes per recorded write (a few per change; an inserted route also
//! keeps the route), about 1 MB after a batch of 10,000 changes on the
//! real IPv4 table, 3.5 % of a copy (`control_bytes_after_batch` of
//! `examples/lpm_compare`). The short-route array is 2 MiB in every table
//! (IPv6 too); it replaced a hash map of about 1 MB on the real IPv4 table
//! (see `docs/BENCHMARKS.md`, issue 19's sixth attempt, for the figures).
//!
//! **Limits.** Next hops up to [`NextHop::MAX_VALID`]; pools up to 2^30
//! entries ([`LpmError::Full`] past that). Lookups never allocate and never
//! panic (all indexing is checked; a corrupted index reads as "no route").
//! Updates to short prefixes (a /8 covers 1024 direct slots) cost more than
//! updates to long ones, and so do updates under a crowded IPv6 /18 (its
//! whole subtree is rebuilt, the 16,384 positions of its first group
//! included). Pools never shrink. The table is not
//! internally synchronised: share it through [`publish`]; a reader that is
//! descheduled inside a read section delays the writer (not other readers).

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod key;
mod poptrie;
pub mod publish;
pub mod reference;
mod sync;

use base::{Prefix4, Prefix6};

pub use key::Key;
pub use poptrie::{MemoryUsage, Poptrie, Poptrie4, Poptrie6, DIRECT_BITS};

/// A next-hop index. Implementations may reserve high values internally;
/// valid next hops are `0..=NextHop::MAX_VALID`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct NextHop(pub u32);

impl NextHop {
    /// The largest next-hop index every implementation must accept.
    pub const MAX_VALID: u32 = (1 << 20) - 1;
}

/// Why an update was refused.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LpmError {
    /// The next-hop index is above [`NextHop::MAX_VALID`].
    NextHopTooLarge,
    /// The table is full (an implementation's fixed pool is exhausted).
    Full,
}

impl std::fmt::Display for LpmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LpmError::NextHopTooLarge => write!(f, "next-hop index too large"),
            LpmError::Full => write!(f, "LPM table full"),
        }
    }
}

impl std::error::Error for LpmError {}

/// The read side of an LPM table over addresses of type `A` (`u32` for
/// IPv4, `u128` for IPv6, host byte order).
pub trait Lpm<A: Copy>: Send + Sync {
    /// The next hop of the longest prefix containing `addr`.
    fn lookup(&self, addr: A) -> Option<NextHop>;

    /// Looks up every address; `out[i]` answers `addrs[i]`. `out` must be at
    /// least as long as `addrs`; extra entries are left alone.
    fn lookup_batch(&self, addrs: &[A], out: &mut [Option<NextHop>]) {
        for (a, o) in addrs.iter().zip(out.iter_mut()) {
            *o = self.lookup(*a);
        }
    }
}

/// The write side of an LPM table for prefixes of type `P`.
pub trait LpmMut<P: Copy> {
    /// Inserts or replaces the route for `prefix` (host bits ignored).
    /// Returns the previous next hop of exactly this prefix.
    fn insert(&mut self, prefix: P, nh: NextHop) -> Result<Option<NextHop>, LpmError>;
    /// Removes the route for exactly `prefix`; returns its next hop.
    fn remove(&mut self, prefix: P) -> Option<NextHop>;
    /// Number of prefixes stored.
    fn len(&self) -> usize;
    /// Applies `deltas` with the result of applying them one by one in
    /// order: a refused change is skipped, the first refusal is returned.
    /// [`Poptrie`] overrides it to rebuild each touched subtree once per
    /// batch instead of once per change.
    fn apply_all(&mut self, deltas: &[publish::Delta<P>]) -> Result<(), LpmError> {
        let mut r = Ok(());
        for d in deltas {
            let x = match *d {
                publish::Delta::Insert(p, nh) => self.insert(p, nh).map(|_| ()),
                publish::Delta::Remove(p) => {
                    self.remove(p);
                    Ok(())
                }
            };
            if let Err(e) = x {
                r = r.and(Err(e));
            }
        }
        r
    }
    /// Applies `deltas` to this table given `done`: an equal table (the
    /// other copy of a [`publish`] pair) that has just applied the same
    /// `deltas` with [`LpmMut::apply_all`]. Leaves this table equal to
    /// `done` and returns what `done`'s `apply_all` returned. The default
    /// applies `deltas` again; [`Poptrie`] copies what `done` recorded
    /// writing instead of recomputing it (and applies `deltas` itself when
    /// `done` is not its copy one batch ahead).
    fn apply_again(&mut self, deltas: &[publish::Delta<P>], done: &Self) -> Result<(), LpmError>
    where
        Self: Sized,
    {
        let _ = done;
        self.apply_all(deltas)
    }
    /// Whether no prefix is stored.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An IPv4 table: readable and writable.
pub trait Lpm4: Lpm<u32> + LpmMut<Prefix4> {}
impl<T: Lpm<u32> + LpmMut<Prefix4>> Lpm4 for T {}

/// An IPv6 table: readable and writable.
pub trait Lpm6: Lpm<u128> + LpmMut<Prefix6> {}
impl<T: Lpm<u128> + LpmMut<Prefix6>> Lpm6 for T {}

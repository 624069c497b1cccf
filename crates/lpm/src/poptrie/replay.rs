//! The second application of a batch in a [`crate::publish`] pair, by
//! copying instead of recomputing (issue 19, churn).
//!
//! Left-right publication applies every batch to both copies of the table.
//! Both start equal and every update is deterministic, so the second
//! application would recompute exactly what the first one wrote: the same
//! binary searches in the slots' route vectors, the same walks to the node
//! where a route ends, the same leaf runs, the same subtree rebuilds. So
//! the first application ([`Poptrie::apply_batch`]) records a **write log**
//! while it runs: every edit of a slot's route vector by index, every
//! short-route entry written, every pool block allocated or freed, the node and
//! leaf ranges it wrote, and the slots whose control line or direct entry it
//! changed. The second copy ([`Poptrie::replay`]) replays the log: route
//! vector edits by index (no search), pool operations in order (the free
//! lists then hand out the same blocks), and every logged range, slot line
//! and direct entry copied from the first copy, which readers are reading
//! meanwhile (it is only read, by both sides).
//!
//! Ranges are copied from the first copy's state *after* the batch, so the
//! order of the copies does not matter: every index the batch wrote ends up
//! with its final value, whatever an earlier change of the batch wrote
//! there. The vector edits and pool operations, which depend on order, are
//! replayed in order. The two copies are then equal word for word (unit
//! tests `replay_leaves_copies_identical_v4` and `_v6`).
//!
//! The log is used only when the second copy is provably where the first
//! was before the batch: the same lineage (set when a table is created,
//! kept by clones) and the version the log was recorded from (every batch
//! and every single insert or removal moves the version on). Otherwise,
//! and for a log that does not fit the copy (impossible unless the copies
//! diverged), the batch is applied again the ordinary way, or the first
//! copy is cloned. (Two clones of one table changed differently by as many
//! batches share lineage and version: handing one to the other's
//! [`crate::LpmMut::apply_again`] breaks its contract, and is not
//! detected.)

use std::sync::atomic::{AtomicU64, Ordering};

use super::{prefetch, prefetch_node, Poptrie};
use crate::key::Key;
use crate::LpmError;

/// One recorded write of a batch: 16 bytes for both families (the
/// routes an op inserts are kept beside the ops, in [`Log::routes`]).
#[derive(Copy, Clone, Debug)]
pub(crate) enum Op {
    /// `slots[s].long[i].2 = v` (a next-hop change of a listed route).
    LongSet { s: u32, i: u32, v: u32 },
    /// `slots[s].long.insert(i, routes[r])`.
    LongInsert { s: u32, i: u32, r: u32 },
    /// `slots[s].long.remove(i)`.
    LongRemove { s: u32, i: u32 },
    /// `short[i] = v`: a short route set, or removed (`NO_ROUTE`).
    Short { i: u32, v: u32 },
    /// Slot `s`'s direct entry and control fields (subtree blocks,
    /// inherited route) changed: copy them.
    Slot(u32),
    /// Node (`leaf: false`) or leaf entries `start..start + len` written:
    /// copy them.
    Range { leaf: bool, start: u32, len: u32 },
    /// A pool block of class `class` allocated at `start`.
    Alloc { leaf: bool, start: u32, class: u8 },
    /// A pool block freed.
    Free { leaf: bool, start: u32, class: u8 },
}

/// The write log of the last batch ([`Poptrie::apply_batch`]).
#[derive(Clone, Debug)]
pub(crate) struct Log<K> {
    /// Recording (inside a batch).
    pub(crate) on: bool,
    /// The ops describe the last change to this table completely: it went
    /// from version `base` to `base + 1` by exactly them.
    pub(crate) ok: bool,
    pub(crate) base: u64,
    /// What the batch returned.
    pub(crate) result: Result<(), LpmError>,
    pub(crate) ops: Vec<Op>,
    /// Routes inserted into route vectors ([`Op::LongInsert`]).
    pub(crate) routes: Vec<(K, u8, u32)>,
}

impl<K> Log<K> {
    fn clear(&mut self) {
        self.ops.clear();
        self.routes.clear();
    }

    /// Bytes held (capacity).
    pub(crate) fn bytes(&self) -> usize {
        self.ops.capacity() * std::mem::size_of::<Op>()
            + self.routes.capacity() * std::mem::size_of::<(K, u8, u32)>()
    }
}

impl<K> Default for Log<K> {
    fn default() -> Self {
        Log {
            on: false,
            ok: false,
            base: 0,
            result: Ok(()),
            ops: Vec::new(),
            routes: Vec::new(),
        }
    }
}

/// Lineages of tables created in this process (see the module doc).
static LINEAGE: AtomicU64 = AtomicU64::new(1);

/// A new lineage for a table created from scratch.
pub(crate) fn new_lineage() -> u64 {
    LINEAGE.fetch_add(1, Ordering::Relaxed)
}

/// How far ahead of the op being replayed its destination lines are
/// prefetched: the slot's control line first, then (once that line is
/// in) the route vector element or the pool entries it points to.
const FAR: usize = 16;
const NEAR: usize = 8;

impl<K: Key> Poptrie<K> {
    /// Records `op` if a batch is being recorded.
    #[inline(always)]
    pub(crate) fn note(&mut self, op: Op) {
        if self.log.on {
            self.log.ops.push(op);
        }
    }

    /// Records a rewrite in slot `s`: `leaves` leaves from `leaf0` and the
    /// node range `nodes` (start, length); `moved`: their counts changed,
    /// so the slot's control line did too (recorded first).
    pub(crate) fn note_rewrite(
        &mut self,
        s: usize,
        moved: bool,
        leaf0: usize,
        leaves: usize,
        nodes: (usize, usize),
    ) {
        if moved {
            self.note(Op::Slot(s as u32));
        }
        self.note(Op::Range {
            leaf: true,
            start: leaf0 as u32,
            len: leaves as u32,
        });
        self.note(Op::Range {
            leaf: false,
            start: nodes.0 as u32,
            len: nodes.1 as u32,
        });
    }

    /// Records `slots[s].long.insert(i, r)`.
    #[inline(always)]
    pub(crate) fn note_insert(&mut self, s: u32, i: u32, r: (K, u8, u32)) {
        if self.log.on {
            let k = self.log.routes.len() as u32;
            self.log.routes.push(r);
            self.log.ops.push(Op::LongInsert { s, i, r: k });
        }
    }

    /// Starts recording a batch.
    pub(crate) fn log_begin(&mut self) {
        self.log.clear();
        self.log.on = true;
        self.log.ok = false;
        self.log.base = self.version;
    }

    /// Ends the recording: the log now describes the move from the version
    /// before the batch to the next.
    pub(crate) fn log_end(&mut self, result: Result<(), LpmError>) {
        self.log.on = false;
        self.log.ok = true;
        self.log.result = result;
        self.version = self.log.base.wrapping_add(1);
    }

    /// A change made outside a recorded batch: the log no longer describes
    /// how this table got where it is.
    pub(crate) fn log_forget(&mut self) {
        self.log.ok = false;
        self.version = self.version.wrapping_add(1);
    }

    /// Applies the batch `done` recorded, if `done` is this table's other
    /// copy, one batch ahead of this one; returns the batch's result, or
    /// `None` when the caller must apply the batch itself. (Not inlined:
    /// once per batch, and so that profiles show the replay apart.)
    #[inline(never)]
    pub(crate) fn again(&mut self, done: &Self) -> Option<Result<(), LpmError>> {
        let log = &done.log;
        if !log.ok
            || log.on
            || done.lineage != self.lineage
            || log.base != self.version
            || done.version != self.version.wrapping_add(1)
        {
            return None;
        }
        if self.replay(done).is_none() {
            // The copies had diverged (never expected): take the other
            // copy whole rather than leave this one half replayed.
            *self = done.clone();
        }
        self.version = done.version;
        self.log.ok = false;
        self.log.clear();
        Some(log.result)
    }

    /// Prefetches the lines op `op` will write in this copy, and those of
    /// `done` it copies from: by the replay, `done`'s first lines written
    /// by the batch have left this core's caches (the profile of issue
    /// 19's sixth attempt had the slot line copy and the node range copies
    /// waiting on them).
    #[inline(always)]
    fn prefetch_op(&self, done: &Self, op: &Op, near: bool) {
        match *op {
            Op::LongSet { s, i, .. } | Op::LongInsert { s, i, .. } | Op::LongRemove { s, i } => {
                if !near {
                    prefetch(self.slots.as_ptr().wrapping_add(s as usize));
                    return;
                }
                let Some(x) = self.slots.get(s as usize) else {
                    return;
                };
                let p = x.long.as_ptr().wrapping_add(i as usize).cast::<u8>();
                if matches!(op, Op::LongSet { .. }) {
                    prefetch(p);
                    return;
                }
                // An insert or a removal moves the entries after `i`: their
                // lines (up to 16, as the first application prefetches the
                // vector), where the profile had the move waiting.
                let bytes = std::mem::size_of_val(x.long.get(i as usize..).unwrap_or(&[]));
                for off in (0..bytes.min(16 * 64)).step_by(64) {
                    prefetch(p.wrapping_add(off));
                }
                prefetch(p.wrapping_add(bytes.saturating_sub(1)));
            }
            Op::Slot(s) if !near => {
                for t in [self, done] {
                    prefetch(t.slots.as_ptr().wrapping_add(s as usize));
                    prefetch(t.direct.as_ptr().wrapping_add(s as usize));
                }
            }
            Op::Range { leaf, start, .. } if near => {
                for t in [self, done] {
                    if leaf {
                        prefetch(t.leaves.items.as_ptr().wrapping_add(start as usize));
                    } else {
                        prefetch_node(t.nodes.items.as_ptr().wrapping_add(start as usize));
                    }
                }
            }
            _ => {}
        }
    }

    /// Replays `done`'s log on this copy (see the module doc). `None` if an
    /// op does not fit this copy (it may then be half replayed).
    fn replay(&mut self, done: &Self) -> Option<()> {
        let ops = &done.log.ops;
        let (mut far, mut near) = (0, 0);
        for (k, op) in ops.iter().enumerate() {
            while far < (k + FAR).min(ops.len()) {
                if let Some(o) = ops.get(far) {
                    self.prefetch_op(done, o, false);
                }
                far += 1;
            }
            while near < (k + NEAR).min(ops.len()) {
                if let Some(o) = ops.get(near) {
                    self.prefetch_op(done, o, true);
                }
                near += 1;
            }
            match *op {
                Op::LongSet { s, i, v } => {
                    self.slots.get_mut(s as usize)?.long.get_mut(i as usize)?.2 = v;
                }
                Op::LongInsert { s, i, r } => {
                    let r = *done.log.routes.get(r as usize)?;
                    let long = &mut self.slots.get_mut(s as usize)?.long;
                    if i as usize > long.len() {
                        return None;
                    }
                    long.insert(i as usize, r);
                }
                Op::LongRemove { s, i } => {
                    let long = &mut self.slots.get_mut(s as usize)?.long;
                    if i as usize >= long.len() {
                        return None;
                    }
                    long.remove(i as usize);
                }
                Op::Short { i, v } => {
                    *self.short.get_mut(i as usize)? = v;
                }
                Op::Slot(s) => {
                    let s = s as usize;
                    let from = done.slots.get(s)?;
                    let x = self.slots.get_mut(s)?;
                    x.sub = from.sub;
                    x.best = from.best;
                    x.best_len = from.best_len;
                    *self.direct.get_mut(s)? = *done.direct.get(s)?;
                }
                Op::Range { leaf, start, len } => {
                    let r = start as usize..start as usize + len as usize;
                    if leaf {
                        let from = done.leaves.items.get(r.clone())?;
                        self.leaves.items.get_mut(r)?.copy_from_slice(from);
                    } else {
                        let from = done.nodes.items.get(r.clone())?;
                        self.nodes.items.get_mut(r)?.copy_from_slice(from);
                    }
                }
                Op::Alloc { leaf, start, class } => {
                    let got = if leaf {
                        self.leaves.alloc(1 << class)
                    } else {
                        self.nodes.alloc(1 << class)
                    };
                    if got != Ok((start, class)) {
                        return None;
                    }
                }
                Op::Free { leaf, start, class } => {
                    if leaf {
                        self.leaves.free(start, class);
                    } else {
                        self.nodes.free(start, class);
                    }
                }
            }
        }
        self.n_long = done.n_long;
        self.n_short = done.n_short;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::Delta;
    use crate::reference::{Reference4, Reference6};
    use crate::{Lpm, LpmMut, NextHop};
    use base::{Prefix4, Prefix6};

    /// Every part of two tables that lookups or later updates read.
    fn assert_identical<K: Key>(a: &Poptrie<K>, b: &Poptrie<K>) {
        assert!(a.direct == b.direct, "direct arrays differ");
        assert!(a.nodes.items == b.nodes.items, "node pools differ");
        assert!(a.leaves.items == b.leaves.items, "leaf pools differ");
        assert_eq!(a.nodes.free_lists(), b.nodes.free_lists());
        assert_eq!(a.leaves.free_lists(), b.leaves.free_lists());
        assert_eq!(a.nodes.live(), b.nodes.live());
        assert_eq!(a.leaves.live(), b.leaves.live());
        assert!(a.short == b.short, "short routes differ");
        assert_eq!(a.n_short, b.n_short);
        assert_eq!(a.n_long, b.n_long);
        for (i, (x, y)) in a.slots.iter().zip(&b.slots).enumerate() {
            assert!(x.long == y.long, "slot {i}: route vectors differ");
            let (p, q) = (x.sub, y.sub);
            assert_eq!(
                (p.node, p.leaf, p.nclass, p.lclass, p.llen, x.best, x.best_len),
                (q.node, q.leaf, q.nclass, q.lclass, q.llen, y.best, y.best_len),
                "slot {i}: control line differs"
            );
        }
        assert_eq!(a.version, b.version);
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    /// Batches of every kind of change (short and long routes, next-hop
    /// changes, new routes, withdrawals, nested routes) applied to one
    /// copy and replayed on the other, the roles swapping every batch as
    /// in a publish pair. The deltas are withheld from the second copy, so
    /// it can only have copied; the copies must stay equal word for word
    /// and answer as the naive table `reference` after the same changes.
    fn churn<K, P, R>(routes: &[P], addrs: &[K], mut reference: R)
    where
        K: Key,
        P: Copy,
        Poptrie<K>: LpmMut<P> + Lpm<K>,
        R: LpmMut<P> + Lpm<K>,
    {
        let mut a = Poptrie::<K>::new();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let answers = |t: &dyn Lpm<K>| addrs.iter().map(|&x| t.lookup(x)).collect::<Vec<_>>();
        for (i, &p) in routes.iter().enumerate().step_by(2) {
            let nh = NextHop(i as u32 % 3);
            a.insert(p, nh).expect("insert");
            reference.insert(p, nh).expect("insert");
        }
        let mut b = a.clone();
        for round in 0..60 {
            let mut ds = Vec::new();
            for _ in 0..(1 + rng.next() % 200) {
                let p = routes[(rng.next() % routes.len() as u64) as usize];
                ds.push(match rng.next() % 4 {
                    0 => Delta::Remove(p),
                    _ => Delta::Insert(p, NextHop((rng.next() % 4) as u32)),
                });
            }
            let (first, second) = if round % 2 == 0 {
                (&mut a, &mut b)
            } else {
                (&mut b, &mut a)
            };
            let r = first.apply_all(&ds);
            assert!(first.log.ok && !first.log.ops.is_empty());
            assert_eq!(second.apply_again(&[], first), r, "round {round}");
            reference.apply_all(&ds).expect("reference");
            assert_identical(first, second);
            let want = answers(&reference);
            assert!(answers(first) == want, "round {round}: first copy");
            assert!(answers(second) == want, "round {round}: second copy");
        }
        // A table that is not the other copy one batch ahead is not copied
        // from: the deltas are applied to it.
        let ds = [Delta::Remove(routes[0]), Delta::Remove(routes[1])];
        let mut c = a.clone();
        // As after a change outside a batch (a single insert or removal).
        c.log_forget();
        let mut d = b.clone();
        a.apply_all(&ds).expect("remove");
        assert_eq!(c.apply_again(&ds, &a), Ok(()));
        assert!(answers(&c) == answers(&a));
        // Two batches ahead: the log is of the second.
        a.apply_all(&[Delta::Insert(routes[0], NextHop(7))])
            .expect("insert");
        assert_eq!(d.apply_again(&[], &a), Ok(()));
        assert!(
            answers(&d) == answers(&b),
            "copied from a log of another version"
        );
        assert!(answers(&d) != answers(&a));
    }

    #[test]
    fn ops_are_16_bytes() {
        // The log's memory (docs/BENCHMARKS.md): routes live beside the ops.
        assert_eq!(std::mem::size_of::<Op>(), 16);
    }

    #[test]
    fn replay_leaves_copies_identical_v4() {
        let mut rng = Rng(7);
        let lens = [8, 14, 16, 18, 19, 20, 22, 24, 24, 24, 26, 28, 32];
        let routes: Vec<Prefix4> = (0..600)
            .map(|_| {
                let a = 0x0a00_0000 | (rng.next() as u32 & 0x003f_ffff);
                let l = lens[(rng.next() % lens.len() as u64) as usize];
                Prefix4::new(a, l).expect("len").masked()
            })
            .collect();
        let addrs: Vec<u32> = routes
            .iter()
            .flat_map(|p| [p.addr_bits(), p.addr_bits() | 0xff, p.addr_bits() ^ 0x100])
            .collect();
        churn::<u32, _, _>(&routes, &addrs, Reference4::default());
    }

    #[test]
    fn replay_leaves_copies_identical_v6() {
        let mut rng = Rng(11);
        let lens = [16, 18, 24, 32, 32, 40, 44, 48, 48, 48, 52, 56, 64, 128];
        let base = 0x2001_0db8_u128 << 96;
        let routes: Vec<Prefix6> = (0..600)
            .map(|_| {
                let a = base | (u128::from(rng.next()) << 40) >> 8;
                let l = lens[(rng.next() % lens.len() as u64) as usize];
                Prefix6::new(a, l).expect("len").masked()
            })
            .collect();
        let addrs: Vec<u128> = routes
            .iter()
            .flat_map(|p| {
                [
                    p.addr_bits(),
                    p.addr_bits() | 0xffff,
                    p.addr_bits() ^ (1 << 80),
                ]
            })
            .collect();
        churn::<u128, _, _>(&routes, &addrs, Reference6::default());
    }
}

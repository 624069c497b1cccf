//! Lock-free publication of table updates to forwarding workers: a
//! left-right pair.
//!
//! # Design
//!
//! The writer keeps **two copies** of the table. Readers always read the
//! copy named by an atomic index (`active`); the writer only ever mutates the
//! other one (the standby). To publish a batch of deltas the writer
//!
//! 1. applies the deltas to the standby copy,
//! 2. swaps `active` (one atomic store),
//! 3. waits until every reader that might still be reading the old copy has
//!    left its read section (per-reader epoch counters, below), and
//! 4. replays the same deltas on the old copy, so both copies are equal
//!    again when `publish` returns ([`Absorb::absorb_again`]: the old copy
//!    may copy what step 1 wrote from the new one, which it only reads,
//!    instead of recomputing it).
//!
//! Each reader owns a cache-line-sized slot holding an epoch counter that
//! only it writes: odd while inside a read section, even outside. Entering is
//! one release store (a plain `mov` on x86-64), a fence and one load of
//! `active`; leaving is one release store.
//! There is **no atomic read-modify-write and no lock on the read side**, and
//! a read section normally covers a whole batch of lookups, so the cost is
//! per batch, not per lookup. The writer, seeing an odd epoch, spins (then
//! yields) until that reader's epoch changes: a reader that stops forever
//! inside a section stalls the writer, never the other readers.
//!
//! `loom/tests/publish.rs` at the repository root model-checks this protocol with loom (run by
//! `scripts/test`; the primitives come through `crate::sync`).
//!
//! Why left-right and not `arc-swap` of rebuilt tables: a full rebuild of a
//! 500k-route table takes tens of milliseconds, so rebuilding per batch would
//! cap the update rate far below the 1M changes/s target, and copy-on-write
//! of parts would need reference counts on the read path. Left-right keeps
//! incremental updates (each delta is applied once and, on the second copy,
//! replayed: [`Absorb::absorb_again`]) and a plain `&T` for lookups.
//!
//! # Memory cost
//!
//! Two full copies of the table: twice [`crate::MemoryUsage`] (lookup and
//! control parts), about 2 × 29 MiB for the 497k-route IPv4 Poptrie. Plus 64
//! bytes per reader.

use std::cell::UnsafeCell;
use std::sync::PoisonError;

use crate::sync::{fence, spin_loop, yield_now, Arc, AtomicU64, AtomicUsize, Mutex, Ordering};

use crate::{LpmError, LpmMut, NextHop};

/// One change to a table.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Delta<P> {
    /// Add or replace the route for a prefix.
    Insert(P, NextHop),
    /// Remove the route for exactly this prefix (a no-op if absent).
    Remove(P),
}

/// A change a table knows how to apply. Must be deterministic: the same
/// change applied to equal tables leaves them equal.
pub trait Absorb<D> {
    /// Applies `d` to this copy, or refuses it; the same change on an equal copy must give the same
    /// result, so both copies stay equal.
    fn absorb(&mut self, d: &D) -> Result<(), LpmError>;

    /// Applies a whole batch, with the result of applying each change in
    /// order ([`Absorb::absorb`]; a refused change is skipped, the first
    /// refusal is returned). A table may override it to share work between
    /// the changes of a batch; [`Writer::publish`] calls this.
    fn absorb_all(&mut self, ds: &[D]) -> Result<(), LpmError> {
        let mut r = Ok(());
        for d in ds {
            if let Err(e) = self.absorb(d) {
                r = r.and(Err(e));
            }
        }
        r
    }

    /// Applies `ds` to this copy given `done`, the other copy, which was
    /// equal to this one and has just applied `ds` with
    /// [`Absorb::absorb_all`]; [`Writer::publish`] calls this for the second
    /// copy. Must leave this copy equal to `done` and return what `done`'s
    /// `absorb_all` returned. The default applies `ds` again; a table may
    /// instead copy what the first application wrote (the [`crate::Poptrie`]
    /// does). `done` is being read by readers meanwhile: read it only.
    fn absorb_again(&mut self, ds: &[D], done: &Self) -> Result<(), LpmError>
    where
        Self: Sized,
    {
        let _ = done;
        self.absorb_all(ds)
    }
}

impl<P: Copy, T: LpmMut<P>> Absorb<Delta<P>> for T {
    fn absorb(&mut self, d: &Delta<P>) -> Result<(), LpmError> {
        match *d {
            Delta::Insert(p, nh) => self.insert(p, nh).map(|_| ()),
            Delta::Remove(p) => {
                self.remove(p);
                Ok(())
            }
        }
    }

    fn absorb_all(&mut self, ds: &[Delta<P>]) -> Result<(), LpmError> {
        self.apply_all(ds)
    }

    fn absorb_again(&mut self, ds: &[Delta<P>], done: &Self) -> Result<(), LpmError> {
        self.apply_again(ds, done)
    }
}

/// A reader's epoch, alone on its cache line so that readers never write
/// to a line another core reads on its fast path.
#[repr(align(64))]
#[derive(Debug, Default)]
struct Slot {
    epoch: AtomicU64,
}

struct Shared<T> {
    copies: [UnsafeCell<T>; 2],
    active: AtomicUsize,
    /// Registered readers. Locked only to add a reader and by the writer
    /// while it waits; never on the read path.
    readers: Mutex<Vec<Arc<Slot>>>,
}

// SAFETY: readers on several threads get `&T` to the active copy (needs
// `T: Sync`); the writer, on its own thread, gets `&mut T` to the standby
// copy that no reader can reach (the protocol in the module docs), which
// moves exclusive access across threads (needs `T: Send`).
unsafe impl<T: Send + Sync> Sync for Shared<T> {}
// SAFETY: as above; `Shared` owns its `T`s.
unsafe impl<T: Send + Sync> Send for Shared<T> {}

/// The single writer. Not `Clone`: exactly one exists per table pair.
pub struct Writer<T> {
    shared: Arc<Shared<T>>,
}

/// A reader's handle; move one into each forwarding worker.
pub struct ReadHandle<T> {
    shared: Arc<Shared<T>>,
    slot: Arc<Slot>,
    epoch: u64,
}

/// A read section: derefs to the current table. Keep it for a batch, not
/// longer: the writer waits for it to drop before reusing the old copy.
pub struct ReadGuard<'a, T> {
    table: &'a T,
    slot: &'a Slot,
    epoch: &'a mut u64,
}

/// Creates a left-right pair from `table` (cloned once for the second
/// copy).
pub fn left_right<T: Clone + Send + Sync>(table: T) -> Writer<T> {
    let b = table.clone();
    Writer {
        shared: Arc::new(Shared {
            copies: [UnsafeCell::new(table), UnsafeCell::new(b)],
            active: AtomicUsize::new(0),
            readers: Mutex::new(Vec::new()),
        }),
    }
}

impl<T: Send + Sync> Writer<T> {
    /// A new reader handle.
    pub fn reader(&self) -> ReadHandle<T> {
        let slot = Arc::new(Slot::default());
        let mut rs = self
            .shared
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Forget readers whose handle was dropped.
        rs.retain(|s| Arc::strong_count(s) > 1);
        rs.push(slot.clone());
        ReadHandle {
            shared: self.shared.clone(),
            slot,
            epoch: 0,
        }
    }

    /// The writer's view of the table (the standby copy, equal to what
    /// readers see between publications).
    pub fn table(&self) -> &T {
        let standby = 1 - (self.shared.active.load(Ordering::Acquire) & 1);
        // SAFETY: only the writer mutates a copy, and only through
        // `&mut self`, so no `&mut T` exists while this `&T` lives.
        unsafe { &*self.shared.copies[standby].get() }
    }

    /// Applies `deltas` and publishes them to readers; returns when both
    /// copies hold them. A delta the table refuses is skipped (identically
    /// on both copies); the first refusal is returned. The standby copy
    /// takes them with [`Absorb::absorb_all`], the old copy, once readers
    /// have left it, with [`Absorb::absorb_again`] (which may read the
    /// copy readers now use, never write it).
    pub fn publish<D>(&mut self, deltas: &[D]) -> Result<(), LpmError>
    where
        T: Absorb<D>,
    {
        let old = self.shared.active.load(Ordering::Acquire) & 1;
        let standby = 1 - old;
        // SAFETY: as in `publish_with`: no reader holds a reference to the
        // standby copy, and `&mut self` excludes other writer borrows.
        let first = unsafe { &mut *self.shared.copies[standby].get() }.absorb_all(deltas);
        self.swap_and_wait(standby);
        // SAFETY: after the wait no reference to `old` exists (as in
        // `publish_with`), so `&mut` to it is exclusive. `standby` is now
        // read by readers and, through this shared reference, by
        // `absorb_again`; nothing mutates it until the next publication
        // (which needs `&mut self`, so this borrow has ended).
        let (done, stale) = unsafe {
            (
                &*self.shared.copies[standby].get(),
                &mut *self.shared.copies[old].get(),
            )
        };
        let again = stale.absorb_again(deltas, done);
        debug_assert_eq!(first, again, "the copies answered a batch differently");
        let _ = again;
        first
    }

    /// Runs `f` on the standby copy, publishes it, waits for readers to
    /// leave the old copy, and runs `f` on that one too. `f` must be
    /// deterministic (see [`Absorb`]).
    pub fn publish_with(&mut self, mut f: impl FnMut(&mut T)) {
        let old = self.shared.active.load(Ordering::Acquire) & 1;
        let standby = 1 - old;
        // SAFETY: no reader holds a reference to the standby copy: readers
        // load `active` inside a section, and the previous publish (or
        // construction, when nobody had read yet) waited for every section
        // that could have seen this copy as active to end. `&mut self`
        // excludes other writer-side borrows.
        f(unsafe { &mut *self.shared.copies[standby].get() });
        self.swap_and_wait(standby);
        // SAFETY: after the wait every reader section that started before
        // the swap has ended, and later sections read `standby`; so no
        // reference to `old` exists.
        f(unsafe { &mut *self.shared.copies[old].get() });
    }

    /// Makes copy `standby` the active one and waits until no reader can
    /// still be reading the other.
    fn swap_and_wait(&self, standby: usize) {
        self.shared.active.store(standby, Ordering::SeqCst);
        // Pairs with the reader's fence: either the reader sees the new
        // `active`, or we see its odd epoch and wait for it.
        fence(Ordering::SeqCst);
        self.wait_for_readers();
    }

    fn wait_for_readers(&self) {
        let rs = self
            .shared
            .readers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for s in rs.iter() {
            let e = s.epoch.load(Ordering::Acquire);
            if e & 1 == 0 {
                continue;
            }
            let mut spins = 0u32;
            while s.epoch.load(Ordering::Acquire) == e {
                if spins < 1000 {
                    spin_loop();
                    spins += 1;
                } else {
                    yield_now();
                }
            }
        }
    }
}

impl<T: Send + Sync> ReadHandle<T> {
    /// Enters a read section. No lock, no atomic read-modify-write: one
    /// store, one fence, one load.
    pub fn read(&mut self) -> ReadGuard<'_, T> {
        self.epoch = self.epoch.wrapping_add(1) | 1;
        // Release, not Relaxed (found by the loom model, loom/tests/publish.rs):
        // the writer may see this section's epoch `e` odd, then, on its next
        // load, already the *next* section's entering value `e + 2` (this
        // reader dropped the guard, storing `e + 1` with Release, and entered
        // again in between). A Relaxed store of `e + 2` is not in the release
        // sequence of the `e + 1` store (C++20 rules, which Rust follows), so
        // the writer's acquire load of it synchronised with nothing, and its
        // mutation of the old copy raced with section `e`'s reads of it.
        // As a release store, `e + 2` carries everything before it, section
        // `e` included. Same instruction as Relaxed on x86-64 (a plain
        // `mov`); `stlr` instead of `str` on AArch64.
        self.slot.epoch.store(self.epoch, Ordering::Release);
        // Orders the epoch store before the `active` load (store-load),
        // pairing with the writer's fence after its swap.
        fence(Ordering::SeqCst);
        let i = self.shared.active.load(Ordering::Acquire) & 1;
        // SAFETY: the writer mutates copy `i` only after it has made the
        // other copy active and seen this reader's epoch move past the odd
        // value stored above, which happens only when the guard drops.
        let table = unsafe { &*self.shared.copies[i].get() };
        ReadGuard {
            table,
            slot: &self.slot,
            epoch: &mut self.epoch,
        }
    }
}

impl<T> std::ops::Deref for ReadGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.table
    }
}

impl<T> Drop for ReadGuard<'_, T> {
    fn drop(&mut self) {
        *self.epoch = self.epoch.wrapping_add(1);
        self.slot.epoch.store(*self.epoch, Ordering::Release);
    }
}

//! Loom model of `lpm::publish` (left-right publication).
//!
//! Run with
//! `scripts/loom publish`
//! (`scripts/test` does). Without `--cfg loom` this file is empty.
//!
//! The table in the model is two cells, `a` and `b`, both set to the
//! version number by each publication (the second copy by copying it from
//! the first, which readers are reading by then, as the Poptrie's replay
//! does). Every access to them goes through
//! `loom::cell::UnsafeCell`, so loom checks, in every interleaving it
//! explores (and for every value a weak-memory load may return), that each
//! writer-side mutation of a copy is ordered by happens-before with every
//! reader access to that copy: a reader that could observe a copy while the
//! writer mutates it fails the model with a causality violation. On top of
//! that the readers assert what they see: `a == b` (never a torn copy), a
//! version that was published (0, 1 or 2), and versions that never go back.
//! The writer's `publish` returning at all checks that its wait for readers
//! terminates: a wait that spun forever would exceed loom's branch limit.
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::thread;
use lpm::publish::{left_right, Absorb, Writer};
use lpm::LpmError;

/// A two-word table; both words hold the version of the last publication.
struct Table {
    a: UnsafeCell<u32>,
    b: UnsafeCell<u32>,
}

// SAFETY: the point of the model: `lpm::publish` must give readers (`&Table`
// on several threads) and the writer (`&mut Table`) disjoint access, and loom
// checks every access to the cells.
unsafe impl Sync for Table {}

impl Table {
    fn new(v: u32) -> Self {
        Table {
            a: UnsafeCell::new(v),
            b: UnsafeCell::new(v),
        }
    }

    /// Reads both words; panics on a torn copy.
    fn version(&self) -> u32 {
        // SAFETY: plain reads of a `u32`; loom checks they do not race.
        let a = self.a.with(|p| unsafe { *p });
        let b = self.b.with(|p| unsafe { *p });
        assert_eq!(a, b, "torn table: a = {a}, b = {b}");
        a
    }
}

impl Clone for Table {
    fn clone(&self) -> Self {
        Table::new(self.version())
    }
}

/// A publication: set both words to this version, one after the other.
impl Absorb<u32> for Table {
    fn absorb(&mut self, v: &u32) -> Result<(), LpmError> {
        // Through `with_mut` (not `get_mut`) so that loom sees the writes.
        // SAFETY: plain writes of a `u32`; loom checks they do not race.
        self.a.with_mut(|p| unsafe { *p = *v });
        self.b.with_mut(|p| unsafe { *p = *v });
        Ok(())
    }

    /// The second copy copies from the first, as the Poptrie's replay does:
    /// loom checks that reading `done` (the copy readers now use) while
    /// writing this one races with nothing.
    fn absorb_again(&mut self, vs: &[u32], done: &Self) -> Result<(), LpmError> {
        let v = done.version();
        assert_eq!(Some(&v), vs.last(), "the other copy holds the batch");
        // SAFETY: plain writes of a `u32`; loom checks they do not race.
        self.a.with_mut(|p| unsafe { *p = v });
        self.b.with_mut(|p| unsafe { *p = v });
        Ok(())
    }
}

/// Loom's explorer with a preemption bound (so the model stays small) unless
/// `LOOM_MAX_PREEMPTIONS` sets one.
fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b
}

/// Two publications by the writer; the readers have been spawned already.
fn publish_twice(w: &mut Writer<Table>) {
    for v in 1..=2 {
        w.publish(&[v]).expect("the model's table refuses nothing");
        assert_eq!(w.table().version(), v, "writer's view after publish");
    }
}

/// One reader doing two read sections against two publications.
#[test]
fn one_reader_two_sections_two_publishes() {
    builder().check(|| {
        let mut w = left_right(Table::new(0));
        let mut r = w.reader();
        let t = thread::spawn(move || {
            let mut last = 0;
            for _ in 0..2 {
                let g = r.read();
                let v = g.version();
                assert!(v <= 2, "version {v} was never published");
                assert!(v >= last, "version went back from {last} to {v}");
                last = v;
                // A second look inside the same section sees the same copy.
                assert_eq!(g.version(), v, "table changed under a read section");
            }
            r
        });
        publish_twice(&mut w);
        let mut r = t.join().expect("reader");
        // After the last publish both copies hold the last version.
        assert_eq!(r.read().version(), 2);
        assert_eq!(w.table().version(), 2);
    });
}

/// Two readers, one read section each, against two publications.
#[test]
fn two_readers_two_publishes() {
    builder().check(|| {
        let mut w = left_right(Table::new(0));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let mut r = w.reader();
                thread::spawn(move || {
                    let g = r.read();
                    let v = g.version();
                    assert!(v <= 2, "version {v} was never published");
                    assert_eq!(g.version(), v, "table changed under a read section");
                })
            })
            .collect();
        publish_twice(&mut w);
        for t in readers {
            t.join().expect("reader");
        }
        assert_eq!(w.table().version(), 2);
    });
}

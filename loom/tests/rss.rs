//! Loom model of the software-RSS ring (`io::rss::spsc`).
//!
//! Run with
//! `scripts/loom rss`
//! (`scripts/test` does). Without `--cfg loom` this file is empty.
//!
//! The ring's slots are `loom::cell::UnsafeCell`s under `--cfg loom`, so in
//! every interleaving loom explores (and for every value a weak-memory load
//! may return) it checks that the producer's write of a slot and the
//! consumer's read of it are ordered by happens-before: a push into a slot
//! the consumer has not released, or a pop of a slot not yet published,
//! fails the model. On top of that the models assert:
//!
//! * no item is lost, duplicated or reordered: the consumer gets exactly
//!   `0, 1, .., N-1`;
//! * "full" is reported right: a push succeeds only with a free slot (never
//!   more than `cap` items pushed but not released), and refuses only when
//!   the ring was full as of the last release the producer can know of;
//! * "empty" is reported right, the same way for pops and publications;
//! * items left in the ring when both ends are dropped are dropped once.
//!
//! A model that stopped making progress (a lost wake-up of the retry loops)
//! would exceed loom's branch limit and fail too.
#![cfg(loom)]

use io::rss::spsc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// Loom's explorer with a preemption bound (so the model stays small) unless
/// `LOOM_MAX_PREEMPTIONS` sets one.
fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b
}

/// What each side tells the model checker about its progress, next to
/// the ring's own indices. `*_ahead` is stored just before the ring's own
/// store (publish or release) and may run ahead of it; `*_behind` just
/// after, and may lag it. A side that reads `*_ahead` after an operation
/// gets an upper bound of what it can have seen; one that reads `*_behind`
/// before it, a lower bound.
#[derive(Default)]
struct Progress {
    published_ahead: AtomicUsize,
    published_behind: AtomicUsize,
    released_ahead: AtomicUsize,
    released_behind: AtomicUsize,
}

/// Producer and consumer on two threads moving `n` items through a ring of
/// `cap` slots, publishing and releasing every `batch` items (and whenever
/// they have to wait).
fn transfer(cap: usize, n: usize, batch: usize) {
    let (mut p, mut c) = spsc::<usize>(cap);
    let prog = Arc::new(Progress::default());

    let pp = Arc::clone(&prog);
    let producer = thread::spawn(move || {
        let publish = |p: &mut io::rss::Producer<usize>, pushed: usize| {
            pp.published_ahead.store(pushed, Ordering::Release);
            p.publish();
            pp.published_behind.store(pushed, Ordering::Release);
        };
        let mut next = 0;
        let mut unpublished = 0;
        while next < n {
            let released = pp.released_behind.load(Ordering::Acquire);
            match p.push(next) {
                Ok(()) => {
                    next += 1;
                    unpublished += 1;
                    let released = pp.released_ahead.load(Ordering::Acquire);
                    assert!(
                        next <= released + cap,
                        "push succeeded with {next} pushed, {released} released, cap {cap}"
                    );
                    if unpublished == batch {
                        publish(&mut p, next);
                        unpublished = 0;
                    }
                }
                Err(v) => {
                    assert_eq!(v, next, "a refused push returns the item");
                    assert!(
                        next >= released + cap,
                        "reported full with {next} pushed, {released} released, cap {cap}"
                    );
                    // Publish what is pending (the consumer may be waiting
                    // for it), but store nothing while merely spinning: every
                    // store multiplies the values loom lets later loads see.
                    if unpublished > 0 {
                        publish(&mut p, next);
                        unpublished = 0;
                    }
                    thread::yield_now();
                }
            }
        }
        if unpublished > 0 {
            publish(&mut p, next);
        }
    });

    let mut got = 0;
    let mut unreleased = 0;
    let release = |c: &mut io::rss::Consumer<usize>, popped: usize| {
        prog.released_ahead.store(popped, Ordering::Release);
        c.release();
        prog.released_behind.store(popped, Ordering::Release);
    };
    while got < n {
        let published = prog.published_behind.load(Ordering::Acquire);
        match c.pop() {
            Some(v) => {
                assert_eq!(v, got, "item lost, duplicated or reordered");
                got += 1;
                unreleased += 1;
                let published = prog.published_ahead.load(Ordering::Acquire);
                assert!(
                    got <= published,
                    "popped {got} items, only {published} published"
                );
                if unreleased == batch {
                    release(&mut c, got);
                    unreleased = 0;
                }
            }
            None => {
                assert!(
                    got >= published,
                    "reported empty after {got} pops with {published} published"
                );
                if unreleased > 0 {
                    release(&mut c, got);
                    unreleased = 0;
                }
                thread::yield_now();
            }
        }
    }
    if unreleased > 0 {
        release(&mut c, got);
    }
    producer.join().expect("producer");
    assert_eq!(c.pop(), None, "nothing beyond the {n} items");
}

/// Three items through two slots, one at a time: the producer hits "full"
/// and the indices wrap.
#[test]
fn ring_one_at_a_time_through_full() {
    builder().check(|| transfer(2, 3, 1));
}

/// Three items through two slots, published and released in pairs.
#[test]
fn ring_batched() {
    builder().check(|| transfer(2, 3, 2));
}

/// An item that counts its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Items still in the ring when both ends are gone (here the last end to go
/// is dropped on either thread) are dropped exactly once.
#[test]
fn ring_drops_leftovers_once() {
    builder().check(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut p, mut c) = spsc::<Counted>(2);
        for _ in 0..2 {
            assert!(p.push(Counted(Arc::clone(&drops))).is_ok());
        }
        p.publish();
        let t = thread::spawn(move || {
            // Pops one (the publish happened before the spawn), then goes away.
            drop(c.pop());
            c.release();
        });
        drop(p);
        t.join().expect("consumer");
        assert_eq!(drops.load(Ordering::Relaxed), 2, "each item dropped once");
    });
}

//! A counting global allocator, for the tests and benchmarks that prove
//! "no allocation per packet after warm-up". Install it in the test binary
//! (`#[global_allocator] static A: CountingAlloc = CountingAlloc;`) and
//! wrap the code under test in [`counted`]: allocations made on the
//! calling thread inside it are counted; every call goes to the system
//! allocator unchanged.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting allocations while [`counted`] runs.
pub struct CountingAlloc;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    // `try_with`: the allocator may run while thread locals are torn down.
    let _ = ON.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        }
    });
}

// SAFETY: forwards every call to the system allocator unchanged; the
// bookkeeping touches only const-initialised thread locals (no allocation).
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note();
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note();
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

/// Runs `f` and returns its result with the number of allocations (and
/// reallocations) it made on this thread. Counts only where
/// [`CountingAlloc`] is the global allocator; zero otherwise.
pub fn counted<R>(f: impl FnOnce() -> R) -> (R, u64) {
    COUNT.with(|c| c.set(0));
    ON.with(|o| o.set(true));
    let r = f();
    ON.with(|o| o.set(false));
    (r, COUNT.with(Cell::get))
}

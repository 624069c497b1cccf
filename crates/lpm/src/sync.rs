//! The synchronisation primitives `publish` uses: `std`'s in a normal build,
//! `loom`'s when built with `RUSTFLAGS="--cfg loom"` for the model test
//! (`loom/tests/publish.rs` at the repository root). Re-exports only, so the normal build is the
//! same code as naming `std` directly.

#[cfg(not(loom))]
pub(crate) use std::{
    hint::spin_loop,
    sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering},
    sync::{Arc, Mutex},
    thread::yield_now,
};

#[cfg(loom)]
pub(crate) use loom::{
    hint::spin_loop,
    sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering},
    sync::{Arc, Mutex},
    thread::yield_now,
};

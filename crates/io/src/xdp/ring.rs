//! The four single-producer/single-consumer rings AF_XDP shares with the
//! kernel (`Documentation/networking/af_xdp.rst`). Indices are free-running
//! `u32`s; an entry lives at `index & mask`. We cache the other side's index
//! and re-read it (one acquire load) only when the cache says empty/full,
//! and publish our own index once per batch (one release store).

use crate::error::IoError;
use crate::sys::Mmap;
use core::sync::atomic::{AtomicU32, Ordering};

/// `struct xdp_ring_offset` (kernel >= 5.4, with the flags word).
#[repr(C)]
#[derive(Copy, Clone, Default, Debug)]
pub(crate) struct RingOff {
    pub(crate) producer: u64,
    pub(crate) consumer: u64,
    pub(crate) desc: u64,
    pub(crate) flags: u64,
}

/// `struct xdp_mmap_offsets`.
#[repr(C)]
#[derive(Copy, Clone, Default, Debug)]
pub(crate) struct MmapOffsets {
    pub(crate) rx: RingOff,
    pub(crate) tx: RingOff,
    pub(crate) fr: RingOff,
    pub(crate) cr: RingOff,
}

pub(crate) struct Ring {
    map: Mmap,
    producer: usize,
    consumer: usize,
    desc: usize,
    /// Entry size in bytes (8 for fill/completion, 16 for RX/TX).
    entry: usize,
    pub(crate) size: u32,
    mask: u32,
    /// Our own index (producer for fill/TX, consumer for RX/completion).
    pub(crate) head: u32,
    /// Last seen index of the kernel's side.
    other: u32,
}

impl Ring {
    /// Wraps a mapped ring; offsets come from `XDP_MMAP_OFFSETS`.
    pub(crate) fn new(
        map: Mmap,
        off: &RingOff,
        size: u32,
        entry: usize,
        is_producer: bool,
    ) -> Result<Self, IoError> {
        let need = off.desc as usize + size as usize * entry;
        let fits =
            |o: u64| (o as usize).checked_add(4).is_some_and(|e| e <= map.len()) && o % 4 == 0;
        if need > map.len()
            || !fits(off.producer)
            || !fits(off.consumer)
            || !fits(off.flags)
            || !size.is_power_of_two()
        {
            return Err(IoError::Config(
                "kernel ring offsets do not fit the mapping",
            ));
        }
        let mut r = Ring {
            producer: off.producer as usize,
            consumer: off.consumer as usize,
            desc: off.desc as usize,
            entry,
            size,
            mask: size - 1,
            head: 0,
            other: 0,
            map,
        };
        if is_producer {
            r.head = r.word(r.producer).load(Ordering::Relaxed);
            r.other = r
                .word(r.consumer)
                .load(Ordering::Acquire)
                .wrapping_add(size);
        } else {
            r.head = r.word(r.consumer).load(Ordering::Relaxed);
            r.other = r.word(r.producer).load(Ordering::Acquire);
        }
        Ok(r)
    }

    fn word(&self, off: usize) -> &AtomicU32 {
        // SAFETY: `off` is one of the producer/consumer/flags offsets checked
        // in `new` to lie 4-aligned inside the mapping; the kernel updates
        // the word concurrently, hence the atomic view.
        unsafe { &*self.map.ptr().add(off).cast::<AtomicU32>() }
    }

    /// Pointer to entry `idx` (any free-running index).
    pub(crate) fn entry_ptr(&self, idx: u32) -> *mut u8 {
        // SAFETY: `idx & mask < size`, and `desc + size * entry` was checked
        // to fit the mapping in `new`.
        unsafe {
            self.map
                .ptr()
                .add(self.desc + (idx & self.mask) as usize * self.entry)
        }
    }

    // ---- consumer side (RX, completion) ----

    /// Entries ready to consume, up to `max`.
    pub(crate) fn available(&mut self, max: u32) -> u32 {
        let mut n = self.other.wrapping_sub(self.head);
        if n < max {
            self.other = self.word(self.producer).load(Ordering::Acquire);
            n = self.other.wrapping_sub(self.head);
        }
        n.min(max)
    }

    /// Gives `n` consumed entries back to the kernel.
    pub(crate) fn release(&mut self, n: u32) {
        self.head = self.head.wrapping_add(n);
        self.word(self.consumer).store(self.head, Ordering::Release);
    }

    // ---- producer side (fill, TX) ----

    /// Free slots, up to `max`. `other` caches consumer + size.
    pub(crate) fn free(&mut self, max: u32) -> u32 {
        let mut n = self.other.wrapping_sub(self.head);
        if n < max {
            self.other = self
                .word(self.consumer)
                .load(Ordering::Acquire)
                .wrapping_add(self.size);
            n = self.other.wrapping_sub(self.head);
        }
        n.min(max)
    }

    /// Publishes entries written up to `head`.
    pub(crate) fn submit(&mut self, new_head: u32) {
        self.head = new_head;
        self.word(self.producer).store(self.head, Ordering::Release);
    }

    /// Entries the kernel has not consumed yet (producer rings).
    pub(crate) fn outstanding(&self) -> u32 {
        self.head
            .wrapping_sub(self.word(self.consumer).load(Ordering::Acquire))
    }
}

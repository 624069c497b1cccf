//! Software RSS for devices with one RX queue: a flow hash over the
//! 5-tuple picks a core, and a per-core single-producer/single-consumer
//! ring carries the packet there (RouteBricks §4.2: one core per queue; a
//! flow stays on one core so its packets stay in order).
//!
//! The ring touches shared atomics once per batch, not per packet: the
//! producer writes slots and publishes its tail with one release store in
//! [`Producer::publish`]; the consumer reads slots and returns them with one
//! release store in [`Consumer::release`]. Each side caches the other's
//! index and re-reads it (one acquire load) only when the cache says
//! full/empty.

use core::mem::MaybeUninit;

use sync::{Arc, AtomicUsize, Ordering, UnsafeCell};

/// The ring's synchronisation primitives: `std`'s in a normal build,
/// `loom`'s when built with `RUSTFLAGS="--cfg loom"` for the model test
/// (`loom/tests/rss.rs` at the repository root). The `std` cell wraps `core::cell::UnsafeCell` in
/// loom's closure API (`with`, `with_mut`), inlined to the same code.
mod sync {
    #[cfg(not(loom))]
    pub(super) use std::sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    };

    #[cfg(loom)]
    pub(super) use loom::{
        cell::UnsafeCell,
        sync::{
            atomic::{AtomicUsize, Ordering},
            Arc,
        },
    };

    #[cfg(not(loom))]
    pub(super) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

    #[cfg(not(loom))]
    impl<T> UnsafeCell<T> {
        #[inline(always)]
        pub(super) const fn new(v: T) -> Self {
            UnsafeCell(core::cell::UnsafeCell::new(v))
        }

        #[inline(always)]
        pub(super) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        #[inline(always)]
        pub(super) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }

    /// The value of an atomic nobody else can reach (`&mut`).
    #[cfg(not(loom))]
    #[inline(always)]
    pub(super) fn unshared(a: &mut AtomicUsize) -> usize {
        *a.get_mut()
    }

    /// The value of an atomic nobody else can reach (`&mut`).
    #[cfg(loom)]
    pub(super) fn unshared(a: &mut AtomicUsize) -> usize {
        a.with_mut(|v| *v)
    }
}

/// The 5-tuple flow hash (it lives in `pkt`, shared with the cluster
/// fabric's flow affinity).
pub use pkt::hdr::flow::flow_hash;

/// Maps a hash onto `n` queues without a division (Lemire's reduction).
pub fn queue_for(hash: u32, n: usize) -> usize {
    ((u64::from(hash) * n as u64) >> 32) as usize
}

#[repr(align(64))]
struct Padded(AtomicUsize);

struct Inner<T> {
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
    mask: usize,
    /// Next slot the consumer reads (written by the consumer only).
    head: Padded,
    /// Next slot the producer writes (written by the producer only).
    tail: Padded,
}

// SAFETY: a slot is accessed by exactly one side at a time: the producer
// owns [tail, head + cap), the consumer owns [head, tail); ownership moves
// by the release/acquire pairs on `head` and `tail`. T moves between
// threads, hence `T: Send`.
unsafe impl<T: Send> Sync for Inner<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Inner<T> {}

impl<T> Drop for Inner<T> {
    fn drop(&mut self) {
        let (h, t) = (
            sync::unshared(&mut self.head.0),
            sync::unshared(&mut self.tail.0),
        );
        let mut i = h;
        while i != t {
            if let Some(s) = self.slots.get(i & self.mask) {
                // SAFETY: slots in [head, tail) hold published, unconsumed
                // values; both ends are gone, so we are the only owner.
                s.with_mut(|p| unsafe { (*p).assume_init_drop() });
            }
            i = i.wrapping_add(1);
        }
    }
}

/// The producing end of an SPSC ring.
pub struct Producer<T> {
    inner: Arc<Inner<T>>,
    tail: usize,
    head_cache: usize,
}

/// The consuming end of an SPSC ring.
pub struct Consumer<T> {
    inner: Arc<Inner<T>>,
    head: usize,
    tail_cache: usize,
}

/// A ring of `cap` (rounded up to a power of two, at least 2) slots.
pub fn spsc<T: Send>(cap: usize) -> (Producer<T>, Consumer<T>) {
    let cap = cap.max(2).next_power_of_two();
    let slots = (0..cap)
        .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
        .collect();
    let inner = Arc::new(Inner {
        slots,
        mask: cap - 1,
        head: Padded(AtomicUsize::new(0)),
        tail: Padded(AtomicUsize::new(0)),
    });
    (
        Producer {
            inner: Arc::clone(&inner),
            tail: 0,
            head_cache: 0,
        },
        Consumer {
            inner,
            head: 0,
            tail_cache: 0,
        },
    )
}

impl<T: Send> Producer<T> {
    /// Writes `v` into the next slot; it becomes visible at the next
    /// [`publish`](Self::publish). `Err(v)` when the ring is full.
    pub fn push(&mut self, v: T) -> Result<(), T> {
        let cap = self.inner.mask + 1;
        if self.tail.wrapping_sub(self.head_cache) >= cap {
            self.head_cache = self.inner.head.0.load(Ordering::Acquire);
            if self.tail.wrapping_sub(self.head_cache) >= cap {
                return Err(v);
            }
        }
        let Some(slot) = self.inner.slots.get(self.tail & self.inner.mask) else {
            return Err(v);
        };
        // SAFETY: the slot is in [tail, head + cap): the consumer released
        // it (acquire above) and will not read it before our release store.
        slot.with_mut(|p| unsafe { (*p).write(v) });
        self.tail = self.tail.wrapping_add(1);
        Ok(())
    }

    /// Makes every pushed value visible to the consumer (one store).
    pub fn publish(&mut self) {
        self.inner.tail.0.store(self.tail, Ordering::Release);
    }
}

impl<T: Send> Consumer<T> {
    /// Takes the next published value, if any. Its slot goes back to the
    /// producer at the next [`release`](Self::release).
    pub fn pop(&mut self) -> Option<T> {
        if self.head == self.tail_cache {
            self.tail_cache = self.inner.tail.0.load(Ordering::Acquire);
            if self.head == self.tail_cache {
                return None;
            }
        }
        let slot = self.inner.slots.get(self.head & self.inner.mask)?;
        // SAFETY: the slot is in [head, tail): published by the producer
        // (acquire above) and not yet released; reading moves the value out
        // and the slot is treated as uninitialised from now on.
        let v = slot.with(|p| unsafe { (*p).assume_init_read() });
        self.head = self.head.wrapping_add(1);
        Some(v)
    }

    /// Returns consumed slots to the producer (one store).
    pub fn release(&mut self) {
        self.inner.head.0.store(self.head, Ordering::Release);
    }
}

/// The RSS stage: hashes each frame and pushes an item onto the ring of
/// the chosen core. Counters are plain integers (the stage runs on the one
/// core that owns the RX queue).
pub struct Rss<T> {
    rings: Vec<Producer<T>>,
    /// Items per target core, and items dropped because a ring was full.
    pub per_core: Vec<u64>,
    pub dropped: u64,
}

impl<T: Send> Rss<T> {
    /// A stage over `cores` rings of `cap` slots; returns the consumers,
    /// one per core, to move to the worker threads.
    pub fn new(cores: usize, cap: usize) -> (Self, Vec<Consumer<T>>) {
        let (p, c): (Vec<_>, Vec<_>) = (0..cores.max(1)).map(|_| spsc(cap)).unzip();
        let n = p.len();
        (
            Rss {
                rings: p,
                per_core: vec![0; n],
                dropped: 0,
            },
            c,
        )
    }

    /// Sends `item` (built from `frame`) to its flow's core. Returns the
    /// item back when that ring is full (counted).
    pub fn dispatch(&mut self, frame: &[u8], item: T) -> Result<usize, T> {
        let q = queue_for(flow_hash(frame), self.rings.len());
        let Some(r) = self.rings.get_mut(q) else {
            return Err(item);
        };
        match r.push(item) {
            Ok(()) => {
                if let Some(c) = self.per_core.get_mut(q) {
                    *c += 1;
                }
                Ok(q)
            }
            Err(v) => {
                self.dropped += 1;
                Err(v)
            }
        }
    }

    /// Publishes every ring (call once per RX batch).
    pub fn publish(&mut self) {
        for r in &mut self.rings {
            r.publish();
        }
    }
}

// Not under loom: these use `std` threads, and loom's primitives only work
// inside a model.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn udp4(src: [u8; 4], sport: u16) -> Vec<u8> {
        let mut f = vec![0u8; 42];
        f[12] = 0x08;
        f[14] = 0x45;
        f[23] = 17;
        f[26..30].copy_from_slice(&src);
        f[30..34].copy_from_slice(&[10, 2, 0, 2]);
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&9u16.to_be_bytes());
        f
    }

    #[test]
    fn hash_is_per_flow_and_spreads() {
        assert_eq!(
            flow_hash(&udp4([10, 1, 0, 2], 4000)),
            flow_hash(&udp4([10, 1, 0, 2], 4000))
        );
        assert_ne!(
            flow_hash(&udp4([10, 1, 0, 2], 4000)),
            flow_hash(&udp4([10, 1, 0, 2], 4001))
        );
        let mut per = [0u32; 4];
        for p in 0..4000u16 {
            per[queue_for(flow_hash(&udp4([10, 1, 0, 2], p)), 4)] += 1;
        }
        assert!(
            per.iter().all(|&n| (800..1200).contains(&n)),
            "uneven spread {per:?}"
        );
        assert_eq!(flow_hash(&[0u8; 10]), 0, "short frame");
        let mut arp = udp4([10, 1, 0, 2], 1);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(flow_hash(&arp), 0);
        let mut frag = udp4([10, 1, 0, 2], 1);
        frag[20] = 0x20; // more fragments: ports are not looked at
        let mut frag2 = udp4([10, 1, 0, 2], 2);
        frag2[20] = 0x20;
        assert_eq!(flow_hash(&frag), flow_hash(&frag2));
    }

    #[test]
    fn spsc_moves_everything_in_order_across_threads() {
        let (mut p, mut c) = spsc::<u64>(64);
        const N: u64 = 200_000;
        let t = std::thread::spawn(move || {
            let mut i = 0;
            while i < N {
                let mut pushed = 0;
                while pushed < 16 && i < N {
                    match p.push(i) {
                        Ok(()) => {
                            i += 1;
                            pushed += 1;
                        }
                        Err(_) => break,
                    }
                }
                p.publish();
                if pushed == 0 {
                    std::thread::yield_now();
                }
            }
        });
        let mut next = 0;
        let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while next < N {
            assert!(std::time::Instant::now() < end, "stalled at {next}");
            let mut got = 0;
            while let Some(v) = c.pop() {
                assert_eq!(v, next);
                next += 1;
                got += 1;
                if got == 32 {
                    break;
                }
            }
            c.release();
            if got == 0 {
                std::thread::yield_now();
            }
        }
        t.join().expect("producer");
    }

    #[test]
    fn full_ring_refuses_and_drop_frees_leftovers() {
        let (mut p, c) = spsc::<Arc<()>>(4);
        let probe = Arc::new(());
        for _ in 0..4 {
            assert!(p.push(Arc::clone(&probe)).is_ok());
        }
        assert!(p.push(Arc::clone(&probe)).is_err(), "capacity 4");
        p.publish();
        drop(p);
        drop(c);
        assert_eq!(
            Arc::strong_count(&probe),
            1,
            "unconsumed items dropped with the ring"
        );
    }

    #[test]
    fn rss_stage_keeps_a_flow_on_one_core() {
        let (mut rss, mut cons) = Rss::<u32>::new(3, 64);
        let f = udp4([10, 1, 0, 7], 1234);
        let q = rss.dispatch(&f, 1).expect("room");
        assert_eq!(rss.dispatch(&f, 2), Ok(q));
        rss.publish();
        let c = &mut cons[q];
        assert_eq!((c.pop(), c.pop(), c.pop()), (Some(1), Some(2), None));
        assert_eq!(rss.per_core[q], 2);
    }
}

//! What the devices of this crate share: the RouteBricks batch sizes and
//! the `pkt::Device` plumbing over a kernel ring.
//!
//! Every device here (AF_XDP, AF_PACKET, pcap) implements `pkt::Device`
//! itself: `rx_burst` copies each received frame from the ring into a
//! buffer of the core's `pkt::Pool` (copy mode copies in the kernel too;
//! sharing the pool as the UMEM saves this copy but was measured not to pay
//! on veth, where the frame's cache misses only move to its first reader
//! and the kernel's own copy: docs/BENCHMARKS.md, "AF_XDP with the core's
//! UMEM as its packet pool"),
//! `tx_burst` copies each packet into a free TX slot, recycling its buffer
//! at once, and kicks the kernel every `kn` frames. The ring access is the
//! crate-private `FrameRing`; `rx_burst` and `tx_burst` here are the one
//! implementation of the two calls over it. Dispatch is static.

use crate::error::IoError;
use pkt::{Batch, DevStats, Pool};

/// RouteBricks' two batch sizes (Argyraki et al., SOSP 2009, §5.2):
/// `kp` is how many packets one poll of an RX queue takes at most, and `kn`
/// is how many packets are queued on a TX ring before the kernel is kicked
/// (the "NIC batch"; one `sendto` per `kn` packets instead of per packet).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BatchSizes {
    pub kp: usize,
    pub kn: usize,
}

impl Default for BatchSizes {
    fn default() -> Self {
        BatchSizes { kp: 32, kn: 32 }
    }
}

impl BatchSizes {
    /// Checks that both sizes are in `1..=4096`.
    pub fn validate(self) -> Result<Self, IoError> {
        if self.kp == 0 || self.kp > 4096 || self.kn == 0 || self.kn > 4096 {
            return Err(IoError::Config("batch sizes kp and kn must be in 1..=4096"));
        }
        Ok(self)
    }
}

/// What every device keeps beside its ring: name, TX kick threshold,
/// counters and the last error.
#[derive(Clone, Debug)]
pub(crate) struct Common {
    pub name: String,
    pub kn: usize,
    pub stats: DevStats,
    pub last_error: Option<IoError>,
}

impl Common {
    pub fn new(name: &str) -> Self {
        Common {
            name: name.to_string(),
            kn: BatchSizes::default().kn,
            stats: DevStats::default(),
            last_error: None,
        }
    }
}

/// A kernel ring (or file) seen frame by frame; crate-private.
pub(crate) trait FrameRing {
    fn common(&mut self) -> &mut Common;
    /// Takes up to `max` received frames, calling `f` on each in place.
    fn rx_frames<F: FnMut(&[u8])>(&mut self, max: usize, f: F) -> Result<usize, IoError>;
    /// Copies `frame` into a free TX slot; `Ok(false)` when the ring is full.
    fn tx_frame(&mut self, frame: &[u8]) -> Result<bool, IoError>;
    /// Hands every queued frame to the kernel.
    fn tx_kick(&mut self) -> Result<(), IoError>;
    /// Frames queued since the last kick.
    fn tx_queued(&self) -> usize;
}

/// `pkt::Device::rx_burst` over a [`FrameRing`].
pub(crate) fn rx_burst<R: FrameRing>(
    r: &mut R,
    pool: &Pool,
    batch: &mut Batch,
    max: usize,
) -> usize {
    let want = max.min(batch.room());
    let mut n = 0;
    let mut nobuf = 0;
    let res = r.rx_frames(want, |f| match pool.alloc_from(f) {
        Some(p) => {
            if batch.push(p).is_ok() {
                n += 1;
            }
        }
        None => nobuf += 1,
    });
    let c = r.common();
    if let Err(e) = res {
        c.last_error = Some(e);
    }
    c.stats.rx += n as u64;
    c.stats.rx_nobuf += nobuf;
    n
}

/// `pkt::Device::tx_burst` over a [`FrameRing`]: packets leave the front of
/// the batch; those the ring has no room for stay.
pub(crate) fn tx_burst<R: FrameRing>(r: &mut R, batch: &mut Batch) -> usize {
    let mut taken = 0;
    let mut dropped = 0usize;
    for p in batch.iter() {
        match r.tx_frame(p.data()) {
            Ok(true) => taken += 1,
            Ok(false) => break,
            Err(e) => {
                // Too large or a failed kick: this frame cannot go.
                r.common().last_error = Some(e);
                dropped += 1;
                taken += 1;
            }
        }
        if r.tx_queued() >= r.common().kn {
            if let Err(e) = r.tx_kick() {
                r.common().last_error = Some(e);
            }
        }
    }
    // Sent (and unsendable) packets leave the batch; their buffers go
    // back to the pool as they drop.
    batch.drain_front(taken);
    r.common().stats.tx_dropped += dropped as u64;
    taken - dropped
}

/// `pkt::Device::flush` over a [`FrameRing`].
pub(crate) fn flush<R: FrameRing>(r: &mut R) {
    if let Err(e) = r.tx_kick() {
        r.common().last_error = Some(e);
    }
}

/// Implements `pkt::Device` for a type implementing [`FrameRing`] with a
/// `common: Common` field.
macro_rules! ring_device {
    ($t:ty) => {
        impl pkt::Device for $t {
            type Error = $crate::IoError;
            fn name(&self) -> &str {
                &self.common.name
            }
            fn rx_burst(&mut self, pool: &pkt::Pool, batch: &mut pkt::Batch, max: usize) -> usize {
                $crate::device::rx_burst(self, pool, batch, max)
            }
            fn tx_burst(&mut self, batch: &mut pkt::Batch) -> usize {
                $crate::device::tx_burst(self, batch)
            }
            fn flush(&mut self) {
                $crate::device::flush(self)
            }
            fn stats(&self) -> pkt::DevStats {
                self.common.stats
            }
            fn poll_fd(&self) -> Option<i32> {
                self.fd()
            }
            fn last_error(&self) -> Option<$crate::IoError> {
                self.common.last_error
            }
            fn rx_ring_drops(&self) -> Option<u64> {
                self.ring_drops()
            }
            fn queue_stats(&self, out: &mut Vec<pkt::QueueStats>) {
                self.queues(out)
            }
        }

        impl $t {
            /// Renames the device (the name a graph's `FromDevice(NAME)`
            /// and `ToDevice(NAME)` bind to).
            pub fn set_name(&mut self, name: &str) {
                self.common.name = name.to_string();
            }
            /// Kicks the kernel after every `kn` queued TX frames (default
            /// 32; at least 1).
            pub fn set_kn(&mut self, kn: usize) {
                self.common.kn = kn.max(1);
            }
        }
    };
}
pub(crate) use ring_device;

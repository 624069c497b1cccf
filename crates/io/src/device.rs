//! The device abstraction every I/O path implements, over plain byte frames.
//!
//! `FrameRx`/`FrameTx` are the adapter layer between the kernel rings and
//! the packet pools of crate `pkt`: a receive callback sees the frame in
//! place in the ring (mutable, so it may be rewritten before it is copied
//! out), and a transmit copies a frame into a free ring slot. Dispatch is
//! static (generics), so the per-packet path has no virtual calls.

use crate::error::IoError;

/// RouteBricks' two batch sizes (Argyraki et al., SOSP 2009, §5.2):
/// `kp` is how many packets one poll of an RX queue takes at most, and `kn`
/// is how many packets are queued on a TX ring before the kernel is kicked
/// (the "NIC batch"; one `sendto` per `kn` packets instead of per packet).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub kp: usize,
    pub kn: usize,
}

impl Default for Batch {
    fn default() -> Self {
        Batch { kp: 32, kn: 32 }
    }
}

impl Batch {
    /// Checks that both sizes are in `1..=4096`.
    pub fn validate(self) -> Result<Self, IoError> {
        if self.kp == 0 || self.kp > 4096 || self.kn == 0 || self.kn > 4096 {
            return Err(IoError::Config("batch sizes kp and kn must be in 1..=4096"));
        }
        Ok(self)
    }
}

/// Per-device counters. Each device is owned by one core, so these are
/// plain integers (no atomics); read them from the owning thread or after it
/// stops.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DevStats {
    pub rx_packets: u64,
    pub rx_bytes: u64,
    /// RX polls that found nothing.
    pub rx_empty_polls: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    /// Frames refused because the TX ring had no free slot.
    pub tx_ring_full: u64,
    /// System calls made to start transmission.
    pub tx_kicks: u64,
    /// Frames the kernel rejected or descriptors that were out of bounds.
    pub errors: u64,
}

/// A source of received frames.
pub trait FrameRx {
    /// Takes up to `max` received frames, calling `f` on each in turn. The
    /// slice is the frame in place (in the ring); it is given back to the
    /// kernel after `f` returns. Returns how many frames were taken.
    fn rx_batch<F: FnMut(&mut [u8])>(&mut self, max: usize, f: F) -> Result<usize, IoError>;

    /// Sleeps until frames may be ready or `timeout_ms` passes; `Ok(false)`
    /// on timeout. Pollers call this only after an empty `rx_batch`.
    fn wait_rx(&mut self, timeout_ms: i32) -> Result<bool, IoError>;

    /// The descriptor to `poll(2)` on for readability, when there is one,
    /// so that one thread can sleep on several devices at once.
    fn poll_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }

    fn stats(&self) -> DevStats;
}

/// A sink for frames to transmit.
pub trait FrameTx {
    /// Copies `frame` into a free TX slot. `Ok(false)` when the ring is full
    /// (the frame was not queued; counted in `tx_ring_full`).
    fn tx_push(&mut self, frame: &[u8]) -> Result<bool, IoError>;

    /// Hands every queued frame to the kernel.
    fn tx_flush(&mut self) -> Result<(), IoError>;

    /// Frames queued since the last flush.
    fn tx_pending(&self) -> usize;
}

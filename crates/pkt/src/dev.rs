//! The device interface: a batch source and sink of packets from a pool.
//!
//! Every packet I/O backend (AF_XDP, AF_PACKET and pcap files in crate
//! `io`; the in-memory device here) implements [`Device`]. The run-to-completion
//! driver in crate `graph` polls `rx_burst` on each device bound to a
//! `FromDevice` element, pushes the batch through the graph, then hands each
//! `ToDevice` element's batch to `tx_burst` of its device.
//!
//! Contract:
//! * A device is owned and polled by one core (no locks; seed 003 rule 1).
//! * `rx_burst` copies or maps received frames into buffers taken from the
//!   pool it is given, appends them to the batch, and never appends more than
//!   `max` or than the batch's room. When the pool runs dry it stops early
//!   and counts that itself.
//! * `tx_burst` consumes packets from the front of the batch; the ones it
//!   could not send (ring full) stay in the batch for the caller, which
//!   drops them with a counted reason. A sent packet's buffer goes back to
//!   its pool once the device is done with it (immediately for copy-mode
//!   devices).
//! * Neither call blocks.

use crate::batch::Batch;
use crate::pool::Pool;

/// Per-device counters kept by the device itself. A device belongs to one
/// core, so these are plain integers; read them on the owning thread or
/// after it stops. Fields a device has no use for stay zero.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DevStats {
    /// Frames received and handed to the graph.
    pub rx: u64,
    /// Bytes of those frames.
    pub rx_bytes: u64,
    /// Frames received but lost because the pool was empty.
    pub rx_nobuf: u64,
    /// Receive calls that found nothing.
    pub rx_empty_polls: u64,
    /// Frames transmitted (queued on the device's ring).
    pub tx: u64,
    /// Bytes of those frames.
    pub tx_bytes: u64,
    /// Frames dropped by the device (too large, I/O error).
    pub tx_dropped: u64,
    /// Sends refused because the TX ring had no free slot (the packets
    /// stay in the caller's batch).
    pub tx_ring_full: u64,
    /// System calls made to start transmission.
    pub tx_kicks: u64,
    /// Frames the kernel rejected, truncated or malformed descriptors.
    pub errors: u64,
}

/// One hardware queue's counters, for a device bound to queues of an
/// interface ([`Device::queue_stats`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// The interface's queue index.
    pub queue: u32,
    /// What was received from and sent on that queue.
    pub stats: DevStats,
    /// Frames the kernel dropped on that queue for want of room in our
    /// receive ring, when the device can tell (as
    /// [`Device::rx_ring_drops`]).
    pub ring_drops: Option<u64>,
}

/// A packet source and sink polled in batches.
pub trait Device {
    /// What an I/O failure is (`core::convert::Infallible` for a device
    /// that cannot fail). Calls never return it: the device keeps the last
    /// one for [`Device::last_error`] and counts the frames it lost.
    type Error: Copy + core::fmt::Debug;
    /// Interface name as written in the graph config (`FromDevice(NAME)`).
    fn name(&self) -> &str;
    /// Receives up to `max` frames into buffers from `pool`, appending them
    /// to `batch`; returns how many were appended.
    fn rx_burst(&mut self, pool: &Pool, batch: &mut Batch, max: usize) -> usize;
    /// Sends packets from the front of `batch`, removing the sent ones;
    /// returns how many were sent.
    fn tx_burst(&mut self, batch: &mut Batch) -> usize;
    /// Pushes out anything the device buffered (e.g. kicks the kernel).
    fn flush(&mut self) {}
    /// Counters.
    fn stats(&self) -> DevStats;
    /// The file descriptor to `poll(2)` for readability, if there is one,
    /// so that one thread can sleep on several devices at once.
    fn poll_fd(&self) -> Option<i32> {
        None
    }
    /// The most recent I/O error, if any.
    fn last_error(&self) -> Option<Self::Error> {
        None
    }
    /// Frames the kernel dropped before we read them because this
    /// device's receive ring was full (left on the wire), since it was
    /// opened, when the device can tell. May make a system call: read it
    /// when publishing counters, not per poll.
    fn rx_ring_drops(&self) -> Option<u64> {
        None
    }
    /// Appends the counters of each hardware queue this device reads, for
    /// a device bound to queues of an interface (AF_XDP: one socket per
    /// queue, several when one core serves several queues). The default
    /// appends nothing: the device is not bound to queues (an AF_PACKET
    /// fanout member, a file, memory). May make system calls, like
    /// [`Device::rx_ring_drops`]: read it when publishing counters.
    fn queue_stats(&self, out: &mut Vec<QueueStats>) {
        let _ = out;
    }
}

/// What a [`MemDevice`] does with transmitted frames.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TxMode {
    /// Keep a copy of each frame (allocates; for golden tests).
    Capture,
    /// Count and recycle (no allocation; for benchmarks and the allocation
    /// test).
    Discard,
}

/// An in-memory device: receives from a list of frames (once, or cycling
/// forever) and captures or discards what it sends. Used by tests, the
/// pcap golden tests and the benchmarks.
#[derive(Debug)]
pub struct MemDevice {
    name: String,
    frames: Vec<Vec<u8>>,
    next: usize,
    cycle: bool,
    mode: TxMode,
    sent: Vec<Vec<u8>>,
    stats: DevStats,
}

impl MemDevice {
    /// A device that receives `frames` once, in order, and captures output.
    pub fn new(name: &str, frames: Vec<Vec<u8>>) -> MemDevice {
        MemDevice {
            name: name.to_string(),
            frames,
            next: 0,
            cycle: false,
            mode: TxMode::Capture,
            sent: Vec::new(),
            stats: DevStats::default(),
        }
    }
    /// A device that receives `frames` round and round forever and discards
    /// output.
    pub fn cycling(name: &str, frames: Vec<Vec<u8>>) -> MemDevice {
        MemDevice {
            cycle: true,
            mode: TxMode::Discard,
            ..MemDevice::new(name, frames)
        }
    }
    /// Sets the transmit mode.
    pub fn with_tx_mode(mut self, mode: TxMode) -> MemDevice {
        self.mode = mode;
        self
    }
    /// Frames sent so far (in `Capture` mode).
    pub fn sent(&self) -> &[Vec<u8>] {
        &self.sent
    }
    /// Takes the captured frames.
    pub fn take_sent(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.sent)
    }
    /// Frames not yet received (0 for a cycling device with frames).
    pub fn pending_rx(&self) -> usize {
        if self.cycle {
            0
        } else {
            self.frames.len().saturating_sub(self.next)
        }
    }
    /// Queues one more frame for reception.
    pub fn inject(&mut self, frame: Vec<u8>) {
        self.frames.push(frame);
    }
}

impl Device for MemDevice {
    type Error = core::convert::Infallible;
    fn name(&self) -> &str {
        &self.name
    }
    fn rx_burst(&mut self, pool: &Pool, batch: &mut Batch, max: usize) -> usize {
        let mut n = 0;
        let want = max.min(batch.room());
        while n < want {
            if self.next >= self.frames.len() {
                if self.cycle && !self.frames.is_empty() {
                    self.next = 0;
                } else {
                    break;
                }
            }
            let Some(f) = self.frames.get(self.next) else {
                break;
            };
            let Some(p) = pool.alloc_from(f) else {
                self.stats.rx_nobuf += 1;
                break;
            };
            self.next += 1;
            if batch.push(p).is_err() {
                break;
            }
            n += 1;
        }
        self.stats.rx += n as u64;
        n
    }
    fn tx_burst(&mut self, batch: &mut Batch) -> usize {
        let n = batch.len();
        for p in batch.drain() {
            if self.mode == TxMode::Capture {
                self.sent.push(p.data().to_vec());
            }
        }
        self.stats.tx += n as u64;
        n
    }
    fn stats(&self) -> DevStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_device_once_and_cycle() {
        let pool = Pool::new(16);
        let mut d = MemDevice::new("a", vec![vec![1], vec![2], vec![3]]);
        let mut b = Batch::with_capacity(2);
        assert_eq!(d.rx_burst(&pool, &mut b, 8), 2);
        assert_eq!(d.tx_burst(&mut b), 2);
        assert_eq!(d.rx_burst(&pool, &mut b, 8), 1);
        assert_eq!(d.rx_burst(&pool, &mut b, 8), 0);
        d.tx_burst(&mut b);
        assert_eq!(d.sent(), &[vec![1], vec![2], vec![3]]);
        let mut c = MemDevice::cycling("c", vec![vec![1], vec![2]]);
        let mut b = Batch::with_capacity(5);
        assert_eq!(c.rx_burst(&pool, &mut b, 5), 5);
        assert_eq!(b.as_slice()[4].data(), &[1]);
        c.tx_burst(&mut b);
        assert!(c.sent().is_empty());
        assert_eq!(c.stats().tx, 5);
        assert_eq!(pool.available(), 16);
    }
}

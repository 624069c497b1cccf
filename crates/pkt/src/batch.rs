//! [`Batch`]: a bounded vector of packets, allocated once.
//!
//! Elements take and give packets in batches (RouteBricks' poll-driven
//! batching, seed 003: kp packets per poll). The capacity is fixed at
//! creation; `push` on a full batch hands the packet back instead of
//! growing, so the packet path never reallocates.

use crate::pool::Packet;

/// The usual batch size (the "up to 256").
pub const MAX_BATCH: usize = 256;

/// A bounded list of packets. Dropping or clearing it recycles them.
#[derive(Debug)]
pub struct Batch {
    pkts: Vec<Packet>,
    cap: usize,
}

impl Default for Batch {
    fn default() -> Self {
        Batch::new()
    }
}

impl Batch {
    /// An empty batch holding up to [`MAX_BATCH`] packets.
    pub fn new() -> Batch {
        Batch::with_capacity(MAX_BATCH)
    }
    /// An empty batch holding up to `cap` packets (at least 1).
    pub fn with_capacity(cap: usize) -> Batch {
        let cap = cap.max(1);
        Batch {
            pkts: Vec::with_capacity(cap),
            cap,
        }
    }
    /// Appends a packet; gives it back when the batch is full.
    #[inline]
    pub fn push(&mut self, p: Packet) -> Result<(), Packet> {
        if self.pkts.len() >= self.cap {
            return Err(p);
        }
        self.pkts.push(p);
        Ok(())
    }
    /// Removes the last packet.
    #[inline]
    pub fn pop(&mut self) -> Option<Packet> {
        self.pkts.pop()
    }
    /// Number of packets.
    #[inline]
    pub fn len(&self) -> usize {
        self.pkts.len()
    }
    /// True when empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }
    /// True when no more packets fit.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.pkts.len() >= self.cap
    }
    /// Capacity fixed at creation.
    pub fn capacity(&self) -> usize {
        self.cap
    }
    /// Room left.
    #[inline]
    pub fn room(&self) -> usize {
        self.cap - self.pkts.len()
    }
    /// The packets.
    #[inline]
    pub fn as_slice(&self) -> &[Packet] {
        &self.pkts
    }
    /// The packets, writable.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [Packet] {
        &mut self.pkts
    }
    /// Iterates over the packets.
    pub fn iter(&self) -> std::slice::Iter<'_, Packet> {
        self.pkts.iter()
    }
    /// Iterates over the packets, writable.
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Packet> {
        self.pkts.iter_mut()
    }
    /// Removes and yields every packet (front to back); the capacity stays.
    #[inline]
    pub fn drain(&mut self) -> std::vec::Drain<'_, Packet> {
        self.pkts.drain(..)
    }
    /// Removes and yields the first `n` packets (fewer if shorter).
    #[inline]
    pub fn drain_front(&mut self, n: usize) -> std::vec::Drain<'_, Packet> {
        let n = n.min(self.pkts.len());
        self.pkts.drain(..n)
    }
    /// Drops (recycles) every packet.
    pub fn clear(&mut self) {
        self.pkts.clear();
    }
    /// Moves packets from `other` to the end of this batch while room
    /// remains; returns how many moved. The rest stay in `other`.
    pub fn take_from(&mut self, other: &mut Batch) -> usize {
        let n = self.room().min(other.len());
        self.pkts.extend(other.pkts.drain(..n));
        n
    }
    /// Swaps contents and capacities with another batch (no allocation).
    pub fn swap(&mut self, other: &mut Batch) {
        std::mem::swap(self, other);
    }
}

impl<'a> IntoIterator for &'a Batch {
    type Item = &'a Packet;
    type IntoIter = std::slice::Iter<'a, Packet>;
    fn into_iter(self) -> Self::IntoIter {
        self.pkts.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Pool;

    #[test]
    fn bounded() {
        let pool = Pool::new(8);
        let mut b = Batch::with_capacity(2);
        b.push(pool.alloc().unwrap()).unwrap();
        b.push(pool.alloc().unwrap()).unwrap();
        assert!(b.is_full());
        assert!(b.push(pool.alloc().unwrap()).is_err());
        assert_eq!(pool.available(), 6);
        let mut c = Batch::with_capacity(1);
        assert_eq!(c.take_from(&mut b), 1);
        assert_eq!((b.len(), c.len()), (1, 1));
        b.clear();
        drop(c);
        assert_eq!(pool.available(), 8);
    }
}

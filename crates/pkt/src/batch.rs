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
    /// Keeps only the packets for which `f` is true, in order; the others
    /// are dropped (recycled).
    pub fn retain(&mut self, f: impl FnMut(&Packet) -> bool) {
        self.pkts.retain(f);
    }
    /// Drops (recycles) every packet.
    pub fn clear(&mut self) {
        self.pkts.clear();
    }
    /// Moves packets from `other` to the end of this batch while room
    /// remains; returns how many moved. The rest stay in `other`.
    #[inline]
    pub fn take_from(&mut self, other: &mut Batch) -> usize {
        let n = self.room().min(other.len());
        if n == 0 {
            return 0;
        }
        // One bulk copy (`Vec::extend` over a drain moved each 48-byte
        // packet through the stack: the element graph's ToDevice and the
        // driver's injection did that once per packet).
        self.pkts.reserve(n); // never allocates: capacity >= cap >= len + n
        let at = self.pkts.len();
        let rest = other.pkts.len() - n;
        // SAFETY: `self` has room for `n` more (reserved above); `other`'s
        // first `n` packets are initialised and, being in another vector,
        // do not overlap `self`'s spare capacity. Each packet is owned once
        // afterwards: `self`'s length grows by `n`, and `other`'s remaining
        // `rest` packets move to its front (`copy` handles the overlap)
        // before its length is set to `rest`.
        unsafe {
            std::ptr::copy_nonoverlapping(other.pkts.as_ptr(), self.pkts.as_mut_ptr().add(at), n);
            self.pkts.set_len(at + n);
            let o = other.pkts.as_mut_ptr();
            std::ptr::copy(o.add(n), o, rest);
            other.pkts.set_len(rest);
        }
        n
    }
    /// Swaps contents and capacities with another batch (no allocation).
    pub fn swap(&mut self, other: &mut Batch) {
        std::mem::swap(self, other);
    }

    /// Empties the batch by runs: for each maximal run of consecutive
    /// packets whose `keys` are equal, calls `f(key, run)` once, in order.
    /// `keys[i]` is packet `i`'s key; packets beyond `keys.len()` form
    /// runs of key `tail`. The closure moves the run's packets where they
    /// go in bulk ([`Run::move_into`]); what it leaves in a run is dropped
    /// (recycled) with the run.
    ///
    /// This is how a graph element's mixed output moves: one bulk copy per
    /// run instead of one 48-byte packet move per packet through the stack.
    #[inline]
    pub fn drain_runs<K: Copy + PartialEq>(
        &mut self,
        keys: &[K],
        tail: K,
        mut f: impl FnMut(K, Run<'_>),
    ) {
        let n = self.pkts.len();
        let base = self.pkts.as_mut_ptr();
        // From here the vector no longer owns the packets: each is owned by
        // exactly one `Run` below, which moves or drops it. If `f` panics,
        // the packets after the current run leak (never a double drop).
        // SAFETY: 0 <= len, and every packet in 0..n stays initialised
        // until a Run takes it.
        unsafe { self.pkts.set_len(0) };
        let key = |i: usize| keys.get(i).copied().unwrap_or(tail);
        let mut i = 0;
        while i < n {
            let k = key(i);
            let mut j = i + 1;
            while j < n && key(j) == k {
                j += 1;
            }
            // SAFETY: packets i..j are initialised, inside the vector's
            // allocation, taken by no other Run, and `base` stays valid:
            // the vector is not touched until this loop ends (`f` has no
            // access to `self`).
            let run = Run {
                ptr: unsafe { base.add(i) },
                len: j - i,
                _own: std::marker::PhantomData,
            };
            f(k, run);
            i = j;
        }
    }
}

/// Consecutive packets taken out of a batch by [`Batch::drain_runs`]. It
/// owns them: [`Run::move_into`] moves them on in bulk, and whatever is
/// left is dropped (recycled) with the run.
pub struct Run<'a> {
    ptr: *mut Packet,
    len: usize,
    _own: std::marker::PhantomData<&'a mut [Packet]>,
}

impl Run<'_> {
    /// Packets left in the run.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
    /// True when no packet is left.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The packets left.
    #[inline]
    pub fn as_slice(&self) -> &[Packet] {
        // SAFETY: `ptr..ptr+len` are initialised packets this run owns.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
    /// Moves as many packets as fit into `dst` (front first, one bulk
    /// copy); returns how many moved. The rest stay in the run.
    #[inline]
    pub fn move_into(&mut self, dst: &mut Batch) -> usize {
        let k = self.len.min(dst.room());
        if k == 0 {
            return 0;
        }
        dst.pkts.reserve(k); // never allocates: capacity is cap >= len + room
        let at = dst.pkts.len();
        // SAFETY: the source packets are owned by this run and initialised;
        // the destination has room for `k` more (reserved above; the
        // batch's vector was created with its full capacity); the two do
        // not overlap (a run's packets left their batch's vector, whose
        // length is 0, and `dst` is a distinct `&mut`). After the copy the
        // run forgets them (ptr and len advance), so each is owned once.
        unsafe {
            copy_packets(self.ptr, dst.pkts.as_mut_ptr().add(at), k);
            dst.pkts.set_len(at + k);
            self.ptr = self.ptr.add(k);
        }
        self.len -= k;
        k
    }
}

/// Copies `k` packets from `src` to `dst` (the caller's contract is
/// `ptr::copy_nonoverlapping`'s). Runs of one to four packets, most of a
/// mixed two-port batch's runs, are copied with a constant size, inline
/// (a few vector moves), instead of a `memmove` call each.
///
/// # Safety
/// As [`std::ptr::copy_nonoverlapping`] for `k` packets.
#[inline(always)]
unsafe fn copy_packets(src: *const Packet, dst: *mut Packet, k: usize) {
    use std::ptr::copy_nonoverlapping as cp;
    // SAFETY: the caller's contract, for every arm.
    unsafe {
        match k {
            1 => cp(src, dst, 1),
            2 => cp(src, dst, 2),
            3 => cp(src, dst, 3),
            4 => cp(src, dst, 4),
            _ => cp(src, dst, k),
        }
    }
}

impl Drop for Run<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the packets left are initialised and owned by this run.
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.ptr, self.len));
        }
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
        assert_eq!(c.take_from(&mut b), 0, "full");
        b.clear();
        drop(c);
        assert_eq!(pool.available(), 8);
    }

    #[test]
    fn take_from_keeps_order_and_the_rest() {
        let pool = Pool::new(16);
        let mut a = Batch::with_capacity(4);
        let mut b = Batch::with_capacity(8);
        for i in 0..6u32 {
            let mut p = pool.alloc().unwrap();
            p.anno.nh = i;
            b.push(p).unwrap();
        }
        a.push(pool.alloc().unwrap()).unwrap();
        assert_eq!(a.take_from(&mut b), 3);
        let ids = |x: &Batch| x.iter().map(|p| p.anno.nh).collect::<Vec<_>>();
        assert_eq!(ids(&a), vec![0, 0, 1, 2]);
        assert_eq!(ids(&b), vec![3, 4, 5]);
        drop(a);
        assert_eq!(pool.available(), 16 - 3);
        drop(b);
        assert_eq!(pool.available(), 16);
    }

    #[test]
    fn runs_move_in_bulk_and_drop_the_rest() {
        let pool = Pool::new(16);
        let mut b = Batch::with_capacity(8);
        for i in 0..7u16 {
            let mut p = pool.alloc().unwrap();
            p.anno.nh = u32::from(i);
            b.push(p).unwrap();
        }
        // Runs: [0,1] key 1, [2] key 2, [3,4] key 1, [5] key 9 (dropped),
        // [6] the tail key 3 (keys shorter than the batch).
        let keys = [1u16, 1, 2, 1, 1, 9];
        let (mut one, mut two) = (Batch::with_capacity(3), Batch::with_capacity(8));
        let mut seen = Vec::new();
        b.drain_runs(&keys, 3, |k, mut run| {
            seen.push((k, run.len()));
            match k {
                1 => {
                    run.move_into(&mut one);
                }
                2 | 3 => {
                    assert_eq!(run.move_into(&mut two), 1);
                }
                _ => {}
            }
        });
        assert!(b.is_empty());
        assert_eq!(seen, vec![(1, 2), (2, 1), (1, 2), (9, 1), (3, 1)]);
        // `one` holds 3 (its capacity): the fourth key-1 packet was
        // dropped with its run, as was the key-9 one.
        let ids = |x: &Batch| x.iter().map(|p| p.anno.nh).collect::<Vec<_>>();
        assert_eq!(ids(&one), vec![0, 1, 3]);
        assert_eq!(ids(&two), vec![2, 6]);
        assert_eq!(pool.available(), 16 - 5);
        drop((one, two));
        assert_eq!(pool.available(), 16);
        // An empty batch calls nothing.
        b.drain_runs(&keys, 0, |_, _| panic!("no runs"));
    }
}

//! A block allocator over one growable array: blocks are powers of two in
//! size, freed blocks go to a free list per size class and are reused first.
//! A subtree's nodes (or leaves) live in one block, so that a node's children
//! are contiguous and can be addressed as `base + rank`.

use crate::LpmError;

/// Largest index a pool may hand out: indices share a `u32` with the leaf
/// flag (bit 31) in the direct table, and with the pending-leaf flag (bit
/// 30) in the batched lookup's per-lane state.
const MAX_INDEX: usize = (1 << 30) - 1;

#[derive(Debug)]
pub(crate) struct Pool<T> {
    pub(crate) items: Vec<T>,
    /// `free[c]`: starts of free blocks of `1 << c` items.
    free: Vec<Vec<u32>>,
    /// Items in live blocks (including rounding).
    live: usize,
}

// Not derived: a derived clone (what `publish::left_right` makes of the
// first copy) would allocate the second copy's array without the
// huge-page advice, so readers of that copy would miss the TLB on most
// random lookups. The clone reserves the same capacity, advises it, then
// copies.
impl<T: Copy> Clone for Pool<T> {
    fn clone(&self) -> Self {
        let mut items = Vec::with_capacity(self.items.capacity());
        super::huge::advise(&items);
        items.extend_from_slice(&self.items);
        Pool {
            items,
            free: self.free.clone(),
            live: self.live,
        }
    }
}

/// The size class of a block holding `n` items.
pub(crate) fn class_of(n: usize) -> u8 {
    n.max(1).next_power_of_two().trailing_zeros() as u8
}

impl<T: Copy + Default> Pool<T> {
    pub(crate) fn new() -> Self {
        Pool {
            items: Vec::new(),
            free: vec![Vec::new(); 32],
            live: 0,
        }
    }

    /// Allocates a block for `n` items; returns its start and class.
    pub(crate) fn alloc(&mut self, n: usize) -> Result<(u32, u8), LpmError> {
        let c = class_of(n);
        let size = 1usize << c;
        let start = match self.free.get_mut(usize::from(c)).and_then(|f| f.pop()) {
            Some(s) => s,
            None => {
                let s = self.items.len();
                if s + size > MAX_INDEX {
                    return Err(LpmError::Full);
                }
                if s + size > self.items.capacity() {
                    // Grow by doubling, and advise before the new pages are
                    // first touched (advice does not convert touched pages).
                    self.items
                        .reserve((s + size).max(self.items.capacity() * 2) - s);
                    super::huge::advise(&self.items);
                }
                self.items.resize(s + size, T::default());
                s as u32
            }
        };
        self.live += size;
        Ok((start, c))
    }

    /// Returns a block to its free list.
    pub(crate) fn free(&mut self, start: u32, class: u8) {
        if let Some(f) = self.free.get_mut(usize::from(class)) {
            f.push(start);
            self.live -= 1usize << class;
        }
    }

    /// The slice of a block, or an empty slice if out of range.
    pub(crate) fn block_mut(&mut self, start: u32, len: usize) -> &mut [T] {
        let s = start as usize;
        self.items.get_mut(s..s + len).unwrap_or(&mut [])
    }

    /// Bytes held by the array (live, free and spare capacity).
    pub(crate) fn bytes(&self) -> usize {
        self.items.capacity() * std::mem::size_of::<T>()
            + self.free.iter().map(|f| f.capacity() * 4).sum::<usize>()
    }

    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// The free lists (tests compare the two copies of a pair).
    #[cfg(test)]
    pub(crate) fn free_lists(&self) -> &[Vec<u32>] {
        &self.free
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_freed_blocks_by_class() {
        let mut p: Pool<u32> = Pool::new();
        let (a, ca) = p.alloc(3).unwrap();
        assert_eq!((a, ca), (0, 2));
        let (b, cb) = p.alloc(1).unwrap();
        assert_eq!((b, cb), (4, 0));
        p.free(a, ca);
        assert_eq!(p.alloc(4).unwrap(), (0, 2));
        assert_eq!(p.alloc(4).unwrap(), (5, 2));
        assert_eq!(p.live(), 9);
        assert!(p.block_mut(100, 4).is_empty());
    }

    #[test]
    fn clone_keeps_capacity_contents_and_free_lists() {
        let mut p: Pool<u32> = Pool::new();
        let (a, ca) = p.alloc(5).unwrap();
        p.block_mut(a, 5).copy_from_slice(&[1, 2, 3, 4, 5]);
        let (b, cb) = p.alloc(2).unwrap();
        p.free(b, cb);
        let mut q = p.clone();
        // The clone reserves (and advises) the original's capacity, not
        // only its length.
        assert!(q.items.capacity() >= p.items.capacity());
        assert_eq!(q.items, p.items);
        assert_eq!(q.live(), p.live());
        // Same free lists: both hand out the same block next.
        assert_eq!(q.alloc(2).unwrap(), p.alloc(2).unwrap());
        assert_eq!(q.block_mut(a, 5), &[1, 2, 3, 4, 5]);
        assert_eq!(ca, 3);
    }
}

//! A block allocator over one growable array of 64-byte lines: blocks of
//! up to 16 lines are sized exactly, larger ones are powers of two; freed
//! blocks go to a free list per size class and are reused first (exact
//! small classes keep the rounding, which lookups pay for in cache
//! footprint, under a line per block for typical IPv4 subtrees). A direct slot's whole subtree (its nodes, then its
//! leaves) lives in one block, so that a node's children are contiguous and
//! can be addressed as `base + rank`, and a small subtree's root shares its
//! cache line with its leaves.

use crate::LpmError;

/// One cache line of the pool. `repr(C, align(64))` over eight `u64`s: no
/// padding, so the pool can be read as a slice of words (see
/// [`Pool::words`]), and every block starts on a line.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Line(pub(crate) [u64; 8]);

/// Words per line.
pub(crate) const WORDS: usize = 8;

/// Largest number of lines a pool may hold: node positions are word
/// indexes and leaf positions `u32` indexes (two per word), and both share a
/// `u32` with the leaf flag (bit 31) in the direct table and in the batched
/// lookup's lane state; leaf indexes are kept below 2^30 (words below
/// 2^29), which leaves bit 30 clear.
const MAX_LINES: usize = (1 << 26) - 1;

#[derive(Clone, Debug)]
pub(crate) struct Pool {
    items: Vec<Line>,
    /// `free[c]`: first lines of free blocks of class `c`.
    free: Vec<Vec<u32>>,
    /// Lines in live blocks (including rounding).
    live: usize,
}

/// Largest block sized exactly.
const EXACT: usize = 16;

/// The size class of a block of `n` lines: `n` itself up to [`EXACT`]
/// (at least 1), then `12 + log2` of the next power of two (17 for 32
/// lines, 18 for 64, ...).
pub(crate) fn class_of(n: usize) -> u8 {
    if n <= EXACT {
        n.max(1) as u8
    } else {
        (12 + n.next_power_of_two().trailing_zeros()) as u8
    }
}

/// Lines in a block of class `c`.
pub(crate) fn lines_of(c: u8) -> usize {
    if usize::from(c) <= EXACT {
        usize::from(c)
    } else {
        1usize << (c - 12).min(40)
    }
}

impl Pool {
    pub(crate) fn new() -> Self {
        Pool {
            items: Vec::new(),
            free: vec![Vec::new(); 64],
            live: 0,
        }
    }

    /// The pool as words: line `i` is words `8 i .. 8 i + 8`.
    #[inline(always)]
    pub(crate) fn words(&self) -> &[u64] {
        // SAFETY: `Line` is `repr(C)` around `[u64; 8]` with no padding
        // (size 64, align 64 >= align of u64), so `len` lines are exactly
        // `8 len` initialised, properly aligned `u64`s; the slice borrows
        // `self`, so the vector cannot reallocate while it lives.
        unsafe {
            std::slice::from_raw_parts(self.items.as_ptr().cast::<u64>(), self.items.len() * WORDS)
        }
    }

    /// Allocates a block of at least `n` lines; returns its first line and
    /// class.
    pub(crate) fn alloc(&mut self, n: usize) -> Result<(u32, u8), LpmError> {
        let c = class_of(n);
        let size = lines_of(c);
        let start = match self.free.get_mut(usize::from(c)).and_then(|f| f.pop()) {
            Some(s) => s,
            None => {
                let s = self.items.len();
                if s + size > MAX_LINES {
                    return Err(LpmError::Full);
                }
                if s + size > self.items.capacity() {
                    // Grow by doubling, and advise before the new pages are
                    // first touched (advice does not convert touched pages).
                    self.items
                        .reserve((s + size).max(self.items.capacity() * 2) - s);
                    super::huge::advise(&self.items);
                }
                self.items.resize(s + size, Line::default());
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
            self.live -= lines_of(class);
        }
    }

    /// The words of a block of `lines` lines, or an empty slice if out of
    /// range.
    pub(crate) fn block_mut(&mut self, start: u32, lines: usize) -> &mut [u64] {
        let s = start as usize * WORDS;
        let words = self.words_mut();
        words.get_mut(s..s + lines * WORDS).unwrap_or(&mut [])
    }

    fn words_mut(&mut self) -> &mut [u64] {
        // SAFETY: as in `words`; the slice borrows `self` mutably, so it is
        // the only access to the vector while it lives.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.items.as_mut_ptr().cast::<u64>(),
                self.items.len() * WORDS,
            )
        }
    }

    /// Bytes held by the array (live, free and spare capacity).
    pub(crate) fn bytes(&self) -> usize {
        self.items.capacity() * std::mem::size_of::<Line>()
            + self.free.iter().map(|f| f.capacity() * 4).sum::<usize>()
    }

    /// Bytes in live blocks.
    pub(crate) fn live_bytes(&self) -> usize {
        self.live * std::mem::size_of::<Line>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_freed_blocks_by_class() {
        let mut p = Pool::new();
        let (a, ca) = p.alloc(3).unwrap();
        assert_eq!((a, ca), (0, 3));
        let (b, cb) = p.alloc(1).unwrap();
        assert_eq!((b, cb), (3, 1));
        p.free(a, ca);
        assert_eq!(p.alloc(4).unwrap(), (4, 4), "no 4-line block is free");
        assert_eq!(p.alloc(3).unwrap(), (0, 3), "the freed 3-line block");
        assert_eq!(p.live_bytes(), 8 * 64);
        let (c, cc) = p.alloc(17).unwrap();
        assert_eq!((c, cc, lines_of(cc)), (8, 17, 32));
        assert_eq!(p.alloc(0).unwrap().1, 1);
        assert!(p.block_mut(100, 4).is_empty());
        assert_eq!(p.words().len(), 41 * WORDS);
        assert_eq!(p.words().as_ptr() as usize % 64, 0, "lines are aligned");
    }
}

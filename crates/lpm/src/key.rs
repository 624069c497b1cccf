//! Address keys: the few bit operations the generic trie needs, for `u32`
//! (IPv4) and `u128` (IPv6), both in host byte order with the first address
//! bit as the most significant bit.

use std::fmt::Debug;
use std::hash::Hash;

/// An address type usable as a trie key. Sealed: only `u32` and `u128`.
pub trait Key:
    Copy + Ord + Eq + Hash + Debug + Send + Sync + Default + 'static + private::Sealed
{
    /// Address width in bits (32 or 128).
    const BITS: u32;
    /// Group bits of the first node level below the direct array: that level
    /// is a group of `2^ROOT_GROUP` nodes indexed by the next `ROOT_GROUP`
    /// address bits, so it resolves `ROOT_GROUP + 6` bits in one read.
    const ROOT_GROUP: u32;
    /// Group bits of every deeper node level (stride `GROUP + 6`).
    const GROUP: u32;
    /// `self` with every bit past the first `len` cleared (`len >= BITS`
    /// keeps all bits).
    fn masked(self, len: u8) -> Self;
    /// The first `n` bits as an integer (`1 <= n <= 24`).
    fn top(self, n: u32) -> usize;
    /// The 6 bits starting at bit `off` (0 = most significant); bits past the
    /// end of the address read as zero.
    fn chunk6(self, off: u32) -> u32;
    /// The `n` bits starting at bit `off` (`n <= 16`; `n == 0` gives 0);
    /// bits past the end of the address read as zero.
    fn chunk(self, off: u32, n: u32) -> u32;
    /// The last address of the prefix `self/len`.
    fn last(self, len: u8) -> Self;
    /// The address whose first `n` bits are `v` and the rest zero
    /// (`1 <= n <= 24`).
    fn from_top(v: usize, n: u32) -> Self;
}

mod private {
    pub trait Sealed {}
    impl Sealed for u32 {}
    impl Sealed for u128 {}
}

impl Key for u32 {
    const BITS: u32 = 32;
    // IPv4 keeps plain 64-ary nodes: its lookup structures fit the L2
    // cache, where wider strides only add memory.
    const ROOT_GROUP: u32 = 0;
    const GROUP: u32 = 0;
    #[inline(always)]
    fn masked(self, len: u8) -> u32 {
        if len == 0 {
            0
        } else if len >= 32 {
            self
        } else {
            self & (u32::MAX << (32 - u32::from(len)))
        }
    }
    #[inline(always)]
    fn top(self, n: u32) -> usize {
        // n is a small positive constant; checked_shr keeps n == 0 harmless.
        self.checked_shr(32 - n.clamp(1, 32)).unwrap_or(0) as usize
    }
    #[inline(always)]
    fn chunk6(self, off: u32) -> u32 {
        // Widen to 64 bits so that a chunk running past bit 31 reads zeros.
        let k = (u64::from(self) << 32).checked_shl(off).unwrap_or(0);
        (k >> 58) as u32
    }
    #[inline(always)]
    fn chunk(self, off: u32, n: u32) -> u32 {
        let k = (u64::from(self) << 32).checked_shl(off).unwrap_or(0);
        k.checked_shr(64 - n.min(16)).unwrap_or(0) as u32
    }
    #[inline(always)]
    fn last(self, len: u8) -> u32 {
        self.masked(len) | !u32::MAX.masked(len)
    }
    #[inline(always)]
    fn from_top(v: usize, n: u32) -> u32 {
        (v as u32).checked_shl(32 - n.clamp(1, 32)).unwrap_or(0)
    }
}

impl Key for u128 {
    const BITS: u32 = 128;
    // Most IPv6 routes are /32 to /48: the first level resolves bits 18 to
    // 32 (a group of 256 nodes), the next ones 8 bits each (32, 40, 48).
    const ROOT_GROUP: u32 = 8;
    const GROUP: u32 = 2;
    #[inline(always)]
    fn masked(self, len: u8) -> u128 {
        if len == 0 {
            0
        } else if len >= 128 {
            self
        } else {
            self & (u128::MAX << (128 - u32::from(len)))
        }
    }
    #[inline(always)]
    fn top(self, n: u32) -> usize {
        self.checked_shr(128 - n.clamp(1, 64)).unwrap_or(0) as usize
    }
    #[inline(always)]
    fn chunk6(self, off: u32) -> u32 {
        (self.checked_shl(off).unwrap_or(0) >> 122) as u32
    }
    #[inline(always)]
    fn chunk(self, off: u32, n: u32) -> u32 {
        let k = self.checked_shl(off).unwrap_or(0);
        k.checked_shr(128 - n.min(16)).unwrap_or(0) as u32
    }
    #[inline(always)]
    fn last(self, len: u8) -> u128 {
        self.masked(len) | !u128::MAX.masked(len)
    }
    #[inline(always)]
    fn from_top(v: usize, n: u32) -> u128 {
        (v as u128).checked_shl(128 - n.clamp(1, 64)).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_bits() {
        assert_eq!(0xffff_ffffu32.masked(0), 0);
        assert_eq!(0xffff_ffffu32.masked(8), 0xff00_0000);
        assert_eq!(0xffff_ffffu32.masked(32), 0xffff_ffff);
        assert_eq!(0x0a00_0000u32.last(8), 0x0aff_ffff);
        assert_eq!(0x0a00_0000u32.last(0), 0xffff_ffff);
        assert_eq!(0x0a01_0203u32.last(32), 0x0a01_0203);
        assert_eq!(0xfc00_0000u32.chunk6(0), 0x3f);
        assert_eq!(0x0000_0003u32.chunk6(30), 0x30);
        assert_eq!(0x0000_0003u32.chunk6(64), 0);
        assert_eq!(0x8000_0000u32.top(18), 1 << 17);
        assert_eq!(u32::from_top(1 << 17, 18), 0x8000_0000);
        assert_eq!(0xfc00_0000u32.chunk(0, 6), 0x3f);
        assert_eq!(0x0000_0003u32.chunk(30, 6), 0x30);
        assert_eq!(0x1234_5678u32.chunk(8, 0), 0);
        assert_eq!(0x1234_5678u32.chunk(8, 16), 0x3456);
        assert_eq!(0x1234_5678u32.chunk(32, 8), 0);
    }

    #[test]
    fn v6_bits() {
        let a: u128 = 0x2001_0db8 << 96;
        assert_eq!(a.masked(16), 0x2001 << 112);
        assert_eq!(a.last(128), a);
        assert_eq!(0u128.last(0), u128::MAX);
        assert_eq!(3u128.chunk6(126), 0x30);
        assert_eq!(u128::MAX.chunk6(200), 0);
        assert_eq!(a.top(16), 0x2001);
        assert_eq!(a.chunk(18, 14), 0x0db8 & 0x3fff);
        assert_eq!(a.chunk(18, 0), 0);
        assert_eq!(0xffu128.chunk(120, 8), 0xff);
        assert_eq!(0xffu128.chunk(122, 6), 0x3f);
        assert_eq!(u128::MAX.chunk(128, 8), 0);
        for off in [0, 18, 32, 40, 122] {
            assert_eq!(a.chunk(off, 6), a.chunk6(off));
        }
    }
}

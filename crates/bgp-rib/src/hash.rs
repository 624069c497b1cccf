//! A small, fast, non-cryptographic hasher for the RIB's tables.
//!
//! The keys (prefixes, attribute-set digests, handles) come from peers, but a
//! shard's tables only ever grow to what the peers' prefix limits allow, so
//! the DoS resistance of SipHash buys little here while its cost shows on
//! every lookup. The finaliser mixes all bits down so that hashbrown's use
//! of both the low (bucket) and high (control byte) bits stays uniform even
//! for masked prefixes whose low address bits are all zero.

use std::hash::{BuildHasherDefault, Hash, Hasher};

use base::Prefix;

/// Bytes of a hashbrown table of `T` slots with room for `capacity`
/// entries: buckets (a power of two, at most 7/8 full from 8 on) times
/// the slot size plus one control byte each, plus a group of control
/// bytes. An estimate without allocator overhead.
pub(crate) fn table_bytes<T>(capacity: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        (capacity + 1).next_power_of_two()
    } else {
        (capacity * 8 / 7).next_power_of_two()
    };
    buckets * (std::mem::size_of::<T>() + 1) + 16
}

const K: u64 = 0x9e37_79b9_7f4a_7c15;

#[derive(Default, Clone, Copy)]
pub(crate) struct FastHasher {
    h: u64,
}

impl FastHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.h = (self.h.rotate_left(5) ^ w).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            self.add(u64::from_le_bytes(b));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_u128(&mut self, i: u128) {
        self.add(i as u64);
        self.add((i >> 64) as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // murmur3 fmix64.
        let mut x = self.h;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        x ^ (x >> 33)
    }
}

pub(crate) type FastBuild = BuildHasherDefault<FastHasher>;
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, FastBuild>;
pub(crate) type FastSet<K> = std::collections::HashSet<K, FastBuild>;

pub(crate) fn hash_one<T: Hash + ?Sized>(v: &T) -> u64 {
    let mut h = FastHasher::default();
    v.hash(&mut h);
    h.finish()
}

/// Address bits of an IPv4 prefix that choose its shard: every prefix of
/// /20 or longer inside one /20 block lands in the same shard.
pub const SHARD_BLOCK_V4: u8 = 20;
/// The same for IPv6: one /32 block (a typical LIR allocation).
pub const SHARD_BLOCK_V6: u8 = 32;

/// The shard (0..`shards`) that owns `prefix`. Only the first
/// `SHARD_BLOCK_V4` (20) / `SHARD_BLOCK_V6` (32) bits of the (masked) address
/// count, with the prefix length capped there: neighbouring more-specifics
/// share a shard. That is what makes the split cheap: a peer packs the
/// prefixes that share an attribute set into one UPDATE (RFC 4271 §9.2),
/// and those are mostly one origin's adjacent prefixes, so an UPDATE
/// usually lands whole in one shard instead of being cut into S parts that
/// are each applied, interned, loop-checked and re-encoded (measured in
/// docs/BENCHMARKS.md "Pipeline modes"). A full table still has ~100k
/// such blocks, enough to spread evenly. Host bits are ignored, so
/// `10.1.255.0/20` and `10.1.240.0/20` land together. The hash is salted
/// differently from the shards' own tables so that the prefixes of one
/// shard still spread over all of its buckets. `shards == 0` is treated as
/// 1.
pub fn shard_for(prefix: &Prefix, shards: usize) -> usize {
    let mut h = FastHasher { h: 0x5bd1_e995 };
    match prefix {
        Prefix::V4(p) => {
            let len = p.len().min(SHARD_BLOCK_V4);
            let bits = p.addr_bits() & mask(u64::from(len), 32) as u32;
            h.add(u64::from(bits) | (u64::from(len) << 32));
        }
        Prefix::V6(p) => {
            let len = p.len().min(SHARD_BLOCK_V6);
            let top = (p.addr_bits() >> 64) as u64 & mask(u64::from(len), 64);
            h.add(top);
            h.add(u64::from(len) | 1 << 8);
        }
    }
    let x = h.finish() >> 32;
    ((x * shards.max(1) as u64) >> 32) as usize
}

/// The top `len` of `width` bits set (len <= width <= 64).
const fn mask(len: u64, width: u32) -> u64 {
    if len == 0 {
        0
    } else {
        (u64::MAX << (width as u64 - len)) & (u64::MAX >> (64 - width))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_for_is_in_range_and_spreads() {
        let mut counts = [0usize; 4];
        for i in 0..4000u32 {
            let p = Prefix::V4(base::Prefix4::new(i << 8, 24).unwrap());
            let s = shard_for(&p, 4);
            assert!(s < 4);
            counts[s] += 1;
        }
        for c in counts {
            assert!((800..1200).contains(&c), "uneven shards: {counts:?}");
        }
        let a: Prefix = "10.1.255.0/20".parse().unwrap();
        let b: Prefix = "10.1.240.0/20".parse().unwrap();
        assert_eq!(shard_for(&a, 7), shard_for(&b, 7));
        assert_eq!(shard_for(&a, 0), 0);
        // More-specifics of one block share a shard; shorter prefixes and
        // other families are keyed apart.
        let c: Prefix = "10.1.241.0/24".parse().unwrap();
        let d: Prefix = "10.1.240.128/25".parse().unwrap();
        let e: Prefix = "2001:db8:1::/48".parse().unwrap();
        let f: Prefix = "2001:db8:ffff::/64".parse().unwrap();
        for n in [2, 7, 64] {
            assert_eq!(shard_for(&a, n), shard_for(&c, n));
            assert_eq!(shard_for(&a, n), shard_for(&d, n));
            assert_eq!(shard_for(&e, n), shard_for(&f, n));
        }
        // /20 blocks of /24s spread over the shards.
        let mut counts = [0usize; 8];
        for i in 0..64_000u32 {
            let p = Prefix::V4(base::Prefix4::new(0x0a00_0000 | (i << 8), 24).unwrap());
            counts[shard_for(&p, 8)] += 1;
        }
        for c in counts {
            assert!((6_800..9_200).contains(&c), "uneven shards: {counts:?}");
        }
    }
}

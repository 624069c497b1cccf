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

pub(crate) fn hash_one<T: Hash + ?Sized>(v: &T) -> u64 {
    let mut h = FastHasher::default();
    v.hash(&mut h);
    h.finish()
}

/// The shard (0..`shards`) that owns `prefix`. Host bits are ignored, so
/// `10.1.255.0/20` and `10.1.240.0/20` land together. The hash is salted
/// differently from the shards' own tables so that the prefixes of one shard
/// still spread over all of its buckets. `shards == 0` is treated as 1.
pub fn shard_for(prefix: &Prefix, shards: usize) -> usize {
    let mut h = FastHasher { h: 0x5bd1_e995 };
    prefix.masked().hash(&mut h);
    let x = h.finish() >> 32;
    ((x * shards.max(1) as u64) >> 32) as usize
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
    }
}

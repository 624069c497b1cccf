//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).

/// Adds `data` as big-endian 16-bit words to a running 32-bit ones'
/// complement accumulator (an odd trailing byte is padded with zero,
/// RFC 1071 §4.1). Fold with [`finish`].
#[inline]
pub fn add(mut acc: u64, data: &[u8]) -> u64 {
    // Sum 32 bits at a time into a 64-bit accumulator: carries are kept
    // and folded at the end (RFC 1071 §2 (B), "deferred carries").
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        acc += u64::from(u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    }
    // The 0 to 3 bytes left, padded (byte by byte: a slice copy of a
    // length unknown here is a `memcpy` call, once per checksum).
    let rest = chunks.remainder();
    let b = |i: usize| rest.get(i).copied().unwrap_or(0);
    acc + u64::from(u32::from_be_bytes([b(0), b(1), b(2), 0]))
}

/// Folds an accumulator to 16 bits and complements it: the value to store
/// in a checksum field.
#[inline]
pub fn finish(acc: u64) -> u16 {
    // A fixed number of end-around-carry folds (no data-dependent loop):
    // 64 -> 33 -> 32 bits, then 32 -> 17 -> 16 -> 16 bits.
    let a = (acc & 0xffff_ffff) + (acc >> 32);
    let a = (a & 0xffff_ffff) + (a >> 32);
    let a = (a & 0xffff) + (a >> 16);
    let a = (a & 0xffff) + (a >> 16);
    let a = (a & 0xffff) + (a >> 16);
    !(a as u16)
}

/// The checksum of `data`: 0 when `data` already contains a correct
/// checksum field.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    finish(add(0, data))
}

/// Accumulator for the IPv4 pseudo-header (RFC 793 §3.1, RFC 768).
#[inline]
pub fn pseudo4(src: [u8; 4], dst: [u8; 4], proto: u8, len: u16) -> u64 {
    let acc = add(add(0, &src), &dst);
    acc + u64::from(proto) + u64::from(len)
}

/// Accumulator for the IPv6 pseudo-header (RFC 8200 §8.1).
#[inline]
pub fn pseudo6(src: &[u8; 16], dst: &[u8; 16], next: u8, len: u32) -> u64 {
    let acc = add(add(0, src), dst);
    acc + u64::from(next) + u64::from(len)
}

/// Incremental update (RFC 1624 eqn. 3): the new checksum field after one
/// 16-bit word of the covered data changed from `old` to `new`.
/// `HC' = ~(~HC + ~m + m')`.
#[inline]
pub fn update16(csum: u16, old: u16, new: u16) -> u16 {
    let mut s = u32::from(!csum) + u32::from(!old) + u32::from(new);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}

/// Incremental update for a changed 32-bit field (two words).
#[inline]
pub fn update32(csum: u16, old: u32, new: u32) -> u16 {
    let c = update16(csum, (old >> 16) as u16, (new >> 16) as u16);
    update16(c, old as u16, new as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3 example bytes: sum 0xddf2, checksum 0x220d.
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum(&d), !0xddf2);
        assert_eq!(checksum(&[0xff]), !0xff00);
        assert_eq!(checksum(&[]), 0xffff);
    }

    #[test]
    fn incremental_matches_full() {
        // A real IPv4 header (checksum 0xb861).
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(checksum(&h), 0);
        for _ in 0..64 {
            let old = u16::from_be_bytes([h[8], h[9]]);
            h[8] = h[8].wrapping_sub(1);
            let new = u16::from_be_bytes([h[8], h[9]]);
            let c = update16(u16::from_be_bytes([h[10], h[11]]), old, new);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            assert_eq!(checksum(&h), 0, "ttl {}", h[8]);
        }
    }

    #[test]
    fn finish_folds_like_the_loop() {
        fn by_loop(mut acc: u64) -> u16 {
            while acc >> 16 != 0 {
                acc = (acc & 0xffff) + (acc >> 16);
            }
            !(acc as u16)
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let edges = [
            0,
            1,
            0xffff,
            0x1_0000,
            0x1_ffff,
            0xffff_ffff,
            0x1_0000_0000,
            u64::MAX,
            u64::MAX - 1,
        ];
        for &e in &edges {
            assert_eq!(finish(e), by_loop(e), "{e:#x}");
        }
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for v in [x, x >> 20, x >> 40, x & 0x3_ffff_ffff] {
                assert_eq!(finish(v), by_loop(v), "{v:#x}");
            }
        }
    }
}

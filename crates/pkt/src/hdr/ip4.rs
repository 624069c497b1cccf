//! IPv4 header (RFC 791).

use super::{arr, be16, put, HdrError};
use crate::checksum;

/// Minimum IPv4 header length.
pub const IP4_MIN: usize = 20;
/// IP protocol numbers.
pub const PROTO_ICMP: u8 = 1;
/// TCP.
pub const PROTO_TCP: u8 = 6;
/// UDP.
pub const PROTO_UDP: u8 = 17;
/// ICMPv6 (as an IPv6 next header).
pub const PROTO_ICMPV6: u8 = 58;

/// A view of an IPv4 header. `parse` guarantees version 4, IHL >= 5, the
/// options present, and total length within `[IHL*4, bytes]`.
#[derive(Copy, Clone, Debug)]
pub struct Ipv4<'a> {
    h: &'a [u8; IP4_MIN],
    b: &'a [u8],
}

impl<'a> Ipv4<'a> {
    /// Parses the header at the start of `b` (RFC 1812 §5.2.2 checks, less
    /// the checksum: see [`Ipv4::checksum_ok`]).
    #[inline]
    pub fn parse(b: &'a [u8]) -> Result<Ipv4<'a>, HdrError> {
        let h = b.first_chunk::<IP4_MIN>().ok_or(HdrError::Short)?;
        if h[0] >> 4 != 4 {
            return Err(HdrError::BadVersion);
        }
        let hl = usize::from(h[0] & 0x0f) * 4;
        if hl < IP4_MIN || hl > b.len() {
            return Err(HdrError::BadHeaderLen);
        }
        let tl = usize::from(be16(arr(h, 2)));
        if tl < hl || tl > b.len() {
            return Err(HdrError::BadLength);
        }
        Ok(Ipv4 { h, b })
    }
    /// Header length in bytes.
    pub fn header_len(&self) -> usize {
        usize::from(self.h[0] & 0x0f) * 4
    }
    /// The full header including options.
    pub fn header(&self) -> &'a [u8] {
        self.b.get(..self.header_len()).unwrap_or(self.h)
    }
    /// DSCP/ECN byte.
    pub fn tos(&self) -> u8 {
        self.h[1]
    }
    /// Total length.
    pub fn total_len(&self) -> u16 {
        be16(arr(self.h, 2))
    }
    /// Identification.
    pub fn id(&self) -> u16 {
        be16(arr(self.h, 4))
    }
    /// Flags and fragment offset word.
    pub fn frag(&self) -> u16 {
        be16(arr(self.h, 6))
    }
    /// True for a non-first fragment (offset > 0).
    pub fn is_later_fragment(&self) -> bool {
        self.frag() & 0x1fff != 0
    }
    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.h[8]
    }
    /// Protocol.
    pub fn proto(&self) -> u8 {
        self.h[9]
    }
    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        be16(arr(self.h, 10))
    }
    /// Source address.
    pub fn src(&self) -> [u8; 4] {
        arr(self.h, 12)
    }
    /// Destination address.
    pub fn dst(&self) -> [u8; 4] {
        arr(self.h, 16)
    }
    /// True when the header checksum verifies.
    #[inline]
    pub fn checksum_ok(&self) -> bool {
        checksum::checksum(self.header()) == 0
    }
    /// The payload (after options, up to the total length).
    pub fn payload(&self) -> &'a [u8] {
        self.b
            .get(self.header_len()..usize::from(self.total_len()))
            .unwrap_or(&[])
    }
}

/// A writable IPv4 header. `parse` checks only the 20-byte length and
/// IHL, so it can also be used to build a header in place.
#[derive(Debug)]
pub struct Ipv4Mut<'a> {
    h: &'a mut [u8; IP4_MIN],
}

impl<'a> Ipv4Mut<'a> {
    /// Views the first 20 bytes of `b`.
    #[inline]
    pub fn parse(b: &'a mut [u8]) -> Result<Ipv4Mut<'a>, HdrError> {
        let h = b.first_chunk_mut::<IP4_MIN>().ok_or(HdrError::Short)?;
        Ok(Ipv4Mut { h })
    }
    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.h[8]
    }
    /// Decrements the TTL and patches the checksum incrementally
    /// (RFC 1624; RFC 1812 §5.3.1). The caller has checked TTL > 1.
    #[inline]
    pub fn dec_ttl(&mut self) {
        let old = be16([self.h[8], self.h[9]]);
        self.h[8] = self.h[8].wrapping_sub(1);
        let new = be16([self.h[8], self.h[9]]);
        let c = checksum::update16(be16(arr(self.h, 10)), old, new);
        put(self.h, 10, &c.to_be_bytes());
    }
    /// Writes a 20-byte header without options and its checksum.
    #[allow(clippy::too_many_arguments)]
    pub fn write(
        &mut self,
        tos: u8,
        total_len: u16,
        id: u16,
        ttl: u8,
        proto: u8,
        src: [u8; 4],
        dst: [u8; 4],
    ) {
        put(self.h, 0, &[0x45, tos]);
        put(self.h, 2, &total_len.to_be_bytes());
        put(self.h, 4, &id.to_be_bytes());
        put(self.h, 6, &[0, 0, ttl, proto, 0, 0]);
        put(self.h, 12, &src);
        put(self.h, 16, &dst);
        let c = checksum::checksum(self.h);
        put(self.h, 10, &c.to_be_bytes());
    }
    /// Sets source and destination and recomputes the checksum over the
    /// first 20 bytes (only valid without options).
    pub fn set_addrs(&mut self, src: [u8; 4], dst: [u8; 4]) {
        put(self.h, 12, &src);
        put(self.h, 16, &dst);
        put(self.h, 10, &[0, 0]);
        let c = checksum::checksum(self.h);
        put(self.h, 10, &c.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> [u8; 24] {
        let mut b = [0u8; 24];
        Ipv4Mut::parse(&mut b).unwrap().write(
            0,
            24,
            7,
            64,
            PROTO_UDP,
            [10, 0, 0, 1],
            [10, 0, 0, 2],
        );
        b
    }

    #[test]
    fn parse_fields() {
        let b = sample();
        let ip = Ipv4::parse(&b).unwrap();
        assert_eq!(ip.header_len(), 20);
        assert_eq!(ip.ttl(), 64);
        assert_eq!(ip.proto(), PROTO_UDP);
        assert_eq!(ip.src(), [10, 0, 0, 1]);
        assert_eq!(ip.dst(), [10, 0, 0, 2]);
        assert_eq!(ip.payload().len(), 4);
        assert!(ip.checksum_ok());
        assert_eq!(ip.id(), 7);
    }

    #[test]
    fn rejects() {
        let b = sample();
        assert_eq!(Ipv4::parse(&b[..19]).unwrap_err(), HdrError::Short);
        let mut c = b;
        c[0] = 0x65;
        assert_eq!(Ipv4::parse(&c).unwrap_err(), HdrError::BadVersion);
        c[0] = 0x44;
        assert_eq!(Ipv4::parse(&c).unwrap_err(), HdrError::BadHeaderLen);
        c[0] = 0x4f;
        assert_eq!(Ipv4::parse(&c).unwrap_err(), HdrError::BadHeaderLen);
        let mut d = b;
        d[3] = 25;
        assert_eq!(Ipv4::parse(&d).unwrap_err(), HdrError::BadLength);
        d[3] = 19;
        assert_eq!(Ipv4::parse(&d).unwrap_err(), HdrError::BadLength);
        let mut e = b;
        e[15] ^= 1;
        assert!(!Ipv4::parse(&e).unwrap().checksum_ok());
    }

    #[test]
    fn dec_ttl_keeps_checksum() {
        let mut b = sample();
        Ipv4Mut::parse(&mut b).unwrap().dec_ttl();
        let ip = Ipv4::parse(&b).unwrap();
        assert_eq!(ip.ttl(), 63);
        assert!(ip.checksum_ok());
    }
}

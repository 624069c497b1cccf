//! IPv6 fixed header (RFC 8200 §3). Extension headers are not walked:
//! `next_header` is what the fixed header says.

use super::{arr, be16, put, HdrError};

/// IPv6 header length.
pub const IP6_LEN: usize = 40;

/// A view of an IPv6 header. `parse` guarantees version 6 and that the
/// payload length fits the bytes present.
#[derive(Copy, Clone, Debug)]
pub struct Ipv6<'a> {
    h: &'a [u8; IP6_LEN],
    b: &'a [u8],
}

impl<'a> Ipv6<'a> {
    /// Parses the header at the start of `b`.
    #[inline]
    pub fn parse(b: &'a [u8]) -> Result<Ipv6<'a>, HdrError> {
        let h = b.first_chunk::<IP6_LEN>().ok_or(HdrError::Short)?;
        if h[0] >> 4 != 6 {
            return Err(HdrError::BadVersion);
        }
        if IP6_LEN + usize::from(be16(arr(h, 4))) > b.len() {
            return Err(HdrError::BadLength);
        }
        Ok(Ipv6 { h, b })
    }
    /// The 40 header bytes.
    pub fn header(&self) -> &'a [u8; IP6_LEN] {
        self.h
    }
    /// Traffic class.
    pub fn traffic_class(&self) -> u8 {
        (self.h[0] << 4) | (self.h[1] >> 4)
    }
    /// Payload length.
    pub fn payload_len(&self) -> u16 {
        be16(arr(self.h, 4))
    }
    /// Next header.
    pub fn next_header(&self) -> u8 {
        self.h[6]
    }
    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.h[7]
    }
    /// Source address.
    pub fn src(&self) -> [u8; 16] {
        arr(self.h, 8)
    }
    /// Destination address.
    pub fn dst(&self) -> [u8; 16] {
        arr(self.h, 24)
    }
    /// The payload (up to the payload length).
    pub fn payload(&self) -> &'a [u8] {
        self.b
            .get(IP6_LEN..IP6_LEN + usize::from(self.payload_len()))
            .unwrap_or(&[])
    }
}

/// A writable IPv6 header.
#[derive(Debug)]
pub struct Ipv6Mut<'a> {
    h: &'a mut [u8; IP6_LEN],
}

impl<'a> Ipv6Mut<'a> {
    /// Views the first 40 bytes of `b`.
    #[inline]
    pub fn parse(b: &'a mut [u8]) -> Result<Ipv6Mut<'a>, HdrError> {
        let h = b.first_chunk_mut::<IP6_LEN>().ok_or(HdrError::Short)?;
        Ok(Ipv6Mut { h })
    }
    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.h[7]
    }
    /// Decrements the hop limit (no checksum in IPv6).
    #[inline]
    pub fn dec_hop_limit(&mut self) {
        self.h[7] = self.h[7].wrapping_sub(1);
    }
    /// Writes a whole header (flow label 0).
    pub fn write(
        &mut self,
        tclass: u8,
        payload_len: u16,
        next: u8,
        hop_limit: u8,
        src: &[u8; 16],
        dst: &[u8; 16],
    ) {
        put(self.h, 0, &[0x60 | (tclass >> 4), tclass << 4, 0, 0]);
        put(self.h, 4, &payload_len.to_be_bytes());
        put(self.h, 6, &[next, hop_limit]);
        put(self.h, 8, src);
        put(self.h, 24, dst);
    }
}

/// True for a multicast address (ff00::/8).
pub fn is_multicast(a: &[u8; 16]) -> bool {
    a[0] == 0xff
}

/// The solicited-node multicast address for `a` (RFC 4291 §2.7.1).
pub fn solicited_node(a: &[u8; 16]) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[0] = 0xff;
    m[1] = 0x02;
    m[11] = 0x01;
    m[12] = 0xff;
    m[13] = a[13];
    m[14] = a[14];
    m[15] = a[15];
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_rejects() {
        let mut b = [0u8; 48];
        let s = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let mut d = s;
        d[15] = 2;
        Ipv6Mut::parse(&mut b)
            .unwrap()
            .write(0xb8, 8, 17, 64, &s, &d);
        let ip = Ipv6::parse(&b).unwrap();
        assert_eq!(ip.traffic_class(), 0xb8);
        assert_eq!(ip.payload_len(), 8);
        assert_eq!(ip.next_header(), 17);
        assert_eq!(ip.hop_limit(), 64);
        assert_eq!(ip.src(), s);
        assert_eq!(ip.dst(), d);
        assert_eq!(ip.payload().len(), 8);
        assert_eq!(Ipv6::parse(&b[..47]).unwrap_err(), HdrError::BadLength);
        assert_eq!(Ipv6::parse(&b[..39]).unwrap_err(), HdrError::Short);
        b[0] = 0x40;
        assert_eq!(Ipv6::parse(&b).unwrap_err(), HdrError::BadVersion);
        assert_eq!(solicited_node(&s)[11..], [1, 0xff, 0, 0, 1]);
    }
}

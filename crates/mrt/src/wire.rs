//! Bounds-checked big-endian cursor over a record body, and encoding helpers.
//! Every read returns `Malformed::Short` instead of panicking.

#![deny(clippy::indexing_slicing)]

use crate::error::Malformed;
use base::{Prefix, Prefix4, Prefix6};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

#[derive(Clone, Debug)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    #[inline]
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Cursor { buf }
    }

    #[inline]
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.buf
    }

    #[inline]
    pub(crate) fn bytes(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], Malformed> {
        if n > self.buf.len() {
            return Err(Malformed::Short { field });
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Ok(a)
    }

    #[inline]
    pub(crate) fn array<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; N], Malformed> {
        let b = self.bytes(N, field)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }

    #[inline]
    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8, Malformed> {
        Ok(self.array::<1>(field)?[0])
    }

    #[inline]
    pub(crate) fn u16(&mut self, field: &'static str) -> Result<u16, Malformed> {
        Ok(u16::from_be_bytes(self.array(field)?))
    }

    #[inline]
    pub(crate) fn u32(&mut self, field: &'static str) -> Result<u32, Malformed> {
        Ok(u32::from_be_bytes(self.array(field)?))
    }

    /// A full IPv4 (4 octets) or IPv6 (16 octets) address.
    #[inline]
    pub(crate) fn ip(&mut self, v6: bool, field: &'static str) -> Result<IpAddr, Malformed> {
        if v6 {
            Ok(IpAddr::V6(Ipv6Addr::from(self.array::<16>(field)?)))
        } else {
            Ok(IpAddr::V4(Ipv4Addr::from(self.array::<4>(field)?)))
        }
    }

    /// A prefix in NLRI form: one length octet, then just enough octets
    /// (RFC 4271 §4.3, as reused by RFC 6396 §4.3.2).
    #[inline]
    pub(crate) fn nlri_prefix(&mut self, v6: bool) -> Result<Prefix, Malformed> {
        let len = self.u8("prefix length")?;
        let max = if v6 { 128 } else { 32 };
        if len > max {
            return Err(Malformed::PrefixLength { len });
        }
        let b = self.bytes(usize::from(len).div_ceil(8), "prefix")?;
        // Lengths were checked just above, so construction cannot fail.
        let p = if v6 {
            Prefix6::from_nlri_bytes(len, b).map(Prefix::V6)
        } else {
            Prefix4::from_nlri_bytes(len, b).map(Prefix::V4)
        };
        p.map_err(|_| Malformed::PrefixLength { len })
    }

    /// Fails with `TrailingBytes` when anything is left.
    #[inline]
    pub(crate) fn finish(&self) -> Result<(), Malformed> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(Malformed::TrailingBytes {
                count: u32::try_from(self.buf.len()).unwrap_or(u32::MAX),
            })
        }
    }
}

#[inline]
pub(crate) fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

#[inline]
pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// Writes `ip` as 16 octets when `v6`, else 4 (an IPv6 address that is not
/// IPv4-mapped becomes 0.0.0.0: the caller chose a family it cannot carry).
pub(crate) fn put_ip(out: &mut Vec<u8>, ip: IpAddr, v6: bool) {
    if v6 {
        let a = match ip {
            IpAddr::V6(a) => a,
            IpAddr::V4(a) => a.to_ipv6_mapped(),
        };
        out.extend_from_slice(&a.octets());
    } else {
        let a = match ip {
            IpAddr::V4(a) => a,
            IpAddr::V6(a) => a.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED),
        };
        out.extend_from_slice(&a.octets());
    }
}

/// Writes a prefix in NLRI form (length octet + minimal address octets).
pub(crate) fn put_nlri_prefix(out: &mut Vec<u8>, p: Prefix) {
    out.push(p.len());
    let n = p.nlri_octets();
    match p {
        Prefix::V4(p) => out.extend_from_slice(p.addr_bits().to_be_bytes().get(..n).unwrap_or(&[])),
        Prefix::V6(p) => out.extend_from_slice(p.addr_bits().to_be_bytes().get(..n).unwrap_or(&[])),
    }
}

/// Converts a length to the u16 of a wire length field; fails with
/// `InvalidInput` when the value does not fit (only user-built records can
/// hit this: decoded ones came from such a field).
#[inline]
pub(crate) fn len16(n: usize, field: &'static str) -> std::io::Result<u16> {
    u16::try_from(n).map_err(|_| too_long(field))
}

pub(crate) fn too_long(field: &'static str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{field} too long for its MRT length field"),
    )
}

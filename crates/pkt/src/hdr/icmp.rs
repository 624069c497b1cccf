//! ICMPv4 (RFC 792) and ICMPv6 (RFC 4443) headers: type, code, checksum
//! and the 4-byte rest-of-header word.

use super::{arr, be16, put, HdrError};

/// ICMPv4 echo reply.
pub const ICMP4_ECHO_REPLY: u8 = 0;
/// ICMPv4 destination unreachable.
pub const ICMP4_UNREACH: u8 = 3;
/// ICMPv4 echo request.
pub const ICMP4_ECHO: u8 = 8;
/// ICMPv4 time exceeded.
pub const ICMP4_TIME_EXCEEDED: u8 = 11;
/// ICMPv6 destination unreachable.
pub const ICMP6_UNREACH: u8 = 1;
/// ICMPv6 packet too big.
pub const ICMP6_TOO_BIG: u8 = 2;
/// ICMPv6 time exceeded.
pub const ICMP6_TIME_EXCEEDED: u8 = 3;
/// ICMPv6 parameter problem.
pub const ICMP6_PARAM_PROBLEM: u8 = 4;
/// ICMPv6 echo request.
pub const ICMP6_ECHO: u8 = 128;
/// ICMPv6 echo reply.
pub const ICMP6_ECHO_REPLY: u8 = 129;
/// Neighbor Solicitation (RFC 4861 §4.3).
pub const ND_NS: u8 = 135;
/// Neighbor Advertisement (RFC 4861 §4.4).
pub const ND_NA: u8 = 136;
/// ICMP header length.
pub const ICMP_LEN: usize = 8;

/// A view of an ICMP (v4 or v6) header.
#[derive(Copy, Clone, Debug)]
pub struct Icmp<'a> {
    h: &'a [u8; ICMP_LEN],
}

impl<'a> Icmp<'a> {
    /// Parses the first 8 bytes.
    #[inline]
    pub fn parse(b: &'a [u8]) -> Result<Icmp<'a>, HdrError> {
        Ok(Icmp {
            h: b.first_chunk::<ICMP_LEN>().ok_or(HdrError::Short)?,
        })
    }
    /// Type.
    pub fn ty(&self) -> u8 {
        self.h[0]
    }
    /// Code.
    pub fn code(&self) -> u8 {
        self.h[1]
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        be16(arr(self.h, 2))
    }
    /// The rest-of-header word (identifier and sequence for echo).
    pub fn rest(&self) -> [u8; 4] {
        arr(self.h, 4)
    }
}

/// A writable ICMP header.
#[derive(Debug)]
pub struct IcmpMut<'a> {
    h: &'a mut [u8; ICMP_LEN],
}

impl<'a> IcmpMut<'a> {
    /// Views the first 8 bytes.
    #[inline]
    pub fn parse(b: &'a mut [u8]) -> Result<IcmpMut<'a>, HdrError> {
        Ok(IcmpMut {
            h: b.first_chunk_mut::<ICMP_LEN>().ok_or(HdrError::Short)?,
        })
    }
    /// Sets type and code.
    pub fn set_type_code(&mut self, ty: u8, code: u8) {
        self.h[0] = ty;
        self.h[1] = code;
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, c: u16) {
        put(self.h, 2, &c.to_be_bytes());
    }
    /// Sets the rest-of-header word.
    pub fn set_rest(&mut self, r: [u8; 4]) {
        put(self.h, 4, &r);
    }
    /// Type.
    pub fn ty(&self) -> u8 {
        self.h[0]
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        be16(arr(self.h, 2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields() {
        let mut b = [0u8; 8];
        let mut m = IcmpMut::parse(&mut b).unwrap();
        m.set_type_code(ICMP4_TIME_EXCEEDED, 1);
        m.set_checksum(0xabcd);
        m.set_rest([1, 2, 3, 4]);
        let v = Icmp::parse(&b).unwrap();
        assert_eq!(
            (v.ty(), v.code(), v.checksum(), v.rest()),
            (11, 1, 0xabcd, [1, 2, 3, 4])
        );
        assert!(Icmp::parse(&b[..7]).is_err());
    }
}

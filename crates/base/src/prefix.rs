//! IP prefixes in a compact, `Copy` form.
//!
//! Address bits beyond the prefix length are kept as received: NLRI on the
//! wire may carry them, and tools such as `bgpdump` print them. Use
//! [`Prefix4::masked`] / [`Prefix6::masked`] for the canonical form.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// Why a prefix could not be built or parsed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PrefixError {
    /// The length is larger than the address width.
    BadLength,
    /// The text is not `ADDR/LEN`.
    BadSyntax,
}

impl fmt::Display for PrefixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrefixError::BadLength => f.write_str("prefix length exceeds address width"),
            PrefixError::BadSyntax => f.write_str("expected ADDRESS/LENGTH"),
        }
    }
}

impl std::error::Error for PrefixError {}

/// An IPv4 prefix: address in host byte order and a length of 0..=32.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Prefix4 {
    addr: u32,
    len: u8,
}

/// An IPv6 prefix: address and a length of 0..=128.
///
/// The address is kept as its 16 octets in network order, not as a
/// `u128`: a `u128` is 16-byte aligned on x86-64, which made this type 32
/// bytes and [`Prefix`] 48, two thirds of it padding, in every list of
/// prefixes the daemon keeps (changed prefixes, NLRI, queues). As octets
/// it is 17 bytes and [`Prefix`] 20. Order, equality, hashing and `Debug`
/// are those of the `u128` form (big-endian octets compare as the number).
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Prefix6 {
    addr: [u8; 16],
    len: u8,
}

impl std::hash::Hash for Prefix6 {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        // As the derived hash of the former (u128, u8) fields, so that
        // hash-ordered tables iterate as before.
        self.addr_bits().hash(h);
        self.len.hash(h);
    }
}

impl fmt::Debug for Prefix6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prefix6")
            .field("addr", &self.addr_bits())
            .field("len", &self.len)
            .finish()
    }
}

/// An IPv4 or IPv6 prefix.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Prefix {
    /// An IPv4 prefix.
    V4(Prefix4),
    /// An IPv6 prefix.
    V6(Prefix6),
}

/// The host-order netmask of an IPv4 prefix length (0..=32).
pub const fn mask4(len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len as u32)
    }
}

/// The host-order netmask of an IPv6 prefix length (0..=128).
pub const fn mask6(len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - len as u32)
    }
}

impl Prefix4 {
    /// A prefix of `len` bits at `addr` (host order; bits past `len` kept). Fails if `len > 32`.
    pub const fn new(addr: u32, len: u8) -> Result<Self, PrefixError> {
        if len > 32 {
            return Err(PrefixError::BadLength);
        }
        Ok(Prefix4 { addr, len })
    }
    /// As [`Prefix4::new`] from an [`Ipv4Addr`].
    pub fn from_addr(addr: Ipv4Addr, len: u8) -> Result<Self, PrefixError> {
        Self::new(u32::from(addr), len)
    }
    /// Builds a prefix from the (up to 4) leading octets carried in NLRI.
    /// Missing octets are zero; extra octets are ignored.
    pub fn from_nlri_bytes(len: u8, bytes: &[u8]) -> Result<Self, PrefixError> {
        let mut a = [0u8; 4];
        let n = bytes.len().min(4);
        a[..n].copy_from_slice(&bytes[..n]);
        Self::new(u32::from_be_bytes(a), len)
    }
    /// The address in host byte order, including any bits past the length.
    pub const fn addr_bits(self) -> u32 {
        self.addr
    }
    /// The address, including any bits past the length.
    pub fn addr(self) -> Ipv4Addr {
        Ipv4Addr::from(self.addr)
    }
    /// The prefix length in bits, 0..=32.
    pub const fn len(self) -> u8 {
        self.len
    }
    /// Never true for a valid prefix object; `len() == 0` is the default route.
    pub const fn is_empty(self) -> bool {
        false
    }
    /// The canonical form: address bits past the length cleared.
    pub const fn masked(self) -> Self {
        Prefix4 {
            addr: self.addr & mask4(self.len),
            len: self.len,
        }
    }
    /// Whether host-order address `a` lies inside this prefix.
    pub const fn contains_addr(self, a: u32) -> bool {
        (a & mask4(self.len)) == (self.addr & mask4(self.len))
    }
    /// Octets needed to carry this prefix in NLRI.
    pub const fn nlri_octets(self) -> usize {
        (self.len as usize).div_ceil(8)
    }
}

impl Prefix6 {
    /// A prefix of `len` bits at `addr` (host order; bits past `len` kept). Fails if `len > 128`.
    pub const fn new(addr: u128, len: u8) -> Result<Self, PrefixError> {
        if len > 128 {
            return Err(PrefixError::BadLength);
        }
        Ok(Prefix6 {
            addr: addr.to_be_bytes(),
            len,
        })
    }
    /// As [`Prefix6::new`] from an [`Ipv6Addr`].
    pub fn from_addr(addr: Ipv6Addr, len: u8) -> Result<Self, PrefixError> {
        Self::new(u128::from(addr), len)
    }
    /// Builds a prefix from the (up to 16) leading octets carried in NLRI.
    pub fn from_nlri_bytes(len: u8, bytes: &[u8]) -> Result<Self, PrefixError> {
        let mut a = [0u8; 16];
        let n = bytes.len().min(16);
        a[..n].copy_from_slice(&bytes[..n]);
        Self::new(u128::from_be_bytes(a), len)
    }
    /// The address in host byte order, including any bits past the length.
    pub const fn addr_bits(self) -> u128 {
        u128::from_be_bytes(self.addr)
    }
    /// The address, including any bits past the length.
    pub fn addr(self) -> Ipv6Addr {
        Ipv6Addr::from(self.addr)
    }
    /// The prefix length in bits, 0..=128.
    pub const fn len(self) -> u8 {
        self.len
    }
    /// Never true for a valid prefix object; `len() == 0` is the default route.
    pub const fn is_empty(self) -> bool {
        false
    }
    /// The canonical form: address bits past the length cleared.
    pub const fn masked(self) -> Self {
        Prefix6 {
            addr: (self.addr_bits() & mask6(self.len)).to_be_bytes(),
            len: self.len,
        }
    }
    /// Whether host-order address `a` lies inside this prefix.
    pub const fn contains_addr(self, a: u128) -> bool {
        (a & mask6(self.len)) == (self.addr_bits() & mask6(self.len))
    }
    /// Octets needed to carry this prefix in NLRI.
    pub const fn nlri_octets(self) -> usize {
        (self.len as usize).div_ceil(8)
    }
}

impl Prefix {
    /// A prefix of `len` bits at `addr`; fails if `len` exceeds the address width.
    pub fn new(addr: IpAddr, len: u8) -> Result<Self, PrefixError> {
        match addr {
            IpAddr::V4(a) => Prefix4::from_addr(a, len).map(Prefix::V4),
            IpAddr::V6(a) => Prefix6::from_addr(a, len).map(Prefix::V6),
        }
    }
    /// The address, including any bits past the length.
    pub fn addr(self) -> IpAddr {
        match self {
            Prefix::V4(p) => IpAddr::V4(p.addr()),
            Prefix::V6(p) => IpAddr::V6(p.addr()),
        }
    }
    /// The prefix length in bits.
    pub const fn len(self) -> u8 {
        match self {
            Prefix::V4(p) => p.len,
            Prefix::V6(p) => p.len,
        }
    }
    /// Never true for a valid prefix object; `len() == 0` is the default route.
    pub const fn is_empty(self) -> bool {
        false
    }
    /// [`Afi::Ipv4`](crate::Afi::Ipv4) or [`Afi::Ipv6`](crate::Afi::Ipv6).
    pub const fn afi(self) -> crate::Afi {
        match self {
            Prefix::V4(_) => crate::Afi::Ipv4,
            Prefix::V6(_) => crate::Afi::Ipv6,
        }
    }
    /// The canonical form: address bits past the length cleared.
    pub const fn masked(self) -> Self {
        match self {
            Prefix::V4(p) => Prefix::V4(p.masked()),
            Prefix::V6(p) => Prefix::V6(p.masked()),
        }
    }
    /// Octets needed to carry this prefix in NLRI.
    pub const fn nlri_octets(self) -> usize {
        (self.len() as usize).div_ceil(8)
    }
}

impl From<Prefix4> for Prefix {
    fn from(p: Prefix4) -> Self {
        Prefix::V4(p)
    }
}

impl From<Prefix6> for Prefix {
    fn from(p: Prefix6) -> Self {
        Prefix::V6(p)
    }
}

impl fmt::Display for Prefix4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr(), self.len)
    }
}

impl fmt::Display for Prefix6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr(), self.len)
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Prefix::V4(p) => p.fmt(f),
            Prefix::V6(p) => p.fmt(f),
        }
    }
}

fn split(s: &str) -> Result<(&str, u8), PrefixError> {
    let (a, l) = s.split_once('/').ok_or(PrefixError::BadSyntax)?;
    let len = l.parse::<u8>().map_err(|_| PrefixError::BadSyntax)?;
    Ok((a, len))
}

impl FromStr for Prefix4 {
    type Err = PrefixError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (a, len) = split(s)?;
        let a: Ipv4Addr = a.parse().map_err(|_| PrefixError::BadSyntax)?;
        Prefix4::from_addr(a, len)
    }
}

impl FromStr for Prefix6 {
    type Err = PrefixError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (a, len) = split(s)?;
        let a: Ipv6Addr = a.parse().map_err(|_| PrefixError::BadSyntax)?;
        Prefix6::from_addr(a, len)
    }
}

impl FromStr for Prefix {
    type Err = PrefixError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (a, len) = split(s)?;
        let a: IpAddr = a.parse().map_err(|_| PrefixError::BadSyntax)?;
        Prefix::new(a, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Octets, not a 16-byte aligned u128: a prefix is 20 bytes, not 48;
    /// order, hash and Debug as the u128 form gave them.
    #[test]
    fn prefix6_is_octets_with_the_u128_semantics() {
        use std::hash::BuildHasher;
        assert_eq!(std::mem::size_of::<Prefix6>(), 17);
        assert_eq!(std::mem::size_of::<Prefix>(), 20);
        let a: Prefix6 = "2001:db8::/32".parse().unwrap();
        let b: Prefix6 = "2001:db8:0:1::/64".parse().unwrap();
        let c: Prefix6 = "2001:db8::/48".parse().unwrap();
        assert!(a < c && c < b, "by address, then length");
        assert_eq!(a.addr_bits(), 0x2001_0db8 << 96);
        assert_eq!(
            format!("{a:?}"),
            format!("Prefix6 {{ addr: {}, len: 32 }}", 0x2001_0db8u128 << 96)
        );
        let s = std::collections::hash_map::RandomState::new();
        assert_eq!(s.hash_one(a), s.hash_one((a.addr_bits(), a.len())));
        let m = Prefix6::new(u128::MAX, 12).unwrap().masked();
        assert_eq!(m.addr_bits(), 0xfff << 116);
        assert!(m.contains_addr(0xfff0_u128 << 112));
    }

    #[test]
    fn parse_and_print() {
        let p: Prefix = "10.1.0.0/16".parse().unwrap();
        assert_eq!(p.to_string(), "10.1.0.0/16");
        assert_eq!(p.nlri_octets(), 2);
        let p: Prefix = "2001:db8::/32".parse().unwrap();
        assert_eq!(p.to_string(), "2001:db8::/32");
        assert_eq!("10.0.0.0/33".parse::<Prefix>(), Err(PrefixError::BadLength));
        assert_eq!("10.0.0.0".parse::<Prefix>(), Err(PrefixError::BadSyntax));
        assert_eq!("::/129".parse::<Prefix>(), Err(PrefixError::BadLength));
    }

    #[test]
    fn host_bits_are_kept_until_masked() {
        let p = Prefix4::from_nlri_bytes(20, &[10, 1, 255]).unwrap();
        assert_eq!(p.to_string(), "10.1.255.0/20");
        assert_eq!(p.masked().to_string(), "10.1.240.0/20");
        assert!(p.contains_addr(u32::from(Ipv4Addr::new(10, 1, 241, 9))));
        assert!(!p.contains_addr(u32::from(Ipv4Addr::new(10, 2, 0, 0))));
        let d = Prefix4::new(0, 0).unwrap();
        assert!(d.contains_addr(u32::MAX));
    }

    proptest! {
        #[test]
        fn display_parse_roundtrip4(a: u32, l in 0u8..=32) {
            let p = Prefix4::new(a, l).unwrap();
            prop_assert_eq!(p.to_string().parse::<Prefix4>().unwrap(), p);
        }
        #[test]
        fn display_parse_roundtrip6(a: u128, l in 0u8..=128) {
            let p = Prefix6::new(a, l).unwrap();
            prop_assert_eq!(p.to_string().parse::<Prefix6>().unwrap(), p);
            prop_assert!(p.masked().contains_addr(a));
        }
    }
}

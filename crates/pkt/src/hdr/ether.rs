//! Ethernet II (IEEE 802.3 with EtherType) and one optional 802.1Q tag.

use super::{arr, be16, put, HdrError};

/// EtherType IPv4.
pub const ETH_IPV4: u16 = 0x0800;
/// EtherType ARP.
pub const ETH_ARP: u16 = 0x0806;
/// EtherType IPv6.
pub const ETH_IPV6: u16 = 0x86dd;
/// EtherType 802.1Q VLAN tag.
pub const ETH_VLAN: u16 = 0x8100;
/// Ethernet header length.
pub const ETH_LEN: usize = 14;
/// Broadcast address.
pub const BROADCAST: Mac = Mac([0xff; 6]);

/// A MAC address.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Mac(pub [u8; 6]);

impl Mac {
    /// True for group (multicast/broadcast) addresses.
    pub fn is_multicast(self) -> bool {
        self.0[0] & 1 == 1
    }
    /// The IPv6 multicast MAC for an IPv6 multicast address (RFC 2464 §7).
    pub fn ipv6_multicast(addr: &[u8; 16]) -> Mac {
        Mac([0x33, 0x33, addr[12], addr[13], addr[14], addr[15]])
    }
}

impl std::fmt::Display for Mac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

impl std::str::FromStr for Mac {
    type Err = HdrError;
    /// Parses `aa:bb:cc:dd:ee:ff` (or with `-`).
    fn from_str(s: &str) -> Result<Mac, HdrError> {
        let mut m = [0u8; 6];
        let mut n = 0;
        for part in s.split([':', '-']) {
            let slot = m.get_mut(n).ok_or(HdrError::BadLength)?;
            if part.is_empty() || part.len() > 2 {
                return Err(HdrError::BadLength);
            }
            *slot = u8::from_str_radix(part, 16).map_err(|_| HdrError::Unsupported)?;
            n += 1;
        }
        if n != 6 {
            return Err(HdrError::BadLength);
        }
        Ok(Mac(m))
    }
}

/// A view of an Ethernet header.
#[derive(Copy, Clone, Debug)]
pub struct Ether<'a> {
    h: &'a [u8; ETH_LEN],
}

impl<'a> Ether<'a> {
    /// Parses the first 14 bytes.
    #[inline]
    pub fn parse(b: &'a [u8]) -> Result<Ether<'a>, HdrError> {
        let h = b.first_chunk::<ETH_LEN>().ok_or(HdrError::Short)?;
        Ok(Ether { h })
    }
    /// Destination address.
    pub fn dst(&self) -> Mac {
        Mac(arr(self.h, 0))
    }
    /// Source address.
    pub fn src(&self) -> Mac {
        Mac(arr(self.h, 6))
    }
    /// EtherType (of the outer header; see [`parse_l2`] for VLAN).
    pub fn ethertype(&self) -> u16 {
        be16(arr(self.h, 12))
    }
}

/// A writable Ethernet header.
#[derive(Debug)]
pub struct EtherMut<'a> {
    h: &'a mut [u8; ETH_LEN],
}

impl<'a> EtherMut<'a> {
    /// Views the first 14 bytes.
    #[inline]
    pub fn parse(b: &'a mut [u8]) -> Result<EtherMut<'a>, HdrError> {
        let h = b.first_chunk_mut::<ETH_LEN>().ok_or(HdrError::Short)?;
        Ok(EtherMut { h })
    }
    /// Sets the destination.
    pub fn set_dst(&mut self, m: Mac) {
        put(self.h, 0, &m.0);
    }
    /// Sets the source.
    pub fn set_src(&mut self, m: Mac) {
        put(self.h, 6, &m.0);
    }
    /// Sets the EtherType.
    pub fn set_ethertype(&mut self, t: u16) {
        put(self.h, 12, &t.to_be_bytes());
    }
    /// Sets all three fields.
    pub fn write(&mut self, dst: Mac, src: Mac, ethertype: u16) {
        self.set_dst(dst);
        self.set_src(src);
        self.set_ethertype(ethertype);
    }
}

/// The layer-2 summary of a frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct L2 {
    /// The EtherType after any VLAN tag.
    pub ethertype: u16,
    /// The VLAN ID if one 802.1Q tag is present.
    pub vlan: Option<u16>,
    /// Offset of the layer-3 header (14 or 18).
    pub l3: usize,
}

/// Parses the Ethernet header and at most one 802.1Q tag.
#[inline]
pub fn parse_l2(b: &[u8]) -> Result<L2, HdrError> {
    let e = Ether::parse(b)?;
    let t = e.ethertype();
    if t != ETH_VLAN {
        return Ok(L2 {
            ethertype: t,
            vlan: None,
            l3: ETH_LEN,
        });
    }
    let tag: &[u8; 4] = b
        .get(14..18)
        .and_then(|t| t.try_into().ok())
        .ok_or(HdrError::Short)?;
    let tci = u16::from_be_bytes([tag[0], tag[1]]);
    Ok(L2 {
        ethertype: u16::from_be_bytes([tag[2], tag[3]]),
        vlan: Some(tci & 0x0fff),
        l3: 18,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ether_and_vlan() {
        let mut f = [0u8; 18];
        f[12] = 0x81;
        f[14] = 0x20;
        f[15] = 0x05;
        f[16] = 0x86;
        f[17] = 0xdd;
        let l2 = parse_l2(&f).unwrap();
        assert_eq!(
            l2,
            L2 {
                ethertype: ETH_IPV6,
                vlan: Some(5),
                l3: 18
            }
        );
        assert_eq!(parse_l2(&f[..16]), Err(HdrError::Short));
        let mut e = EtherMut::parse(&mut f).unwrap();
        e.write(BROADCAST, Mac([1, 2, 3, 4, 5, 6]), ETH_IPV4);
        let v = Ether::parse(&f).unwrap();
        assert_eq!(v.dst(), BROADCAST);
        assert_eq!(v.src().to_string(), "01:02:03:04:05:06");
        assert_eq!(v.ethertype(), ETH_IPV4);
        assert_eq!(
            "01:02:03:04:05:06".parse::<Mac>(),
            Ok(Mac([1, 2, 3, 4, 5, 6]))
        );
        assert!("01:02:03:04:05".parse::<Mac>().is_err());
        assert!("01:02:03:04:05:06:07".parse::<Mac>().is_err());
        assert!(Ether::parse(&f[..13]).is_err());
    }
}

//! ARP for IPv4 over Ethernet (RFC 826).

use super::ether::Mac;
use super::{arr, be16, put, HdrError};

/// Length of an Ethernet/IPv4 ARP packet.
pub const ARP_LEN: usize = 28;
/// ARP request.
pub const ARP_REQUEST: u16 = 1;
/// ARP reply.
pub const ARP_REPLY: u16 = 2;

/// A view of an Ethernet/IPv4 ARP packet. Other hardware or protocol
/// types are refused as [`HdrError::Unsupported`].
#[derive(Copy, Clone, Debug)]
pub struct Arp<'a> {
    h: &'a [u8; ARP_LEN],
}

impl<'a> Arp<'a> {
    /// Parses and checks htype 1, ptype 0x0800, hlen 6, plen 4.
    pub fn parse(b: &'a [u8]) -> Result<Arp<'a>, HdrError> {
        let h = b.first_chunk::<ARP_LEN>().ok_or(HdrError::Short)?;
        if be16(arr(h, 0)) != 1 || be16(arr(h, 2)) != 0x0800 || h[4] != 6 || h[5] != 4 {
            return Err(HdrError::Unsupported);
        }
        Ok(Arp { h })
    }
    /// Operation (1 request, 2 reply).
    pub fn oper(&self) -> u16 {
        be16(arr(self.h, 6))
    }
    /// Sender hardware address.
    pub fn sha(&self) -> Mac {
        Mac(arr(self.h, 8))
    }
    /// Sender protocol address.
    pub fn spa(&self) -> [u8; 4] {
        arr(self.h, 14)
    }
    /// Target hardware address.
    pub fn tha(&self) -> Mac {
        Mac(arr(self.h, 18))
    }
    /// Target protocol address.
    pub fn tpa(&self) -> [u8; 4] {
        arr(self.h, 24)
    }
}

/// Writes a complete Ethernet/IPv4 ARP packet into `b` (at least 28 bytes).
pub fn write(
    b: &mut [u8],
    oper: u16,
    sha: Mac,
    spa: [u8; 4],
    tha: Mac,
    tpa: [u8; 4],
) -> Result<(), HdrError> {
    let h = b.first_chunk_mut::<ARP_LEN>().ok_or(HdrError::Short)?;
    put(h, 0, &[0, 1, 0x08, 0x00, 6, 4]);
    put(h, 6, &oper.to_be_bytes());
    put(h, 8, &sha.0);
    put(h, 14, &spa);
    put(h, 18, &tha.0);
    put(h, 24, &tpa);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let mut b = [0u8; 28];
        write(
            &mut b,
            ARP_REQUEST,
            Mac([1; 6]),
            [10, 0, 0, 1],
            Mac([0; 6]),
            [10, 0, 0, 2],
        )
        .unwrap();
        let a = Arp::parse(&b).unwrap();
        assert_eq!(a.oper(), ARP_REQUEST);
        assert_eq!(a.sha(), Mac([1; 6]));
        assert_eq!(a.spa(), [10, 0, 0, 1]);
        assert_eq!(a.tpa(), [10, 0, 0, 2]);
        assert_eq!(a.tha(), Mac([0; 6]));
        b[5] = 16;
        assert_eq!(Arp::parse(&b).unwrap_err(), HdrError::Unsupported);
        assert_eq!(Arp::parse(&b[..27]).unwrap_err(), HdrError::Short);
    }
}

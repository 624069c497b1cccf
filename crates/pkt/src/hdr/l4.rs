//! UDP (RFC 768) and TCP (RFC 9293) headers.

use super::{arr, be16, put, HdrError};

/// UDP header length.
pub const UDP_LEN: usize = 8;
/// TCP minimum header length.
pub const TCP_MIN: usize = 20;

/// A view of a UDP header. `parse` checks the length field fits.
#[derive(Copy, Clone, Debug)]
pub struct Udp<'a> {
    h: &'a [u8; UDP_LEN],
}

impl<'a> Udp<'a> {
    /// Parses a UDP header; the length field must be in `[8, bytes]`.
    #[inline]
    pub fn parse(b: &'a [u8]) -> Result<Udp<'a>, HdrError> {
        let h = b.first_chunk::<UDP_LEN>().ok_or(HdrError::Short)?;
        let l = usize::from(be16(arr(h, 4)));
        if l < UDP_LEN || l > b.len() {
            return Err(HdrError::BadLength);
        }
        Ok(Udp { h })
    }
    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(arr(self.h, 0))
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(arr(self.h, 2))
    }
    /// Length (header and data).
    pub fn length(&self) -> u16 {
        be16(arr(self.h, 4))
    }
    /// Checksum field (0: none, IPv4 only).
    pub fn checksum(&self) -> u16 {
        be16(arr(self.h, 6))
    }
}

/// A writable UDP header.
#[derive(Debug)]
pub struct UdpMut<'a> {
    h: &'a mut [u8; UDP_LEN],
}

impl<'a> UdpMut<'a> {
    /// Views the first 8 bytes.
    pub fn parse(b: &'a mut [u8]) -> Result<UdpMut<'a>, HdrError> {
        Ok(UdpMut {
            h: b.first_chunk_mut::<UDP_LEN>().ok_or(HdrError::Short)?,
        })
    }
    /// Writes ports and length; checksum 0.
    pub fn write(&mut self, src: u16, dst: u16, len: u16) {
        put(self.h, 0, &src.to_be_bytes());
        put(self.h, 2, &dst.to_be_bytes());
        put(self.h, 4, &len.to_be_bytes());
        put(self.h, 6, &[0, 0]);
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, c: u16) {
        put(self.h, 6, &c.to_be_bytes());
    }
}

/// A view of a TCP header; `parse` checks the data offset.
#[derive(Copy, Clone, Debug)]
pub struct Tcp<'a> {
    h: &'a [u8; TCP_MIN],
}

impl<'a> Tcp<'a> {
    /// Parses a TCP header; data offset must be in `[5, bytes/4]`.
    #[inline]
    pub fn parse(b: &'a [u8]) -> Result<Tcp<'a>, HdrError> {
        let h = b.first_chunk::<TCP_MIN>().ok_or(HdrError::Short)?;
        let off = usize::from(h[12] >> 4) * 4;
        if off < TCP_MIN || off > b.len() {
            return Err(HdrError::BadHeaderLen);
        }
        Ok(Tcp { h })
    }
    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(arr(self.h, 0))
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(arr(self.h, 2))
    }
    /// Sequence number.
    pub fn seq(&self) -> u32 {
        u32::from_be_bytes(arr(self.h, 4))
    }
    /// Acknowledgment number.
    pub fn ack(&self) -> u32 {
        u32::from_be_bytes(arr(self.h, 8))
    }
    /// Header length in bytes.
    pub fn header_len(&self) -> usize {
        usize::from(self.h[12] >> 4) * 4
    }
    /// Flags (CWR..FIN).
    pub fn flags(&self) -> u8 {
        self.h[13]
    }
    /// Window.
    pub fn window(&self) -> u16 {
        be16(arr(self.h, 14))
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        be16(arr(self.h, 16))
    }
}

/// A writable TCP header.
#[derive(Debug)]
pub struct TcpMut<'a> {
    h: &'a mut [u8; TCP_MIN],
}

impl<'a> TcpMut<'a> {
    /// Views the first 20 bytes.
    pub fn parse(b: &'a mut [u8]) -> Result<TcpMut<'a>, HdrError> {
        Ok(TcpMut {
            h: b.first_chunk_mut::<TCP_MIN>().ok_or(HdrError::Short)?,
        })
    }
    /// Writes a 20-byte header, checksum 0.
    pub fn write(&mut self, src: u16, dst: u16, seq: u32, ack: u32, flags: u8, window: u16) {
        put(self.h, 0, &src.to_be_bytes());
        put(self.h, 2, &dst.to_be_bytes());
        put(self.h, 4, &seq.to_be_bytes());
        put(self.h, 8, &ack.to_be_bytes());
        put(self.h, 12, &[0x50, flags]);
        put(self.h, 14, &window.to_be_bytes());
        put(self.h, 16, &[0, 0, 0, 0]);
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, c: u16) {
        put(self.h, 16, &c.to_be_bytes());
    }
}

/// Source and destination port of a UDP or TCP payload (first 4 bytes,
/// as Click's classifier reads them), or `None` if too short.
#[inline]
pub fn ports(l4: &[u8]) -> Option<(u16, u16)> {
    let p = l4.first_chunk::<4>()?;
    Some((be16([p[0], p[1]]), be16([p[2], p[3]])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_tcp() {
        let mut b = [0u8; 20];
        UdpMut::parse(&mut b).unwrap().write(1000, 53, 12);
        let u = Udp::parse(&b).unwrap();
        assert_eq!(
            (u.src_port(), u.dst_port(), u.length(), u.checksum()),
            (1000, 53, 12, 0)
        );
        assert_eq!(Udp::parse(&b[..11]).unwrap_err(), HdrError::BadLength);
        TcpMut::parse(&mut b).unwrap().write(1, 80, 5, 6, 0x12, 100);
        let t = Tcp::parse(&b).unwrap();
        assert_eq!(
            (
                t.src_port(),
                t.dst_port(),
                t.seq(),
                t.ack(),
                t.flags(),
                t.window()
            ),
            (1, 80, 5, 6, 0x12, 100)
        );
        assert_eq!(t.header_len(), 20);
        b[12] = 0x60;
        assert_eq!(Tcp::parse(&b).unwrap_err(), HdrError::BadHeaderLen);
        assert_eq!(ports(&b), Some((1, 80)));
        assert_eq!(ports(&b[..3]), None);
    }
}

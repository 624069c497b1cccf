//! Byte views of the outer IPv4 header and the ESP header.
//!
//! ```text
//!  RFC 4303 §2, the ESP header (what this module reads and writes):
//!   0                   1                   2                   3
//!   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//!  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!  |               Security Parameters Index (SPI)                 |
//!  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!  |                      Sequence Number                          |
//!  +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!  |          IV (8, RFC 4106 §3.1), then the encrypted payload    |
//! ```
//!
//! Every function checks lengths once and then reads fixed arrays: no
//! panics on any input.

use crate::OpenError;

/// Outer IPv4 header length as written (no options).
pub const IP4_LEN: usize = 20;
/// ESP header length: SPI and sequence number.
pub const ESP_HDR: usize = 8;
/// Explicit IV length of AES-GCM ESP (RFC 4106 §3.1).
pub const IV_LEN: usize = 8;
/// IP protocol number of ESP.
pub const PROTO_ESP: u8 = 50;

/// The ESP header's two fields.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EspHeader {
    /// Security Parameters Index.
    pub spi: u32,
    /// Sequence number (the low 32 bits; no ESN).
    pub seq: u32,
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(u32::from_be_bytes(s))
}

/// Reads the ESP header at the start of `esp` (the bytes after the outer
/// IP header). `TooShort` when fewer than 8 bytes.
pub fn esp_header(esp: &[u8]) -> Result<EspHeader, OpenError> {
    match (be32(esp, 0), be32(esp, 4)) {
        (Some(spi), Some(seq)) => Ok(EspHeader { spi, seq }),
        _ => Err(OpenError::TooShort),
    }
}

/// The outer IPv4 header of an ESP packet, as the decapsulator needs it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Outer4 {
    /// Header length (IHL × 4).
    pub hdr_len: usize,
    /// Total length from the header (at most the bytes given).
    pub total_len: usize,
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Type of service (DSCP and ECN).
    pub tos: u8,
}

/// Parses the outer IPv4 header at the start of `ip`: version 4, IHL at
/// least 5, total length within the bytes, protocol 50, not a fragment
/// (outer fragments would need reassembly first, RFC 4303 §3.4.1, which
/// this dataplane does not do: `Malformed`).
pub fn outer4(ip: &[u8]) -> Result<Outer4, OpenError> {
    let h: &[u8; IP4_LEN] = ip
        .get(..IP4_LEN)
        .and_then(|s| s.try_into().ok())
        .ok_or(OpenError::TooShort)?;
    if h[0] >> 4 != 4 || h[0] & 0xf < 5 || h[9] != PROTO_ESP {
        return Err(OpenError::Malformed);
    }
    let hdr_len = usize::from(h[0] & 0xf) * 4;
    let total_len = usize::from(u16::from_be_bytes([h[2], h[3]]));
    if total_len < hdr_len || total_len > ip.len() {
        return Err(OpenError::TooShort);
    }
    // More-fragments set or a fragment offset: a fragment.
    if u16::from_be_bytes([h[6], h[7]]) & 0x3fff != 0 {
        return Err(OpenError::Malformed);
    }
    Ok(Outer4 {
        hdr_len,
        total_len,
        src: [h[12], h[13], h[14], h[15]],
        dst: [h[16], h[17], h[18], h[19]],
        tos: h[1],
    })
}

/// Writes an outer IPv4 header (no options, TTL 64, protocol ESP, DF
/// clear) with its checksum into `h`.
pub fn write_outer4(
    h: &mut [u8; IP4_LEN],
    total_len: u16,
    tos: u8,
    id: u16,
    src: [u8; 4],
    dst: [u8; 4],
) {
    let l = total_len.to_be_bytes();
    let i = id.to_be_bytes();
    *h = [
        0x45, tos, l[0], l[1], i[0], i[1], 0, 0, 64, PROTO_ESP, 0, 0, src[0], src[1], src[2],
        src[3], dst[0], dst[1], dst[2], dst[3],
    ];
    let c = checksum(h).to_be_bytes();
    h[10] = c[0];
    h[11] = c[1];
}

/// RFC 1071 checksum of a header (even length).
fn checksum(h: &[u8]) -> u16 {
    let mut acc: u32 = 0;
    for w in h.chunks_exact(2) {
        acc += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outer_header_round_trip_and_checksum() {
        let mut h = [0u8; IP4_LEN];
        write_outer4(&mut h, 100, 0x28, 7, [198, 18, 2, 1], [198, 18, 2, 2]);
        assert_eq!(checksum(&h), 0, "a correct header sums to zero");
        let mut p = h.to_vec();
        p.resize(100, 0);
        let o = outer4(&p).unwrap();
        assert_eq!((o.hdr_len, o.total_len, o.tos), (20, 100, 0x28));
        assert_eq!((o.src, o.dst), ([198, 18, 2, 1], [198, 18, 2, 2]));
        // Total length beyond the bytes, a fragment, not ESP, short.
        assert_eq!(outer4(&p[..99]), Err(OpenError::TooShort));
        let mut f = p.clone();
        f[6] = 0x20;
        assert_eq!(outer4(&f), Err(OpenError::Malformed));
        f = p.clone();
        f[9] = 17;
        assert_eq!(outer4(&f), Err(OpenError::Malformed));
        assert_eq!(outer4(&p[..10]), Err(OpenError::TooShort));
        assert_eq!(
            esp_header(&[0, 0, 1, 0, 0, 0, 0, 9]).unwrap(),
            EspHeader { spi: 256, seq: 9 }
        );
        assert_eq!(esp_header(&[0; 7]), Err(OpenError::TooShort));
    }
}

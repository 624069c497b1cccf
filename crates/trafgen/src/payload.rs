//! The generator's frames: Ethernet + IPv4 + UDP, and an 18-byte payload
//! {magic, flow id, sequence number, send timestamp} right after the UDP
//! header, so a 64-byte frame (60 bytes without the FCS) carries it.
//!
//! ```text
//! offset 42: magic   u16  0x5447 ("TG")
//!        44: flow    u32  (sender id << 16) | flow index
//!        48: seq     u32  per flow, from 0
//!        52: ts_ns   u64  CLOCK_MONOTONIC at send, ns
//! ```
//!
//! All fields big-endian. The IPv4 header has no options when we build
//! it; the decoder accepts options and one 802.1Q tag. The UDP checksum is
//! 0 (none, allowed over IPv4), so a frame is a per-flow template whose
//! IPv4 checksum never changes: sending only rewrites seq and ts.

use std::net::Ipv4Addr;

/// The payload's first two bytes.
pub const MAGIC: u16 = 0x5447;
/// Payload length.
pub const PAYLOAD_LEN: usize = 18;
/// Ethernet + IPv4 (no options) + UDP.
pub const HDR_LEN: usize = 14 + 20 + 8;
/// Where the payload starts in a frame we build.
pub const PAYLOAD_OFF: usize = HDR_LEN;
/// Smallest frame size (with FCS) we build: 64 B.
pub const MIN_SIZE: usize = 64;
/// Largest frame size (with FCS): 1518 B.
pub const MAX_SIZE: usize = 1518;
/// The UDP destination port of generator traffic.
pub const DST_PORT: u16 = 5001;

/// What the payload carries.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Payload {
    pub flow: u32,
    pub seq: u32,
    pub ts_ns: u64,
}

impl Payload {
    /// The 18 bytes.
    pub fn encode(&self) -> [u8; PAYLOAD_LEN] {
        let mut b = [0u8; PAYLOAD_LEN];
        b[0..2].copy_from_slice(&MAGIC.to_be_bytes());
        b[2..6].copy_from_slice(&self.flow.to_be_bytes());
        b[6..10].copy_from_slice(&self.seq.to_be_bytes());
        b[10..18].copy_from_slice(&self.ts_ns.to_be_bytes());
        b
    }

    /// Decodes the first 18 bytes of `b` (a UDP payload).
    pub fn decode(b: &[u8]) -> Result<Payload, ParseError> {
        let b = b.get(..PAYLOAD_LEN).ok_or(ParseError::Short)?;
        if u16::from_be_bytes([b[0], b[1]]) != MAGIC {
            return Err(ParseError::NotOurs);
        }
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&b[10..18]);
        Ok(Payload {
            flow: u32_at(2),
            seq: u32_at(6),
            ts_ns: u64::from_be_bytes(ts),
        })
    }
}

/// Why a frame is not a generator frame.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than its headers say, or than the payload.
    Short,
    /// Not IPv4/UDP to [`DST_PORT`] with our magic (ARP, BGP, ICMP...).
    NotOurs,
    /// Ours, but the IPv4 header checksum is wrong (a router bug).
    BadChecksum,
}

/// The 5-tuple and addresses of one flow.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub sport: u16,
    pub dport: u16,
}

/// A frame of `size` bytes on the wire (with the 4-byte FCS, which the
/// NIC adds: the returned frame is `size - 4` long) for `flow`, payload
/// zeroed. `size` is clamped to [`MIN_SIZE`]..=[`MAX_SIZE`].
pub fn template(f: &FlowSpec, size: usize) -> Vec<u8> {
    let len = size.clamp(MIN_SIZE, MAX_SIZE) - 4;
    let mut b = vec![0u8; len];
    b[0..6].copy_from_slice(&f.dst_mac);
    b[6..12].copy_from_slice(&f.src_mac);
    b[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip_len = (len - 14) as u16;
    let ip = &mut b[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[6] = 0x40; // DF
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&f.src.octets());
    ip[16..20].copy_from_slice(&f.dst.octets());
    let c = pkt::checksum::checksum(ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let udp = &mut b[34..42];
    udp[0..2].copy_from_slice(&f.sport.to_be_bytes());
    udp[2..4].copy_from_slice(&f.dport.to_be_bytes());
    udp[4..6].copy_from_slice(&(ip_len - 20).to_be_bytes());
    b
}

/// Writes `p` into a frame built by [`template`].
pub fn stamp(frame: &mut [u8], p: &Payload) {
    if let Some(d) = frame.get_mut(PAYLOAD_OFF..PAYLOAD_OFF + PAYLOAD_LEN) {
        d.copy_from_slice(&p.encode());
    }
}

/// The payload of a received Ethernet frame, if it is generator traffic:
/// IPv4 (after at most one 802.1Q tag), header checksum correct, UDP to
/// [`DST_PORT`], the magic. Never panics.
pub fn parse(frame: &[u8]) -> Result<Payload, ParseError> {
    let et = |o: usize| -> Result<u16, ParseError> {
        let b = frame.get(o..o + 2).ok_or(ParseError::Short)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    };
    let mut off = 12;
    let mut ty = et(off)?;
    if ty == 0x8100 {
        off += 4;
        ty = et(off)?;
    }
    if ty != 0x0800 {
        return Err(ParseError::NotOurs);
    }
    let ip = frame.get(off + 2..).ok_or(ParseError::Short)?;
    let first = *ip.first().ok_or(ParseError::Short)?;
    if first >> 4 != 4 {
        return Err(ParseError::NotOurs);
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < 20 {
        return Err(ParseError::NotOurs);
    }
    let hdr = ip.get(..ihl).ok_or(ParseError::Short)?;
    let total = usize::from(u16::from_be_bytes([hdr[2], hdr[3]]));
    // Fragments other than the first carry no UDP header.
    let frag = u16::from_be_bytes([hdr[6], hdr[7]]) & 0x1fff;
    if hdr[9] != 17 || frag != 0 {
        return Err(ParseError::NotOurs);
    }
    if total < ihl + 8 || total > ip.len() {
        return Err(ParseError::Short);
    }
    let udp = &ip[ihl..total];
    if u16::from_be_bytes([udp[2], udp[3]]) != DST_PORT {
        return Err(ParseError::NotOurs);
    }
    let p = Payload::decode(&udp[8..])?;
    if pkt::checksum::checksum(hdr) != 0 {
        return Err(ParseError::BadChecksum);
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn spec() -> FlowSpec {
        FlowSpec {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src: Ipv4Addr::new(198, 18, 1, 2),
            dst: Ipv4Addr::new(198, 18, 2, 2),
            sport: 1234,
            dport: DST_PORT,
        }
    }

    #[test]
    fn a_64_byte_frame_carries_the_payload() {
        let mut f = template(&spec(), 64);
        assert_eq!(f.len(), 60);
        let p = Payload {
            flow: 0x0001_0002,
            seq: 7,
            ts_ns: 123_456_789,
        };
        stamp(&mut f, &p);
        assert_eq!(parse(&f), Ok(p));
        assert_eq!(f.len(), HDR_LEN + PAYLOAD_LEN);
    }

    #[test]
    fn sizes_are_clamped_and_padded() {
        assert_eq!(template(&spec(), 10).len(), 60);
        assert_eq!(template(&spec(), 1518).len(), 1514);
        assert_eq!(template(&spec(), 9000).len(), 1514);
        let mut f = template(&spec(), 512);
        let p = Payload {
            flow: 1,
            seq: 2,
            ts_ns: 3,
        };
        stamp(&mut f, &p);
        assert_eq!(parse(&f), Ok(p));
    }

    #[test]
    fn a_router_that_forgets_the_checksum_is_caught() {
        let mut f = template(&spec(), 64);
        stamp(
            &mut f,
            &Payload {
                flow: 1,
                seq: 1,
                ts_ns: 1,
            },
        );
        f[14 + 8] -= 1; // TTL decremented, checksum not updated
        assert_eq!(parse(&f), Err(ParseError::BadChecksum));
    }

    #[test]
    fn other_traffic_is_not_ours() {
        let mut f = template(&spec(), 64);
        assert_eq!(parse(&f), Err(ParseError::NotOurs), "no magic yet");
        stamp(
            &mut f,
            &Payload {
                flow: 1,
                seq: 1,
                ts_ns: 1,
            },
        );
        let mut arp = f.clone();
        arp[12] = 0x08;
        arp[13] = 0x06;
        assert_eq!(parse(&arp), Err(ParseError::NotOurs));
        let mut port = f.clone();
        port[36] = 0;
        assert_eq!(parse(&port), Err(ParseError::NotOurs));
        assert_eq!(parse(&f[..50]), Err(ParseError::Short));
        assert_eq!(parse(&[]), Err(ParseError::Short));
    }

    #[test]
    fn one_vlan_tag_is_skipped() {
        let mut f = template(&spec(), 64);
        let p = Payload {
            flow: 9,
            seq: 8,
            ts_ns: 7,
        };
        stamp(&mut f, &p);
        let mut v = f[..12].to_vec();
        v.extend_from_slice(&[0x81, 0x00, 0x00, 0x05]);
        v.extend_from_slice(&f[12..]);
        assert_eq!(parse(&v), Ok(p));
    }

    proptest! {
        #[test]
        fn payload_round_trips(flow: u32, seq: u32, ts_ns: u64, size in 64usize..1600) {
            let p = Payload { flow, seq, ts_ns };
            prop_assert_eq!(Payload::decode(&p.encode()), Ok(p));
            let mut f = template(&spec(), size);
            stamp(&mut f, &p);
            prop_assert_eq!(parse(&f), Ok(p));
        }

        #[test]
        fn parse_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse(&b);
        }

        #[test]
        fn every_truncation_of_a_frame_is_rejected(cut in 0usize..60) {
            let mut f = template(&spec(), 64);
            stamp(&mut f, &Payload { flow: 1, seq: 2, ts_ns: 3 });
            prop_assert!(parse(&f[..cut]).is_err());
        }
    }
}

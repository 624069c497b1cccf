//! ARP for Ethernet/IPv4 (RFC 826): parse a packet, build a request or a
//! reply. Frames are padded to the Ethernet minimum of 60 bytes (without
//! FCS).

use std::net::Ipv4Addr;

pub const REQUEST: u16 = 1;
pub const REPLY: u16 = 2;
/// Ethernet header + 28-byte ARP body, padded to 60.
pub const FRAME_LEN: usize = 60;

/// The fields of an Ethernet/IPv4 ARP packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Arp {
    pub op: u16,
    pub sha: [u8; 6],
    pub spa: Ipv4Addr,
    pub tha: [u8; 6],
    pub tpa: Ipv4Addr,
}

fn mac(b: &[u8]) -> [u8; 6] {
    let mut m = [0u8; 6];
    if let Some(s) = b.get(..6) {
        m.copy_from_slice(s);
    }
    m
}

/// Parses `frame` (Ethernet header included); `None` unless it is an
/// Ethernet/IPv4 ARP request or reply.
pub fn parse(frame: &[u8]) -> Option<Arp> {
    let a = frame.get(14..42)?;
    // hardware type 1 (Ethernet), protocol 0x0800, lengths 6 and 4.
    if a[0..6] != [0, 1, 8, 0, 6, 4] {
        return None;
    }
    let op = u16::from_be_bytes([a[6], a[7]]);
    if op != REQUEST && op != REPLY {
        return None;
    }
    Some(Arp {
        op,
        sha: mac(&a[8..14]),
        spa: Ipv4Addr::new(a[14], a[15], a[16], a[17]),
        tha: mac(&a[18..24]),
        tpa: Ipv4Addr::new(a[24], a[25], a[26], a[27]),
    })
}

fn build(dst: [u8; 6], src: [u8; 6], a: &Arp) -> [u8; FRAME_LEN] {
    let mut f = [0u8; FRAME_LEN];
    f[0..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    f[14..20].copy_from_slice(&[0, 1, 8, 0, 6, 4]);
    f[20..22].copy_from_slice(&a.op.to_be_bytes());
    f[22..28].copy_from_slice(&a.sha);
    f[28..32].copy_from_slice(&a.spa.octets());
    f[32..38].copy_from_slice(&a.tha);
    f[38..42].copy_from_slice(&a.tpa.octets());
    f
}

/// A broadcast request from `mac`/`src` for `target`.
pub fn request(mac: [u8; 6], src: Ipv4Addr, target: Ipv4Addr) -> [u8; FRAME_LEN] {
    build(
        [0xff; 6],
        mac,
        &Arp {
            op: REQUEST,
            sha: mac,
            spa: src,
            tha: [0; 6],
            tpa: target,
        },
    )
}

/// The reply to request `q` saying that `q.tpa` is at `mac`.
pub fn reply(q: &Arp, mac: [u8; 6]) -> [u8; FRAME_LEN] {
    build(
        q.sha,
        mac,
        &Arp {
            op: REPLY,
            sha: mac,
            spa: q.tpa,
            tha: q.sha,
            tpa: q.spa,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_reply_round_trip() {
        let me = [2, 0, 0, 0, 1, 1];
        let q = request(me, Ipv4Addr::new(10, 2, 0, 1), Ipv4Addr::new(10, 2, 0, 2));
        let p = parse(&q).expect("parses");
        assert_eq!(
            (p.op, p.sha, p.tpa),
            (REQUEST, me, Ipv4Addr::new(10, 2, 0, 2))
        );
        assert_eq!(&q[0..6], &[0xff; 6]);
        let them = [2, 0, 0, 0, 0xb, 0];
        let r = reply(&p, them);
        let a = parse(&r).expect("parses");
        assert_eq!(
            a,
            Arp {
                op: REPLY,
                sha: them,
                spa: Ipv4Addr::new(10, 2, 0, 2),
                tha: me,
                tpa: Ipv4Addr::new(10, 2, 0, 1)
            }
        );
        assert_eq!(&r[0..6], &me, "unicast back to the asker");
        assert_eq!(parse(&q[..41]), None, "truncated");
        let mut bad = q;
        bad[21] = 9;
        assert_eq!(parse(&bad), None, "unknown opcode");
    }
}

//! The header walk shared by `tests/never_panics.rs` (proptest) and
//! `fuzz/fuzz_targets/pkt_headers.rs` (libFuzzer, which includes this file
//! by path): every decoder in `pkt::hdr` on the same bytes, with the bounds
//! each one promises checked by assertions. A failed assertion is a bug in
//! a decoder, never an expected outcome.
#![allow(dead_code)]

use pkt::build;
use pkt::checksum;
use pkt::hdr::arp::{Arp, ARP_LEN};
use pkt::hdr::ether::{parse_l2, Ether, EtherMut, ETH_ARP, ETH_IPV4, ETH_IPV6, ETH_LEN, ETH_VLAN};
use pkt::hdr::icmp::{Icmp, IcmpMut, ICMP_LEN};
use pkt::hdr::ip4::{Ipv4, Ipv4Mut, IP4_MIN, PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP};
use pkt::hdr::ip6::{Ipv6, Ipv6Mut, IP6_LEN};
use pkt::hdr::l4::{ports, Tcp, TcpMut, Udp, UdpMut, TCP_MIN, UDP_LEN};
use pkt::{HdrError, Mac};

/// How far a walk got: the decoders that accepted their part.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Walk {
    pub l2: bool,
    pub l3: bool,
    pub l4: bool,
}

pub fn be16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}

/// Runs every read-only decoder on `b` as a layer-4 header and checks the
/// bounds each promises. Returns whether the one for `proto` accepted.
fn l4(b: &[u8], proto: u8) -> bool {
    let udp = Udp::parse(b);
    match udp {
        Ok(u) => {
            let l = usize::from(u.length());
            assert!(
                (UDP_LEN..=b.len()).contains(&l),
                "udp length {l} of {}",
                b.len()
            );
            assert_eq!((u.src_port(), u.dst_port()), (be16(b, 0), be16(b, 2)));
            assert_eq!(u.checksum(), be16(b, 6));
        }
        Err(e) => assert!(
            b.len() < UDP_LEN && e == HdrError::Short || e == HdrError::BadLength,
            "{e:?} for {} bytes",
            b.len()
        ),
    }
    let tcp = Tcp::parse(b);
    match tcp {
        Ok(t) => {
            let hl = t.header_len();
            assert!(
                (TCP_MIN..=b.len()).contains(&hl),
                "tcp header {hl} of {}",
                b.len()
            );
            assert_eq!(t.seq(), u32::from_be_bytes([b[4], b[5], b[6], b[7]]));
            let _ = (t.ack(), t.flags(), t.window(), t.checksum());
        }
        Err(e) => assert!(
            b.len() < TCP_MIN && e == HdrError::Short || e == HdrError::BadHeaderLen,
            "{e:?} for {} bytes",
            b.len()
        ),
    }
    let icmp = Icmp::parse(b);
    assert_eq!(icmp.is_ok(), b.len() >= ICMP_LEN);
    if let Ok(i) = icmp {
        assert_eq!((i.ty(), i.code()), (b[0], b[1]));
        assert_eq!(i.checksum(), be16(b, 2));
        assert_eq!(i.rest(), [b[4], b[5], b[6], b[7]]);
    }
    assert_eq!(ports(b).is_some(), b.len() >= 4);
    match proto {
        PROTO_UDP => udp.is_ok(),
        PROTO_TCP => tcp.is_ok(),
        PROTO_ICMP | PROTO_ICMPV6 => icmp.is_ok(),
        _ => false,
    }
}

/// IPv4 at the start of `b`: bounds, then the layer-4 payload.
fn ip4(b: &[u8], w: &mut Walk) {
    match Ipv4::parse(b) {
        Ok(ip) => {
            let hl = ip.header_len();
            let tl = usize::from(ip.total_len());
            assert!(
                IP4_MIN <= hl && hl <= tl && tl <= b.len(),
                "hl {hl} tl {tl} len {}",
                b.len()
            );
            assert_eq!(ip.header().len(), hl);
            assert_eq!(ip.payload().len(), tl - hl);
            assert_eq!(ip.payload(), &b[hl..tl]);
            let _ = (
                ip.tos(),
                ip.id(),
                ip.is_later_fragment(),
                ip.ttl(),
                ip.checksum(),
            );
            assert_eq!(ip.src(), [b[12], b[13], b[14], b[15]]);
            assert_eq!(ip.dst(), [b[16], b[17], b[18], b[19]]);
            let ok = ip.checksum_ok();
            assert_eq!(ok, checksum::checksum(&b[..hl]) == 0);
            w.l3 = true;
            w.l4 = l4(ip.payload(), ip.proto());
        }
        Err(e) => {
            if b.len() < IP4_MIN {
                assert_eq!(e, HdrError::Short);
            } else if b[0] >> 4 != 4 {
                assert_eq!(e, HdrError::BadVersion);
            }
        }
    }
}

/// IPv6 at the start of `b`.
fn ip6(b: &[u8], w: &mut Walk) {
    match Ipv6::parse(b) {
        Ok(ip) => {
            let pl = usize::from(ip.payload_len());
            assert!(IP6_LEN + pl <= b.len(), "payload {pl} of {}", b.len());
            assert_eq!(ip.payload(), &b[IP6_LEN..IP6_LEN + pl]);
            assert_eq!(&ip.header()[..], &b[..IP6_LEN]);
            let _ = (ip.traffic_class(), ip.hop_limit(), ip.src(), ip.dst());
            w.l3 = true;
            w.l4 = l4(ip.payload(), ip.next_header());
        }
        Err(e) => {
            if b.len() < IP6_LEN {
                assert_eq!(e, HdrError::Short);
            } else if b[0] >> 4 != 6 {
                assert_eq!(e, HdrError::BadVersion);
            } else {
                assert_eq!(e, HdrError::BadLength);
            }
        }
    }
}

/// A whole frame, as the forwarding path reads it: Ethernet (+ VLAN), then
/// ARP / IPv4 / IPv6, then UDP / TCP / ICMP. Every decoder also runs on
/// the raw bytes, whatever the EtherType says.
pub fn walk(f: &[u8]) -> Walk {
    let mut w = Walk::default();
    assert_eq!(Ether::parse(f).is_ok(), f.len() >= ETH_LEN);
    if let Ok(e) = Ether::parse(f) {
        assert_eq!(e.dst().0[..], f[..6]);
        assert_eq!(e.src().0[..], f[6..12]);
        assert_eq!(e.ethertype(), be16(f, 12));
    }
    match parse_l2(f) {
        Ok(l2) => {
            assert!(l2.l3 <= f.len(), "l3 offset {} of {}", l2.l3, f.len());
            assert_eq!(l2.vlan.is_some(), l2.l3 == 18);
            assert!(l2.vlan.is_none_or(|v| v <= 0x0fff));
            w.l2 = true;
            let l3 = &f[l2.l3..];
            match l2.ethertype {
                ETH_IPV4 => ip4(l3, &mut w),
                ETH_IPV6 => ip6(l3, &mut w),
                ETH_ARP => {
                    if let Ok(a) = Arp::parse(l3) {
                        assert!(l3.len() >= ARP_LEN);
                        let _ = (a.oper(), a.sha(), a.spa(), a.tha(), a.tpa());
                        w.l3 = true;
                    }
                }
                _ => {}
            }
        }
        Err(e) => {
            assert_eq!(e, HdrError::Short);
            assert!(f.len() < ETH_LEN || (be16(f, 12) == ETH_VLAN && f.len() < 18));
        }
    }
    // The raw bytes through every decoder, at every offset a header could
    // start at (so short and odd tails are covered too).
    for off in [0, ETH_LEN, 18] {
        let b = f.get(off..).unwrap_or(&[]);
        let mut scratch = Walk::default();
        ip4(b, &mut scratch);
        ip6(b, &mut scratch);
        let _ = l4(b, 0);
        match Arp::parse(b) {
            Ok(a) => {
                assert!(b.len() >= ARP_LEN);
                assert_eq!(a.spa()[..], b[14..18]);
            }
            Err(e) => {
                assert!(b.len() < ARP_LEN && e == HdrError::Short || e == HdrError::Unsupported)
            }
        }
    }
    w
}

/// The mutators on a copy of `f`: they must not panic on any bytes, and
/// must keep a valid IPv4 checksum valid.
pub fn mutate(f: &[u8]) {
    let mut b = f.to_vec();
    assert_eq!(EtherMut::parse(&mut b).is_ok(), f.len() >= ETH_LEN);
    if let Ok(mut e) = EtherMut::parse(&mut b) {
        e.write(Mac([2; 6]), Mac([4; 6]), ETH_IPV4);
        assert_eq!(Ether::parse(&b).map(|e| e.ethertype()), Ok(ETH_IPV4));
    }
    for off in [0, ETH_LEN, 18] {
        let Some(mut b) = f.get(off..).map(<[u8]>::to_vec) else {
            continue;
        };
        let valid_before =
            Ipv4::parse(&b).is_ok_and(|ip| ip.checksum_ok() && ip.header_len() == 20);
        if let Ok(mut ip) = Ipv4Mut::parse(&mut b) {
            let ttl = ip.ttl();
            ip.dec_ttl();
            assert_eq!(ip.ttl(), ttl.wrapping_sub(1));
        }
        if valid_before {
            let ip = Ipv4::parse(&b).expect("dec_ttl keeps the header parseable");
            assert!(ip.checksum_ok(), "dec_ttl broke the checksum");
        }
        if let Ok(mut ip) = Ipv4Mut::parse(&mut b) {
            ip.set_addrs([192, 0, 2, 1], [198, 51, 100, 7]);
        }
        if b.len() >= IP4_MIN {
            assert_eq!(checksum::checksum(&b[..IP4_MIN]), 0, "set_addrs checksum");
        }
        let mut c = f[off..].to_vec();
        if let Ok(mut ip) = Ipv6Mut::parse(&mut c) {
            let h = ip.hop_limit();
            ip.dec_hop_limit();
            assert_eq!(ip.hop_limit(), h.wrapping_sub(1));
        }
        let mut c = f[off..].to_vec();
        if let Ok(mut i) = IcmpMut::parse(&mut c) {
            i.set_type_code(3, 1);
            i.set_checksum(0x1234);
            i.set_rest([1, 2, 3, 4]);
            assert_eq!((i.ty(), i.checksum()), (3, 0x1234));
        }
        let mut c = f[off..].to_vec();
        if let Ok(mut u) = UdpMut::parse(&mut c) {
            u.write(1, 2, 8);
            u.set_checksum(7);
            let u = Udp::parse(&c).expect("a written UDP header of length 8 parses");
            assert_eq!((u.src_port(), u.dst_port(), u.checksum()), (1, 2, 7));
        }
        let mut c = f[off..].to_vec();
        if let Ok(mut t) = TcpMut::parse(&mut c) {
            t.write(1, 2, 3, 4, 0x12, 5);
            t.set_checksum(9);
            let t = Tcp::parse(&c).expect("a written TCP header parses");
            assert_eq!((t.header_len(), t.seq(), t.checksum()), (20, 3, 9));
        }
    }
}

const M1: Mac = Mac([2, 0, 0, 0, 0, 1]);
const M2: Mac = Mac([2, 0, 0, 0, 0, 2]);

/// One valid frame per builder, all of which must walk to layer 4
/// (ARP to layer 3).
pub fn valid_frames(payload: &[u8], a4: [u8; 4], a6: [u8; 16], port: u16) -> Vec<(Vec<u8>, bool)> {
    let b4 = [a4[0] ^ 1, a4[1], a4[2], a4[3]];
    let mut b6 = a6;
    b6[15] ^= 1;
    vec![
        (build::udp4(M1, M2, a4, b4, 64, port, 53, payload), true),
        (
            build::tcp4(M1, M2, a4, b4, 1, port, 179, 0x12, payload),
            true,
        ),
        (build::ping4(M1, M2, a4, b4, 255, port, 1, payload), true),
        (build::arp(M1, M2, 1, M2, a4, Mac::default(), b4), false),
        (build::udp6(M1, M2, &a6, &b6, 64, port, 53, payload), true),
        (build::ping6(M1, M2, &a6, &b6, 64, port, 2, payload), true),
        (build::ns6(M1, &a6, &b6), true),
        (build::na6(M1, M2, &a6, &b6), true),
    ]
}

/// A VLAN-tagged copy of an untagged frame.
pub fn tagged(f: &[u8], vid: u16) -> Vec<u8> {
    let mut t = f[..12].to_vec();
    t.extend_from_slice(&ETH_VLAN.to_be_bytes());
    t.extend_from_slice(&(vid & 0x0fff).to_be_bytes());
    t.extend_from_slice(&f[12..]);
    t
}

/// RFC 1071 / RFC 1624 properties of the checksum helpers on any bytes:
/// splitting the data at an even offset (`split`, rounded down) does not
/// change the sum; a checksum stored in an even-aligned field verifies;
/// after `update16` of the word picked by `word`, and `update32` of the
/// last two words, it still verifies. Returns nothing; asserts.
pub fn checksum_props(data: &[u8], split: usize, word: usize, new: u16, new32: u32) {
    let cut = split.min(data.len()) & !1;
    assert_eq!(
        checksum::finish(checksum::add(checksum::add(0, &data[..cut]), &data[cut..])),
        checksum::checksum(data),
        "split at {cut}"
    );
    // Store a checksum in an even-aligned field (first word non-zero, as
    // in every IP/ICMP/UDP/TCP header), then change one word with the
    // incremental update: it must still verify.
    let mut d = data.to_vec();
    if d.len() % 2 == 1 {
        d.push(0);
    }
    if d.len() < 8 {
        d.resize(8, 0);
    }
    d[0] |= 0x40;
    d[2] = 0;
    d[3] = 0;
    let c = checksum::checksum(&d);
    d[2..4].copy_from_slice(&c.to_be_bytes());
    assert_eq!(checksum::checksum(&d), 0);
    let words = d.len() / 2;
    let w = 2 + word % (words - 2);
    let old = be16(&d, 2 * w);
    let c = checksum::update16(be16(&d, 2), old, new);
    d[2 * w..2 * w + 2].copy_from_slice(&new.to_be_bytes());
    d[2..4].copy_from_slice(&c.to_be_bytes());
    assert_eq!(checksum::checksum(&d), 0, "update16 at word {w}");
    // And a 32-bit field at the end (past the checksum field).
    let o = 2 * (words - 2);
    let old = u32::from_be_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]]);
    let c = checksum::update32(be16(&d, 2), old, new32);
    d[o..o + 4].copy_from_slice(&new32.to_be_bytes());
    d[2..4].copy_from_slice(&c.to_be_bytes());
    assert_eq!(checksum::checksum(&d), 0, "update32");
}

//! Frame builders for tests, golden files and benchmarks: whole Ethernet
//! frames with correct lengths and checksums. They allocate (`Vec`) and are
//! not for the packet path.
#![allow(clippy::too_many_arguments)]

use crate::checksum;
use crate::hdr::ether::{Mac, ETH_ARP, ETH_IPV4, ETH_IPV6};
use crate::hdr::icmp::{ICMP4_ECHO, ICMP6_ECHO, ND_NA, ND_NS};
use crate::hdr::ip4::{PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP};

fn eth(dst: Mac, src: Mac, ty: u16) -> Vec<u8> {
    let mut f = Vec::with_capacity(128);
    f.extend_from_slice(&dst.0);
    f.extend_from_slice(&src.0);
    f.extend_from_slice(&ty.to_be_bytes());
    f
}

fn ip4_hdr(f: &mut Vec<u8>, ttl: u8, proto: u8, src: [u8; 4], dst: [u8; 4], payload_len: usize) {
    let tl = (20 + payload_len) as u16;
    let start = f.len();
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&tl.to_be_bytes());
    f.extend_from_slice(&[0x12, 0x34, 0x40, 0, ttl, proto, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    let c = checksum::checksum(&f[start..]);
    f[start + 10..start + 12].copy_from_slice(&c.to_be_bytes());
}

fn ip6_hdr(
    f: &mut Vec<u8>,
    hlim: u8,
    next: u8,
    src: &[u8; 16],
    dst: &[u8; 16],
    payload_len: usize,
) {
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(payload_len as u16).to_be_bytes());
    f.extend_from_slice(&[next, hlim]);
    f.extend_from_slice(src);
    f.extend_from_slice(dst);
}

/// Pads an Ethernet frame to the 60-byte minimum (before FCS).
pub fn pad60(mut f: Vec<u8>) -> Vec<u8> {
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

/// An IPv4 UDP frame with `payload` and a correct UDP checksum.
pub fn udp4(
    dmac: Mac,
    smac: Mac,
    src: [u8; 4],
    dst: [u8; 4],
    ttl: u8,
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = eth(dmac, smac, ETH_IPV4);
    let ul = 8 + payload.len();
    ip4_hdr(&mut f, ttl, PROTO_UDP, src, dst, ul);
    let s = f.len();
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&(ul as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    let mut c = checksum::finish(checksum::add(
        checksum::pseudo4(src, dst, PROTO_UDP, ul as u16),
        &f[s..],
    ));
    if c == 0 {
        c = 0xffff;
    }
    f[s + 6..s + 8].copy_from_slice(&c.to_be_bytes());
    pad60(f)
}

/// An IPv4 TCP frame (20-byte header, given flags) with a correct checksum.
#[allow(clippy::too_many_arguments)]
pub fn tcp4(
    dmac: Mac,
    smac: Mac,
    src: [u8; 4],
    dst: [u8; 4],
    ttl: u8,
    sport: u16,
    dport: u16,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = eth(dmac, smac, ETH_IPV4);
    let tl = 20 + payload.len();
    ip4_hdr(&mut f, ttl, PROTO_TCP, src, dst, tl);
    let s = f.len();
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&1u32.to_be_bytes());
    f.extend_from_slice(&0u32.to_be_bytes());
    f.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(payload);
    let c = checksum::finish(checksum::add(
        checksum::pseudo4(src, dst, PROTO_TCP, tl as u16),
        &f[s..],
    ));
    f[s + 16..s + 18].copy_from_slice(&c.to_be_bytes());
    pad60(f)
}

/// An ICMPv4 echo request.
pub fn ping4(
    dmac: Mac,
    smac: Mac,
    src: [u8; 4],
    dst: [u8; 4],
    ttl: u8,
    id: u16,
    seq: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = eth(dmac, smac, ETH_IPV4);
    ip4_hdr(&mut f, ttl, PROTO_ICMP, src, dst, 8 + payload.len());
    let s = f.len();
    f.extend_from_slice(&[ICMP4_ECHO, 0, 0, 0]);
    f.extend_from_slice(&id.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(payload);
    let c = checksum::checksum(&f[s..]);
    f[s + 2..s + 4].copy_from_slice(&c.to_be_bytes());
    pad60(f)
}

/// An ARP request or reply frame.
pub fn arp(
    dmac: Mac,
    smac: Mac,
    oper: u16,
    sha: Mac,
    spa: [u8; 4],
    tha: Mac,
    tpa: [u8; 4],
) -> Vec<u8> {
    let mut f = eth(dmac, smac, ETH_ARP);
    let mut a = [0u8; 28];
    // 28 bytes always fit.
    let _ = crate::hdr::arp::write(&mut a, oper, sha, spa, tha, tpa);
    f.extend_from_slice(&a);
    pad60(f)
}

fn icmp6_csum(f: &mut [u8], s: usize, src: &[u8; 16], dst: &[u8; 16]) {
    let len = (f.len() - s) as u32;
    let c = checksum::finish(checksum::add(
        checksum::pseudo6(src, dst, PROTO_ICMPV6, len),
        &f[s..],
    ));
    f[s + 2..s + 4].copy_from_slice(&c.to_be_bytes());
}

/// An IPv6 UDP frame with a correct checksum.
pub fn udp6(
    dmac: Mac,
    smac: Mac,
    src: &[u8; 16],
    dst: &[u8; 16],
    hlim: u8,
    sport: u16,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = eth(dmac, smac, ETH_IPV6);
    let ul = 8 + payload.len();
    ip6_hdr(&mut f, hlim, PROTO_UDP, src, dst, ul);
    let s = f.len();
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&(ul as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    let mut c = checksum::finish(checksum::add(
        checksum::pseudo6(src, dst, PROTO_UDP, ul as u32),
        &f[s..],
    ));
    if c == 0 {
        c = 0xffff;
    }
    f[s + 6..s + 8].copy_from_slice(&c.to_be_bytes());
    f
}

/// An ICMPv6 echo request.
pub fn ping6(
    dmac: Mac,
    smac: Mac,
    src: &[u8; 16],
    dst: &[u8; 16],
    hlim: u8,
    id: u16,
    seq: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = eth(dmac, smac, ETH_IPV6);
    ip6_hdr(&mut f, hlim, PROTO_ICMPV6, src, dst, 8 + payload.len());
    let s = f.len();
    f.extend_from_slice(&[ICMP6_ECHO, 0, 0, 0]);
    f.extend_from_slice(&id.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(payload);
    icmp6_csum(&mut f, s, src, dst);
    f
}

/// A Neighbor Solicitation for `target` from `src` (with a source
/// link-layer address option, RFC 4861 §4.3), sent to the solicited-node
/// multicast address.
pub fn ns6(smac: Mac, src: &[u8; 16], target: &[u8; 16]) -> Vec<u8> {
    let dst = crate::hdr::ip6::solicited_node(target);
    let mut f = eth(Mac::ipv6_multicast(&dst), smac, ETH_IPV6);
    ip6_hdr(&mut f, 255, PROTO_ICMPV6, src, &dst, 32);
    let s = f.len();
    f.extend_from_slice(&[ND_NS, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(target);
    f.extend_from_slice(&[1, 1]);
    f.extend_from_slice(&smac.0);
    icmp6_csum(&mut f, s, src, &dst);
    f
}

/// A solicited Neighbor Advertisement for `target` (= `src`) with a target
/// link-layer address option (RFC 4861 §4.4).
pub fn na6(dmac: Mac, smac: Mac, src: &[u8; 16], dst: &[u8; 16]) -> Vec<u8> {
    let mut f = eth(dmac, smac, ETH_IPV6);
    ip6_hdr(&mut f, 255, PROTO_ICMPV6, src, dst, 32);
    let s = f.len();
    f.extend_from_slice(&[ND_NA, 0, 0, 0, 0x60, 0, 0, 0]);
    f.extend_from_slice(src);
    f.extend_from_slice(&[2, 1]);
    f.extend_from_slice(&smac.0);
    icmp6_csum(&mut f, s, src, dst);
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hdr::ip4::Ipv4;
    use crate::hdr::ip6::Ipv6;

    #[test]
    fn builders_are_valid() {
        let m = Mac([2, 0, 0, 0, 0, 1]);
        let f = udp4(m, m, [10, 0, 0, 1], [10, 0, 0, 2], 64, 1, 2, b"hi");
        assert_eq!(f.len(), 60);
        let ip = Ipv4::parse(&f[14..]).unwrap();
        assert!(ip.checksum_ok());
        let l4 = ip.payload();
        assert_eq!(
            checksum::finish(checksum::add(
                checksum::pseudo4(ip.src(), ip.dst(), 17, 10),
                l4
            )),
            0
        );
        let a = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let f = ping6(m, m, &a, &a, 64, 1, 1, b"x");
        let ip = Ipv6::parse(&f[14..]).unwrap();
        let c = checksum::finish(checksum::add(
            checksum::pseudo6(&a, &a, 58, 9),
            ip.payload(),
        ));
        assert_eq!(c, 0);
    }
}

//! TTL/hop-limit decrement, ICMP errors built in place, and the echo
//! responder.

use std::net::IpAddr;

use graph::{Arg, BuildError, DropReason, Output, Verdict};
use pkt::checksum;
use pkt::hdr::ether::{EtherMut, Mac, ETH_IPV4, ETH_IPV6};
use pkt::hdr::icmp::{Icmp, IcmpMut, ICMP4_ECHO, ICMP4_ECHO_REPLY, ICMP6_ECHO, ICMP6_ECHO_REPLY};
use pkt::hdr::ip4::{Ipv4, Ipv4Mut, PROTO_ICMP, PROTO_ICMPV6};
use pkt::hdr::ip6::{is_multicast, Ipv6, Ipv6Mut};
use pkt::{Batch, Packet};

use crate::args::{each, ip, keyword, num, unknown};

/// The own drop reasons of this module's elements (DecIpTtl,
/// DecIp6HopLimit, IcmpError, IcmpEcho; one list, since they share the
/// ICMP error builders). See `graph::Element::drop_names`.
pub(crate) const ICMP_DROPS: &[&str] = &[
    "bad_ip_header",
    "bad_ip6_header",
    "ttl_expired",
    "icmp_suppressed",
    "not_for_us",
];
const BAD_IP_HEADER: DropReason = DropReason::own(0);
const BAD_IP6_HEADER: DropReason = DropReason::own(1);
const TTL_EXPIRED: DropReason = DropReason::own(2);
const ICMP_SUPPRESSED: DropReason = DropReason::own(3);
const NOT_FOR_US: DropReason = DropReason::own(4);

/// Most bytes of an IPv4 ICMP error datagram (RFC 1812 §4.3.2.3).
const ICMP4_MAX: usize = 576;
/// Most bytes of an ICMPv6 error datagram: the IPv6 minimum MTU
/// (RFC 4443 §2.4 (c)).
const ICMP6_MAX: usize = 1280;

/// Turns an IPv4 packet (Ethernet frame, IP at `anno.l3`) into an ICMP
/// error from `src` back to its sender, in place: the original IP header
/// and data are kept as the quotation, new Ethernet/IP/ICMP headers are
/// written in front of them using headroom. MAC addresses are zeroed (the
/// reply must be routed). `Err` means the error must not be sent
/// (RFC 1812 §4.3.2.7) or could not be built.
pub fn icmp4_error(
    p: &mut Packet,
    src: [u8; 4],
    ty: u8,
    code: u8,
    rest: [u8; 4],
) -> Result<(), DropReason> {
    let l3 = usize::from(p.anno.l3.max(14));
    let (dst, quote) = {
        let ip = Ipv4::parse(p.data().get(l3..).unwrap_or(&[])).map_err(|_| BAD_IP_HEADER)?;
        let d = ip.dst();
        let s = ip.src();
        // Never about a non-first fragment, a multicast/broadcast, an
        // invalid source, or an ICMP error (RFC 1812 §4.3.2.7).
        if ip.is_later_fragment() || d[0] >= 224 || s[0] == 0 || s[0] == 127 || s[0] >= 224 {
            return Err(ICMP_SUPPRESSED);
        }
        if ip.proto() == PROTO_ICMP {
            let ty = ip.payload().first().copied().unwrap_or(0);
            if !matches!(ty, ICMP4_ECHO | ICMP4_ECHO_REPLY | 13..=18) {
                return Err(ICMP_SUPPRESSED);
            }
        }
        (s, usize::from(ip.total_len()).min(ICMP4_MAX - 28))
    };
    let grow = (14 + 28usize).checked_sub(l3).ok_or(BAD_IP_HEADER)?;
    p.push_front(grow).map_err(|_| DropReason::NO_BUFFER)?;
    p.truncate(42 + quote);
    let d = p.data_mut();
    EtherMut::parse(d)
        .map_err(|_| BAD_IP_HEADER)?
        .write(Mac::default(), Mac::default(), ETH_IPV4);
    let (_, rest_of) = d.split_at_mut(14);
    Ipv4Mut::parse(rest_of).map_err(|_| BAD_IP_HEADER)?.write(
        0xc0,
        (28 + quote) as u16,
        0,
        64,
        PROTO_ICMP,
        src,
        dst,
    );
    let icmp = rest_of.get_mut(20..).ok_or(BAD_IP_HEADER)?;
    {
        let mut h = IcmpMut::parse(icmp).map_err(|_| BAD_IP_HEADER)?;
        h.set_type_code(ty, code);
        h.set_checksum(0);
        h.set_rest(rest);
    }
    let c = checksum::checksum(icmp);
    IcmpMut::parse(icmp)
        .map_err(|_| BAD_IP_HEADER)?
        .set_checksum(c);
    p.anno.l3 = 14;
    p.anno.gw = [0; 16];
    Ok(())
}

/// The IPv6 twin of [`icmp4_error`] (RFC 4443 §2.4: never about an ICMPv6
/// error, a multicast destination, or an unspecified/multicast source).
pub fn icmp6_error(
    p: &mut Packet,
    src: &[u8; 16],
    ty: u8,
    code: u8,
    rest: [u8; 4],
) -> Result<(), DropReason> {
    let l3 = usize::from(p.anno.l3.max(14));
    let (dst, quote) = {
        let ip = Ipv6::parse(p.data().get(l3..).unwrap_or(&[])).map_err(|_| BAD_IP6_HEADER)?;
        let (s, d) = (ip.src(), ip.dst());
        if is_multicast(&d) || is_multicast(&s) || s == [0; 16] {
            return Err(ICMP_SUPPRESSED);
        }
        if ip.next_header() == PROTO_ICMPV6 && ip.payload().first().is_some_and(|&t| t < 128) {
            return Err(ICMP_SUPPRESSED);
        }
        (s, (40 + usize::from(ip.payload_len())).min(ICMP6_MAX - 48))
    };
    let grow = (14 + 48usize).checked_sub(l3).ok_or(BAD_IP6_HEADER)?;
    p.push_front(grow).map_err(|_| DropReason::NO_BUFFER)?;
    p.truncate(62 + quote);
    let d = p.data_mut();
    EtherMut::parse(d)
        .map_err(|_| BAD_IP6_HEADER)?
        .write(Mac::default(), Mac::default(), ETH_IPV6);
    let (_, l3b) = d.split_at_mut(14);
    let len = (8 + quote) as u16;
    Ipv6Mut::parse(l3b)
        .map_err(|_| BAD_IP6_HEADER)?
        .write(0, len, PROTO_ICMPV6, 64, src, &dst);
    let icmp = l3b.get_mut(40..).ok_or(BAD_IP6_HEADER)?;
    {
        let mut h = IcmpMut::parse(icmp).map_err(|_| BAD_IP6_HEADER)?;
        h.set_type_code(ty, code);
        h.set_checksum(0);
        h.set_rest(rest);
    }
    let c = checksum::finish(checksum::add(
        checksum::pseudo6(src, &dst, PROTO_ICMPV6, u32::from(len)),
        icmp,
    ));
    IcmpMut::parse(icmp)
        .map_err(|_| BAD_IP6_HEADER)?
        .set_checksum(c);
    p.anno.l3 = 14;
    p.anno.gw = [0; 16];
    Ok(())
}

/// The source addresses of router-originated ICMP errors, one per input
/// device (`anno.in_port`, the device's index in the driver).
///
/// RFC 1812 §4.3.2.4 wants the source of an ICMP error to be an address of
/// the interface the error leaves by; an error goes back towards the
/// offending packet's sender, i.e. out of the interface the packet came
/// in by, so the address is chosen by the arrival port. `SRC a b c` lists
/// the addresses of devices 0, 1, 2; a port past the end uses the last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SrcAddrs<A> {
    addrs: Vec<A>,
}

impl<A: Copy> SrcAddrs<A> {
    /// The address for packets that arrived on device `in_port`.
    #[inline]
    pub fn for_port(&self, in_port: u16) -> Option<A> {
        self.addrs
            .get(usize::from(in_port))
            .or_else(|| self.addrs.last())
            .copied()
    }
    /// True when no address was configured.
    pub fn is_empty(&self) -> bool {
        self.addrs.is_empty()
    }
}

/// Parses `SRC a [b ...]` (every address of one family, chosen by `pick`).
fn src_list<A>(
    i: usize,
    v: &str,
    pick: impl Fn(IpAddr) -> Option<A>,
) -> Result<SrcAddrs<A>, BuildError> {
    let mut addrs = Vec::new();
    for w in v.split_whitespace() {
        let a =
            pick(ip(i, w)?).ok_or_else(|| BuildError::arg(i, "SRC of the wrong address family"))?;
        addrs.push(a);
    }
    if addrs.is_empty() {
        return Err(BuildError::arg(i, "SRC needs at least one address"));
    }
    Ok(SrcAddrs { addrs })
}

fn v4(a: IpAddr) -> Option<[u8; 4]> {
    match a {
        IpAddr::V4(x) => Some(x.octets()),
        IpAddr::V6(_) => None,
    }
}

fn v6(a: IpAddr) -> Option<[u8; 16]> {
    match a {
        IpAddr::V6(x) => Some(x.octets()),
        IpAddr::V4(_) => None,
    }
}

/// Parses the only argument of the decrement elements: `SRC` (optional).
fn src_arg<A>(args: &[Arg], pick: impl Fn(IpAddr) -> Option<A>) -> Result<SrcAddrs<A>, BuildError> {
    let mut src = SrcAddrs { addrs: Vec::new() };
    for (i, a) in each(args) {
        match keyword(a) {
            ("SRC", v) => src = src_list(i, v, &pick)?,
            (k, _) => return Err(unknown(i, k)),
        }
    }
    Ok(src)
}

/// `DecIpTtl(SRC ADDR...)`: decrements the IPv4 TTL with an incremental
/// checksum update (RFC 1812 §5.3.1, RFC 1624). A packet that arrives with
/// TTL <= 1 is turned into an ICMP time exceeded (type 11 code 0, RFC 792)
/// to its sender and emitted on output 1, to be routed back. Its source is
/// the `SRC` address of the device the packet arrived on (see
/// [`SrcAddrs`]); without `SRC`, expired packets are dropped.
///
/// * Ports: input 0 (IP at `anno.l3`); output 0 forwarded, output 1 ICMP
///   errors (if unconnected, expired packets are dropped).
/// * Counters: drops `ttl_expired`, `icmp_suppressed`, `bad_ip_header`.
///
/// ```text
/// rt [0] -> ttl :: DecIpTtl(SRC 10.0.1.1 10.0.2.1) -> rw0; ttl [1] -> rt;
/// ```
#[derive(Debug)]
pub struct DecIpTtl {
    pub(crate) src: SrcAddrs<[u8; 4]>,
    /// Time-exceeded errors generated (counter `icmp_errors`).
    pub errors: u64,
}

impl DecIpTtl {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        Ok(DecIpTtl {
            src: src_arg(args, v4)?,
            errors: 0,
        })
    }
    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        let errors = out.connected(1);
        let mut made = 0u64;
        out.dispatch(batch, |p| {
            let l3 = usize::from(p.anno.l3.max(14));
            let Some(mut ip) = p
                .data_mut()
                .get_mut(l3..)
                // The mutable view does not check the version: an IPv6
                // packet here must not have its "TTL" decremented.
                .filter(|b| b.first().is_some_and(|v| v >> 4 == 4))
                .and_then(|b| Ipv4Mut::parse(b).ok())
            else {
                return Verdict::drop(BAD_IP_HEADER);
            };
            if ip.ttl() > 1 {
                ip.dec_ttl();
                return Verdict::port(0);
            }
            match self.src.for_port(p.anno.in_port) {
                Some(src) if errors => match icmp4_error(p, src, 11, 0, [0; 4]) {
                    Ok(()) => {
                        made += 1;
                        Verdict::port(1)
                    }
                    Err(r) => Verdict::drop(r),
                },
                _ => Verdict::drop(TTL_EXPIRED),
            }
        });
        self.errors += made;
    }
}

/// `DecIp6HopLimit(SRC ADDR...)`: decrements the IPv6 hop limit (RFC 8200
/// §3); a packet arriving with hop limit <= 1 becomes an ICMPv6 time
/// exceeded (type 3 code 0, RFC 4443 §3.3) on output 1.
///
/// * Ports, counters: as [`DecIpTtl`].
///
/// ```text
/// rt6 [0] -> hl :: DecIp6HopLimit(SRC 2001:db8:1::1 2001:db8:2::1) -> rw0;
/// hl [1] -> rt6;
/// ```
#[derive(Debug)]
pub struct DecIp6HopLimit {
    pub(crate) src: SrcAddrs<[u8; 16]>,
    /// Time-exceeded errors generated (counter `icmp_errors`).
    pub errors: u64,
}

impl DecIp6HopLimit {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        Ok(DecIp6HopLimit {
            src: src_arg(args, v6)?,
            errors: 0,
        })
    }
    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        let errors = out.connected(1);
        let mut made = 0u64;
        out.dispatch(batch, |p| {
            let l3 = usize::from(p.anno.l3.max(14));
            let Some(mut ip) = p
                .data_mut()
                .get_mut(l3..)
                .filter(|b| b.first().is_some_and(|v| v >> 4 == 6))
                .and_then(|b| Ipv6Mut::parse(b).ok())
            else {
                return Verdict::drop(BAD_IP6_HEADER);
            };
            if ip.hop_limit() > 1 {
                ip.dec_hop_limit();
                return Verdict::port(0);
            }
            match self.src.for_port(p.anno.in_port) {
                Some(src) if errors => match icmp6_error(p, &src, 3, 0, [0; 4]) {
                    Ok(()) => {
                        made += 1;
                        Verdict::port(1)
                    }
                    Err(r) => Verdict::drop(r),
                },
                _ => Verdict::drop(TTL_EXPIRED),
            }
        });
        self.errors += made;
    }
}

/// `IcmpError(SRC ADDR..., TYPE t, CODE c)`: turns each packet into an
/// ICMP (IPv4 SRC) or ICMPv6 (IPv6 SRC) error of the given type and code,
/// in place, addressed to the packet's sender, from the `SRC` address of
/// its arrival device (see [`SrcAddrs`]). Typical use: destination
/// unreachable for packets with no route (type 3 code 0 for IPv4,
/// type 1 code 0 for IPv6).
///
/// * Ports: input 0, output 0 (route it back).
/// * Counters: drops `icmp_suppressed` (RFC 1812 §4.3.2.7 / RFC 4443
///   §2.4 (e)), `bad_ip_header`, `no_buffer`.
///
/// ```text
/// rt [2] -> IcmpError(SRC 10.0.1.1 10.0.2.1, TYPE 3, CODE 0) -> rt;
/// ```
#[derive(Debug)]
pub struct IcmpError {
    pub(crate) src: IcmpSrc,
    pub(crate) ty: u8,
    pub(crate) code: u8,
}

impl IcmpError {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let (mut src, mut ty, mut code) = (None, None, 0u8);
        for (i, a) in each(args) {
            match keyword(a) {
                ("SRC", v) => {
                    src = Some(match keyword(v).0.parse::<IpAddr>() {
                        Ok(IpAddr::V6(_)) => IcmpSrc::V6(src_list(i, v, v6)?),
                        _ => IcmpSrc::V4(src_list(i, v, v4)?),
                    })
                }
                ("TYPE", v) => {
                    ty = Some(
                        u8::try_from(num(i, v)?).map_err(|_| BuildError::arg(i, "type > 255"))?,
                    )
                }
                ("CODE", v) => {
                    code = u8::try_from(num(i, v)?).map_err(|_| BuildError::arg(i, "code > 255"))?
                }
                (k, _) => return Err(unknown(i, k)),
            }
        }
        match (src, ty) {
            (Some(src), Some(ty)) => Ok(IcmpError { src, ty, code }),
            _ => Err(BuildError::elem("IcmpError needs SRC and TYPE")),
        }
    }
    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        for mut p in batch.drain() {
            let port = p.anno.in_port;
            let r = match &self.src {
                IcmpSrc::V4(s) => match s.for_port(port) {
                    Some(a) => icmp4_error(&mut p, a, self.ty, self.code, [0; 4]),
                    None => Err(ICMP_SUPPRESSED),
                },
                IcmpSrc::V6(s) => match s.for_port(port) {
                    Some(a) => icmp6_error(&mut p, &a, self.ty, self.code, [0; 4]),
                    None => Err(ICMP_SUPPRESSED),
                },
            };
            match r {
                Ok(()) => out.push(0, p),
                Err(r) => out.drop(p, r),
            }
        }
    }
}

/// The family and per-port sources of an [`IcmpError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IcmpSrc {
    /// ICMP (IPv4) errors.
    V4(SrcAddrs<[u8; 4]>),
    /// ICMPv6 errors.
    V6(SrcAddrs<[u8; 16]>),
}

/// `IcmpEcho(ADDR a, ADDR b, ...)`: answers ICMP echo requests (RFC 792)
/// and ICMPv6 echo requests (RFC 4443 §4.1) addressed to one of the
/// router's own addresses, in place: addresses swapped, TTL/hop limit 64,
/// type changed with an incremental checksum update. Replies leave on
/// output 0 (route them back); anything else goes to output 1, or is
/// dropped as `not_for_us` when output 1 is unconnected.
///
/// ```text
/// rt [3] -> echo :: IcmpEcho(ADDR 10.0.1.1, ADDR 10.0.2.1) -> rt;
/// ```
#[derive(Debug)]
pub struct IcmpEcho {
    pub(crate) v4: Vec<[u8; 4]>,
    pub(crate) v6: Vec<[u8; 16]>,
}

impl IcmpEcho {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let (mut v4, mut v6) = (Vec::new(), Vec::new());
        for (i, a) in each(args) {
            match keyword(a) {
                ("ADDR", v) => match ip(i, v)? {
                    IpAddr::V4(x) => v4.push(x.octets()),
                    IpAddr::V6(x) => v6.push(x.octets()),
                },
                (k, _) => return Err(unknown(i, k)),
            }
        }
        Ok(IcmpEcho { v4, v6 })
    }

    fn reply(&self, p: &mut Packet) -> bool {
        let l3 = usize::from(p.anno.l3.max(14));
        let d = p.data_mut();
        let Some(ety) = d.get(12..14).map(|b| u16::from_be_bytes([b[0], b[1]])) else {
            return false;
        };
        let Some(l3b) = d.get_mut(l3..) else {
            return false;
        };
        if ety == ETH_IPV4 {
            let Ok(ip) = Ipv4::parse(l3b) else {
                return false;
            };
            let (s, dst, hl, tl) = (
                ip.src(),
                ip.dst(),
                ip.header_len(),
                usize::from(ip.total_len()),
            );
            if ip.proto() != PROTO_ICMP
                || !self.v4.contains(&dst)
                || ip.is_later_fragment()
                || hl != 20
            {
                return false;
            }
            let Some(icmp) = l3b.get_mut(hl..tl) else {
                return false;
            };
            match Icmp::parse(icmp) {
                Ok(h) if h.ty() == ICMP4_ECHO && h.code() == 0 => {}
                _ => return false,
            }
            let Ok(mut h) = IcmpMut::parse(icmp) else {
                return false;
            };
            let c = checksum::update16(
                h.checksum(),
                u16::from(ICMP4_ECHO) << 8,
                u16::from(ICMP4_ECHO_REPLY) << 8,
            );
            h.set_type_code(ICMP4_ECHO_REPLY, 0);
            h.set_checksum(c);
            let Ok(mut m) = Ipv4Mut::parse(l3b) else {
                return false;
            };
            m.write(0, tl as u16, 0, 64, PROTO_ICMP, dst, s);
            true
        } else if ety == ETH_IPV6 {
            let Ok(ip) = Ipv6::parse(l3b) else {
                return false;
            };
            let (s, dst, plen) = (ip.src(), ip.dst(), usize::from(ip.payload_len()));
            if ip.next_header() != PROTO_ICMPV6 || !self.v6.contains(&dst) {
                return false;
            }
            let Some(icmp) = l3b.get_mut(40..40 + plen) else {
                return false;
            };
            match Icmp::parse(icmp) {
                Ok(h) if h.ty() == ICMP6_ECHO && h.code() == 0 => {}
                _ => return false,
            }
            let Ok(mut h) = IcmpMut::parse(icmp) else {
                return false;
            };
            // The pseudo-header sum is unchanged by swapping addresses.
            let c = checksum::update16(
                h.checksum(),
                u16::from(ICMP6_ECHO) << 8,
                u16::from(ICMP6_ECHO_REPLY) << 8,
            );
            h.set_type_code(ICMP6_ECHO_REPLY, 0);
            h.set_checksum(c);
            let Ok(mut m) = Ipv6Mut::parse(l3b) else {
                return false;
            };
            m.write(0, plen as u16, PROTO_ICMPV6, 64, &dst, &s);
            true
        } else {
            false
        }
    }

    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        for mut p in batch.drain() {
            if self.reply(&mut p) {
                // Swap MACs too (routing the reply rewrites them anyway).
                if let Some(h) = p.data_mut().first_chunk_mut::<12>() {
                    let (a, b) = h.split_at_mut(6);
                    a.swap_with_slice(b);
                }
                p.anno.gw = [0; 16];
                out.push(0, p);
            } else if out.connected(1) {
                out.push(1, p);
            } else {
                out.drop(p, NOT_FOR_US);
            }
        }
    }
}

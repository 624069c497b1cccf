//! CheckIpHeader and CheckIp6Header: validate IP headers before routing.

use graph::{Arg, BuildError, DropReason, Output, Verdict};
use pkt::hdr::ether::{parse_l2, ETH_IPV4, ETH_IPV6};
use pkt::hdr::ip4::Ipv4;
use pkt::hdr::ip6::Ipv6;
use pkt::Batch;

use crate::args::{boolean, each, keyword, unknown};

/// CheckIpHeader's own drop reasons (see `graph::Element::drop_names`).
pub(crate) const CHECK4_DROPS: &[&str] = &[
    "bad_ether",
    "bad_ip_header",
    "bad_ip_checksum",
    "bad_ip_source",
];
/// CheckIp6Header's own drop reasons.
pub(crate) const CHECK6_DROPS: &[&str] = &["bad_ether", "bad_ip6_header", "bad_ip6_address"];
const BAD_ETHER: DropReason = DropReason::own(0);
const BAD_IP_HEADER: DropReason = DropReason::own(1);
const BAD_IP_CHECKSUM: DropReason = DropReason::own(2);
const BAD_IP_SOURCE: DropReason = DropReason::own(3);
const BAD_IP6_HEADER: DropReason = DropReason::own(1);
const BAD_IP6_ADDRESS: DropReason = DropReason::own(2);

/// Why an IPv4 header failed [`check_ip4_at`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Bad4 {
    /// Length, version, IHL or total length (RFC 1812 §5.2.2).
    Header,
    /// The header checksum.
    Checksum,
    /// A source that is not forwardable (§5.3.7).
    Source,
}

/// CheckIpHeader's test of the IPv4 header at `l3` in frame `d` (the
/// Ethernet type already known to be IPv4): shared with the Classifier's
/// `checked` patterns, so that the fused test is the same test.
#[inline]
pub(crate) fn check_ip4_at(d: &[u8], l3: usize, checksum: bool) -> Result<(), Bad4> {
    let ip = Ipv4::parse(d.get(l3..).unwrap_or(&[])).map_err(|_| Bad4::Header)?;
    if checksum && !ip.checksum_ok() {
        return Err(Bad4::Checksum);
    }
    let s = ip.src();
    if s[0] == 0 || s[0] == 127 || s[0] >= 224 {
        return Err(Bad4::Source);
    }
    Ok(())
}

/// `CheckIpHeader([CHECKSUM true|false])`: passes IPv4-in-Ethernet
/// packets whose header passes RFC 1812 §5.2.2 (length, version 4,
/// IHL >= 5, total length within the frame, checksum) and whose source is
/// forwardable (§5.3.7: not 0/8, 127/8, 224/3 or the limited broadcast).
/// Sets `anno.l3` (14, or 18 under a VLAN tag).
///
/// * Ports: input 0, output 0.
/// * Counters: drops `bad_ether`, `bad_ip_header`, `bad_ip_checksum`,
///   `bad_ip_source`.
///
/// ```text
/// c [1] -> CheckIpHeader -> rt :: Ip4Lookup(...);
/// ```
#[derive(Debug)]
pub struct CheckIpHeader {
    pub(crate) checksum: bool,
}

impl CheckIpHeader {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let mut checksum = true;
        for (i, a) in each(args) {
            match keyword(a) {
                ("CHECKSUM", v) => checksum = boolean(i, v)?,
                (k, _) => return Err(unknown(i, k)),
            }
        }
        Ok(CheckIpHeader { checksum })
    }

    #[inline]
    fn check(&self, d: &[u8]) -> Result<u16, DropReason> {
        let l2 = parse_l2(d).map_err(|_| BAD_ETHER)?;
        if l2.ethertype != ETH_IPV4 {
            return Err(BAD_ETHER);
        }
        check_ip4_at(d, l2.l3, self.checksum).map_err(|b| match b {
            Bad4::Header => BAD_IP_HEADER,
            Bad4::Checksum => BAD_IP_CHECKSUM,
            Bad4::Source => BAD_IP_SOURCE,
        })?;
        Ok(l2.l3 as u16)
    }

    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        out.dispatch(batch, |p| match self.check(p.data()) {
            Ok(l3) => {
                p.anno.l3 = l3;
                Verdict::port(0)
            }
            Err(r) => Verdict::drop(r),
        });
    }
}

/// `CheckIp6Header()`: passes IPv6-in-Ethernet packets with version 6, a
/// payload length that fits the frame (RFC 8200 §3), a source that is not
/// multicast, and neither address the loopback `::1` (RFC 4291 §2.5.3).
/// Sets `anno.l3`.
///
/// * Ports: input 0, output 0.
/// * Counters: drops `bad_ether`, `bad_ip6_header`, `bad_ip6_address`.
///
/// ```text
/// c [2] -> CheckIp6Header -> rt6 :: Ip6Lookup(...);
/// ```
#[derive(Debug, Default)]
pub struct CheckIp6Header;

impl CheckIp6Header {
    #[inline]
    fn check(d: &[u8]) -> Result<u16, DropReason> {
        let l2 = parse_l2(d).map_err(|_| BAD_ETHER)?;
        if l2.ethertype != ETH_IPV6 {
            return Err(BAD_ETHER);
        }
        let ip = Ipv6::parse(d.get(l2.l3..).unwrap_or(&[])).map_err(|_| BAD_IP6_HEADER)?;
        let loopback = u128::from_be_bytes(ip.src()) == 1 || u128::from_be_bytes(ip.dst()) == 1;
        if pkt::hdr::ip6::is_multicast(&ip.src()) || loopback {
            return Err(BAD_IP6_ADDRESS);
        }
        Ok(l2.l3 as u16)
    }

    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        out.dispatch(batch, |p| match Self::check(p.data()) {
            Ok(l3) => {
                p.anno.l3 = l3;
                Verdict::port(0)
            }
            Err(r) => Verdict::drop(r),
        });
    }
}

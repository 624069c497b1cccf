//! Classifier: sends packets to an output by Ethernet type, IP protocol
//! and L4 ports.

use graph::{Arg, BuildError, DropReason, Output, Verdict};
use pkt::hdr::ether::{parse_l2, ETH_ARP, ETH_IPV4, ETH_IPV6};
use pkt::hdr::ip4::Ipv4;
use pkt::hdr::ip6::Ipv6;
use pkt::{Batch, Packet};

use crate::args::num;
use crate::check::{check_ip4_at, Bad4};

/// Classifier's own drop reasons (see `graph::Element::drop_names`).
pub(crate) const CLASSIFIER_DROPS: &[&str] = &[
    "no_match",
    "bad_ip_header",
    "bad_ip_checksum",
    "bad_ip_source",
];
const NO_MATCH: DropReason = DropReason::own(0);
const BAD_IP_HEADER: DropReason = DropReason::own(1);
const BAD_IP_CHECKSUM: DropReason = DropReason::own(2);
const BAD_IP_SOURCE: DropReason = DropReason::own(3);

/// The L3 offset: the annotation if set, else parsed from the Ethernet
/// header (one VLAN tag allowed).
#[inline]
pub(crate) fn l3_off(p: &Packet) -> Option<usize> {
    if p.anno.l3 != 0 {
        return Some(usize::from(p.anno.l3));
    }
    parse_l2(p.data()).ok().map(|l| l.l3)
}

/// IP protocol (IPv4 protocol or IPv6 next header) and the L4 bytes of an
/// IPv4 or IPv6 packet; `None` for anything else or a later IPv4
/// fragment (which has no L4 header).
#[inline]
pub(crate) fn l4_of(p: &Packet) -> Option<(u8, &[u8])> {
    let d = p.data();
    let l2 = parse_l2(d).ok()?;
    let l3 = d.get(l3_off(p)?..)?;
    match l2.ethertype {
        ETH_IPV4 => {
            let ip = Ipv4::parse(l3).ok()?;
            if ip.is_later_fragment() {
                return None;
            }
            Some((ip.proto(), ip.payload()))
        }
        ETH_IPV6 => {
            let ip = Ipv6::parse(l3).ok()?;
            Some((ip.next_header(), ip.payload()))
        }
        _ => None,
    }
}

/// One test within a pattern.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Test {
    EtherType(u16),
    Proto(u8),
    SrcPort(u16),
    DstPort(u16),
    /// Click-style `OFFSET/HEX`: bytes at an offset from the frame start.
    Bytes {
        off: u16,
        val: [u8; 8],
        len: u8,
    },
}

/// `Classifier(PATTERN, ...)`: output `i` gets packets matching pattern
/// `i` (first match wins); others are dropped as `no_match`.
///
/// A pattern is space-separated tests, all of which must hold: `arp`,
/// `ip`, `ip6`, `ether 0xNNNN`, `udp`, `tcp`, `icmp`, `icmp6`,
/// `proto N`, `src port N`, `dst port N`, Click's `OFFSET/HEXBYTES`
/// (e.g. `12/0806`), or `-` (anything). Ports and protocols look through
/// one VLAN tag; IPv6 extension headers are not walked.
///
/// * Ports: input 0; one output per pattern.
/// * Counters: drops `no_match`.
///
/// ```text
/// c :: Classifier(arp, ip udp dst port 53, ip, ip6, -);
/// ```
#[derive(Debug)]
pub struct Classifier {
    pub(crate) pats: Vec<Vec<Test>>,
    /// Per pattern: `checked` (the IPv4 header is checked on a match).
    checks: Vec<bool>,
}

/// A pattern's tests and whether it ends in `checked`.
fn parse_pattern(i: usize, s: &str) -> Result<(Vec<Test>, bool), BuildError> {
    let mut tests = Vec::new();
    let mut checked = false;
    let words: Vec<&str> = s.split_whitespace().collect();
    let mut k = 0;
    let next = |k: usize| {
        words
            .get(k + 1)
            .copied()
            .ok_or_else(|| BuildError::arg(i, "pattern ends early"))
    };
    while let Some(&w) = words.get(k) {
        match w {
            "-" => {}
            "checked" => checked = true,
            "arp" => tests.push(Test::EtherType(ETH_ARP)),
            "ip" => tests.push(Test::EtherType(ETH_IPV4)),
            "ip6" => tests.push(Test::EtherType(ETH_IPV6)),
            "udp" => tests.push(Test::Proto(17)),
            "tcp" => tests.push(Test::Proto(6)),
            "icmp" => tests.push(Test::Proto(1)),
            "icmp6" => tests.push(Test::Proto(58)),
            "ether" => {
                tests.push(Test::EtherType(
                    u16::try_from(num(i, next(k)?)?)
                        .map_err(|_| BuildError::arg(i, "bad ether type"))?,
                ));
                k += 1;
            }
            "proto" => {
                tests.push(Test::Proto(
                    u8::try_from(num(i, next(k)?)?)
                        .map_err(|_| BuildError::arg(i, "bad protocol"))?,
                ));
                k += 1;
            }
            "src" | "dst" => {
                if next(k)? != "port" {
                    return Err(BuildError::arg(i, "expected 'port' after src/dst"));
                }
                let p = crate::args::num16(i, words.get(k + 2).copied().unwrap_or(""))?;
                tests.push(if w == "src" {
                    Test::SrcPort(p)
                } else {
                    Test::DstPort(p)
                });
                k += 2;
            }
            _ => {
                let Some((off, hex)) = w.split_once('/') else {
                    return Err(BuildError::arg(i, format!("unknown test '{w}'")));
                };
                let off = crate::args::num16(i, off)?;
                if hex.len() % 2 != 0 || hex.len() > 16 || hex.is_empty() {
                    return Err(BuildError::arg(i, "OFFSET/HEX needs 1 to 8 whole bytes"));
                }
                let mut val = [0u8; 8];
                for (j, slot) in val.iter_mut().enumerate().take(hex.len() / 2) {
                    let b = hex.get(2 * j..2 * j + 2).unwrap_or("");
                    *slot = u8::from_str_radix(b, 16).map_err(|_| BuildError::arg(i, "bad hex"))?;
                }
                tests.push(Test::Bytes {
                    off,
                    val,
                    len: (hex.len() / 2) as u8,
                });
            }
        }
        k += 1;
    }
    if checked && !tests.contains(&Test::EtherType(ETH_IPV4)) {
        return Err(BuildError::arg(i, "'checked' needs 'ip' in its pattern"));
    }
    Ok((tests, checked))
}

impl Classifier {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        if args.is_empty() {
            return Err(BuildError::elem("Classifier needs at least one pattern"));
        }
        let (pats, checks) = args
            .iter()
            .enumerate()
            .map(|(i, a)| parse_pattern(i, &a.text))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .unzip();
        Ok(Classifier { pats, checks })
    }

    pub(crate) fn outputs(&self) -> u16 {
        self.pats.len() as u16
    }

    #[inline]
    fn test(t: &Test, p: &Packet, ety: Option<u16>) -> bool {
        match *t {
            Test::EtherType(e) => ety == Some(e),
            Test::Proto(x) => l4_of(p).is_some_and(|(pr, _)| pr == x),
            Test::SrcPort(x) => l4_of(p)
                .and_then(|(_, l4)| pkt::hdr::l4::ports(l4))
                .is_some_and(|(s, _)| s == x),
            Test::DstPort(x) => l4_of(p)
                .and_then(|(_, l4)| pkt::hdr::l4::ports(l4))
                .is_some_and(|(_, d)| d == x),
            Test::Bytes { off, val, len } => {
                let (o, l) = (usize::from(off), usize::from(len));
                p.data().get(o..o + l) == val.get(..l)
            }
        }
    }

    /// The verdict for `p`, with the header check of `checked` patterns
    /// on the one Ethernet parse.
    #[inline]
    fn decide(&self, p: &mut Packet) -> Verdict {
        let l2 = parse_l2(p.data()).ok();
        let ety = l2.map(|l| l.ethertype);
        let Some(i) = self
            .pats
            .iter()
            .position(|pat| pat.iter().all(|t| Self::test(t, p, ety)))
        else {
            return Verdict::drop(NO_MATCH);
        };
        if let (Some(true), Some(l2)) = (self.checks.get(i).copied(), l2) {
            // `checked` patterns contain `ip`: the Ethernet type is IPv4.
            if let Err(b) = check_ip4_at(p.data(), l2.l3, true) {
                return Verdict::drop(match b {
                    Bad4::Header => BAD_IP_HEADER,
                    Bad4::Checksum => BAD_IP_CHECKSUM,
                    Bad4::Source => BAD_IP_SOURCE,
                });
            }
            p.anno.l3 = l2.l3 as u16;
        }
        Verdict::port(i as u16)
    }

    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        out.dispatch(batch, |p| self.decide(p));
    }
}

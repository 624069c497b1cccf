//! IPsec ESP tunnel mode (RFC 4303, AES-GCM-128 per RFC 4106) as two
//! elements over crate `ipsec`: [`EspEncap`] seals the packets its policy
//! selects into ESP toward a tunnel peer, [`EspDecap`] finds the SA of an
//! arriving ESP packet by SPI, checks replay and integrity, and hands the
//! inner packet on. Both work in place in the packet's buffer (headroom
//! for the outer headers, tailroom for the trailer and ICV): nothing is
//! allocated per packet.
//!
//! ```text
//! ... DecIpTtl -> enc :: EspEncap(SPI 0x1001, KEY <40 hex>, SRC 198.18.2.1,
//!                                 DST 198.18.2.2, MATCH 198.18.3.0/24);
//! enc [0] -> rt4 (outer IPv4, routed to the peer); enc [1] -> rt4; enc [2] -> rt6;
//! esp :: Classifier(23/32 30/c6120201, -);     // ESP to our address
//! esp [0] -> dec :: EspDecap(SA 0x1002 <40 hex> WINDOW 128 FROM 198.18.3.0/24);
//! dec [0] -> CheckIpHeader -> ...;  dec [1] -> CheckIp6Header -> ...;
//! ```
//!
//! An SA belongs to the one core whose graph holds the element (its
//! sequence counter and replay window are not shared), so a dataplane
//! with IPsec runs one core.

use graph::{Arg, BuildError, DropReason, Output, Verdict};
use ipsec::{trailer_len, InboundSa, Key, OpenError, OutboundSa, Sad, Selector, FRONT};
use pkt::hdr::ether::{parse_l2, ETH_IPV4, ETH_IPV6};
use pkt::{Batch, Packet};

use crate::args::{each, keyword, num, unknown};

/// EspEncap's own drop reasons, by index (`DropReason::own(i)`).
pub const ENCAP_DROPS: &[&str] = &["not_ip", "too_big", "seq_exhausted", "no_room"];
const NOT_IP: DropReason = DropReason::own(0);
const TOO_BIG: DropReason = DropReason::own(1);
const SEQ_EXHAUSTED: DropReason = DropReason::own(2);
const NO_ROOM: DropReason = DropReason::own(3);

/// EspDecap's own drop reasons: `ipsec::OpenError::ALL` in order.
pub const DECAP_DROPS: &[&str] = &[
    "too_short",
    "malformed",
    "no_sa",
    "replay",
    "auth_failed",
    "policy",
    "dummy",
];

fn open_index(e: OpenError) -> usize {
    OpenError::ALL.iter().position(|&x| x == e).unwrap_or(1)
}

fn open_reason(e: OpenError) -> DropReason {
    DropReason::own(open_index(e) as u8)
}

/// One SA's counters, for `show dataplane` and `/metrics`: packets and
/// bytes (of the inner packets) sealed or opened, and drops by reason
/// ([`ENCAP_DROPS`] for an outbound SA, [`DECAP_DROPS`] for an inbound
/// one). An inbound row with `spi` `None` holds the drops of ESP packets
/// that name no configured SA (`no_sa`) or are too short or malformed to
/// name one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaCounters {
    /// The SA's SPI (`None`: the row of packets that named no SA).
    pub spi: Option<u32>,
    /// An outbound SA (EspEncap), or an inbound one (EspDecap).
    pub outbound: bool,
    /// Packets sealed (outbound) or opened (inbound).
    pub packets: u64,
    /// Their inner (plaintext) bytes.
    pub bytes: u64,
    /// Drops by reason, every reason of the direction (zeros included).
    pub drops: Vec<(&'static str, u64)>,
}

impl SaCounters {
    /// Adds `o` (the same SA's counters from another core).
    pub fn add(&mut self, o: &SaCounters) {
        self.packets += o.packets;
        self.bytes += o.bytes;
        for (k, v) in &o.drops {
            match self.drops.iter_mut().find(|(x, _)| x == k) {
                Some((_, n)) => *n += v,
                None => self.drops.push((k, *v)),
            }
        }
    }
}

fn named(names: &'static [&'static str], v: &[u64]) -> Vec<(&'static str, u64)> {
    names.iter().copied().zip(v.iter().copied()).collect()
}

fn key_arg(i: usize, v: &str) -> Result<Key, BuildError> {
    Key::from_hex(v).ok_or_else(|| {
        BuildError::arg(
            i,
            "KEY is 40 hex digits: the 16-byte AES key then the 4-byte salt (RFC 4106)",
        )
    })
}

fn selectors(i: usize, v: &str) -> Result<Vec<Selector>, BuildError> {
    v.split_whitespace()
        .map(|s| s.parse().map_err(|e: String| BuildError::arg(i, e)))
        .collect()
}

fn spi_arg(i: usize, v: &str) -> Result<u32, BuildError> {
    // RFC 4303 §2.1: SPIs 1..=255 are reserved by IANA, 0 is local use.
    u32::try_from(num(i, v)?)
        .ok()
        .filter(|&s| s >= 256)
        .ok_or_else(|| BuildError::arg(i, "SPI is 256..=4294967295 (RFC 4303 §2.1)"))
}

/// The IP packet of a frame: where it starts, its length by its own
/// header (Ethernet padding excluded), version, and TOS/traffic class.
fn inner_of(d: &[u8], l3: u16) -> Option<(usize, usize, u8, u8)> {
    let (l3, ty) = match l3 {
        0 => {
            let l2 = parse_l2(d).ok()?;
            (l2.l3, l2.ethertype)
        }
        n => (usize::from(n), 0),
    };
    let ip = d.get(l3..)?;
    let v = ip.first()? >> 4;
    let (len, tos) = match v {
        4 if ty == 0 || ty == ETH_IPV4 => (
            usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?])),
            *ip.get(1)?,
        ),
        6 if ty == 0 || ty == ETH_IPV6 => (
            40 + usize::from(u16::from_be_bytes([*ip.get(4)?, *ip.get(5)?])),
            (ip.first()? << 4) | (ip.get(1)? >> 4),
        ),
        _ => return None,
    };
    let min = if v == 4 { 20 } else { 40 };
    (len >= min && len <= ip.len()).then_some((l3, len, v, tos))
}

/// `EspEncap(SPI n, KEY hex, SRC a, DST b, MATCH prefix..., [MTU n])`:
/// one outbound SA and its policy.
///
/// * Ports: 1 input (Ethernet frames of IPv4 or IPv6, `anno.l3` set or
///   an untagged frame); outputs `0` the ESP packets (an Ethernet frame
///   with zero MACs and the outer IPv4 header, `anno.l3` = 14: route it
///   by the outer destination), `1` IPv4 and `2` IPv6 packets the policy
///   does not select, untouched.
/// * Policy: a packet whose inner destination is in one of the `MATCH`
///   prefixes (IPv4 or IPv6) is sealed (RFC 4303 §3.3, tunnel mode: the
///   whole inner packet; next header 4 or 41); several tunnels are a
///   chain of EspEncap elements through outputs 1 and 2.
/// * Config: `SPI` (256 and up), `KEY` (40 hex digits: key then salt,
///   as `ip xfrm state ... aead 'rfc4106(gcm(aes))' 0xKEY 128` takes
///   them), `SRC`/`DST` the tunnel's IPv4 endpoints, `MATCH` the
///   prefixes, `MTU` the largest outer packet (default 1500), `SEQ` the
///   last sequence number already used (default 0; for tests).
/// * Outer header: TTL 64, DSCP and ECN copied from the inner packet
///   (RFC 4301 §5.1.2.1), identification = the low 16 bits of the
///   sequence number, DF clear.
/// * Counters: `encrypted`, `bypassed`, `seq` (the last sent); drops
///   `not_ip`, `too_big` (over `MTU`: no fragmentation, no ICMP),
///   `seq_exhausted` (2^32 - 1 packets sent: no ESN, RFC 4303 §3.3.3;
///   the SA must be replaced), `no_room` (not enough head- or tailroom).
#[derive(Debug)]
pub struct EspEncap {
    sa: OutboundSa,
    mtu: usize,
    encrypted: u64,
    /// Inner bytes sealed.
    bytes: u64,
    bypassed: u64,
    /// Drops by [`ENCAP_DROPS`] index (the graph counts them too, by
    /// element; these are the SA's, for [`SaCounters`]).
    drops: [u64; 4],
}

impl EspEncap {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let (mut spi, mut key, mut src, mut dst) = (None, None, None, None);
        let (mut sel, mut mtu, mut seq) = (Vec::new(), 1500usize, 0u32);
        for (i, a) in each(args) {
            match keyword(a) {
                ("SPI", v) => spi = Some(spi_arg(i, v)?),
                ("KEY", v) => key = Some(key_arg(i, v)?),
                ("SRC", v) => src = Some(crate::args::ip4(i, v)?.octets()),
                ("DST", v) => dst = Some(crate::args::ip4(i, v)?.octets()),
                ("MATCH", v) => sel.extend(selectors(i, v)?),
                ("MTU", v) => {
                    mtu = usize::try_from(num(i, v)?)
                        .ok()
                        .filter(|m| (68..=9216).contains(m))
                        .ok_or_else(|| BuildError::arg(i, "MTU is 68..=9216"))?
                }
                ("SEQ", v) => {
                    seq = u32::try_from(num(i, v)?)
                        .map_err(|_| BuildError::arg(i, "SEQ is a 32-bit number"))?
                }
                (k, _) => return Err(unknown(i, k)),
            }
        }
        let need = |what: &str| BuildError::elem(format!("EspEncap needs {what}"));
        let spi = spi.ok_or_else(|| need("SPI"))?;
        let key = key.ok_or_else(|| need("KEY"))?;
        let src = src.ok_or_else(|| need("SRC"))?;
        let dst = dst.ok_or_else(|| need("DST"))?;
        if sel.is_empty() {
            return Err(BuildError::elem(
                "EspEncap needs MATCH (the prefixes it encrypts)",
            ));
        }
        let sa = OutboundSa::new(spi, &key, src, dst)
            .with_selectors(sel)
            .with_seq(seq);
        Ok(EspEncap {
            sa,
            mtu,
            encrypted: 0,
            bytes: 0,
            bypassed: 0,
            drops: [0; 4],
        })
    }

    /// A drop for reason `r`, counted for the SA.
    fn dropped(&mut self, r: DropReason) -> Verdict {
        let i = [NOT_IP, TOO_BIG, SEQ_EXHAUSTED, NO_ROOM]
            .iter()
            .position(|&x| x == r)
            .unwrap_or(3);
        if let Some(n) = self.drops.get_mut(i) {
            *n += 1;
        }
        Verdict::drop(r)
    }

    /// One packet: its verdict, sealing it in place when selected.
    fn one(&mut self, p: &mut Packet) -> Verdict {
        let Some((l3, len, v, tos)) = inner_of(p.data(), p.anno.l3) else {
            return self.dropped(NOT_IP);
        };
        let inner = p.data().get(l3..l3 + len).unwrap_or_default();
        if !self.sa.matches(inner) {
            self.bypassed += 1;
            return Verdict::port(if v == 4 { 1 } else { 2 });
        }
        let outer = FRONT + len + trailer_len(len);
        if outer > self.mtu {
            return self.dropped(TOO_BIG);
        }
        // [L2][inner][pad] -> [Ether 14][outer IP][ESP][IV][inner][trailer][ICV]
        let head = 14 + FRONT;
        if p.headroom() + l3 < head || p.tailroom() + (p.len() - l3 - len) < trailer_len(len) {
            return self.dropped(NO_ROOM);
        }
        if self.sa.seq() == u32::MAX {
            return self.dropped(SEQ_EXHAUSTED);
        }
        if p.pull_front(l3).is_err() || p.set_len(len).is_err() || p.push_front(head).is_err() {
            return self.dropped(NO_ROOM);
        }
        if p.set_len(14 + outer).is_err() {
            return self.dropped(NO_ROOM);
        }
        let d = p.data_mut();
        let (eth, ip) = d.split_at_mut(14);
        eth[..12].fill(0);
        eth[12..].copy_from_slice(&ETH_IPV4.to_be_bytes());
        let next = if v == 4 {
            ipsec::NEXT_IPV4
        } else {
            ipsec::NEXT_IPV6
        };
        let id = self.sa.seq().wrapping_add(1) as u16;
        match self.sa.seal(ip, len, next, tos, id) {
            Ok(()) => {
                p.anno.l3 = 14;
                self.encrypted += 1;
                self.bytes += len as u64;
                Verdict::port(0)
            }
            Err(ipsec::SealError::SeqExhausted) => self.dropped(SEQ_EXHAUSTED),
            Err(ipsec::SealError::BadLength) => self.dropped(NO_ROOM),
        }
    }

    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        out.dispatch(batch, |p| self.one(p));
    }

    pub(crate) fn counters(&self, f: &mut dyn FnMut(&'static str, u64)) {
        f("encrypted", self.encrypted);
        f("bypassed", self.bypassed);
        f("seq", u64::from(self.sa.seq()));
    }

    /// The SA's counters.
    pub fn sa_counters(&self, out: &mut Vec<SaCounters>) {
        out.push(SaCounters {
            spi: Some(self.sa.spi()),
            outbound: true,
            packets: self.encrypted,
            bytes: self.bytes,
            drops: named(ENCAP_DROPS, &self.drops),
        });
    }
}

/// `EspDecap(SA spi key [WINDOW n] FROM prefix..., ...)`: the inbound SAs
/// and their decapsulation.
///
/// * Ports: 1 input (Ethernet frames of IPv4 ESP packets addressed to
///   this router: the graph selects them, e.g. a Classifier on protocol 50
///   and our address); outputs `0` inner IPv4, `1` inner IPv6, each as an
///   Ethernet frame (the arriving MACs, ethertype of the inner packet,
///   `anno.l3` = 14) ready for CheckIpHeader / CheckIp6Header.
/// * Per packet (RFC 4303 §3.4): outer IPv4 header (no fragments), SA by
///   SPI, anti-replay check (§3.4.3), ICV check and decryption in place
///   (§3.4.4), window update, trailer (padding 1, 2, 3...), next header 4
///   or 41 matching the inner version, then the inbound policy (RFC 4301
///   §5.2): the inner source must be in the SA's `FROM` prefixes.
/// * Config: one `SA` argument per SA: the SPI, the key (40 hex digits,
///   key then salt), `WINDOW` the replay window in bits (a multiple of 64,
///   64..=4096, default 64), `FROM` the inner source prefixes.
/// * Counters: `decrypted`; drops `too_short`, `malformed`, `no_sa`,
///   `replay`, `auth_failed`, `policy`, `dummy` (next header 59).
#[derive(Debug)]
pub struct EspDecap {
    sad: Sad,
    decrypted: u64,
    /// Per SA (in `sad.sas()` order): packets, inner bytes, drops by
    /// [`DECAP_DROPS`] index.
    per_sa: Vec<(u64, u64, [u64; 7])>,
    /// Drops of packets that name no SA of ours.
    other: [u64; 7],
}

impl EspDecap {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let mut sad = Sad::new();
        for (i, a) in each(args) {
            match keyword(a) {
                ("SA", v) => {
                    let mut t = v.split_whitespace();
                    let spi = spi_arg(i, t.next().unwrap_or(""))?;
                    let key = key_arg(i, t.next().unwrap_or(""))?;
                    let (mut window, mut from, mut in_from) = (64u32, Vec::new(), false);
                    while let Some(w) = t.next() {
                        match w {
                            "WINDOW" => {
                                in_from = false;
                                window = u32::try_from(num(i, t.next().unwrap_or(""))?)
                                    .map_err(|_| BuildError::arg(i, "WINDOW too large"))?;
                            }
                            "FROM" => in_from = true,
                            s if in_from => from.extend(selectors(i, s)?),
                            s => {
                                return Err(BuildError::arg(
                                    i,
                                    format!("SA: expected WINDOW or FROM, got '{s}'"),
                                ))
                            }
                        }
                    }
                    if from.is_empty() {
                        return Err(BuildError::arg(
                            i,
                            "SA needs FROM prefixes (the inner sources it may carry)",
                        ));
                    }
                    let sa = InboundSa::new(spi, &key, window, from).ok_or_else(|| {
                        BuildError::arg(i, "WINDOW is a multiple of 64 in 64..=4096")
                    })?;
                    if !sad.add(sa) {
                        return Err(BuildError::arg(i, format!("SPI {spi:#x} given twice")));
                    }
                }
                (k, _) => return Err(unknown(i, k)),
            }
        }
        if sad.sas().is_empty() {
            return Err(BuildError::elem("EspDecap needs at least one SA"));
        }
        let per_sa = vec![(0, 0, [0; 7]); sad.sas().len()];
        Ok(EspDecap {
            sad,
            decrypted: 0,
            per_sa,
            other: [0; 7],
        })
    }

    /// The inbound SAs (replay windows included).
    pub fn sad(&self) -> &Sad {
        &self.sad
    }

    /// A drop for `e`, counted for SA `sa` (an index into `per_sa`) or
    /// for no SA.
    fn refuse(&mut self, sa: Option<usize>, e: OpenError) -> Verdict {
        let i = open_index(e);
        let row = match sa.and_then(|k| self.per_sa.get_mut(k)) {
            Some(r) => &mut r.2,
            None => &mut self.other,
        };
        if let Some(n) = row.get_mut(i) {
            *n += 1;
        }
        Verdict::drop(open_reason(e))
    }

    fn one(&mut self, p: &mut Packet) -> Verdict {
        let l3 = match p.anno.l3 {
            0 => match parse_l2(p.data()) {
                Ok(l2) if l2.ethertype == ETH_IPV4 => l2.l3,
                _ => return self.refuse(None, OpenError::Malformed),
            },
            n => usize::from(n),
        };
        let d = p.data_mut();
        let Some(ip) = d.get_mut(l3..) else {
            return self.refuse(None, OpenError::TooShort);
        };
        let o = match ipsec::wire::outer4(ip) {
            Ok(o) => o,
            Err(e) => return self.refuse(None, e),
        };
        let Some(esp) = ip.get_mut(o.hdr_len..o.total_len) else {
            return self.refuse(None, OpenError::TooShort);
        };
        // The SA the packet names (its first 4 bytes: the SPI), for its
        // counters; the SAD finds it again.
        let sa = esp
            .get(..4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .and_then(|spi| self.sad.position(spi));
        let r = match self.sad.open(esp) {
            Ok(r) => r,
            Err(e) => return self.refuse(sa, e),
        };
        // The inner packet starts `start` bytes into the frame: put a
        // 14-byte Ethernet header right in front of it and cut the rest.
        let start = l3 + o.hdr_len + r.inner.start;
        let len = r.inner.len();
        let ty = if r.next == ipsec::NEXT_IPV4 {
            ETH_IPV4
        } else {
            ETH_IPV6
        };
        d.copy_within(0..12, start - 14);
        if let Some(t) = d.get_mut(start - 2..start) {
            t.copy_from_slice(&ty.to_be_bytes());
        }
        if p.pull_front(start - 14).is_err() {
            return self.refuse(sa, OpenError::Malformed);
        }
        p.truncate(14 + len);
        p.anno.l3 = 14;
        self.decrypted += 1;
        if let Some(c) = sa.and_then(|k| self.per_sa.get_mut(k)) {
            c.0 += 1;
            c.1 += len as u64;
        }
        Verdict::port(if r.next == ipsec::NEXT_IPV4 { 0 } else { 1 })
    }

    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        out.dispatch(batch, |p| self.one(p));
    }

    pub(crate) fn counters(&self, f: &mut dyn FnMut(&'static str, u64)) {
        f("decrypted", self.decrypted);
    }

    /// Each inbound SA's counters, in configuration order, then (when
    /// any happened) the drops of packets that named no SA of ours.
    pub fn sa_counters(&self, out: &mut Vec<SaCounters>) {
        for (a, (packets, bytes, drops)) in self.sad.sas().iter().zip(&self.per_sa) {
            out.push(SaCounters {
                spi: Some(a.spi()),
                outbound: false,
                packets: *packets,
                bytes: *bytes,
                drops: named(DECAP_DROPS, drops),
            });
        }
        if self.other.iter().any(|&n| n > 0) {
            out.push(SaCounters {
                spi: None,
                outbound: false,
                drops: named(DECAP_DROPS, &self.other),
                ..SaCounters::default()
            });
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn drop_names_follow_open_errors() {
        for (i, e) in ipsec::OpenError::ALL.iter().enumerate() {
            assert_eq!(super::DECAP_DROPS[i], e.name());
        }
    }
}

//! MP_REACH_NLRI and MP_UNREACH_NLRI (RFC 4760 §3, §4), including the
//! abbreviated MP_REACH_NLRI of MRT TABLE_DUMP_V2 RIB entries (RFC 6396
//! §4.3.4) and IPv4 NLRI with an IPv6 next hop (RFC 8950).
//!
//! ```text
//! MP_REACH_NLRI                                MP_UNREACH_NLRI
//! +---------------------------------------+    +------------------------------+
//! | AFI (2) | SAFI (1)                    |    | AFI (2) | SAFI (1)           |
//! +---------------------------------------+    +------------------------------+
//! | Length of Next Hop (1)                |    | Withdrawn Routes (variable)  |
//! +---------------------------------------+    +------------------------------+
//! | Next Hop (variable)                   |
//! +---------------------------------------+    MRT abbreviated MP_REACH_NLRI
//! | Reserved (1)                          |    +------------------------------+
//! +---------------------------------------+    | Length of Next Hop (1)       |
//! | NLRI (variable)                       |    | Next Hop (variable)          |
//! +---------------------------------------+    +------------------------------+
//! ```

use std::net::{Ipv4Addr, Ipv6Addr};

use base::{Afi, AfiSafi, Safi};

use crate::ctx::ParseCtx;
use crate::error::WireError;
use crate::nlri::{encode_nlri, Nlri, NlriIter};
use crate::util::{array_at, u16_at, u8_at};

/// A next hop of a known shape.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum NextHop {
    /// A 4-octet IPv4 next hop.
    V4(Ipv4Addr),
    /// A 16-octet IPv6 global next hop.
    V6(Ipv6Addr),
    /// RFC 2545 §3: global address followed by a link-local one.
    V6LinkLocal(Ipv6Addr, Ipv6Addr),
}

impl NextHop {
    /// Types a next-hop field by its length: 4, 16 or 32 octets.
    pub fn from_bytes(b: &[u8]) -> Option<NextHop> {
        match b.len() {
            4 => Some(NextHop::V4(Ipv4Addr::from(array_at::<4>(b, 0)?))),
            16 => Some(NextHop::V6(Ipv6Addr::from(array_at::<16>(b, 0)?))),
            32 => Some(NextHop::V6LinkLocal(
                Ipv6Addr::from(array_at::<16>(b, 0)?),
                Ipv6Addr::from(array_at::<16>(b, 16)?),
            )),
            _ => None,
        }
    }

    /// The next-hop field octets (4, 16 or 32); inverse of [`NextHop::from_bytes`].
    pub fn to_bytes(self) -> Vec<u8> {
        match self {
            NextHop::V4(a) => a.octets().to_vec(),
            NextHop::V6(a) => a.octets().to_vec(),
            NextHop::V6LinkLocal(g, l) => {
                let mut v = g.octets().to_vec();
                v.extend_from_slice(&l.octets());
                v
            }
        }
    }
}

/// Whether NLRI of this family are plain prefixes we can read.
pub const fn is_prefix_family(af: AfiSafi) -> bool {
    matches!(af.afi, Afi::Ipv4 | Afi::Ipv6) && matches!(af.safi, Safi::Unicast | Safi::Multicast)
}

fn nlri_iter(buf: &[u8], af: AfiSafi, add_path: bool) -> NlriIter<'_> {
    let afi = if is_prefix_family(af) {
        af.afi
    } else {
        Afi::Other(0)
    };
    NlriIter::new(buf, afi, add_path)
}

/// RFC 6396 §4.3.4 and its erratum: TABLE_DUMP_V2 RIB entries should hold
/// the abbreviated form, but some dumpers wrote the full one. The full form
/// starts with a 2-octet AFI whose high octet is 0, so a first octet equal
/// to the remaining length identifies the abbreviated form.
pub fn is_mrt_abbreviated(value: &[u8]) -> bool {
    matches!(value.first(), Some(&l) if l as usize + 1 == value.len())
}

/// Borrowed MP_REACH_NLRI.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MpReachView<'a> {
    /// The family of the next hop and NLRI.
    pub afi_safi: AfiSafi,
    /// Raw next-hop octets; see [`MpReachView::next_hop`].
    pub next_hop: &'a [u8],
    /// RFC 4760 §3: reserved (formerly number of SNPAs), kept as received.
    pub reserved: u8,
    /// Raw NLRI octets; see [`MpReachView::nlri`].
    pub nlri: &'a [u8],
    /// True when this came from the MRT abbreviated form.
    pub abbreviated: bool,
    /// Whether the NLRI carry ADD-PATH path identifiers (from the parse context).
    pub add_path: bool,
}

impl<'a> MpReachView<'a> {
    /// Frames the value. With `ctx.mrt_rib` set, an abbreviated value is
    /// recognised (see [`is_mrt_abbreviated`]) and takes its AFI/SAFI from
    /// the context. `None` when the value is too short for its own fields.
    pub fn parse(value: &'a [u8], ctx: ParseCtx) -> Option<MpReachView<'a>> {
        if let Some(af) = ctx.mrt_rib {
            if is_mrt_abbreviated(value) {
                return Self::parse_mrt_abbreviated(value, af);
            }
        }
        let afi = Afi::from_u16(u16_at(value, 0)?);
        let safi = Safi::from_u8(u8_at(value, 2)?);
        let nh_len = u8_at(value, 3)? as usize;
        let next_hop = value.get(4..4 + nh_len)?;
        let reserved = u8_at(value, 4 + nh_len)?;
        let nlri = value.get(5 + nh_len..)?;
        let afi_safi = AfiSafi::new(afi, safi);
        Some(MpReachView {
            afi_safi,
            next_hop,
            reserved,
            nlri,
            abbreviated: false,
            add_path: ctx.add_path(afi_safi),
        })
    }

    /// Parses the RFC 6396 §4.3.4 abbreviated form: next-hop length and
    /// next hop only. The value must be exactly that long.
    pub fn parse_mrt_abbreviated(value: &'a [u8], af: AfiSafi) -> Option<MpReachView<'a>> {
        let (&l, rest) = value.split_first()?;
        if rest.len() != l as usize {
            return None;
        }
        Some(MpReachView {
            afi_safi: af,
            next_hop: rest,
            reserved: 0,
            nlri: &[],
            abbreviated: true,
            add_path: false,
        })
    }

    /// The typed next hop, if 4, 16 or 32 octets long.
    pub fn next_hop(&self) -> Option<NextHop> {
        NextHop::from_bytes(self.next_hop)
    }

    /// NLRI iterator. For families other than IPv4/IPv6 unicast/multicast
    /// the first item is an error; use the raw [`Self::nlri`] field.
    pub fn nlri(&self) -> NlriIter<'a> {
        nlri_iter(self.nlri, self.afi_safi, self.add_path)
    }

    /// RFC 4760 §3 / RFC 2545 / RFC 8950: whether the next-hop length is
    /// plausible for the family (only checked for IPv4/IPv6).
    pub fn next_hop_len_ok(&self) -> bool {
        match self.afi_safi.afi {
            Afi::Ipv4 => matches!(self.next_hop.len(), 4 | 16 | 32),
            Afi::Ipv6 => matches!(self.next_hop.len(), 16 | 32),
            Afi::Other(_) => true,
        }
    }

    /// Owned copy; `None` if a prefix family's NLRI do not parse.
    pub fn to_owned(&self) -> Option<MpReach> {
        Some(MpReach {
            afi_safi: self.afi_safi,
            next_hop: self.next_hop.to_vec(),
            reserved: self.reserved,
            nlri: MpNlri::from_raw(self.nlri, self.afi_safi, self.add_path)?,
            abbreviated: self.abbreviated,
        })
    }
}

/// Borrowed MP_UNREACH_NLRI.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MpUnreachView<'a> {
    /// The family of the withdrawn NLRI.
    pub afi_safi: AfiSafi,
    /// Raw withdrawn NLRI octets; see [`MpUnreachView::withdrawn`].
    pub withdrawn: &'a [u8],
    /// Whether the NLRI carry ADD-PATH path identifiers (from the parse context).
    pub add_path: bool,
}

impl<'a> MpUnreachView<'a> {
    /// Frames the value (AFI, SAFI, NLRI octets); `None` when shorter than 3 octets. The NLRI are
    /// checked when iterated.
    pub fn parse(value: &'a [u8], ctx: ParseCtx) -> Option<MpUnreachView<'a>> {
        let afi = Afi::from_u16(u16_at(value, 0)?);
        let safi = Safi::from_u8(u8_at(value, 2)?);
        let afi_safi = AfiSafi::new(afi, safi);
        Some(MpUnreachView {
            afi_safi,
            withdrawn: value.get(3..)?,
            add_path: ctx.add_path(afi_safi),
        })
    }

    /// Withdrawn-routes iterator (see [`MpReachView::nlri`]).
    pub fn withdrawn(&self) -> NlriIter<'a> {
        nlri_iter(self.withdrawn, self.afi_safi, self.add_path)
    }

    /// An owned copy; `None` if an NLRI is malformed.
    pub fn to_owned(&self) -> Option<MpUnreach> {
        Some(MpUnreach {
            afi_safi: self.afi_safi,
            withdrawn: MpNlri::from_raw(self.withdrawn, self.afi_safi, self.add_path)?,
        })
    }
}

/// Owned NLRI of an MP attribute.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MpNlri {
    /// IPv4/IPv6 unicast/multicast.
    Prefixes(Vec<Nlri>),
    /// Other families, as received.
    Raw(Vec<u8>),
}

impl MpNlri {
    fn from_raw(b: &[u8], af: AfiSafi, add_path: bool) -> Option<MpNlri> {
        if !is_prefix_family(af) {
            return Some(MpNlri::Raw(b.to_vec()));
        }
        nlri_iter(b, af, add_path)
            .collect::<Result<Vec<_>, WireError>>()
            .ok()
            .map(MpNlri::Prefixes)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            MpNlri::Prefixes(v) => encode_nlri(v, out),
            MpNlri::Raw(b) => out.extend_from_slice(b),
        }
    }

    /// The prefixes; empty for raw NLRI of other families.
    pub fn prefixes(&self) -> &[Nlri] {
        match self {
            MpNlri::Prefixes(v) => v,
            MpNlri::Raw(_) => &[],
        }
    }
}

/// Owned MP_REACH_NLRI.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MpReach {
    /// The family of the next hop and NLRI.
    pub afi_safi: AfiSafi,
    /// Raw next-hop octets (use [`NextHop::to_bytes`] to build them).
    pub next_hop: Vec<u8>,
    /// Reserved octet (formerly number of SNPAs), written as held.
    pub reserved: u8,
    /// The NLRI.
    pub nlri: MpNlri,
    /// Encode in the MRT abbreviated form (next hop only).
    pub abbreviated: bool,
}

impl MpReach {
    /// An attribute in the full form for `nlri` via `next_hop`, reserved octet 0.
    pub fn new(afi_safi: AfiSafi, next_hop: NextHop, nlri: Vec<Nlri>) -> MpReach {
        MpReach {
            afi_safi,
            next_hop: next_hop.to_bytes(),
            reserved: 0,
            nlri: MpNlri::Prefixes(nlri),
            abbreviated: false,
        }
    }

    /// The next hop typed by its length, `None` for other lengths.
    pub fn next_hop(&self) -> Option<NextHop> {
        NextHop::from_bytes(&self.next_hop)
    }

    /// Appends the value octets (a next hop over 255 octets is cut to 255).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let nh = self.next_hop.get(..255).unwrap_or(&self.next_hop);
        if !self.abbreviated {
            out.extend_from_slice(&self.afi_safi.afi.to_u16().to_be_bytes());
            out.push(self.afi_safi.safi.to_u8());
        }
        out.push(nh.len() as u8);
        out.extend_from_slice(nh);
        if !self.abbreviated {
            out.push(self.reserved);
            self.nlri.encode(out);
        }
    }
}

/// Owned MP_UNREACH_NLRI.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MpUnreach {
    /// The family of the withdrawn NLRI.
    pub afi_safi: AfiSafi,
    /// The withdrawn NLRI.
    pub withdrawn: MpNlri,
}

impl MpUnreach {
    /// Appends the value octets.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.afi_safi.afi.to_u16().to_be_bytes());
        out.push(self.afi_safi.safi.to_u8());
        self.withdrawn.encode(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base::Prefix;

    #[test]
    fn ipv6_with_link_local() {
        let mut v = vec![0, 2, 1, 32];
        v.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        v.extend_from_slice(&"fe80::1".parse::<Ipv6Addr>().unwrap().octets());
        v.push(0);
        v.extend_from_slice(&[48, 0x20, 0x01, 0x0d, 0xb8, 0, 1]);
        let m = MpReachView::parse(&v, ParseCtx::modern()).unwrap();
        assert_eq!(m.afi_safi, AfiSafi::IPV6_UNICAST);
        assert_eq!(
            m.next_hop(),
            Some(NextHop::V6LinkLocal(
                "2001:db8::1".parse().unwrap(),
                "fe80::1".parse().unwrap()
            ))
        );
        let n: Vec<_> = m.nlri().map(|r| r.unwrap().prefix).collect();
        assert_eq!(n, vec!["2001:db8:1::/48".parse::<Prefix>().unwrap()]);
        let mut out = Vec::new();
        m.to_owned().unwrap().encode(&mut out);
        assert_eq!(out, v);
    }

    #[test]
    fn rfc8950_v4_nlri_v6_next_hop() {
        let mut v = vec![0, 1, 1, 16];
        v.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        v.extend_from_slice(&[0, 24, 192, 0, 2]);
        let m = MpReachView::parse(&v, ParseCtx::modern()).unwrap();
        assert!(m.next_hop_len_ok());
        assert_eq!(
            m.next_hop(),
            Some(NextHop::V6("2001:db8::1".parse().unwrap()))
        );
        assert_eq!(m.nlri().count(), 1);
    }

    #[test]
    fn mrt_abbreviated_and_full() {
        let abbr = [4, 192, 0, 2, 1];
        assert!(is_mrt_abbreviated(&abbr));
        let ctx = ParseCtx::mrt_rib(AfiSafi::IPV4_UNICAST);
        let m = MpReachView::parse(&abbr, ctx).unwrap();
        assert!(m.abbreviated);
        assert_eq!(m.next_hop(), Some(NextHop::V4(Ipv4Addr::new(192, 0, 2, 1))));
        let mut out = Vec::new();
        m.to_owned().unwrap().encode(&mut out);
        assert_eq!(out, abbr);
        // Without the MRT context it is not a valid full MP_REACH.
        assert!(MpReachView::parse(&abbr, ParseCtx::modern()).is_none());
        // Full form inside a RIB entry (RFC 6396 erratum) is detected too.
        let full = [0, 1, 1, 4, 192, 0, 2, 1, 0];
        assert!(!is_mrt_abbreviated(&full));
        let m = MpReachView::parse(&full, ctx).unwrap();
        assert!(!m.abbreviated);
        assert_eq!(m.afi_safi, AfiSafi::IPV4_UNICAST);
        assert!(MpReachView::parse_mrt_abbreviated(&[16, 1, 2], AfiSafi::IPV6_UNICAST).is_none());
    }

    #[test]
    fn other_families_stay_raw() {
        let v = [
            0, 1, 128, 12, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1, 0, 1, 2, 3,
        ];
        let m = MpReachView::parse(&v, ParseCtx::modern()).unwrap();
        assert_eq!(m.afi_safi.safi, Safi::Other(128));
        assert!(m.nlri().next().unwrap().is_err());
        let o = m.to_owned().unwrap();
        assert_eq!(o.nlri, MpNlri::Raw(vec![1, 2, 3]));
        let mut out = Vec::new();
        o.encode(&mut out);
        assert_eq!(out, v);
    }
}

//! Capabilities advertisement (RFC 5492) and the capabilities we know.
//!
//! ```text
//! +------------------------------+
//! | Capability Code (1 octet)    |
//! +------------------------------+
//! | Capability Length (1 octet)  |
//! +------------------------------+
//! | Capability Value (variable)  |
//! +------------------------------+
//! ```
//!
//! A typed view is produced only when the value has exactly the layout its
//! RFC prescribes (including zero reserved octets), so that the owned form
//! re-encodes byte for byte; anything else is kept as
//! [`Capability::Unknown`] raw bytes.

use base::{Afi, AfiSafi, Asn, Safi};

use crate::consts::cap_code as cc;
use crate::util::{u16_at, u32_at, u8_at};

/// A capability TLV as found in an optional parameter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RawCapability<'a> {
    /// Capability code (see [`crate::consts::cap_code`]).
    pub code: u8,
    /// The value octets.
    pub value: &'a [u8],
    /// Offset of the TLV in the OPEN body (for 2/7 NOTIFICATION data).
    pub offset: u32,
}

/// RFC 7911 §4 Send/Receive field.
pub mod add_path_mode {
    /// The sender can receive multiple paths.
    pub const RECEIVE: u8 = 1;
    /// The sender can send multiple paths.
    pub const SEND: u8 = 2;
    /// Both.
    pub const BOTH: u8 = 3;
}

/// RFC 9234 §4.1 BGP roles.
pub mod role {
    /// Provider (0): the sender is the receiver's transit provider.
    pub const PROVIDER: u8 = 0;
    /// Route Server (1).
    pub const RS: u8 = 1;
    /// Route Server Client (2).
    pub const RS_CLIENT: u8 = 2;
    /// Customer (3): the sender is the receiver's customer.
    pub const CUSTOMER: u8 = 3;
    /// Peer (4): lateral peering.
    pub const PEER: u8 = 4;
}

/// One (AFI, SAFI, flags) entry of the graceful restart capability (RFC 4724
/// §3); flags bit 0x80 is "Forwarding State preserved".
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct GrFamily {
    /// The family.
    pub afi_safi: AfiSafi,
    /// Per-family flags; 0x80 = forwarding state preserved.
    pub flags: u8,
}

/// One entry of the long-lived GR capability (RFC 9494).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct LlgrFamily {
    /// The family.
    pub afi_safi: AfiSafi,
    /// Per-family flags; 0x80 = forwarding state preserved.
    pub flags: u8,
    /// Long-lived stale time, 24 bits, in seconds.
    pub stale_time: u32,
}

/// One entry of the ADD-PATH capability (RFC 7911 §4).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct AddPathFamily {
    /// The family.
    pub afi_safi: AfiSafi,
    /// [`add_path_mode`].
    pub send_receive: u8,
}

/// One tuple of the Extended Next Hop Encoding capability (RFC 8950 §3):
/// NLRI of `afi_safi` may carry a next hop of `next_hop_afi`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExtNextHop {
    /// The NLRI's family (the SAFI is 2 octets on the wire; only values
    /// up to 255 are typed, see [`CapabilityView::ExtendedNextHop`]).
    pub afi_safi: AfiSafi,
    /// The next hop's address family.
    pub next_hop_afi: Afi,
}

impl ExtNextHop {
    /// IPv4 unicast NLRI with an IPv6 next hop (the RFC 8950 case).
    pub const IPV4_UNICAST_V6: ExtNextHop = ExtNextHop {
        afi_safi: AfiSafi::IPV4_UNICAST,
        next_hop_afi: Afi::Ipv6,
    };
}

fn afi_safi_at(b: &[u8], off: usize) -> Option<AfiSafi> {
    Some(AfiSafi::new(
        Afi::from_u16(u16_at(b, off)?),
        Safi::from_u8(u8_at(b, off + 2)?),
    ))
}

/// Borrowed typed view of a capability.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CapabilityView<'a> {
    /// 1, RFC 4760 §8.
    Multiprotocol(AfiSafi),
    /// 2, RFC 2918.
    RouteRefresh,
    /// 5, RFC 8950 §3: 6-octet (NLRI AFI, NLRI SAFI, next-hop AFI)
    /// tuples, each SAFI's high octet zero (else the whole capability is
    /// kept as [`CapabilityView::Unknown`], so that it re-encodes).
    ExtendedNextHop(&'a [u8]),
    /// 6, RFC 8654.
    ExtendedMessage,
    /// 9, RFC 9234.
    Role(u8),
    /// 64, RFC 4724 §3: the restart flags (top 4 bits of the first 16-bit
    /// word, shifted down: 0x8 = Restart State, 0x4 = Notification of RFC
    /// 8538), the 12-bit restart time, and 4-octet family entries.
    GracefulRestart {
        /// Restart flags, 4 bits.
        flags: u8,
        /// Restart time, 12 bits, in seconds.
        restart_time: u16,
        /// The family entries, raw (4 octets each).
        families: &'a [u8],
    },
    /// 65, RFC 6793.
    FourOctetAsn(Asn),
    /// 69, RFC 7911: 4-octet entries.
    AddPath(&'a [u8]),
    /// 70, RFC 7313.
    EnhancedRouteRefresh,
    /// 71, RFC 9494: 7-octet entries.
    LongLivedGracefulRestart(&'a [u8]),
    /// 73, draft-walton-bgp-hostname-capability: raw octets (usually ASCII).
    Fqdn {
        /// The host name, length-prefixed on the wire (up to 255 octets).
        hostname: &'a [u8],
        /// The domain name, length-prefixed on the wire (up to 255 octets).
        domain: &'a [u8],
    },
    /// Anything else, or a known code with a malformed value.
    Unknown {
        /// The capability code.
        code: u8,
        /// The value octets.
        value: &'a [u8],
    },
}

impl<'a> CapabilityView<'a> {
    /// Types a capability; never fails (see the module docs).
    pub fn parse(code: u8, value: &'a [u8]) -> CapabilityView<'a> {
        Self::parse_known(code, value).unwrap_or(CapabilityView::Unknown { code, value })
    }

    fn parse_known(code: u8, v: &'a [u8]) -> Option<CapabilityView<'a>> {
        let len = v.len();
        Some(match code {
            cc::MULTIPROTOCOL if len == 4 && u8_at(v, 2) == Some(0) => {
                CapabilityView::Multiprotocol(AfiSafi::new(
                    Afi::from_u16(u16_at(v, 0)?),
                    Safi::from_u8(u8_at(v, 3)?),
                ))
            }
            cc::ROUTE_REFRESH if len == 0 => CapabilityView::RouteRefresh,
            cc::EXTENDED_NEXT_HOP
                if len % 6 == 0 && v.chunks_exact(6).all(|c| u8_at(c, 2) == Some(0)) =>
            {
                CapabilityView::ExtendedNextHop(v)
            }
            cc::EXTENDED_MESSAGE if len == 0 => CapabilityView::ExtendedMessage,
            cc::ENHANCED_ROUTE_REFRESH if len == 0 => CapabilityView::EnhancedRouteRefresh,
            cc::ROLE if len == 1 => CapabilityView::Role(u8_at(v, 0)?),
            cc::FOUR_OCTET_AS if len == 4 => CapabilityView::FourOctetAsn(Asn(u32_at(v, 0)?)),
            cc::GRACEFUL_RESTART if len >= 2 && (len - 2) % 4 == 0 => {
                let w = u16_at(v, 0)?;
                CapabilityView::GracefulRestart {
                    flags: (w >> 12) as u8,
                    restart_time: w & 0x0fff,
                    families: v.get(2..)?,
                }
            }
            cc::ADD_PATH if len % 4 == 0 => CapabilityView::AddPath(v),
            cc::LONG_LIVED_GRACEFUL_RESTART if len % 7 == 0 => {
                CapabilityView::LongLivedGracefulRestart(v)
            }
            cc::FQDN => {
                let (&hl, rest) = v.split_first()?;
                let hostname = rest.get(..hl as usize)?;
                let rest = rest.get(hl as usize..)?;
                let (&dl, rest) = rest.split_first()?;
                if rest.len() != dl as usize {
                    return None;
                }
                CapabilityView::Fqdn {
                    hostname,
                    domain: rest,
                }
            }
            _ => return None,
        })
    }

    /// The capability code this value is carried under.
    pub const fn code(&self) -> u8 {
        match self {
            CapabilityView::Multiprotocol(_) => cc::MULTIPROTOCOL,
            CapabilityView::RouteRefresh => cc::ROUTE_REFRESH,
            CapabilityView::ExtendedNextHop(_) => cc::EXTENDED_NEXT_HOP,
            CapabilityView::ExtendedMessage => cc::EXTENDED_MESSAGE,
            CapabilityView::Role(_) => cc::ROLE,
            CapabilityView::GracefulRestart { .. } => cc::GRACEFUL_RESTART,
            CapabilityView::FourOctetAsn(_) => cc::FOUR_OCTET_AS,
            CapabilityView::AddPath(_) => cc::ADD_PATH,
            CapabilityView::EnhancedRouteRefresh => cc::ENHANCED_ROUTE_REFRESH,
            CapabilityView::LongLivedGracefulRestart(_) => cc::LONG_LIVED_GRACEFUL_RESTART,
            CapabilityView::Fqdn { .. } => cc::FQDN,
            CapabilityView::Unknown { code, .. } => *code,
        }
    }

    /// Graceful restart family entries (empty for other capabilities).
    pub fn gr_families(&self) -> impl Iterator<Item = GrFamily> + 'a {
        let b: &'a [u8] = match self {
            CapabilityView::GracefulRestart { families, .. } => families,
            _ => &[],
        };
        b.chunks_exact(4).filter_map(|c| {
            Some(GrFamily {
                afi_safi: afi_safi_at(c, 0)?,
                flags: u8_at(c, 3)?,
            })
        })
    }

    /// ADD-PATH entries (empty for other capabilities).
    pub fn add_path_families(&self) -> impl Iterator<Item = AddPathFamily> + 'a {
        let b: &'a [u8] = match self {
            CapabilityView::AddPath(b) => b,
            _ => &[],
        };
        b.chunks_exact(4).filter_map(|c| {
            Some(AddPathFamily {
                afi_safi: afi_safi_at(c, 0)?,
                send_receive: u8_at(c, 3)?,
            })
        })
    }

    /// Extended Next Hop Encoding tuples (empty for other capabilities).
    pub fn ext_next_hops(&self) -> impl Iterator<Item = ExtNextHop> + 'a {
        let b: &'a [u8] = match self {
            CapabilityView::ExtendedNextHop(b) => b,
            _ => &[],
        };
        b.chunks_exact(6).filter_map(|c| {
            Some(ExtNextHop {
                afi_safi: AfiSafi::new(Afi::from_u16(u16_at(c, 0)?), Safi::from_u8(u8_at(c, 3)?)),
                next_hop_afi: Afi::from_u16(u16_at(c, 4)?),
            })
        })
    }

    /// Long-lived GR entries (empty for other capabilities).
    pub fn llgr_families(&self) -> impl Iterator<Item = LlgrFamily> + 'a {
        let b: &'a [u8] = match self {
            CapabilityView::LongLivedGracefulRestart(b) => b,
            _ => &[],
        };
        b.chunks_exact(7).filter_map(|c| {
            Some(LlgrFamily {
                afi_safi: afi_safi_at(c, 0)?,
                flags: u8_at(c, 3)?,
                stale_time: u32_at(c, 3)? & 0x00ff_ffff,
            })
        })
    }

    /// An owned copy, with the family lists decoded.
    pub fn to_owned(&self) -> Capability {
        match *self {
            CapabilityView::Multiprotocol(a) => Capability::Multiprotocol(a),
            CapabilityView::RouteRefresh => Capability::RouteRefresh,
            CapabilityView::ExtendedNextHop(_) => {
                Capability::ExtendedNextHop(self.ext_next_hops().collect())
            }
            CapabilityView::ExtendedMessage => Capability::ExtendedMessage,
            CapabilityView::Role(r) => Capability::Role(r),
            CapabilityView::GracefulRestart {
                flags,
                restart_time,
                ..
            } => Capability::GracefulRestart {
                flags,
                restart_time,
                families: self.gr_families().collect(),
            },
            CapabilityView::FourOctetAsn(a) => Capability::FourOctetAsn(a),
            CapabilityView::AddPath(_) => Capability::AddPath(self.add_path_families().collect()),
            CapabilityView::EnhancedRouteRefresh => Capability::EnhancedRouteRefresh,
            CapabilityView::LongLivedGracefulRestart(_) => {
                Capability::LongLivedGracefulRestart(self.llgr_families().collect())
            }
            CapabilityView::Fqdn { hostname, domain } => Capability::Fqdn {
                hostname: hostname.to_vec(),
                domain: domain.to_vec(),
            },
            CapabilityView::Unknown { code, value } => Capability::Unknown {
                code,
                value: value.to_vec(),
            },
        }
    }
}

/// An owned capability; mirrors [`CapabilityView`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Capability {
    /// 1, RFC 4760 §8: one family the sender can carry.
    Multiprotocol(AfiSafi),
    /// 2, RFC 2918.
    RouteRefresh,
    /// 5, RFC 8950: the (NLRI family, next-hop AFI) pairs the sender can
    /// receive (and, RFC 8950 §3, send).
    ExtendedNextHop(Vec<ExtNextHop>),
    /// 6, RFC 8654: messages up to 65535 octets.
    ExtendedMessage,
    /// 9, RFC 9234: the sender's role (see [`role`]).
    Role(u8),
    /// 64, RFC 4724 §3.
    GracefulRestart {
        /// 4 bits; see [`CapabilityView::GracefulRestart`].
        flags: u8,
        /// 12 bits, seconds.
        restart_time: u16,
        /// Per-family entries.
        families: Vec<GrFamily>,
    },
    /// 65, RFC 6793: the sender's 4-octet AS.
    FourOctetAsn(Asn),
    /// 69, RFC 7911.
    AddPath(Vec<AddPathFamily>),
    /// 70, RFC 7313.
    EnhancedRouteRefresh,
    /// 71, RFC 9494.
    LongLivedGracefulRestart(Vec<LlgrFamily>),
    /// 73, draft-walton-bgp-hostname-capability.
    Fqdn {
        /// The host name, raw (usually ASCII).
        hostname: Vec<u8>,
        /// The domain name, raw (usually ASCII).
        domain: Vec<u8>,
    },
    /// Any other capability, kept as received.
    Unknown {
        /// The capability code.
        code: u8,
        /// The value octets.
        value: Vec<u8>,
    },
}

fn put_afi_safi(out: &mut Vec<u8>, a: AfiSafi) {
    out.extend_from_slice(&a.afi.to_u16().to_be_bytes());
    out.push(a.safi.to_u8());
}

impl Capability {
    /// The capability code.
    pub fn code(&self) -> u8 {
        match self {
            Capability::Multiprotocol(_) => cc::MULTIPROTOCOL,
            Capability::RouteRefresh => cc::ROUTE_REFRESH,
            Capability::ExtendedNextHop(_) => cc::EXTENDED_NEXT_HOP,
            Capability::ExtendedMessage => cc::EXTENDED_MESSAGE,
            Capability::Role(_) => cc::ROLE,
            Capability::GracefulRestart { .. } => cc::GRACEFUL_RESTART,
            Capability::FourOctetAsn(_) => cc::FOUR_OCTET_AS,
            Capability::AddPath(_) => cc::ADD_PATH,
            Capability::EnhancedRouteRefresh => cc::ENHANCED_ROUTE_REFRESH,
            Capability::LongLivedGracefulRestart(_) => cc::LONG_LIVED_GRACEFUL_RESTART,
            Capability::Fqdn { .. } => cc::FQDN,
            Capability::Unknown { code, .. } => *code,
        }
    }

    /// Appends the value octets (without code and length).
    pub fn encode_value(&self, out: &mut Vec<u8>) {
        match self {
            Capability::Multiprotocol(a) => {
                out.extend_from_slice(&a.afi.to_u16().to_be_bytes());
                out.push(0);
                out.push(a.safi.to_u8());
            }
            Capability::RouteRefresh
            | Capability::ExtendedMessage
            | Capability::EnhancedRouteRefresh => {}
            Capability::Role(r) => out.push(*r),
            Capability::GracefulRestart {
                flags,
                restart_time,
                families,
            } => {
                let w = (u16::from(*flags & 0x0f) << 12) | (restart_time & 0x0fff);
                out.extend_from_slice(&w.to_be_bytes());
                for f in families {
                    put_afi_safi(out, f.afi_safi);
                    out.push(f.flags);
                }
            }
            Capability::FourOctetAsn(a) => out.extend_from_slice(&a.0.to_be_bytes()),
            Capability::ExtendedNextHop(v) => {
                for t in v {
                    out.extend_from_slice(&t.afi_safi.afi.to_u16().to_be_bytes());
                    out.extend_from_slice(&u16::from(t.afi_safi.safi.to_u8()).to_be_bytes());
                    out.extend_from_slice(&t.next_hop_afi.to_u16().to_be_bytes());
                }
            }
            Capability::AddPath(v) => {
                for f in v {
                    put_afi_safi(out, f.afi_safi);
                    out.push(f.send_receive);
                }
            }
            Capability::LongLivedGracefulRestart(v) => {
                for f in v {
                    put_afi_safi(out, f.afi_safi);
                    out.push(f.flags);
                    out.extend_from_slice(&f.stale_time.to_be_bytes()[1..]);
                }
            }
            Capability::Fqdn { hostname, domain } => {
                // The length octets cap each name at 255 octets.
                let h = hostname.get(..255).unwrap_or(hostname);
                let d = domain.get(..255).unwrap_or(domain);
                out.push(h.len() as u8);
                out.extend_from_slice(h);
                out.push(d.len() as u8);
                out.extend_from_slice(d);
            }
            Capability::Unknown { value, .. } => out.extend_from_slice(value),
        }
    }

    /// Appends the TLV. A value longer than 255 octets cannot be expressed
    /// and is cut (only possible for hand-built capabilities).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.code());
        let at = out.len();
        out.push(0);
        self.encode_value(out);
        let len = out.len() - at - 1;
        if len > 255 {
            out.truncate(at + 1 + 255);
        }
        if let Some(l) = out.get_mut(at) {
            *l = len.min(255) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(code: u8, value: &[u8]) -> Capability {
        let v = CapabilityView::parse(code, value);
        let owned = v.to_owned();
        let mut out = Vec::new();
        owned.encode(&mut out);
        assert_eq!(out[0], code);
        assert_eq!(out[1] as usize, value.len());
        assert_eq!(&out[2..], value, "capability {code} must re-encode exactly");
        owned
    }

    #[test]
    fn known_capabilities() {
        assert_eq!(
            roundtrip(1, &[0, 2, 0, 1]),
            Capability::Multiprotocol(AfiSafi::IPV6_UNICAST)
        );
        // Non-zero reserved octet: kept raw so that it re-encodes.
        assert!(matches!(
            roundtrip(1, &[0, 2, 7, 1]),
            Capability::Unknown { code: 1, .. }
        ));
        assert_eq!(roundtrip(2, &[]), Capability::RouteRefresh);
        assert_eq!(roundtrip(70, &[]), Capability::EnhancedRouteRefresh);
        assert_eq!(roundtrip(6, &[]), Capability::ExtendedMessage);
        assert_eq!(roundtrip(9, &[3]), Capability::Role(role::CUSTOMER));
        assert_eq!(
            roundtrip(65, &[0, 3, 0x0d, 0x40]),
            Capability::FourOctetAsn(Asn(200_000))
        );
        assert_eq!(
            roundtrip(64, &[0x80, 0x78, 0, 1, 1, 0x80]),
            Capability::GracefulRestart {
                flags: 8,
                restart_time: 120,
                families: vec![GrFamily {
                    afi_safi: AfiSafi::IPV4_UNICAST,
                    flags: 0x80
                }]
            }
        );
        assert_eq!(
            roundtrip(69, &[0, 1, 1, 3, 0, 2, 1, 1]),
            Capability::AddPath(vec![
                AddPathFamily {
                    afi_safi: AfiSafi::IPV4_UNICAST,
                    send_receive: 3
                },
                AddPathFamily {
                    afi_safi: AfiSafi::IPV6_UNICAST,
                    send_receive: 1
                },
            ])
        );
        assert_eq!(
            roundtrip(71, &[0, 1, 1, 0x80, 0, 0x0e, 0x10]),
            Capability::LongLivedGracefulRestart(vec![LlgrFamily {
                afi_safi: AfiSafi::IPV4_UNICAST,
                flags: 0x80,
                stale_time: 3600
            }])
        );
        assert_eq!(
            roundtrip(73, &[2, b'r', b'1', 3, b'n', b'e', b't']),
            Capability::Fqdn {
                hostname: b"r1".to_vec(),
                domain: b"net".to_vec()
            }
        );
        assert!(matches!(
            roundtrip(73, &[2, b'r']),
            Capability::Unknown { .. }
        ));
        assert_eq!(
            roundtrip(5, &[0, 1, 0, 1, 0, 2, 0, 1, 0, 2, 0, 2]),
            Capability::ExtendedNextHop(vec![
                ExtNextHop::IPV4_UNICAST_V6,
                ExtNextHop {
                    afi_safi: AfiSafi::IPV4_MULTICAST,
                    next_hop_afi: Afi::Ipv6
                },
            ])
        );
        // A 2-octet SAFI above 255, or a short tuple: kept raw.
        assert!(matches!(
            roundtrip(5, &[0, 1, 1, 1, 0, 2]),
            Capability::Unknown { code: 5, .. }
        ));
        assert!(matches!(
            roundtrip(5, &[0, 1, 0, 1, 0]),
            Capability::Unknown { code: 5, .. }
        ));
        assert!(matches!(
            roundtrip(128, &[]),
            Capability::Unknown { code: 128, .. }
        ));
        assert!(matches!(
            roundtrip(65, &[0, 1]),
            Capability::Unknown { code: 65, .. }
        ));
    }
}

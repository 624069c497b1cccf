//! What was negotiated on a session, as far as the wire format cares.

use base::{Afi, AfiSafi, Safi};

/// Negotiated session parameters that change how bytes are read.
///
/// `Copy` and tiny so that every view can carry it by value.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ParseCtx {
    /// RFC 6793: both sides advertised the 4-octet ASN capability, so AS_PATH
    /// and AGGREGATOR carry 4-octet AS numbers.
    pub four_octet_asn: bool,
    /// RFC 8654: extended messages, maximum length 65535 instead of 4096.
    pub extended_message: bool,
    /// RFC 7911: the AFI/SAFIs on which we *receive* path identifiers.
    /// Bit per AFI/SAFI, see [`ParseCtx::add_path`].
    pub add_path_rx: u8,
    /// RFC 6396 §4.3.4: the attributes come from an MRT TABLE_DUMP_V2 RIB
    /// entry of this AFI/SAFI, where MP_REACH_NLRI is usually abbreviated to
    /// the next hop only. `None` for BGP sessions and BGP4MP records.
    pub mrt_rib: Option<AfiSafi>,
    /// What a BGP session accepts in MP_REACH_NLRI / MP_UNREACH_NLRI
    /// ([`SessionFamilies`]); `None` (MRT records, tools, tests) accepts
    /// every family and next hop.
    pub session: Option<SessionFamilies>,
}

/// The families a session negotiated and the RFC 8950 next hops it
/// accepts, one bit per AFI/SAFI as for ADD-PATH (only the four IPv4/IPv6
/// unicast/multicast families can be set; any other family is refused).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SessionFamilies {
    /// Families negotiated (RFC 4760 §8).
    pub negotiated: u8,
    /// IPv4 families whose NLRI may carry an IPv6 next hop: we advertised
    /// the Extended Next Hop Encoding capability for them (RFC 8950 §3).
    pub ext_next_hop: u8,
}

/// RFC 4271 §4: the maximum message size without extended messages.
pub const MAX_MESSAGE_LEN: usize = 4096;
/// RFC 8654: the maximum message size with extended messages.
pub const MAX_EXTENDED_MESSAGE_LEN: usize = 65535;

const fn add_path_bit(af: AfiSafi) -> u8 {
    match (af.afi, af.safi) {
        (Afi::Ipv4, Safi::Unicast) => 1,
        (Afi::Ipv4, Safi::Multicast) => 2,
        (Afi::Ipv6, Safi::Unicast) => 4,
        (Afi::Ipv6, Safi::Multicast) => 8,
        _ => 0,
    }
}

impl ParseCtx {
    /// A classic RFC 4271 session: 2-octet ASNs, no ADD-PATH, 4096 bytes.
    pub const fn legacy() -> ParseCtx {
        ParseCtx {
            four_octet_asn: false,
            extended_message: false,
            add_path_rx: 0,
            mrt_rib: None,
            session: None,
        }
    }

    /// A modern session: 4-octet ASNs, extended messages, no ADD-PATH.
    /// Also what BGP4MP_MESSAGE_AS4 MRT records need.
    pub const fn modern() -> ParseCtx {
        ParseCtx {
            four_octet_asn: true,
            extended_message: true,
            add_path_rx: 0,
            mrt_rib: None,
            session: None,
        }
    }

    /// Attributes of an MRT TABLE_DUMP_V2 RIB entry of `af` (RFC 6396
    /// §4.3.4): 4-octet ASNs always, MP_REACH_NLRI maybe abbreviated.
    pub const fn mrt_rib(af: AfiSafi) -> ParseCtx {
        ParseCtx {
            four_octet_asn: true,
            extended_message: true,
            add_path_rx: 0,
            mrt_rib: Some(af),
            session: None,
        }
    }

    /// Whether NLRI of `af` carry a 4-octet path identifier (RFC 7911).
    /// Only the four IPv4/IPv6 unicast/multicast families are tracked.
    pub const fn add_path(&self, af: AfiSafi) -> bool {
        let bit = add_path_bit(af);
        bit != 0 && self.add_path_rx & bit != 0
    }

    /// Returns a copy with ADD-PATH receive set or cleared for `af`.
    pub const fn with_add_path(mut self, af: AfiSafi, on: bool) -> ParseCtx {
        let bit = add_path_bit(af);
        if on {
            self.add_path_rx |= bit;
        } else {
            self.add_path_rx &= !bit;
        }
        self
    }

    /// Returns a copy that accepts only `families` in MP_REACH_NLRI /
    /// MP_UNREACH_NLRI, and an IPv6 next hop for IPv4 NLRI only on the
    /// families of `ext_next_hop` (a BGP session; see [`SessionFamilies`]).
    pub fn with_session_families(
        mut self,
        families: &[AfiSafi],
        ext_next_hop: &[AfiSafi],
    ) -> ParseCtx {
        let bits = |v: &[AfiSafi]| v.iter().fold(0u8, |b, &af| b | add_path_bit(af));
        self.session = Some(SessionFamilies {
            negotiated: bits(families),
            ext_next_hop: bits(ext_next_hop),
        });
        self
    }

    /// Whether NLRI of `af` are accepted: always outside a session, else
    /// only a negotiated family (RFC 4760 §7).
    pub const fn accepts_family(&self, af: AfiSafi) -> bool {
        match self.session {
            None => true,
            Some(s) => {
                let bit = add_path_bit(af);
                bit != 0 && s.negotiated & bit != 0
            }
        }
    }

    /// Whether NLRI of the IPv4 family `af` may carry an IPv6 next hop:
    /// always outside a session, else only where we advertised the Extended
    /// Next Hop Encoding capability (RFC 8950 §3).
    pub const fn accepts_v6_next_hop(&self, af: AfiSafi) -> bool {
        match self.session {
            None => true,
            Some(s) => {
                let bit = add_path_bit(af);
                bit != 0 && s.ext_next_hop & bit != 0
            }
        }
    }

    /// Returns a copy with ADD-PATH on for all four tracked families.
    pub const fn with_add_path_all(mut self) -> ParseCtx {
        self.add_path_rx = 0x0f;
        self
    }

    /// Returns a copy with 4-octet AS numbers in AS_PATH/AGGREGATOR on or off (RFC 6793).
    pub const fn with_four_octet_asn(mut self, on: bool) -> ParseCtx {
        self.four_octet_asn = on;
        self
    }

    /// Returns a copy with the extended message size (65535 octets, RFC 8654) on or off.
    pub const fn with_extended_message(mut self, on: bool) -> ParseCtx {
        self.extended_message = on;
        self
    }

    /// The largest message length acceptable on this session.
    pub const fn max_message_len(&self) -> usize {
        if self.extended_message {
            MAX_EXTENDED_MESSAGE_LEN
        } else {
            MAX_MESSAGE_LEN
        }
    }

    /// Octets per AS number in AS_PATH / AGGREGATOR.
    pub const fn as_len(&self) -> usize {
        if self.four_octet_asn {
            4
        } else {
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_path_bits_are_per_family() {
        let c = ParseCtx::legacy().with_add_path(AfiSafi::IPV6_UNICAST, true);
        assert!(c.add_path(AfiSafi::IPV6_UNICAST));
        assert!(!c.add_path(AfiSafi::IPV4_UNICAST));
        assert!(!c.add_path(AfiSafi::new(Afi::Ipv4, Safi::Other(4))));
        let c = c.with_add_path(AfiSafi::IPV6_UNICAST, false);
        assert_eq!(c, ParseCtx::legacy());
        assert_eq!(ParseCtx::modern().max_message_len(), 65535);
        assert_eq!(ParseCtx::legacy().max_message_len(), 4096);
    }

    #[test]
    fn session_families_gate_mp_families_and_v6_next_hops() {
        let any = ParseCtx::modern();
        assert!(any.accepts_family(AfiSafi::IPV4_MULTICAST));
        assert!(any.accepts_v6_next_hop(AfiSafi::IPV4_UNICAST));
        let s = any.with_session_families(
            &[AfiSafi::IPV4_UNICAST, AfiSafi::IPV6_UNICAST],
            &[AfiSafi::IPV4_UNICAST],
        );
        assert!(s.accepts_family(AfiSafi::IPV6_UNICAST));
        assert!(!s.accepts_family(AfiSafi::IPV4_MULTICAST));
        assert!(!s.accepts_family(AfiSafi::new(Afi::Ipv4, Safi::Other(4))));
        assert!(s.accepts_v6_next_hop(AfiSafi::IPV4_UNICAST));
        assert!(!s.accepts_v6_next_hop(AfiSafi::IPV4_MULTICAST));
    }
}

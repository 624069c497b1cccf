use std::fmt;

/// Address Family Identifier (IANA "Address Family Numbers").
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Afi {
    /// IPv4 (AFI 1).
    Ipv4,
    /// IPv6 (AFI 2).
    Ipv6,
    /// Any other value, kept as received.
    Other(u16),
}

impl Afi {
    /// The AFI for a wire value; unknown values become [`Afi::Other`].
    pub const fn from_u16(v: u16) -> Afi {
        match v {
            1 => Afi::Ipv4,
            2 => Afi::Ipv6,
            o => Afi::Other(o),
        }
    }
    /// The wire value (inverse of [`Afi::from_u16`]).
    pub const fn to_u16(self) -> u16 {
        match self {
            Afi::Ipv4 => 1,
            Afi::Ipv6 => 2,
            Afi::Other(o) => o,
        }
    }
    /// Length in octets of a full address of this family, if known.
    pub const fn addr_len(self) -> Option<usize> {
        match self {
            Afi::Ipv4 => Some(4),
            Afi::Ipv6 => Some(16),
            Afi::Other(_) => None,
        }
    }
}

/// Subsequent Address Family Identifier (RFC 4760).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Safi {
    /// Unicast forwarding (SAFI 1).
    Unicast,
    /// Multicast RPF (SAFI 2).
    Multicast,
    /// Any other value, kept as received.
    Other(u8),
}

impl Safi {
    /// The SAFI for a wire value; unknown values become [`Safi::Other`].
    pub const fn from_u8(v: u8) -> Safi {
        match v {
            1 => Safi::Unicast,
            2 => Safi::Multicast,
            o => Safi::Other(o),
        }
    }
    /// The wire value (inverse of [`Safi::from_u8`]).
    pub const fn to_u8(self) -> u8 {
        match self {
            Safi::Unicast => 1,
            Safi::Multicast => 2,
            Safi::Other(o) => o,
        }
    }
}

/// An (AFI, SAFI) pair, the unit of capability negotiation.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AfiSafi {
    /// The address family.
    pub afi: Afi,
    /// The subsequent address family.
    pub safi: Safi,
}

impl AfiSafi {
    /// IPv4 unicast (1/1), the family a session carries without MP-BGP.
    pub const IPV4_UNICAST: AfiSafi = AfiSafi::new(Afi::Ipv4, Safi::Unicast);
    /// IPv6 unicast (2/1).
    pub const IPV6_UNICAST: AfiSafi = AfiSafi::new(Afi::Ipv6, Safi::Unicast);
    /// IPv4 multicast (1/2).
    pub const IPV4_MULTICAST: AfiSafi = AfiSafi::new(Afi::Ipv4, Safi::Multicast);
    /// IPv6 multicast (2/2).
    pub const IPV6_MULTICAST: AfiSafi = AfiSafi::new(Afi::Ipv6, Safi::Multicast);

    /// The pair `(afi, safi)`.
    pub const fn new(afi: Afi, safi: Safi) -> AfiSafi {
        AfiSafi { afi, safi }
    }
}

impl fmt::Display for AfiSafi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = match self.afi {
            Afi::Ipv4 => "ipv4".to_string(),
            Afi::Ipv6 => "ipv6".to_string(),
            Afi::Other(o) => format!("afi{o}"),
        };
        let s = match self.safi {
            Safi::Unicast => "unicast".to_string(),
            Safi::Multicast => "multicast".to_string(),
            Safi::Other(o) => format!("safi{o}"),
        };
        write!(f, "{a}-{s}")
    }
}

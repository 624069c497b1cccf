use std::fmt;

/// A BGP autonomous system number, always held as 4 octets (RFC 6793).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Asn(pub u32);

impl Asn {
    /// RFC 6793 §9: AS_TRANS, placed in 2-octet fields for ASNs above 65535.
    pub const TRANS: Asn = Asn(23456);

    /// True when the ASN does not fit a 2-octet field.
    pub const fn is_4byte(self) -> bool {
        self.0 > 0xffff
    }

    /// The value to put in a 2-octet field: the ASN itself or AS_TRANS.
    pub const fn to_u16_or_trans(self) -> u16 {
        if self.0 > 0xffff {
            Asn::TRANS.0 as u16
        } else {
            self.0 as u16
        }
    }
}

impl From<u32> for Asn {
    fn from(v: u32) -> Self {
        Asn(v)
    }
}

impl fmt::Display for Asn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // asplain notation (RFC 5396), as BIRD, FRR and bgpdump print it.
        write!(f, "{}", self.0)
    }
}

//! Fixed-size attribute values: ORIGIN (RFC 4271 §5.1.1) and
//! AGGREGATOR / AS4_AGGREGATOR (RFC 4271 §5.1.7, RFC 6793 §3).
//!
//! ```text
//! ORIGIN:      +--------+            AGGREGATOR: +------------+--------------+
//!              | 0/1/2  |                        | AS (2 or 4)| IPv4 addr (4)|
//!              +--------+                        +------------+--------------+
//! ```

use std::fmt;
use std::net::Ipv4Addr;

use base::Asn;

/// ORIGIN values.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// IGP (0): interior to the originating AS.
    Igp = 0,
    /// EGP (1): learned by the EGP protocol.
    Egp = 1,
    /// INCOMPLETE (2): learned some other way (redistribution).
    Incomplete = 2,
}

impl Origin {
    /// The origin for a wire value, `None` above 2.
    pub const fn from_u8(v: u8) -> Option<Origin> {
        match v {
            0 => Some(Origin::Igp),
            1 => Some(Origin::Egp),
            2 => Some(Origin::Incomplete),
            _ => None,
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The words bgpdump and most CLIs print.
        f.write_str(match self {
            Origin::Igp => "IGP",
            Origin::Egp => "EGP",
            Origin::Incomplete => "INCOMPLETE",
        })
    }
}

/// AGGREGATOR or AS4_AGGREGATOR value.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Aggregator {
    /// The AS that formed the aggregate.
    pub asn: Asn,
    /// The BGP identifier (IPv4 address) of the speaker that formed it.
    pub addr: Ipv4Addr,
}

impl Aggregator {
    /// Parses a 6-octet (2-octet AS) or 8-octet (4-octet AS) value.
    pub(crate) fn parse(v: &[u8], as_len: usize) -> Option<Aggregator> {
        if v.len() != as_len + 4 {
            return None;
        }
        let asn = match as_len {
            2 => u32::from(crate::util::u16_at(v, 0)?),
            _ => crate::util::u32_at(v, 0)?,
        };
        let addr = Ipv4Addr::from(crate::util::u32_at(v, as_len)?);
        Some(Aggregator {
            asn: Asn(asn),
            addr,
        })
    }

    pub(crate) fn encode(&self, four_octet: bool, out: &mut Vec<u8>) {
        if four_octet {
            out.extend_from_slice(&self.asn.0.to_be_bytes());
        } else {
            out.extend_from_slice(&self.asn.to_u16_or_trans().to_be_bytes());
        }
        out.extend_from_slice(&self.addr.octets());
    }
}

//! ROUTE-REFRESH (RFC 2918 §3), with the RFC 7313 §3.2 subtype carried in
//! the formerly reserved octet.
//!
//! ```text
//!  0       7      15      23      31
//! +-------+-------+-------+-------+
//! |      AFI      | Subtype| SAFI |   (after the 19-byte header)
//! +-------+-------+-------+-------+
//! ```
//! Subtype 0 = normal request, 1 = BoRR, 2 = EoRR (RFC 7313).

use base::{Afi, AfiSafi, Safi};

use crate::consts::msg_type;
use crate::ctx::ParseCtx;
use crate::error::{EncodeError, WireError};
use crate::header::{begin_message, finish_message, HEADER_LEN};
use crate::util::{u16_at, u8_at};

/// A ROUTE-REFRESH message. It borrows nothing, so the view is the repr.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct RouteRefresh {
    /// The address family to refresh.
    pub afi: Afi,
    /// The subsequent address family to refresh.
    pub safi: Safi,
    /// RFC 7313 message subtype ([`crate::consts::rr_subtype`]); any value
    /// is kept as received, RFC 7313 §5 says to ignore unknown ones.
    pub subtype: u8,
}

impl RouteRefresh {
    /// A message for `af` with `subtype` (see [`crate::consts::rr_subtype`]).
    pub const fn new(af: AfiSafi, subtype: u8) -> RouteRefresh {
        RouteRefresh {
            afi: af.afi,
            safi: af.safi,
            subtype,
        }
    }

    /// The (AFI, SAFI) pair.
    pub const fn afi_safi(&self) -> AfiSafi {
        AfiSafi::new(self.afi, self.safi)
    }

    /// Decodes the 4-octet body. Any other length is RFC 7313 §5's
    /// "Invalid Message Length" (7/1).
    pub fn parse(body: &[u8]) -> Result<RouteRefresh, WireError> {
        let err = WireError::RouteRefreshLength {
            length: (body.len() + HEADER_LEN).min(u16::MAX as usize) as u16,
        };
        if body.len() != 4 {
            return Err(err);
        }
        let (Some(afi), Some(subtype), Some(safi)) =
            (u16_at(body, 0), u8_at(body, 2), u8_at(body, 3))
        else {
            return Err(err);
        };
        Ok(RouteRefresh {
            afi: Afi::from_u16(afi),
            safi: Safi::from_u8(safi),
            subtype,
        })
    }

    /// Appends the 4-octet body, without the header.
    pub fn encode_body(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.afi.to_u16().to_be_bytes());
        out.push(self.subtype);
        out.push(self.safi.to_u8());
    }

    /// Appends the whole message including the header.
    pub fn encode(&self, ctx: ParseCtx, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let s = begin_message(out, msg_type::ROUTE_REFRESH);
        self.encode_body(out);
        finish_message(out, s, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Disposition;

    #[test]
    fn enhanced_subtypes() {
        let rr = RouteRefresh::parse(&[0, 2, 1, 1]).unwrap();
        assert_eq!(rr, RouteRefresh::new(AfiSafi::IPV6_UNICAST, 1));
        let mut out = Vec::new();
        rr.encode(ParseCtx::legacy(), &mut out).unwrap();
        assert_eq!(out.len(), 23);
        assert_eq!(&out[16..], &[0, 23, 5, 0, 2, 1, 1]);
    }

    #[test]
    fn bad_length_is_7_1_with_whole_message() {
        let body = [0, 1, 0, 1, 9];
        let e = RouteRefresh::parse(&body).unwrap_err();
        assert_eq!(e.code(), (7, 1));
        assert_eq!(e.disposition(), Disposition::SessionReset);
        let n = e.notification(&body);
        assert_eq!(n.data.len(), 24);
        assert_eq!(&n.data[16..19], &[0, 24, 5]);
        assert_eq!(&n.data[19..], &body);
    }
}

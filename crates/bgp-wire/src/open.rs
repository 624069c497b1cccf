//! OPEN (RFC 4271 §4.2), optional parameters (RFC 5492) and the extended
//! optional parameters length of RFC 9072.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+
//! |    Version    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |     My Autonomous System      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |           Hold Time           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         BGP Identifier                        |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Opt Parm Len  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |             Optional Parameters (variable)                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! Optional parameter:           RFC 9072 extended form (Opt Parm Len
//! +---------------+-----------+ = 255 and Non-Ext OP Type = 255):
//! | Parm. Type (1)| Len (1)   | +-------+-------+---------------+
//! +---------------+-----------+ |  255  |  255  | Ext. Len (2)  |
//! | Parameter Value (variable)| +-------+-------+---------------+
//! +---------------------------+ then each parameter: Type (1), Len (2).
//! ```

use std::net::Ipv4Addr;

use base::Asn;

use crate::capability::{Capability, CapabilityView, RawCapability};
use crate::consts::{msg_type, opt_param};
use crate::ctx::ParseCtx;
use crate::error::{EncodeError, WireError};
use crate::header::{begin_message, finish_message, HEADER_LEN};
use crate::util::{patch_u16, u16_at, u32_at, u8_at};

/// Borrowed view of an OPEN body.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct OpenView<'a> {
    /// BGP version as sent (4 for RFC 4271).
    pub version: u8,
    /// The 2-octet "My Autonomous System" (AS_TRANS for 4-octet ASNs).
    pub my_as: u16,
    /// Proposed hold time in seconds, as sent.
    pub hold_time: u16,
    /// The sender's BGP identifier, as sent.
    pub bgp_id: Ipv4Addr,
    /// Whether the RFC 9072 extended parameters length form was used.
    pub extended_params: bool,
    params: &'a [u8],
    params_offset: usize,
}

/// One optional parameter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct OptParamView<'a> {
    /// Parameter type (see [`crate::consts::opt_param`]).
    pub param_type: u8,
    /// The value octets.
    pub value: &'a [u8],
    /// Offset of the value in the OPEN body.
    pub value_offset: u32,
}

/// Iterator over optional parameters; stops after the first error.
#[derive(Clone, Debug)]
pub struct OptParamIter<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
    ext: bool,
}

impl<'a> Iterator for OptParamIter<'a> {
    type Item = Result<OptParamView<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.buf.get(self.pos..).filter(|r| !r.is_empty())?;
        let (hdr, len) = if self.ext {
            (3, u16_at(rest, 1).map(usize::from))
        } else {
            (2, u8_at(rest, 1).map(usize::from))
        };
        let item = match (u8_at(rest, 0), len) {
            (Some(t), Some(len)) => match rest.get(hdr..hdr + len) {
                Some(value) => {
                    let value_offset = (self.base + self.pos + hdr) as u32;
                    self.pos += hdr + len;
                    Ok(OptParamView {
                        param_type: t,
                        value,
                        value_offset,
                    })
                }
                None => Err(WireError::MalformedOpen),
            },
            _ => Err(WireError::MalformedOpen),
        };
        if item.is_err() {
            self.pos = self.buf.len();
        }
        Some(item)
    }
}

/// Iterator over the capabilities of every capabilities parameter, in order.
#[derive(Clone, Debug)]
pub struct CapabilityIter<'a> {
    params: OptParamIter<'a>,
    cur: &'a [u8],
    cur_offset: usize,
}

/// Splits the first capability TLV off `b`.
fn next_cap(b: &[u8]) -> Option<(u8, &[u8], usize)> {
    let code = u8_at(b, 0)?;
    let len = u8_at(b, 1)? as usize;
    Some((code, b.get(2..2 + len)?, 2 + len))
}

impl<'a> Iterator for CapabilityIter<'a> {
    type Item = Result<RawCapability<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if !self.cur.is_empty() {
                let Some((code, value, n)) = next_cap(self.cur) else {
                    self.cur = &[];
                    self.params.pos = self.params.buf.len();
                    return Some(Err(WireError::MalformedOpen));
                };
                let offset = self.cur_offset as u32;
                self.cur = self.cur.get(n..).unwrap_or(&[]);
                self.cur_offset += n;
                return Some(Ok(RawCapability {
                    code,
                    value,
                    offset,
                }));
            }
            match self.params.next()? {
                Err(e) => return Some(Err(e)),
                Ok(p) if p.param_type == opt_param::CAPABILITIES => {
                    self.cur = p.value;
                    self.cur_offset = p.value_offset as usize;
                }
                Ok(_) => {}
            }
        }
    }
}

impl<'a> OpenView<'a> {
    /// Decodes the fixed fields and frames the optional parameters.
    pub fn parse(body: &'a [u8]) -> Result<OpenView<'a>, WireError> {
        let short = WireError::BadMessageLength {
            length: (body.len() + HEADER_LEN).min(u16::MAX as usize) as u16,
        };
        let (Some(version), Some(my_as), Some(hold_time), Some(id), Some(opt_len)) = (
            u8_at(body, 0),
            u16_at(body, 1),
            u16_at(body, 3),
            u32_at(body, 5),
            u8_at(body, 9),
        ) else {
            return Err(short);
        };
        // RFC 9072 §2: 255 followed by a Non-Ext OP Type of 255.
        let (extended_params, params_offset, len) =
            if opt_len == 255 && u8_at(body, 10) == Some(opt_param::EXTENDED_LENGTH) {
                let l = u16_at(body, 11).ok_or(WireError::MalformedOpen)?;
                (true, 13, l as usize)
            } else {
                (false, 10, opt_len as usize)
            };
        if body.len() != params_offset + len {
            return Err(WireError::MalformedOpen);
        }
        let params = body.get(params_offset..).ok_or(WireError::MalformedOpen)?;
        Ok(OpenView {
            version,
            my_as,
            hold_time,
            bgp_id: Ipv4Addr::from(id),
            extended_params,
            params,
            params_offset,
        })
    }

    /// The optional parameters in wire order.
    pub fn params(&self) -> OptParamIter<'a> {
        OptParamIter {
            buf: self.params,
            pos: 0,
            base: self.params_offset,
            ext: self.extended_params,
        }
    }

    /// The capabilities of every capabilities parameter, in wire order.
    pub fn capabilities(&self) -> CapabilityIter<'a> {
        CapabilityIter {
            params: self.params(),
            cur: &[],
            cur_offset: 0,
        }
    }

    /// The 4-octet AS capability value, if advertised (RFC 6793 §3).
    pub fn four_octet_asn(&self) -> Option<Asn> {
        self.capabilities().find_map(|c| match c {
            Ok(c) => match CapabilityView::parse(c.code, c.value) {
                CapabilityView::FourOctetAsn(a) => Some(a),
                _ => None,
            },
            Err(_) => None,
        })
    }

    /// The speaker's ASN: the 4-octet capability if present, else My AS.
    pub fn asn(&self) -> Asn {
        self.four_octet_asn().unwrap_or(Asn(u32::from(self.my_as)))
    }

    /// RFC 4271 §6.2 checks that need no configuration: version 4, hold
    /// time 0 or >= 3, non-zero BGP Identifier (RFC 6286 §2.2), only
    /// capability parameters (RFC 5492), and well-framed capabilities.
    /// Bad Peer AS and unsupported capabilities are for the speaker.
    pub fn validate(&self) -> Result<(), WireError> {
        if self.version != 4 {
            return Err(WireError::UnsupportedVersionNumber {
                version: self.version,
            });
        }
        if self.hold_time == 1 || self.hold_time == 2 {
            return Err(WireError::UnacceptableHoldTime {
                hold_time: self.hold_time,
            });
        }
        if self.bgp_id.is_unspecified() {
            return Err(WireError::BadBgpIdentifier);
        }
        for p in self.params() {
            let p = p?;
            if p.param_type != opt_param::CAPABILITIES {
                return Err(WireError::UnsupportedOptionalParameter {
                    param_type: p.param_type,
                });
            }
        }
        for c in self.capabilities() {
            c?;
        }
        Ok(())
    }

    /// Owned copy. Parameters whose capabilities cannot be framed are kept
    /// as [`OptParam::Other`] raw bytes so that nothing is lost.
    pub fn to_owned(&self) -> Result<OpenMessage, WireError> {
        let mut params = Vec::new();
        for p in self.params() {
            let p = p?;
            params.push(OptParam::from_view(p));
        }
        Ok(OpenMessage {
            version: self.version,
            my_as: self.my_as,
            hold_time: self.hold_time,
            bgp_id: self.bgp_id,
            params,
            extended_params: self.extended_params,
        })
    }
}

/// An owned optional parameter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OptParam {
    /// Type 2 (RFC 5492); one parameter may hold several capabilities.
    Capabilities(Vec<Capability>),
    /// Any other parameter, or a type 2 whose content cannot be framed.
    Other {
        /// The parameter type.
        param_type: u8,
        /// The value octets.
        value: Vec<u8>,
    },
}

impl OptParam {
    fn from_view(p: OptParamView<'_>) -> OptParam {
        if p.param_type == opt_param::CAPABILITIES {
            let mut caps = Vec::new();
            let mut b = p.value;
            while !b.is_empty() {
                let Some((code, value, n)) = next_cap(b) else {
                    caps.clear();
                    break;
                };
                caps.push(CapabilityView::parse(code, value).to_owned());
                b = b.get(n..).unwrap_or(&[]);
            }
            if b.is_empty() {
                return OptParam::Capabilities(caps);
            }
        }
        OptParam::Other {
            param_type: p.param_type,
            value: p.value.to_vec(),
        }
    }

    fn param_type(&self) -> u8 {
        match self {
            OptParam::Capabilities(_) => opt_param::CAPABILITIES,
            OptParam::Other { param_type, .. } => *param_type,
        }
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        match self {
            OptParam::Capabilities(caps) => caps.iter().for_each(|c| c.encode(out)),
            OptParam::Other { value, .. } => out.extend_from_slice(value),
        }
    }
}

/// An owned OPEN message.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OpenMessage {
    /// BGP version (4).
    pub version: u8,
    /// The 2-octet "My Autonomous System" (AS_TRANS for 4-octet ASNs).
    pub my_as: u16,
    /// Proposed hold time in seconds.
    pub hold_time: u16,
    /// The BGP identifier.
    pub bgp_id: Ipv4Addr,
    /// The optional parameters, in order.
    pub params: Vec<OptParam>,
    /// Use the RFC 9072 form. Forced on when parameters exceed 255 octets.
    pub extended_params: bool,
}

impl OpenMessage {
    /// A version-4 OPEN carrying `caps` in one capabilities parameter, with
    /// My AS set to `asn` or AS_TRANS (RFC 6793 §4.1). Add
    /// [`Capability::FourOctetAsn`] yourself.
    pub fn new(asn: Asn, hold_time: u16, bgp_id: Ipv4Addr, caps: Vec<Capability>) -> OpenMessage {
        OpenMessage {
            version: 4,
            my_as: asn.to_u16_or_trans(),
            hold_time,
            bgp_id,
            params: vec![OptParam::Capabilities(caps)],
            extended_params: false,
        }
    }

    /// All capabilities, across parameters.
    pub fn capabilities(&self) -> impl Iterator<Item = &Capability> {
        self.params.iter().flat_map(|p| match p {
            OptParam::Capabilities(c) => c.as_slice(),
            OptParam::Other { .. } => &[],
        })
    }

    fn encode_params(&self, ext: bool, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let start = out.len();
        if ext {
            out.extend_from_slice(&[255, opt_param::EXTENDED_LENGTH, 0, 0]);
        } else {
            out.push(0);
        }
        let params_start = out.len();
        for p in &self.params {
            out.push(p.param_type());
            let at = out.len();
            out.extend_from_slice(if ext { &[0, 0] } else { &[0] });
            p.encode_value(out);
            let len = out.len() - at - if ext { 2 } else { 1 };
            if ext {
                patch_u16(
                    out,
                    at,
                    u16::try_from(len).map_err(|_| EncodeError::FieldTooLong)?,
                );
            } else {
                let l = u8::try_from(len).map_err(|_| EncodeError::FieldTooLong)?;
                if let Some(b) = out.get_mut(at) {
                    *b = l;
                }
            }
        }
        let total = out.len() - params_start;
        if ext {
            patch_u16(
                out,
                start + 2,
                u16::try_from(total).map_err(|_| EncodeError::FieldTooLong)?,
            );
        } else {
            let l = u8::try_from(total).map_err(|_| EncodeError::FieldTooLong)?;
            if let Some(b) = out.get_mut(start) {
                *b = l;
            }
        }
        Ok(())
    }

    /// Appends the body, without the header; fails if a parameter is too long for its length field.
    pub fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        out.push(self.version);
        out.extend_from_slice(&self.my_as.to_be_bytes());
        out.extend_from_slice(&self.hold_time.to_be_bytes());
        out.extend_from_slice(&self.bgp_id.octets());
        let mark = out.len();
        if !self.extended_params && self.encode_params(false, out).is_ok() {
            return Ok(());
        }
        out.truncate(mark);
        self.encode_params(true, out)
    }

    /// Appends the whole message including the header.
    pub fn encode(&self, ctx: ParseCtx, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let s = begin_message(out, msg_type::OPEN);
        if let Err(e) = self.encode_body(out) {
            out.truncate(s);
            return Err(e);
        }
        finish_message(out, s, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Disposition;
    use base::AfiSafi;

    /// A real-looking OPEN: AS 65001, hold 180, id 10.0.0.1, with
    /// MP ipv4-unicast, route refresh, Cisco route refresh and 4-octet AS,
    /// each in its own parameter as many implementations send them.
    const OPEN_BODY: &[u8] = &[
        4, 0xfd, 0xe9, 0, 180, 10, 0, 0, 1, 24, //
        2, 6, 1, 4, 0, 1, 0, 1, //
        2, 2, 2, 0, //
        2, 2, 128, 0, //
        2, 6, 65, 4, 0, 0, 0xfd, 0xe9,
    ];

    #[test]
    fn parse_open() {
        let o = OpenView::parse(OPEN_BODY).unwrap();
        assert_eq!((o.version, o.my_as, o.hold_time), (4, 65001, 180));
        assert_eq!(o.bgp_id, Ipv4Addr::new(10, 0, 0, 1));
        let caps: Vec<_> = o
            .capabilities()
            .map(|c| {
                let c = c.unwrap();
                CapabilityView::parse(c.code, c.value)
            })
            .collect();
        assert_eq!(caps.len(), 4);
        assert_eq!(
            caps[0],
            CapabilityView::Multiprotocol(AfiSafi::IPV4_UNICAST)
        );
        assert_eq!(caps[1], CapabilityView::RouteRefresh);
        assert_eq!(
            caps[2],
            CapabilityView::Unknown {
                code: 128,
                value: &[]
            }
        );
        assert_eq!(o.asn(), Asn(65001));
        assert_eq!(o.validate(), Ok(()));
        let owned = o.to_owned().unwrap();
        let mut out = Vec::new();
        owned.encode(ParseCtx::legacy(), &mut out).unwrap();
        assert_eq!(&out[19..], OPEN_BODY);
        assert_eq!(out[18], 1);
    }

    #[test]
    fn open_errors() {
        let mut b = OPEN_BODY.to_vec();
        b[0] = 3;
        let e = OpenView::parse(&b).unwrap().validate().unwrap_err();
        assert_eq!(e.code(), (2, 1));
        assert_eq!(e.notification(&b).data, vec![0, 4]);
        let mut b = OPEN_BODY.to_vec();
        b[4] = 2;
        let e = OpenView::parse(&b).unwrap().validate().unwrap_err();
        assert_eq!(e.code(), (2, 6));
        let mut b = OPEN_BODY.to_vec();
        b[5..9].copy_from_slice(&[0; 4]);
        assert_eq!(
            OpenView::parse(&b).unwrap().validate(),
            Err(WireError::BadBgpIdentifier)
        );
        let mut b = OPEN_BODY.to_vec();
        b[10] = 1; // authentication parameter (deprecated)
        let e = OpenView::parse(&b).unwrap().validate().unwrap_err();
        assert_eq!(e.code(), (2, 4));
        assert_eq!(e.disposition(), Disposition::SessionReset);
        // Opt Parm Len disagreeing with the message.
        let mut b = OPEN_BODY.to_vec();
        b[9] = 25;
        assert_eq!(OpenView::parse(&b), Err(WireError::MalformedOpen));
        // A capability overrunning its parameter.
        let mut b = OPEN_BODY.to_vec();
        b[13] = 5;
        let o = OpenView::parse(&b).unwrap();
        assert_eq!(o.validate(), Err(WireError::MalformedOpen));
        assert_eq!(
            OpenView::parse(&OPEN_BODY[..9]),
            Err(WireError::BadMessageLength { length: 28 })
        );
    }

    #[test]
    fn rfc9072_extended_params() {
        let mut caps = Vec::new();
        for i in 0..100u16 {
            caps.push(Capability::Unknown {
                code: 200,
                value: i.to_be_bytes().to_vec(),
            });
        }
        let m = OpenMessage::new(Asn(4_200_000_000), 90, Ipv4Addr::new(1, 2, 3, 4), caps);
        assert_eq!(m.my_as, 23456);
        let mut out = Vec::new();
        m.encode(ParseCtx::legacy(), &mut out).unwrap();
        assert_eq!(&out[28..31], &[255, 255, 1]);
        let v = OpenView::parse(&out[19..]).unwrap();
        assert!(v.extended_params);
        assert_eq!(v.capabilities().count(), 100);
        let mut back = v.to_owned().unwrap();
        assert!(back.extended_params);
        back.extended_params = false;
        assert_eq!(back, m);
        // Unsupported-capability data is the TLV itself (RFC 5492 §5).
        let c = v.capabilities().nth(3).unwrap().unwrap();
        let e = WireError::UnsupportedCapability {
            code: c.code,
            offset: c.offset,
            len: 4,
        };
        assert_eq!(e.notification(&out[19..]).data, vec![200, 2, 0, 3]);
    }
}

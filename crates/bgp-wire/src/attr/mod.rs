//! Path attributes (RFC 4271 §4.3): raw framing, typed borrowed views and
//! owned forms.
//!
//! ```text
//!  0                   1
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |O|T|P|E| unused| Attr. Type Code|
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Length (1 octet, 2 if E set)  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Attribute Value (Length octets)
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-
//! O optional, T transitive, P partial, E extended length
//! ```

pub mod aspath;
pub mod community;
pub mod mp;
pub mod simple;

use std::net::Ipv4Addr;

use base::Asn;

use crate::consts::{attr_flags as af, attr_type as at};
use crate::ctx::ParseCtx;
use crate::error::{AttrRef, WireError};
use crate::util::{u16_at, u32_at, u8_at};

use aspath::{AsPath, AsPathView};
use community::{
    write_list, ClusterList, Communities, Community, ExtCommunities, ExtCommunity,
    Ipv6ExtCommunities, Ipv6ExtCommunity, LargeCommunities, LargeCommunity,
};
use mp::{MpReach, MpReachView, MpUnreach, MpUnreachView};
use simple::{Aggregator, Origin};

/// One attribute TLV as found on the wire.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RawAttr<'a> {
    /// Attribute flags octet as received (see [`crate::consts::attr_flags`]).
    pub flags: u8,
    /// Attribute type code (see [`crate::consts::attr_type`]).
    pub type_code: u8,
    /// The value octets, after the 3- or 4-octet header.
    pub value: &'a [u8],
    /// Where the whole TLV starts (see [`AttrRef`] for what it is relative to).
    pub offset: u32,
    /// Length of the whole TLV, header included.
    pub tlv_len: u32,
}

/// Iterator over an attribute block; yields one `Err` and stops when an
/// attribute overruns the block (RFC 7606 §4).
#[derive(Clone, Debug)]
pub struct AttrIter<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> AttrIter<'a> {
    /// Iterates `buf`; error offsets are relative to it.
    pub const fn new(buf: &'a [u8]) -> AttrIter<'a> {
        AttrIter {
            buf,
            pos: 0,
            base: 0,
        }
    }

    /// Iterates `buf`, which starts `base` octets into the message body.
    pub const fn with_base(buf: &'a [u8], base: usize) -> AttrIter<'a> {
        AttrIter { buf, pos: 0, base }
    }

    fn parse_one(&mut self, rest: &'a [u8]) -> Result<RawAttr<'a>, WireError> {
        let offset = (self.base + self.pos) as u32;
        let overrun = |t: u8| WireError::AttributeOverrun {
            type_code: t,
            offset,
        };
        let (Some(flags), Some(type_code)) = (u8_at(rest, 0), u8_at(rest, 1)) else {
            return Err(overrun(0));
        };
        let (hdr, len) = if flags & af::EXTENDED_LENGTH != 0 {
            (4, u16_at(rest, 2).map(usize::from))
        } else {
            (3, u8_at(rest, 2).map(usize::from))
        };
        let len = len.ok_or(overrun(type_code))?;
        let value = rest.get(hdr..hdr + len).ok_or(overrun(type_code))?;
        self.pos += hdr + len;
        Ok(RawAttr {
            flags,
            type_code,
            value,
            offset,
            tlv_len: (hdr + len) as u32,
        })
    }
}

impl<'a> Iterator for AttrIter<'a> {
    type Item = Result<RawAttr<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        let rest = self.buf.get(self.pos..).filter(|r| !r.is_empty())?;
        let r = self.parse_one(rest);
        if r.is_err() {
            self.pos = self.buf.len();
        }
        Some(r)
    }
}

/// The Optional and Transitive bits an attribute must carry (RFC 4271 §5
/// and the defining RFCs), or `None` for type codes we do not know.
pub const fn expected_class(type_code: u8) -> Option<u8> {
    const WELL_KNOWN: u8 = af::TRANSITIVE;
    const OPT_NON_TRANS: u8 = af::OPTIONAL;
    const OPT_TRANS: u8 = af::OPTIONAL | af::TRANSITIVE;
    match type_code {
        at::ORIGIN | at::AS_PATH | at::NEXT_HOP | at::LOCAL_PREF | at::ATOMIC_AGGREGATE => {
            Some(WELL_KNOWN)
        }
        at::MULTI_EXIT_DISC
        | at::ORIGINATOR_ID
        | at::CLUSTER_LIST
        | at::MP_REACH_NLRI
        | at::MP_UNREACH_NLRI => Some(OPT_NON_TRANS),
        at::AGGREGATOR
        | at::COMMUNITIES
        | at::EXTENDED_COMMUNITIES
        | at::AS4_PATH
        | at::AS4_AGGREGATOR
        | at::IPV6_EXTENDED_COMMUNITIES
        | at::LARGE_COMMUNITY
        | at::ONLY_TO_CUSTOMER => Some(OPT_TRANS),
        _ => None,
    }
}

/// A typed, borrowed attribute.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PathAttribute<'a> {
    /// ORIGIN (type 1).
    Origin(Origin),
    /// AS_PATH (type 2), with 2- or 4-octet ASNs as the session negotiated.
    AsPath(AsPathView<'a>),
    /// NEXT_HOP (type 3): the IPv4 next hop.
    NextHop(Ipv4Addr),
    /// MULTI_EXIT_DISC (type 4).
    Med(u32),
    /// LOCAL_PREF (type 5).
    LocalPref(u32),
    /// ATOMIC_AGGREGATE (type 6), no value.
    AtomicAggregate,
    /// AGGREGATOR (type 7).
    Aggregator(Aggregator),
    /// COMMUNITIES (type 8, RFC 1997).
    Communities(Communities<'a>),
    /// ORIGINATOR_ID (type 9, RFC 4456).
    OriginatorId(Ipv4Addr),
    /// CLUSTER_LIST (type 10, RFC 4456).
    ClusterList(ClusterList<'a>),
    /// MP_REACH_NLRI (type 14, RFC 4760).
    MpReach(MpReachView<'a>),
    /// MP_UNREACH_NLRI (type 15, RFC 4760).
    MpUnreach(MpUnreachView<'a>),
    /// EXTENDED_COMMUNITIES (type 16, RFC 4360).
    ExtendedCommunities(ExtCommunities<'a>),
    /// AS4_PATH (type 17, RFC 6793), always 4-octet ASNs.
    As4Path(AsPathView<'a>),
    /// AS4_AGGREGATOR (type 18, RFC 6793).
    As4Aggregator(Aggregator),
    /// IPV6_EXTENDED_COMMUNITIES (type 25, RFC 5701).
    Ipv6ExtendedCommunities(Ipv6ExtCommunities<'a>),
    /// LARGE_COMMUNITY (type 32, RFC 8092).
    LargeCommunities(LargeCommunities<'a>),
    /// ONLY_TO_CUSTOMER (type 35, RFC 9234): the AS that set it.
    OnlyToCustomer(Asn),
    /// An optional attribute of a type we do not know.
    Unknown(RawAttr<'a>),
}

fn u32_value(v: &[u8]) -> Option<u32> {
    if v.len() == 4 {
        u32_at(v, 0)
    } else {
        None
    }
}

impl<'a> RawAttr<'a> {
    /// Whether the Optional flag is set.
    pub const fn is_optional(&self) -> bool {
        self.flags & af::OPTIONAL != 0
    }
    /// Whether the Transitive flag is set.
    pub const fn is_transitive(&self) -> bool {
        self.flags & af::TRANSITIVE != 0
    }
    /// Whether the Partial flag is set.
    pub const fn is_partial(&self) -> bool {
        self.flags & af::PARTIAL != 0
    }
    /// Whether the length field is two octets.
    pub const fn is_extended_length(&self) -> bool {
        self.flags & af::EXTENDED_LENGTH != 0
    }

    /// Type, flags and position of this TLV, without the borrow.
    pub const fn attr_ref(&self) -> AttrRef {
        AttrRef {
            type_code: self.type_code,
            flags: self.flags,
            offset: self.offset,
            len: self.tlv_len,
        }
    }

    /// Checks flags, length and content and returns the typed view. The
    /// error names the RFC 4271 §6.3 subcode; see
    /// [`WireError::disposition`] for the RFC 7606 reaction.
    pub fn typed(&self, ctx: ParseCtx) -> Result<PathAttribute<'a>, WireError> {
        let r = self.attr_ref();
        let Some(class) = expected_class(self.type_code) else {
            if !self.is_optional() {
                return Err(WireError::UnrecognizedWellKnown(r));
            }
            return Ok(PathAttribute::Unknown(*self));
        };
        // RFC 7606 §3 c: only the Optional and Transitive bits are checked.
        if self.flags & (af::OPTIONAL | af::TRANSITIVE) != class {
            return Err(WireError::AttributeFlags(r));
        }
        let v = self.value;
        let len_err = WireError::AttributeLength(r);
        let a = match self.type_code {
            at::ORIGIN => {
                let [o] = v else { return Err(len_err) };
                PathAttribute::Origin(Origin::from_u8(*o).ok_or(WireError::InvalidOrigin(r))?)
            }
            at::AS_PATH => PathAttribute::AsPath(
                AsPathView::parse(v, ctx.four_octet_asn).ok_or(WireError::MalformedAsPath(r))?,
            ),
            at::AS4_PATH => PathAttribute::As4Path(
                AsPathView::parse(v, true).ok_or(WireError::MalformedAsPath(r))?,
            ),
            at::NEXT_HOP => PathAttribute::NextHop(Ipv4Addr::from(u32_value(v).ok_or(len_err)?)),
            at::MULTI_EXIT_DISC => PathAttribute::Med(u32_value(v).ok_or(len_err)?),
            at::LOCAL_PREF => PathAttribute::LocalPref(u32_value(v).ok_or(len_err)?),
            at::ORIGINATOR_ID => {
                PathAttribute::OriginatorId(Ipv4Addr::from(u32_value(v).ok_or(len_err)?))
            }
            at::ONLY_TO_CUSTOMER => {
                PathAttribute::OnlyToCustomer(Asn(u32_value(v).ok_or(len_err)?))
            }
            at::ATOMIC_AGGREGATE if v.is_empty() => PathAttribute::AtomicAggregate,
            at::ATOMIC_AGGREGATE => return Err(len_err),
            at::AGGREGATOR => {
                PathAttribute::Aggregator(Aggregator::parse(v, ctx.as_len()).ok_or(len_err)?)
            }
            at::AS4_AGGREGATOR => {
                PathAttribute::As4Aggregator(Aggregator::parse(v, 4).ok_or(len_err)?)
            }
            at::COMMUNITIES => PathAttribute::Communities(Communities::parse(v).ok_or(len_err)?),
            at::CLUSTER_LIST => PathAttribute::ClusterList(ClusterList::parse(v).ok_or(len_err)?),
            at::EXTENDED_COMMUNITIES => {
                PathAttribute::ExtendedCommunities(ExtCommunities::parse(v).ok_or(len_err)?)
            }
            at::IPV6_EXTENDED_COMMUNITIES => {
                PathAttribute::Ipv6ExtendedCommunities(Ipv6ExtCommunities::parse(v).ok_or(len_err)?)
            }
            at::LARGE_COMMUNITY => {
                PathAttribute::LargeCommunities(LargeCommunities::parse(v).ok_or(len_err)?)
            }
            // RFC 4760 §7 / RFC 7606 §7.11: content errors are Optional
            // Attribute Errors.
            at::MP_REACH_NLRI => PathAttribute::MpReach(
                MpReachView::parse(v, ctx).ok_or(WireError::OptionalAttribute(r))?,
            ),
            at::MP_UNREACH_NLRI => PathAttribute::MpUnreach(
                MpUnreachView::parse(v, ctx).ok_or(WireError::OptionalAttribute(r))?,
            ),
            _ => PathAttribute::Unknown(*self),
        };
        Ok(a)
    }

    /// Owned copy that re-encodes to the same bytes: the typed value when
    /// it is well-formed, else the raw value.
    pub fn to_owned(&self, ctx: ParseCtx) -> PathAttr {
        let value = self
            .typed(ctx)
            .ok()
            .and_then(|t| t.to_owned_value())
            .unwrap_or_else(|| AttrValue::Raw {
                type_code: self.type_code,
                value: self.value.to_vec(),
            });
        PathAttr {
            flags: self.flags,
            value,
        }
    }
}

impl PathAttribute<'_> {
    /// The owned value; `None` only for MP attributes whose NLRI do not parse
    /// and for unknown attributes (which are kept raw by the caller).
    pub fn to_owned_value(&self) -> Option<AttrValue> {
        Some(match *self {
            PathAttribute::Origin(o) => AttrValue::Origin(o),
            PathAttribute::AsPath(p) => AttrValue::AsPath(p.to_owned()),
            PathAttribute::NextHop(a) => AttrValue::NextHop(a),
            PathAttribute::Med(v) => AttrValue::Med(v),
            PathAttribute::LocalPref(v) => AttrValue::LocalPref(v),
            PathAttribute::AtomicAggregate => AttrValue::AtomicAggregate,
            PathAttribute::Aggregator(a) => AttrValue::Aggregator(a),
            PathAttribute::Communities(c) => AttrValue::Communities(c.to_vec()),
            PathAttribute::OriginatorId(a) => AttrValue::OriginatorId(a),
            PathAttribute::ClusterList(c) => AttrValue::ClusterList(c.to_vec()),
            PathAttribute::MpReach(m) => AttrValue::MpReach(m.to_owned()?),
            PathAttribute::MpUnreach(m) => AttrValue::MpUnreach(m.to_owned()?),
            PathAttribute::ExtendedCommunities(c) => AttrValue::ExtendedCommunities(c.to_vec()),
            PathAttribute::As4Path(p) => AttrValue::As4Path(p.to_owned()),
            PathAttribute::As4Aggregator(a) => AttrValue::As4Aggregator(a),
            PathAttribute::Ipv6ExtendedCommunities(c) => {
                AttrValue::Ipv6ExtendedCommunities(c.to_vec())
            }
            PathAttribute::LargeCommunities(c) => AttrValue::LargeCommunities(c.to_vec()),
            PathAttribute::OnlyToCustomer(a) => AttrValue::OnlyToCustomer(a),
            PathAttribute::Unknown(_) => return None,
        })
    }
}

/// An owned attribute value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AttrValue {
    /// ORIGIN (type 1).
    Origin(Origin),
    /// AS_PATH (type 2), with 2- or 4-octet ASNs as the session negotiated.
    AsPath(AsPath),
    /// NEXT_HOP (type 3): the IPv4 next hop.
    NextHop(Ipv4Addr),
    /// MULTI_EXIT_DISC (type 4).
    Med(u32),
    /// LOCAL_PREF (type 5).
    LocalPref(u32),
    /// ATOMIC_AGGREGATE (type 6), no value.
    AtomicAggregate,
    /// AGGREGATOR (type 7).
    Aggregator(Aggregator),
    /// COMMUNITIES (type 8, RFC 1997).
    Communities(Vec<Community>),
    /// ORIGINATOR_ID (type 9, RFC 4456).
    OriginatorId(Ipv4Addr),
    /// CLUSTER_LIST (type 10, RFC 4456).
    ClusterList(Vec<Ipv4Addr>),
    /// MP_REACH_NLRI (type 14, RFC 4760).
    MpReach(MpReach),
    /// MP_UNREACH_NLRI (type 15, RFC 4760).
    MpUnreach(MpUnreach),
    /// EXTENDED_COMMUNITIES (type 16, RFC 4360).
    ExtendedCommunities(Vec<ExtCommunity>),
    /// AS4_PATH (type 17, RFC 6793), always 4-octet ASNs.
    As4Path(AsPath),
    /// AS4_AGGREGATOR (type 18, RFC 6793).
    As4Aggregator(Aggregator),
    /// IPV6_EXTENDED_COMMUNITIES (type 25, RFC 5701).
    Ipv6ExtendedCommunities(Vec<Ipv6ExtCommunity>),
    /// LARGE_COMMUNITY (type 32, RFC 8092).
    LargeCommunities(Vec<LargeCommunity>),
    /// ONLY_TO_CUSTOMER (type 35, RFC 9234): the AS that set it.
    OnlyToCustomer(Asn),
    /// An unknown attribute, or a known one whose value was malformed.
    Raw {
        /// The type code as received.
        type_code: u8,
        /// The value octets as received.
        value: Vec<u8>,
    },
}

impl AttrValue {
    /// The attribute type code this value is encoded under.
    pub fn type_code(&self) -> u8 {
        match self {
            AttrValue::Origin(_) => at::ORIGIN,
            AttrValue::AsPath(_) => at::AS_PATH,
            AttrValue::NextHop(_) => at::NEXT_HOP,
            AttrValue::Med(_) => at::MULTI_EXIT_DISC,
            AttrValue::LocalPref(_) => at::LOCAL_PREF,
            AttrValue::AtomicAggregate => at::ATOMIC_AGGREGATE,
            AttrValue::Aggregator(_) => at::AGGREGATOR,
            AttrValue::Communities(_) => at::COMMUNITIES,
            AttrValue::OriginatorId(_) => at::ORIGINATOR_ID,
            AttrValue::ClusterList(_) => at::CLUSTER_LIST,
            AttrValue::MpReach(_) => at::MP_REACH_NLRI,
            AttrValue::MpUnreach(_) => at::MP_UNREACH_NLRI,
            AttrValue::ExtendedCommunities(_) => at::EXTENDED_COMMUNITIES,
            AttrValue::As4Path(_) => at::AS4_PATH,
            AttrValue::As4Aggregator(_) => at::AS4_AGGREGATOR,
            AttrValue::Ipv6ExtendedCommunities(_) => at::IPV6_EXTENDED_COMMUNITIES,
            AttrValue::LargeCommunities(_) => at::LARGE_COMMUNITY,
            AttrValue::OnlyToCustomer(_) => at::ONLY_TO_CUSTOMER,
            AttrValue::Raw { type_code, .. } => *type_code,
        }
    }

    /// Appends the value octets.
    pub fn encode_value(&self, ctx: ParseCtx, out: &mut Vec<u8>) {
        match self {
            AttrValue::Origin(o) => out.push(*o as u8),
            AttrValue::AsPath(p) => p.encode(ctx.four_octet_asn, out),
            AttrValue::As4Path(p) => p.encode(true, out),
            AttrValue::NextHop(a) | AttrValue::OriginatorId(a) => {
                out.extend_from_slice(&a.octets())
            }
            AttrValue::Med(v) | AttrValue::LocalPref(v) => out.extend_from_slice(&v.to_be_bytes()),
            AttrValue::OnlyToCustomer(a) => out.extend_from_slice(&a.0.to_be_bytes()),
            AttrValue::AtomicAggregate => {}
            AttrValue::Aggregator(a) => a.encode(ctx.four_octet_asn, out),
            AttrValue::As4Aggregator(a) => a.encode(true, out),
            AttrValue::Communities(c) => write_list(c, out),
            AttrValue::ClusterList(c) => write_list(c, out),
            AttrValue::ExtendedCommunities(c) => write_list(c, out),
            AttrValue::Ipv6ExtendedCommunities(c) => write_list(c, out),
            AttrValue::LargeCommunities(c) => write_list(c, out),
            AttrValue::MpReach(m) => m.encode(out),
            AttrValue::MpUnreach(m) => m.encode(out),
            AttrValue::Raw { value, .. } => out.extend_from_slice(value),
        }
    }
}

/// An owned attribute: flags as received (or canonical from
/// [`PathAttr::new`]) and the value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PathAttr {
    /// Flags octet; the extended-length bit is recomputed on encode.
    pub flags: u8,
    /// The value.
    pub value: AttrValue,
}

impl PathAttr {
    /// An attribute with the canonical flags for its type (unknown types:
    /// optional transitive). The extended-length bit is added on encode
    /// when needed.
    pub fn new(value: AttrValue) -> PathAttr {
        let flags = expected_class(value.type_code()).unwrap_or(af::OPTIONAL | af::TRANSITIVE);
        PathAttr { flags, value }
    }

    /// The attribute type code.
    pub fn type_code(&self) -> u8 {
        self.value.type_code()
    }

    /// Appends the TLV. Flags are written as held, so a parsed attribute
    /// re-encodes byte for byte, except that the extended-length bit is
    /// forced on when the value exceeds 255 octets.
    pub fn encode(&self, ctx: ParseCtx, out: &mut Vec<u8>) {
        let start = out.len();
        let ext = self.flags & af::EXTENDED_LENGTH != 0;
        out.push(self.flags);
        out.push(self.type_code());
        out.extend_from_slice(if ext { &[0, 0] } else { &[0] });
        let vstart = out.len();
        self.value.encode_value(ctx, out);
        let len = out.len() - vstart;
        if ext {
            crate::util::patch_u16(out, start + 2, len.min(u16::MAX as usize) as u16);
        } else if let Ok(l) = u8::try_from(len) {
            // `start + 2` is the length octet pushed above.
            if let Some(b) = out.get_mut(start + 2) {
                *b = l;
            }
        } else {
            if let Some(b) = out.get_mut(start) {
                *b |= af::EXTENDED_LENGTH;
            }
            out.insert(start + 2, 0);
            crate::util::patch_u16(out, start + 2, len.min(u16::MAX as usize) as u16);
        }
    }

    /// How to pass this attribute on to another peer (RFC 4271 §5 and
    /// §9.1.3): unknown optional transitive attributes get the Partial bit,
    /// unknown optional non-transitive ones are dropped (`None`), and
    /// everything else is kept as it is.
    pub fn for_propagation(&self) -> Option<PathAttr> {
        if expected_class(self.type_code()).is_some() {
            return Some(self.clone());
        }
        if self.flags & af::TRANSITIVE == 0 {
            return None;
        }
        Some(PathAttr {
            flags: self.flags | af::PARTIAL,
            value: self.value.clone(),
        })
    }
}

#[cfg(test)]
mod tests;

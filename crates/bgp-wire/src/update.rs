//! UPDATE (RFC 4271 §4.3), read lazily through three borrowed slices.
//!
//! ```text
//! +-----------------------------------------------------+
//! |   Withdrawn Routes Length (2 octets)                |
//! +-----------------------------------------------------+
//! |   Withdrawn Routes (variable)                       |
//! +-----------------------------------------------------+
//! |   Total Path Attribute Length (2 octets)            |
//! +-----------------------------------------------------+
//! |   Path Attributes (variable)                        |
//! +-----------------------------------------------------+
//! |   Network Layer Reachability Information (variable) |
//! +-----------------------------------------------------+
//! ```

use base::{Afi, AfiSafi};

use crate::attr::mp::{MpReachView, MpUnreachView};
use crate::attr::{AttrIter, PathAttr, PathAttribute, RawAttr};
use crate::consts::{attr_type as at, msg_type};
use crate::ctx::ParseCtx;
use crate::error::{EncodeError, WireError};
use crate::header::{begin_message, finish_message, HEADER_LEN};
use crate::nlri::{encode_nlri, Nlri, NlriIter};
use crate::util::{patch_u16, u16_at};

/// Borrowed view of an UPDATE body. Constructing it only reads the two
/// length fields; everything else is read on iteration.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct UpdateView<'a> {
    body: &'a [u8],
    withdrawn: &'a [u8],
    attrs: &'a [u8],
    nlri: &'a [u8],
    ctx: ParseCtx,
}

impl<'a> UpdateView<'a> {
    /// Frames the body. RFC 4271 §6.3: lengths that overrun the message are
    /// a Malformed Attribute List, and (RFC 7606 §4) reset the session.
    pub fn parse(body: &'a [u8], ctx: ParseCtx) -> Result<UpdateView<'a>, WireError> {
        let wlen = u16_at(body, 0).ok_or(WireError::BadMessageLength {
            length: (body.len() + HEADER_LEN) as u16,
        })? as usize;
        let bad = WireError::MalformedAttributeList;
        let withdrawn = body.get(2..2 + wlen).ok_or(bad)?;
        let alen = u16_at(body, 2 + wlen).ok_or(bad)? as usize;
        let astart = 4 + wlen;
        let attrs = body.get(astart..astart + alen).ok_or(bad)?;
        let nlri = body.get(astart + alen..).ok_or(bad)?;
        Ok(UpdateView {
            body,
            withdrawn,
            attrs,
            nlri,
            ctx,
        })
    }

    /// The parse context the view was made with.
    pub const fn ctx(&self) -> ParseCtx {
        self.ctx
    }
    /// The whole body (what error offsets refer to).
    pub const fn body(&self) -> &'a [u8] {
        self.body
    }
    /// The withdrawn-routes field, raw.
    pub const fn withdrawn_raw(&self) -> &'a [u8] {
        self.withdrawn
    }
    /// The path attribute block, raw.
    pub const fn attributes_raw(&self) -> &'a [u8] {
        self.attrs
    }
    /// The NLRI field, raw.
    pub const fn nlri_raw(&self) -> &'a [u8] {
        self.nlri
    }

    /// IPv4 unicast withdrawn routes.
    pub fn withdrawn(&self) -> NlriIter<'a> {
        NlriIter::new(
            self.withdrawn,
            Afi::Ipv4,
            self.ctx.add_path(AfiSafi::IPV4_UNICAST),
        )
    }

    /// IPv4 unicast NLRI.
    pub fn nlri(&self) -> NlriIter<'a> {
        NlriIter::new(
            self.nlri,
            Afi::Ipv4,
            self.ctx.add_path(AfiSafi::IPV4_UNICAST),
        )
    }

    /// Path attributes, in order; error offsets are relative to the body.
    pub fn attributes(&self) -> AttrIter<'a> {
        AttrIter::with_base(self.attrs, 4 + self.withdrawn.len())
    }

    /// The first attribute of a type, ignoring framing errors after it.
    pub fn find_attr(&self, type_code: u8) -> Option<RawAttr<'a>> {
        self.attributes()
            .map_while(Result::ok)
            .find(|a| a.type_code == type_code)
    }

    /// The first MP_REACH_NLRI, typed.
    pub fn mp_reach(&self) -> Option<Result<MpReachView<'a>, WireError>> {
        let a = self.find_attr(at::MP_REACH_NLRI)?;
        Some(a.typed(self.ctx).and_then(|t| match t {
            PathAttribute::MpReach(m) => Ok(m),
            _ => Err(WireError::OptionalAttribute(a.attr_ref())),
        }))
    }

    /// The first MP_UNREACH_NLRI, typed.
    pub fn mp_unreach(&self) -> Option<Result<MpUnreachView<'a>, WireError>> {
        let a = self.find_attr(at::MP_UNREACH_NLRI)?;
        Some(a.typed(self.ctx).and_then(|t| match t {
            PathAttribute::MpUnreach(m) => Ok(m),
            _ => Err(WireError::OptionalAttribute(a.attr_ref())),
        }))
    }

    /// RFC 4724 §2: the End-of-RIB marker's AFI/SAFI, if this is one: an
    /// empty UPDATE (IPv4 unicast), or one holding only an empty
    /// MP_UNREACH_NLRI.
    pub fn end_of_rib(&self) -> Option<AfiSafi> {
        if !self.withdrawn.is_empty() || !self.nlri.is_empty() {
            return None;
        }
        if self.attrs.is_empty() {
            return Some(AfiSafi::IPV4_UNICAST);
        }
        let mut it = self.attributes();
        let first = it.next()?.ok()?;
        if it.next().is_some() || first.type_code != at::MP_UNREACH_NLRI {
            return None;
        }
        match first.typed(self.ctx).ok()? {
            PathAttribute::MpUnreach(m) if m.withdrawn.is_empty() => Some(m.afi_safi),
            _ => None,
        }
    }

    /// Owned copy that re-encodes to the same body. Fails only when the
    /// withdrawn routes, NLRI or attribute framing are malformed; malformed
    /// attribute *values* are kept raw.
    pub fn to_owned(&self) -> Result<UpdateMessage, WireError> {
        let withdrawn = self.withdrawn().collect::<Result<Vec<_>, _>>()?;
        let nlri = self.nlri().collect::<Result<Vec<_>, _>>()?;
        let mut attributes = Vec::new();
        for a in self.attributes() {
            attributes.push(a?.to_owned(self.ctx));
        }
        Ok(UpdateMessage {
            withdrawn,
            attributes,
            nlri,
        })
    }
}

/// An owned UPDATE: IPv4 unicast withdrawn routes and NLRI, and the
/// attributes in wire order (MP_REACH/MP_UNREACH among them).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct UpdateMessage {
    /// IPv4 prefixes withdrawn in the withdrawn-routes field.
    pub withdrawn: Vec<Nlri>,
    /// The path attributes, in order (MP_REACH/MP_UNREACH included).
    pub attributes: Vec<PathAttr>,
    /// IPv4 prefixes announced in the NLRI field.
    pub nlri: Vec<Nlri>,
}

impl UpdateMessage {
    /// The first attribute of a type.
    pub fn attr(&self, type_code: u8) -> Option<&PathAttr> {
        self.attributes.iter().find(|a| a.type_code() == type_code)
    }

    /// A copy fit to send on: see [`PathAttr::for_propagation`].
    pub fn for_forwarding(&self) -> UpdateMessage {
        UpdateMessage {
            withdrawn: self.withdrawn.clone(),
            attributes: self
                .attributes
                .iter()
                .filter_map(PathAttr::for_propagation)
                .collect(),
            nlri: self.nlri.clone(),
        }
    }

    /// Appends the body.
    pub fn encode_body(&self, ctx: ParseCtx, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let w = out.len();
        out.extend_from_slice(&[0, 0]);
        encode_nlri(&self.withdrawn, out);
        let wlen = u16::try_from(out.len() - w - 2).map_err(|_| EncodeError::FieldTooLong)?;
        patch_u16(out, w, wlen);
        let a = out.len();
        out.extend_from_slice(&[0, 0]);
        for attr in &self.attributes {
            attr.encode(ctx, out);
        }
        let alen = u16::try_from(out.len() - a - 2).map_err(|_| EncodeError::FieldTooLong)?;
        patch_u16(out, a, alen);
        encode_nlri(&self.nlri, out);
        Ok(())
    }

    /// Appends the whole message including the header.
    pub fn encode(&self, ctx: ParseCtx, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let s = begin_message(out, msg_type::UPDATE);
        if let Err(e) = self.encode_body(ctx, out) {
            out.truncate(s);
            return Err(e);
        }
        finish_message(out, s, ctx)
    }
}

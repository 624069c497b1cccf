//! Whole messages: dispatch on the header type, and the owned union.

use crate::consts::msg_type;
use crate::ctx::ParseCtx;
use crate::error::{EncodeError, WireError};
use crate::header::{begin_message, finish_message, Header, HEADER_LEN};
use crate::notification::{NotificationMessage, NotificationView};
use crate::open::{OpenMessage, OpenView};
use crate::route_refresh::RouteRefresh;
use crate::update::{UpdateMessage, UpdateView};

/// A borrowed, lazily decoded message.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    /// OPEN.
    Open(OpenView<'a>),
    /// UPDATE.
    Update(UpdateView<'a>),
    /// NOTIFICATION.
    Notification(NotificationView<'a>),
    /// KEEPALIVE is the header alone (RFC 4271 §4.4).
    Keepalive,
    /// ROUTE-REFRESH (RFC 2918, RFC 7313).
    RouteRefresh(RouteRefresh),
}

impl<'a> Message<'a> {
    /// Decodes the message at the start of `buf`; returns it and the number
    /// of octets it takes. `buf` may hold more after it. A buffer shorter
    /// than the header announces is a Bad Message Length.
    pub fn parse(buf: &'a [u8], ctx: ParseCtx) -> Result<(Message<'a>, usize), WireError> {
        let short = WireError::BadMessageLength {
            length: buf.len().min(u16::MAX as usize) as u16,
        };
        let h = Header::parse(buf, ctx)?.ok_or(short)?;
        let total = h.length as usize;
        let body = buf
            .get(HEADER_LEN..total)
            .ok_or(WireError::BadMessageLength { length: h.length })?;
        // RFC 4271 §6.1 lengths per type (RFC 8654 §4 keeps OPEN and
        // KEEPALIVE within 4096 even with extended messages).
        h.check_length(ctx)?;
        let m = match h.msg_type {
            msg_type::OPEN => Message::Open(OpenView::parse(body)?),
            msg_type::UPDATE => Message::Update(UpdateView::parse(body, ctx)?),
            msg_type::NOTIFICATION => Message::Notification(NotificationView::parse(body)?),
            msg_type::KEEPALIVE => Message::Keepalive,
            msg_type::ROUTE_REFRESH => Message::RouteRefresh(RouteRefresh::parse(body)?),
            t => return Err(WireError::BadMessageType { msg_type: t }),
        };
        Ok((m, total))
    }

    /// The message type code (see [`crate::consts::msg_type`]).
    pub const fn msg_type(&self) -> u8 {
        match self {
            Message::Open(_) => msg_type::OPEN,
            Message::Update(_) => msg_type::UPDATE,
            Message::Notification(_) => msg_type::NOTIFICATION,
            Message::Keepalive => msg_type::KEEPALIVE,
            Message::RouteRefresh(_) => msg_type::ROUTE_REFRESH,
        }
    }

    /// Owned copy; see the `to_owned` of each view for what can fail.
    pub fn to_owned(&self) -> Result<OwnedMessage, WireError> {
        Ok(match self {
            Message::Open(o) => OwnedMessage::Open(o.to_owned()?),
            Message::Update(u) => OwnedMessage::Update(u.to_owned()?),
            Message::Notification(n) => OwnedMessage::Notification(n.to_owned()),
            Message::Keepalive => OwnedMessage::Keepalive,
            Message::RouteRefresh(r) => OwnedMessage::RouteRefresh(*r),
        })
    }
}

/// An owned message of any type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OwnedMessage {
    /// OPEN.
    Open(OpenMessage),
    /// UPDATE.
    Update(UpdateMessage),
    /// NOTIFICATION.
    Notification(NotificationMessage),
    /// KEEPALIVE: the header alone.
    Keepalive,
    /// ROUTE-REFRESH.
    RouteRefresh(RouteRefresh),
}

impl OwnedMessage {
    /// Appends the whole message including the header.
    pub fn encode(&self, ctx: ParseCtx, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        match self {
            OwnedMessage::Open(m) => m.encode(ctx, out),
            OwnedMessage::Update(m) => m.encode(ctx, out),
            OwnedMessage::Notification(m) => m.encode(ctx, out),
            OwnedMessage::Keepalive => encode_keepalive(ctx, out),
            OwnedMessage::RouteRefresh(m) => m.encode(ctx, out),
        }
    }
}

/// Appends a KEEPALIVE.
pub fn encode_keepalive(ctx: ParseCtx, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let s = begin_message(out, msg_type::KEEPALIVE);
    finish_message(out, s, ctx)
}

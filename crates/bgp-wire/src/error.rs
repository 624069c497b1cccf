//! Decoding errors, their NOTIFICATION code/subcode/data (RFC 4271 §6) and
//! their RFC 7606 error-handling disposition.

use std::fmt;

use crate::consts::{attr_type as at, msg_type, notify as n};
use crate::notification::NotificationMessage;

/// Where an offending path attribute lies, so that the NOTIFICATION data
/// (RFC 4271 §6.3: "the erroneous attribute (type, length, and value)") can
/// be cut out of the message later without the error borrowing it.
///
/// `offset` and `len` cover the whole attribute TLV. The offset is relative
/// to the UPDATE message *body* (the bytes after the 19-byte header) when
/// the error came from [`crate::UpdateView`]; relative to the attribute block
/// when it came from a bare [`crate::AttrIter::new`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct AttrRef {
    /// Attribute type code.
    pub type_code: u8,
    /// Attribute flags as received.
    pub flags: u8,
    /// Where the TLV starts, in octets.
    pub offset: u32,
    /// Length of the whole TLV, header included.
    pub len: u32,
}

/// How to react to a malformed UPDATE (RFC 7606 §2), most severe first.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Disposition {
    /// Send the NOTIFICATION and drop the session (RFC 4271 behaviour).
    SessionReset,
    /// Handle every NLRI of the UPDATE as withdrawn (RFC 7606 §2).
    TreatAsWithdraw,
    /// Drop the malformed attribute and go on (RFC 7606 §2).
    AttributeDiscard,
}

/// Everything that can go wrong while reading a message. Small and `Copy`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum WireError {
    /// 1/1: the marker is not all ones.
    ConnectionNotSynchronized,
    /// 1/2: the header length is out of range, does not suit the message
    /// type, or the buffer holds less than it announces. Data: the length.
    BadMessageLength {
        /// The length field as received.
        length: u16,
    },
    /// 1/3: unknown message type. Data: the type.
    BadMessageType {
        /// The type octet as received.
        msg_type: u8,
    },
    /// 2/0: the OPEN optional parameters cannot be framed.
    MalformedOpen,
    /// 2/1: data is the largest version we support (4).
    UnsupportedVersionNumber {
        /// The version the peer sent.
        version: u8,
    },
    /// 2/2: raised by the speaker, never by the codec.
    BadPeerAs,
    /// 2/3: BGP Identifier 0 (RFC 6286 §2.2).
    BadBgpIdentifier,
    /// 2/4: an optional parameter other than capabilities.
    UnsupportedOptionalParameter {
        /// The parameter type.
        param_type: u8,
    },
    /// 2/6: hold time 1 or 2 seconds (RFC 4271 §6.2).
    UnacceptableHoldTime {
        /// The hold time offered, in seconds.
        hold_time: u16,
    },
    /// 2/7 (RFC 5492 §5): a capability we cannot accept. `offset`/`len`
    /// locate the capability TLV in the OPEN body; it is the data.
    UnsupportedCapability {
        /// The capability code.
        code: u8,
        /// Where the capability TLV starts in the OPEN body.
        offset: u32,
        /// Length of the TLV, header included.
        len: u32,
    },
    /// 3/1: withdrawn-routes length or total path attribute length overrun
    /// the message, so the NLRI cannot be located (RFC 7606 §4).
    MalformedAttributeList,
    /// 3/1: the attribute appeared before (RFC 4271 §6.3, RFC 7606 §3 g).
    DuplicateAttribute(AttrRef),
    /// 3/5: an attribute header or length runs past the end of the
    /// path attribute block (RFC 7606 §4). `offset` is where it starts.
    AttributeOverrun {
        /// The type code; 0 when the header ends before it.
        type_code: u8,
        /// Where the attribute starts.
        offset: u32,
    },
    /// 3/2: a well-known (non-optional) attribute we do not know.
    UnrecognizedWellKnown(AttrRef),
    /// 3/3: data is the missing type code.
    MissingWellKnown {
        /// The missing attribute's type code.
        type_code: u8,
    },
    /// 3/4
    AttributeFlags(AttrRef),
    /// 3/5
    AttributeLength(AttrRef),
    /// 3/6
    InvalidOrigin(AttrRef),
    /// 3/8
    InvalidNextHop(AttrRef),
    /// 3/9: the content of an optional attribute (MP_REACH/MP_UNREACH NLRI,
    /// next-hop length, ...) is wrong.
    OptionalAttribute(AttrRef),
    /// 3/10: the withdrawn routes or NLRI field cannot be parsed.
    InvalidNetworkField,
    /// 3/11
    MalformedAsPath(AttrRef),
    /// 7/1 (RFC 7313 §5): ROUTE-REFRESH of a length other than 23.
    RouteRefreshLength {
        /// The message length as received.
        length: u16,
    },
}

/// RFC 7606 §7: what a malformed attribute of this type leads to.
pub const fn attr_disposition(type_code: u8) -> Disposition {
    match type_code {
        // §7.6, §7.7, and RFC 6793 §6 for the AS4_ attributes.
        at::ATOMIC_AGGREGATE | at::AGGREGATOR | at::AS4_PATH | at::AS4_AGGREGATOR => {
            Disposition::AttributeDiscard
        }
        // §7.11 (or "AFI/SAFI disable", which we leave to the speaker).
        at::MP_REACH_NLRI | at::MP_UNREACH_NLRI => Disposition::SessionReset,
        // §7.1-7.5, 7.8-7.10, 7.14, 7.15, RFC 8092 §6, RFC 9234 §5, and the
        // default of §2 for everything else.
        _ => Disposition::TreatAsWithdraw,
    }
}

impl WireError {
    /// The NOTIFICATION (error code, subcode) for this error.
    pub const fn code(&self) -> (u8, u8) {
        use WireError::*;
        match self {
            ConnectionNotSynchronized => (n::MESSAGE_HEADER_ERROR, n::CONNECTION_NOT_SYNCHRONIZED),
            BadMessageLength { .. } => (n::MESSAGE_HEADER_ERROR, n::BAD_MESSAGE_LENGTH),
            BadMessageType { .. } => (n::MESSAGE_HEADER_ERROR, n::BAD_MESSAGE_TYPE),
            MalformedOpen => (n::OPEN_MESSAGE_ERROR, n::UNSPECIFIC),
            UnsupportedVersionNumber { .. } => {
                (n::OPEN_MESSAGE_ERROR, n::UNSUPPORTED_VERSION_NUMBER)
            }
            BadPeerAs => (n::OPEN_MESSAGE_ERROR, n::BAD_PEER_AS),
            BadBgpIdentifier => (n::OPEN_MESSAGE_ERROR, n::BAD_BGP_IDENTIFIER),
            UnsupportedOptionalParameter { .. } => {
                (n::OPEN_MESSAGE_ERROR, n::UNSUPPORTED_OPTIONAL_PARAMETER)
            }
            UnacceptableHoldTime { .. } => (n::OPEN_MESSAGE_ERROR, n::UNACCEPTABLE_HOLD_TIME),
            UnsupportedCapability { .. } => (n::OPEN_MESSAGE_ERROR, n::UNSUPPORTED_CAPABILITY),
            MalformedAttributeList | DuplicateAttribute(_) => {
                (n::UPDATE_MESSAGE_ERROR, n::MALFORMED_ATTRIBUTE_LIST)
            }
            AttributeOverrun { .. } | AttributeLength(_) => {
                (n::UPDATE_MESSAGE_ERROR, n::ATTRIBUTE_LENGTH_ERROR)
            }
            UnrecognizedWellKnown(_) => (
                n::UPDATE_MESSAGE_ERROR,
                n::UNRECOGNIZED_WELL_KNOWN_ATTRIBUTE,
            ),
            MissingWellKnown { .. } => (n::UPDATE_MESSAGE_ERROR, n::MISSING_WELL_KNOWN_ATTRIBUTE),
            AttributeFlags(_) => (n::UPDATE_MESSAGE_ERROR, n::ATTRIBUTE_FLAGS_ERROR),
            InvalidOrigin(_) => (n::UPDATE_MESSAGE_ERROR, n::INVALID_ORIGIN_ATTRIBUTE),
            InvalidNextHop(_) => (n::UPDATE_MESSAGE_ERROR, n::INVALID_NEXT_HOP_ATTRIBUTE),
            OptionalAttribute(_) => (n::UPDATE_MESSAGE_ERROR, n::OPTIONAL_ATTRIBUTE_ERROR),
            InvalidNetworkField => (n::UPDATE_MESSAGE_ERROR, n::INVALID_NETWORK_FIELD),
            MalformedAsPath(_) => (n::UPDATE_MESSAGE_ERROR, n::MALFORMED_AS_PATH),
            RouteRefreshLength { .. } => {
                (n::ROUTE_REFRESH_MESSAGE_ERROR, n::INVALID_MESSAGE_LENGTH)
            }
        }
    }

    /// The offending attribute, for attribute-scoped errors.
    pub const fn attr(&self) -> Option<AttrRef> {
        use WireError::*;
        match self {
            DuplicateAttribute(a)
            | UnrecognizedWellKnown(a)
            | AttributeFlags(a)
            | AttributeLength(a)
            | InvalidOrigin(a)
            | InvalidNextHop(a)
            | OptionalAttribute(a)
            | MalformedAsPath(a) => Some(*a),
            _ => None,
        }
    }

    /// RFC 7606 disposition. Errors outside UPDATE always reset the session.
    pub const fn disposition(&self) -> Disposition {
        use WireError::*;
        match self {
            // §3 g: a repeated MP_REACH/MP_UNREACH resets; other repeats
            // keep the first and discard the rest.
            DuplicateAttribute(a) => match a.type_code {
                at::MP_REACH_NLRI | at::MP_UNREACH_NLRI => Disposition::SessionReset,
                _ => Disposition::AttributeDiscard,
            },
            // §4: the NLRI field can still be located, so withdraw; unless
            // the overrun hides the MP attributes' NLRI.
            AttributeOverrun { type_code, .. } => match *type_code {
                at::MP_REACH_NLRI | at::MP_UNREACH_NLRI => Disposition::SessionReset,
                _ => Disposition::TreatAsWithdraw,
            },
            // §3 d.
            MissingWellKnown { .. } => Disposition::TreatAsWithdraw,
            // §7.3 (and RFC 4271 §6.3: "the route SHOULD be ignored"): a
            // well-formed next hop that is no usable address, in NEXT_HOP
            // or in MP_REACH_NLRI, withdraws without a NOTIFICATION.
            InvalidNextHop(_) => Disposition::TreatAsWithdraw,
            AttributeFlags(a) | AttributeLength(a) | InvalidOrigin(a) | OptionalAttribute(a)
            | MalformedAsPath(a) => attr_disposition(a.type_code),
            // RFC 7606 leaves unrecognized well-known attributes to RFC 4271;
            // §3 j / §5.3: an unparsable NLRI field leaves nothing to
            // withdraw reliably; and all header/OPEN errors are fatal.
            _ => Disposition::SessionReset,
        }
    }

    /// Appends the NOTIFICATION data field for this error. `body` is the
    /// message body the error's offsets refer to (see [`AttrRef`]); it is
    /// only read for attribute- and capability-scoped errors.
    pub fn write_data(&self, body: &[u8], out: &mut Vec<u8>) {
        use WireError::*;
        let span = |off: u32, len: u32| {
            let s = off as usize;
            body.get(s..s.saturating_add(len as usize).min(body.len()))
                .unwrap_or(&[])
        };
        match *self {
            BadMessageLength { length } => out.extend_from_slice(&length.to_be_bytes()),
            BadMessageType { msg_type } => out.push(msg_type),
            // RFC 4271 §6.2: the largest locally supported version number.
            UnsupportedVersionNumber { .. } => out.extend_from_slice(&4u16.to_be_bytes()),
            UnsupportedCapability { offset, len, .. } => out.extend_from_slice(span(offset, len)),
            MissingWellKnown { type_code } => out.push(type_code),
            AttributeOverrun { offset, .. } => {
                out.extend_from_slice(span(offset, u32::MAX));
            }
            DuplicateAttribute(_) | MalformedAsPath(_) => {}
            UnrecognizedWellKnown(a)
            | AttributeFlags(a)
            | AttributeLength(a)
            | InvalidOrigin(a)
            | InvalidNextHop(a)
            | OptionalAttribute(a) => out.extend_from_slice(span(a.offset, a.len)),
            // RFC 7313 §5: the data is the complete ROUTE-REFRESH message.
            RouteRefreshLength { length } => {
                out.extend_from_slice(&crate::header::MARKER);
                out.extend_from_slice(&length.to_be_bytes());
                out.push(msg_type::ROUTE_REFRESH);
                out.extend_from_slice(body);
            }
            _ => {}
        }
    }

    /// A ROUTE-REFRESH length error as a speaker answers it that did not
    /// negotiate enhanced route refresh: RFC 7313 §5's 7/1 is unknown to
    /// such a peer, so RFC 4271 §6.1's Bad Message Length (1/2). Other
    /// errors are returned as they are.
    pub const fn without_enhanced_refresh(self) -> WireError {
        match self {
            WireError::RouteRefreshLength { length } => WireError::BadMessageLength { length },
            e => e,
        }
    }

    /// The NOTIFICATION to send for this error (see [`Self::write_data`]).
    pub fn notification(&self, body: &[u8]) -> NotificationMessage {
        let (code, subcode) = self.code();
        let mut data = Vec::new();
        self.write_data(body, &mut data);
        NotificationMessage {
            code,
            subcode,
            data,
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (c, s) = self.code();
        write!(f, "BGP error {c}/{s}: {self:?}")
    }
}

impl std::error::Error for WireError {}

/// Why an owned message could not be encoded.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EncodeError {
    /// The message would exceed the negotiated maximum length.
    MessageTooLong {
        /// The length the message would have, in octets.
        len: usize,
        /// The negotiated maximum, in octets.
        max: usize,
    },
    /// A field exceeds what its length field can express.
    FieldTooLong,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot encode: {self:?}")
    }
}

impl std::error::Error for EncodeError {}

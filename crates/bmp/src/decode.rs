//! A zero-copy decoder of BMP messages (RFC 7854 §4): one length check per
//! field, then borrowed slices; never panics. Embedded BGP PDUs are framed
//! with `bgp_wire::frame` and must be of the type the message carries.
//! What a monitoring station needs to parse inside them (the OPENs'
//! capabilities, the UPDATE's attributes) is `bgp-wire`'s job.

use std::fmt;

use bgp_wire::consts::msg_type as bgp;
use bgp_wire::ParseCtx;

use crate::encode::LocalEnd;
use crate::header::{
    addr_from16, msg_type, PeerHeader, PeerType, COMMON_HEADER_LEN, PEER_HEADER_LEN, VERSION,
};

/// Why a message does not decode. Small and `Copy`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum DecodeError {
    /// Fewer octets than the header or the message length says.
    Truncated,
    /// Not version 3.
    Version(u8),
    /// A message length below the common header, or below what its type
    /// needs.
    Length(u32),
    /// A message type this decoder does not know.
    UnknownType(u8),
    /// An information or statistics TLV runs past the message.
    Tlv,
    /// An embedded BGP PDU is malformed, of the wrong type, or does not
    /// fill its place exactly.
    Pdu,
    /// A Statistics Report whose count does not match its TLVs, or a
    /// counter or gauge of the wrong size.
    Stats,
    /// A Peer Down reason that is not assigned, or its data is wrong.
    PeerDownReason(u8),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated => write!(f, "truncated message"),
            DecodeError::Version(v) => write!(f, "BMP version {v}, not 3"),
            DecodeError::Length(l) => write!(f, "bad message length {l}"),
            DecodeError::UnknownType(t) => write!(f, "unknown message type {t}"),
            DecodeError::Tlv => write!(f, "malformed TLV"),
            DecodeError::Pdu => write!(f, "malformed embedded BGP message"),
            DecodeError::Stats => write!(f, "malformed statistics report"),
            DecodeError::PeerDownReason(r) => write!(f, "bad peer down reason {r} or its data"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// A run of information TLVs (2-octet type, 2-octet length), checked whole
/// when the message was decoded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Tlvs<'a>(&'a [u8]);

impl<'a> Tlvs<'a> {
    fn check(b: &'a [u8]) -> Result<Tlvs<'a>, DecodeError> {
        let mut rest = b;
        while !rest.is_empty() {
            let (_, _, r) = split_tlv(rest)?;
            rest = r;
        }
        Ok(Tlvs(b))
    }

    /// The raw octets.
    pub fn raw(&self) -> &'a [u8] {
        self.0
    }

    /// (type, value) pairs in order.
    pub fn iter(&self) -> impl Iterator<Item = (u16, &'a [u8])> + 'a {
        let mut rest = self.0;
        std::iter::from_fn(move || {
            let (t, v, r) = split_tlv(rest).ok()?;
            rest = r;
            Some((t, v))
        })
    }

    /// The value of the first TLV of type `ty`.
    pub fn get(&self, ty: u16) -> Option<&'a [u8]> {
        self.iter().find(|(t, _)| *t == ty).map(|(_, v)| v)
    }
}

fn split_tlv(b: &[u8]) -> Result<(u16, &[u8], &[u8]), DecodeError> {
    let [t0, t1, l0, l1, rest @ ..] = b else {
        return Err(DecodeError::Tlv);
    };
    let len = usize::from(u16::from_be_bytes([*l0, *l1]));
    let v = rest.get(..len).ok_or(DecodeError::Tlv)?;
    let r = rest.get(len..).ok_or(DecodeError::Tlv)?;
    Ok((u16::from_be_bytes([*t0, *t1]), v, r))
}

/// One decoded BMP message, borrowing from the input.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Message<'a> {
    /// Route Monitoring (§4.6): the UPDATE, whole.
    RouteMonitoring {
        /// The per-peer header.
        peer: PeerHeader,
        /// The BGP UPDATE message, header included.
        update: &'a [u8],
    },
    /// Statistics Report (§4.8).
    Statistics {
        /// The per-peer header.
        peer: PeerHeader,
        /// The statistics (the count matched).
        stats: Tlvs<'a>,
    },
    /// Peer Down Notification (§4.9).
    PeerDown {
        /// The per-peer header.
        peer: PeerHeader,
        /// The reason code (1-6).
        reason: u8,
        /// Its data: a NOTIFICATION (1, 3), an FSM event (2), TLVs (6).
        data: &'a [u8],
    },
    /// Peer Up Notification (§4.10).
    PeerUp {
        /// The per-peer header.
        peer: PeerHeader,
        /// The local end of the session.
        local: LocalEnd,
        /// The OPEN the router sent, whole.
        sent_open: &'a [u8],
        /// The OPEN it received, whole.
        received_open: &'a [u8],
        /// Information TLVs.
        info: Tlvs<'a>,
    },
    /// Initiation (§4.3).
    Initiation(Tlvs<'a>),
    /// Termination (§4.5).
    Termination(Tlvs<'a>),
    /// Route Mirroring (§4.7): its TLVs, unchecked inside.
    RouteMirroring {
        /// The per-peer header.
        peer: PeerHeader,
        /// Route Mirroring TLVs.
        tlvs: Tlvs<'a>,
    },
}

/// The length of the message at the front of a stream: `Ok(None)` while
/// the common header is incomplete.
pub fn message_len(buf: &[u8]) -> Result<Option<usize>, DecodeError> {
    let Some(h) = buf.get(..COMMON_HEADER_LEN) else {
        return Ok(None);
    };
    if h[0] != VERSION {
        return Err(DecodeError::Version(h[0]));
    }
    let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]);
    if (len as usize) < COMMON_HEADER_LEN {
        return Err(DecodeError::Length(len));
    }
    Ok(Some(len as usize))
}

/// Cuts one whole BGP message of type `ty` off the front of `b`.
fn bgp_pdu(b: &[u8], ty: u8) -> Result<(&[u8], &[u8]), DecodeError> {
    // BMP carries PDUs of up to the extended length (RFC 8654).
    let f = bgp_wire::frame(b, ParseCtx::modern())
        .map_err(|_| DecodeError::Pdu)?
        .ok_or(DecodeError::Pdu)?;
    if f.header.msg_type != ty {
        return Err(DecodeError::Pdu);
    }
    let pdu = b.get(..f.len).ok_or(DecodeError::Pdu)?;
    let rest = b.get(f.len..).ok_or(DecodeError::Pdu)?;
    Ok((pdu, rest))
}

fn peer_header(b: &[u8]) -> Result<(PeerHeader, &[u8]), DecodeError> {
    let (h, rest) = b
        .split_first_chunk::<PEER_HEADER_LEN>()
        .ok_or(DecodeError::Truncated)?;
    Ok((PeerHeader::parse(h), rest))
}

impl<'a> Message<'a> {
    /// Decodes the message at the front of `buf`; returns it and the
    /// octets it took.
    pub fn decode(buf: &'a [u8]) -> Result<(Message<'a>, usize), DecodeError> {
        let len = message_len(buf)?.ok_or(DecodeError::Truncated)?;
        let msg = buf.get(..len).ok_or(DecodeError::Truncated)?;
        let ty = msg[5];
        let body = &msg[COMMON_HEADER_LEN..];
        let m = match ty {
            msg_type::INITIATION => Message::Initiation(Tlvs::check(body)?),
            msg_type::TERMINATION => Message::Termination(Tlvs::check(body)?),
            msg_type::ROUTE_MONITORING => {
                let (peer, rest) = peer_header(body)?;
                let (update, rest) = bgp_pdu(rest, bgp::UPDATE)?;
                if !rest.is_empty() {
                    return Err(DecodeError::Pdu);
                }
                Message::RouteMonitoring { peer, update }
            }
            msg_type::STATISTICS_REPORT => {
                let (peer, rest) = peer_header(body)?;
                let (count, tlvs) = rest.split_first_chunk::<4>().ok_or(DecodeError::Stats)?;
                let stats = Tlvs::check(tlvs).map_err(|_| DecodeError::Stats)?;
                let mut n = 0u32;
                for (t, v) in stats.iter() {
                    let ok = match t {
                        // 64-bit gauges (RFC 7854 §4.8, RFC 8671 §5).
                        7 | 8 | 14 | 15 => v.len() == 8,
                        // AFI (2), SAFI (1), 64-bit gauge.
                        9 | 10 | 16 | 17 => v.len() == 11,
                        // 32-bit counters.
                        0..=6 | 11..=13 => v.len() == 4,
                        _ => true,
                    };
                    if !ok {
                        return Err(DecodeError::Stats);
                    }
                    n = n.saturating_add(1);
                }
                if n != u32::from_be_bytes(*count) {
                    return Err(DecodeError::Stats);
                }
                Message::Statistics { peer, stats }
            }
            msg_type::PEER_DOWN => {
                let (peer, rest) = peer_header(body)?;
                let (&reason, data) = rest.split_first().ok_or(DecodeError::Truncated)?;
                let ok = match reason {
                    1 => bgp_pdu(data, bgp::NOTIFICATION).is_ok_and(|(_, r)| r.is_empty()),
                    3 => bgp_pdu(data, bgp::NOTIFICATION).is_ok_and(|(_, r)| r.is_empty()),
                    2 => data.len() == 2,
                    4 | 5 => data.is_empty(),
                    6 => peer.peer_type == PeerType::LocRib && Tlvs::check(data).is_ok(),
                    _ => false,
                };
                if !ok {
                    return Err(DecodeError::PeerDownReason(reason));
                }
                Message::PeerDown { peer, reason, data }
            }
            msg_type::PEER_UP => {
                let (peer, rest) = peer_header(body)?;
                let (fixed, rest) = rest
                    .split_first_chunk::<20>()
                    .ok_or(DecodeError::Truncated)?;
                let mut a = [0u8; 16];
                a.copy_from_slice(&fixed[..16]);
                let v6 = peer.peer_type != PeerType::LocRib && peer.flags & 0x80 != 0;
                let local = LocalEnd {
                    address: addr_from16(&a, v6),
                    local_port: u16::from_be_bytes([fixed[16], fixed[17]]),
                    remote_port: u16::from_be_bytes([fixed[18], fixed[19]]),
                };
                let (sent_open, rest) = bgp_pdu(rest, bgp::OPEN)?;
                let (received_open, rest) = bgp_pdu(rest, bgp::OPEN)?;
                Message::PeerUp {
                    peer,
                    local,
                    sent_open,
                    received_open,
                    info: Tlvs::check(rest)?,
                }
            }
            msg_type::ROUTE_MIRRORING => {
                let (peer, rest) = peer_header(body)?;
                Message::RouteMirroring {
                    peer,
                    tlvs: Tlvs::check(rest)?,
                }
            }
            t => return Err(DecodeError::UnknownType(t)),
        };
        Ok((m, len))
    }

    /// The per-peer header, for the messages that have one.
    pub fn peer(&self) -> Option<&PeerHeader> {
        match self {
            Message::RouteMonitoring { peer, .. }
            | Message::Statistics { peer, .. }
            | Message::PeerDown { peer, .. }
            | Message::PeerUp { peer, .. }
            | Message::RouteMirroring { peer, .. } => Some(peer),
            Message::Initiation(_) | Message::Termination(_) => None,
        }
    }
}

/// Decodes every message of a stream; stops at the first error, which
/// comes with the offset it happened at.
pub fn decode_all(mut buf: &[u8]) -> (Vec<Message<'_>>, Option<(usize, DecodeError)>) {
    let mut out = Vec::new();
    let mut at = 0;
    while !buf.is_empty() {
        match Message::decode(buf) {
            Ok((m, n)) => {
                out.push(m);
                at += n;
                buf = buf.get(n..).unwrap_or_default();
            }
            Err(e) => return (out, Some((at, e))),
        }
    }
    (out, None)
}

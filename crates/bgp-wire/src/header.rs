//! Message framing: the common 19-byte header (RFC 4271 §4.1).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                                                               |
//! +                                                               +
//! |                           Marker (16 octets, all ones)        |
//! +                                                               +
//! |                                                               |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Length               |      Type     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use crate::ctx::ParseCtx;
use crate::error::{EncodeError, WireError};
use crate::util::{patch_u16, u16_at, u8_at};

/// RFC 4271 §4.1: the marker is 16 octets of all ones.
pub const MARKER: [u8; 16] = [0xff; 16];
/// Length of the common header.
pub const HEADER_LEN: usize = 19;

/// A decoded common header.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// Total message length including the header.
    pub length: u16,
    /// Message type (see [`crate::consts::msg_type`]).
    pub msg_type: u8,
}

impl Header {
    /// Decodes the header at the start of `buf`. `Ok(None)` when fewer than
    /// 19 bytes are there yet. Checks the marker and that the length lies in
    /// 19..=max for the session; per-type minimums are checked by
    /// [`crate::Message::parse`].
    pub fn parse(buf: &[u8], ctx: ParseCtx) -> Result<Option<Header>, WireError> {
        let Some(marker) = buf.get(..16) else {
            return Ok(None);
        };
        let (Some(length), Some(msg_type)) = (u16_at(buf, 16), u8_at(buf, 18)) else {
            return Ok(None);
        };
        if marker != MARKER {
            return Err(WireError::ConnectionNotSynchronized);
        }
        if (length as usize) < HEADER_LEN || length as usize > ctx.max_message_len() {
            return Err(WireError::BadMessageLength { length });
        }
        Ok(Some(Header { length, msg_type }))
    }

    /// RFC 4271 §6.1: whether the length suits the message type; `Err`
    /// with Bad Message Length (1/2, the length as data) when not. OPEN
    /// 29..=4096 and KEEPALIVE exactly 19 octets whatever was negotiated
    /// (RFC 8654 §4); UPDATE at least 23 and NOTIFICATION at least 21, up
    /// to the session's maximum. ROUTE-REFRESH (RFC 2918 §3) is 23 octets:
    /// any other length is [`WireError::RouteRefreshLength`] (7/1, RFC 7313
    /// §5; a speaker that did not negotiate enhanced route refresh answers
    /// it as 1/2, see [`WireError::without_enhanced_refresh`]). Other types
    /// pass: they are Bad Message Type, not this check's.
    pub fn check_length(&self, ctx: ParseCtx) -> Result<(), WireError> {
        use crate::consts::msg_type as t;
        let total = usize::from(self.length);
        let max = ctx.max_message_len();
        let ok = match self.msg_type {
            t::OPEN => (29..=crate::ctx::MAX_MESSAGE_LEN).contains(&total),
            t::UPDATE => (23..=max).contains(&total),
            t::NOTIFICATION => (21..=max).contains(&total),
            t::KEEPALIVE => total == HEADER_LEN,
            t::ROUTE_REFRESH if total != 23 => {
                return Err(WireError::RouteRefreshLength {
                    length: self.length,
                })
            }
            _ => true,
        };
        if ok {
            Ok(())
        } else {
            Err(WireError::BadMessageLength {
                length: self.length,
            })
        }
    }
}

/// One framed message: its header, its body, and the octets it takes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The decoded header.
    pub header: Header,
    /// The body: the `header.length - 19` octets after the header.
    pub body: &'a [u8],
    /// Octets the whole message takes, header included (`header.length`).
    pub len: usize,
}

/// Cuts one message off the front of a byte stream: `Ok(None)` while the
/// message is incomplete.
pub fn frame(buf: &[u8], ctx: ParseCtx) -> Result<Option<Frame<'_>>, WireError> {
    let Some(header) = Header::parse(buf, ctx)? else {
        return Ok(None);
    };
    let len = header.length as usize;
    Ok(buf
        .get(HEADER_LEN..len)
        .map(|body| Frame { header, body, len }))
}

/// Starts a message of type `msg_type` in `out` (marker, a length to be
/// patched, the type); returns where it starts for [`finish_message`].
pub fn begin_message(out: &mut Vec<u8>, msg_type: u8) -> usize {
    let start = out.len();
    out.extend_from_slice(&MARKER);
    out.extend_from_slice(&[0, 0, msg_type]);
    start
}

/// Patches the length of the message begun at `start`. On overflow the
/// partial message is removed again so that `out` is left as it was.
pub fn finish_message(out: &mut Vec<u8>, start: usize, ctx: ParseCtx) -> Result<(), EncodeError> {
    let len = out.len() - start;
    let max = ctx.max_message_len();
    if len > max {
        out.truncate(start);
        return Err(EncodeError::MessageTooLong { len, max });
    }
    patch_u16(out, start + 16, len as u16);
    Ok(())
}

/// Patches the length of the message begun at `start` to cover the rest of
/// `out`, without the size check of [`finish_message`] (for encoders that
/// size their messages themselves; a length past 65535 is written as
/// 65535).
pub fn set_message_len(out: &mut [u8], start: usize) {
    let len = out.len().saturating_sub(start);
    patch_u16(out, start + 16, len.min(usize::from(u16::MAX)) as u16);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr(len: u16, t: u8) -> Vec<u8> {
        let mut v = MARKER.to_vec();
        v.extend_from_slice(&len.to_be_bytes());
        v.push(t);
        v
    }

    #[test]
    fn header_checks() {
        let c = ParseCtx::legacy();
        assert_eq!(Header::parse(&hdr(19, 4)[..18], c), Ok(None));
        assert_eq!(
            Header::parse(&hdr(19, 4), c),
            Ok(Some(Header {
                length: 19,
                msg_type: 4
            }))
        );
        let mut bad = hdr(19, 4);
        bad[3] = 0;
        assert_eq!(
            Header::parse(&bad, c),
            Err(WireError::ConnectionNotSynchronized)
        );
        let e = Header::parse(&hdr(18, 4), c).unwrap_err();
        assert_eq!(e, WireError::BadMessageLength { length: 18 });
        assert_eq!(e.code(), (1, 2));
        assert_eq!(e.notification(&[]).data, vec![0, 18]);
        assert!(Header::parse(&hdr(4097, 2), c).is_err());
        assert!(Header::parse(&hdr(4097, 2), ParseCtx::modern()).is_ok());
    }

    #[test]
    fn frame_waits_for_the_whole_message() {
        let mut m = hdr(23, 5);
        m.extend_from_slice(&[0, 1, 0]);
        assert_eq!(frame(&m, ParseCtx::legacy()), Ok(None));
        m.push(1);
        m.push(0xaa);
        let f = frame(&m, ParseCtx::legacy()).unwrap().unwrap();
        assert_eq!(
            (f.header.msg_type, f.body, f.len),
            (5, &[0u8, 1, 0, 1][..], 23)
        );
    }
}

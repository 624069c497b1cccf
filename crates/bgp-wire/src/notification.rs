//! NOTIFICATION (RFC 4271 §4.5) and the shutdown communication of
//! RFC 8203 / RFC 9003.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Error code    | Error subcode |   Data (variable)             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//! For Cease / Administrative Shutdown (6/2) and Administrative Reset (6/4)
//! the data may be a shutdown communication (RFC 9003 §2):
//! ```text
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Length (1)    | Shutdown Communication (UTF-8, Length octets)...
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use crate::consts::{msg_type, notify};
use crate::ctx::ParseCtx;
use crate::error::{EncodeError, WireError};
use crate::header::{begin_message, finish_message, HEADER_LEN};

/// RFC 9003 §2: a shutdown communication is at most 255 octets.
pub const MAX_SHUTDOWN_COMMUNICATION: usize = 255;

/// Borrowed view of a NOTIFICATION body.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NotificationView<'a> {
    /// Error code (see [`crate::consts::notify`]).
    pub code: u8,
    /// Error subcode; 0 is Unspecific.
    pub subcode: u8,
    /// The data field: the rest of the message.
    pub data: &'a [u8],
}

/// Why a shutdown communication could not be read (RFC 9003 §4 says to log
/// and otherwise ignore it, so this never becomes a NOTIFICATION).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ShutdownCommError {
    /// The length octet exceeds the data.
    Truncated,
    /// The text is not UTF-8.
    BadUtf8,
}

/// Reads an RFC 9003 shutdown communication out of Cease data.
pub fn parse_shutdown_communication(data: &[u8]) -> Result<&str, ShutdownCommError> {
    let (&len, rest) = data.split_first().ok_or(ShutdownCommError::Truncated)?;
    let text = rest
        .get(..len as usize)
        .ok_or(ShutdownCommError::Truncated)?;
    std::str::from_utf8(text).map_err(|_| ShutdownCommError::BadUtf8)
}

impl<'a> NotificationView<'a> {
    /// Decodes a body; fewer than 2 octets is a bad message length.
    pub fn parse(body: &'a [u8]) -> Result<NotificationView<'a>, WireError> {
        match body {
            [code, subcode, data @ ..] => Ok(NotificationView {
                code: *code,
                subcode: *subcode,
                data,
            }),
            _ => Err(WireError::BadMessageLength {
                length: (body.len() + HEADER_LEN) as u16,
            }),
        }
    }

    /// Whether this is Cease with a subcode that may carry a shutdown
    /// communication (RFC 9003 §2: subcodes 2 and 4).
    pub const fn is_shutdown(&self) -> bool {
        self.code == notify::CEASE
            && (self.subcode == notify::ADMINISTRATIVE_SHUTDOWN
                || self.subcode == notify::ADMINISTRATIVE_RESET)
    }

    /// The shutdown communication: `None` if this is not 6/2 or 6/4 or
    /// carries no data at all.
    pub fn shutdown_communication(&self) -> Option<Result<&'a str, ShutdownCommError>> {
        if !self.is_shutdown() || self.data.is_empty() {
            return None;
        }
        Some(parse_shutdown_communication(self.data))
    }

    /// An owned copy.
    pub fn to_owned(&self) -> NotificationMessage {
        NotificationMessage {
            code: self.code,
            subcode: self.subcode,
            data: self.data.to_vec(),
        }
    }
}

/// An owned NOTIFICATION.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NotificationMessage {
    /// Error code (see [`crate::consts::notify`]).
    pub code: u8,
    /// Error subcode; 0 is Unspecific.
    pub subcode: u8,
    /// The data field.
    pub data: Vec<u8>,
}

impl NotificationMessage {
    /// A NOTIFICATION with these code, subcode and data.
    pub fn new(code: u8, subcode: u8, data: Vec<u8>) -> NotificationMessage {
        NotificationMessage {
            code,
            subcode,
            data,
        }
    }

    /// Cease with a shutdown communication (RFC 9003). `subcode` should be
    /// 2 (Administrative Shutdown) or 4 (Administrative Reset). Text longer
    /// than 255 octets is cut at the last character boundary that fits.
    pub fn shutdown(subcode: u8, text: &str) -> NotificationMessage {
        let mut end = text.len().min(MAX_SHUTDOWN_COMMUNICATION);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let t = text.as_bytes().get(..end).unwrap_or(&[]);
        let mut data = Vec::with_capacity(1 + t.len());
        data.push(t.len() as u8);
        data.extend_from_slice(t);
        NotificationMessage {
            code: notify::CEASE,
            subcode,
            data,
        }
    }

    /// A borrowed view of this message.
    pub fn view(&self) -> NotificationView<'_> {
        NotificationView {
            code: self.code,
            subcode: self.subcode,
            data: &self.data,
        }
    }

    /// Appends the body (code, subcode, data), without the header.
    pub fn encode_body(&self, out: &mut Vec<u8>) {
        out.push(self.code);
        out.push(self.subcode);
        out.extend_from_slice(&self.data);
    }

    /// Appends the whole message including the header.
    pub fn encode(&self, ctx: ParseCtx, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let s = begin_message(out, msg_type::NOTIFICATION);
        self.encode_body(out);
        finish_message(out, s, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shutdown_communication_roundtrip() {
        let n = NotificationMessage::shutdown(2, "maintenance, back at 10:00 ✓");
        let mut out = Vec::new();
        n.encode(ParseCtx::legacy(), &mut out).unwrap();
        let v = NotificationView::parse(&out[19..]).unwrap();
        assert_eq!((v.code, v.subcode), (6, 2));
        assert_eq!(
            v.shutdown_communication(),
            Some(Ok("maintenance, back at 10:00 ✓"))
        );
        assert_eq!(v.to_owned(), n);
    }

    #[test]
    fn long_text_is_cut_on_a_char_boundary() {
        let text = "é".repeat(200); // 400 octets
        let n = NotificationMessage::shutdown(4, &text);
        assert_eq!(n.data[0], 254);
        let s = n.view().shutdown_communication().unwrap().unwrap();
        assert_eq!(s.chars().count(), 127);
    }

    #[test]
    fn bad_shutdown_communications() {
        let v = NotificationView::parse(&[6, 2, 5, b'a']).unwrap();
        assert_eq!(
            v.shutdown_communication(),
            Some(Err(ShutdownCommError::Truncated))
        );
        let v = NotificationView::parse(&[6, 4, 1, 0xff]).unwrap();
        assert_eq!(
            v.shutdown_communication(),
            Some(Err(ShutdownCommError::BadUtf8))
        );
        let v = NotificationView::parse(&[6, 3, 1, b'a']).unwrap();
        assert_eq!(v.shutdown_communication(), None);
        let v = NotificationView::parse(&[6, 2]).unwrap();
        assert_eq!(v.shutdown_communication(), None);
        assert_eq!(
            NotificationView::parse(&[6]),
            Err(WireError::BadMessageLength { length: 20 })
        );
    }
}

//! Error types. Both are small `Copy` values so that the hot read loop never
//! allocates, even on damaged input.

use std::fmt;
use std::io;

/// Why a record body could not be decoded although its framing (the MRT
/// header's length field) was intact. The reader reports the record and
/// carries on with the next one.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// A field runs past the end of the record body; names the field.
    Short {
        /// The field's name, as in the RFC.
        field: &'static str,
    },
    /// The body is longer than its decoded contents (`count` bytes left over).
    /// Rejected because they could not be re-encoded losslessly.
    TrailingBytes {
        /// Bytes left over.
        count: u32,
    },
    /// A prefix length larger than the address width.
    PrefixLength {
        /// The length as carried, in bits.
        len: u8,
    },
    /// An address family that fixes no address length (BGP4MP AFI field).
    Afi {
        /// The AFI as carried.
        afi: u16,
    },
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Malformed::Short { field } => {
                write!(f, "field '{field}' runs past the end of the record")
            }
            Malformed::TrailingBytes { count } => write!(f, "{count} unexpected trailing bytes"),
            Malformed::PrefixLength { len } => {
                write!(f, "prefix length {len} exceeds the address width")
            }
            Malformed::Afi { afi } => write!(f, "unsupported address family {afi}"),
        }
    }
}

/// What went wrong, without the position (see [`MrtError`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input ended inside a 12-byte MRT common header (`got` bytes of it
    /// were present). Fatal: the reader ends.
    TruncatedHeader {
        /// Header bytes present, 1..=11.
        got: u8,
    },
    /// The input ended inside a record body. Fatal: the reader ends.
    TruncatedBody {
        /// Body length the header announced.
        expected: u32,
        /// Body bytes present.
        got: u32,
    },
    /// The compressed stream ended before its end-of-stream marker (gzip or
    /// bzip2 data cut short). Fatal: the reader ends.
    TruncatedStream,
    /// Any other I/O or decompression failure (corrupt compressed data
    /// reports `InvalidInput`/`InvalidData`). Fatal: the reader ends.
    Io(io::ErrorKind),
    /// The record's body does not decode; the framing is intact, so the
    /// reader skips the record and continues.
    Malformed {
        /// The record's MRT type.
        mrt_type: u16,
        /// The record's subtype.
        subtype: u16,
        /// What is wrong with the body.
        why: Malformed,
    },
}

/// An error with the byte offset, in the decompressed stream, of the start of
/// the record it concerns (or of the position where input ended).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MrtError {
    /// Byte offset in the decompressed stream.
    pub offset: u64,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl MrtError {
    /// An error of `kind` at `offset`.
    pub const fn new(offset: u64, kind: ErrorKind) -> Self {
        MrtError { offset, kind }
    }

    /// True when the reader cannot go on after this error (truncation or
    /// I/O); false for a malformed body inside intact framing.
    pub const fn is_fatal(&self) -> bool {
        !matches!(self.kind, ErrorKind::Malformed { .. })
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::TruncatedHeader { got } => {
                write!(f, "input ends inside an MRT header ({got} of 12 bytes)")
            }
            ErrorKind::TruncatedBody { expected, got } => {
                write!(
                    f,
                    "input ends inside an MRT record ({got} of {expected} body bytes)"
                )
            }
            ErrorKind::TruncatedStream => f.write_str("compressed stream is truncated"),
            ErrorKind::Io(k) => write!(f, "read error: {k}"),
            ErrorKind::Malformed {
                mrt_type,
                subtype,
                why,
            } => {
                write!(
                    f,
                    "malformed MRT record type {mrt_type} subtype {subtype}: {why}"
                )
            }
        }
    }
}

impl fmt::Display for MrtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte offset {}", self.kind, self.offset)
    }
}

impl std::error::Error for MrtError {}

//! `bgpdump -m` compatible text output (Debian bgpdump 1.6.2), byte for
//! byte. The format, with examples and the few documented differences, is
//! in `docs/bgpdump-format.md`.
//!
//! [`Dumper`](crate::bgpdump::Dumper) turns one raw MRT record (header fields plus body) into zero
//! or more lines appended to a caller's buffer. It reads bodies the way
//! bgpdump does (zero-filling past the end instead of failing), so odd input
//! prints what bgpdump prints, and it never panics or allocates per line.
//!
//! ```
//! use mrt::bgpdump::{Dumper, RecordInfo};
//! let mut d = Dumper::new();
//! let mut out = Vec::new();
//! // A BGP4MP STATE_CHANGE (RFC 6396 §4.4.1): peer AS 65001, local AS
//! // 65002, ifindex 0, AFI 1, peer 192.0.2.1, local 192.0.2.2, 1 -> 2.
//! let body = [0xfd, 0xe9, 0xfd, 0xea, 0, 0, 0, 1, 192, 0, 2, 1, 192, 0, 2, 2, 0, 1, 0, 2];
//! let info = RecordInfo { timestamp: 1_400_000_000, microseconds: 0, mrt_type: 16, subtype: 0 };
//! d.record(&info, &body, &mut out);
//! assert_eq!(out, b"BGP4MP|1400000000|STATE|192.0.2.1|65001|1|2\n");
//! ```
//!
//! Files are framed by [`crate::MrtReader`]: feed each
//! [`crate::RawRecord`] from `next_raw` through [`RecordInfo::from_header`](crate::bgpdump::RecordInfo::from_header).

mod attrs;
mod fmt;
mod json;
mod line;

use crate::header::Header;

/// The MRT common header fields (RFC 6396 §2) the output needs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordInfo {
    /// Seconds since the Unix epoch.
    pub timestamp: u32,
    /// BGP4MP_ET microseconds (RFC 6396 §3); ignored for other types.
    pub microseconds: u32,
    /// MRT type (see [`crate::types`]).
    pub mrt_type: u16,
    /// MRT subtype (see [`crate::subtypes`]).
    pub subtype: u16,
}

impl RecordInfo {
    /// The fields of a header framed by [`crate::MrtReader::next_raw`],
    /// which has already split the `_ET` microseconds off the body.
    pub fn from_header(h: &Header) -> RecordInfo {
        RecordInfo {
            timestamp: h.timestamp,
            microseconds: h.microseconds.unwrap_or(0),
            mrt_type: h.mrt_type,
            subtype: h.subtype,
        }
    }
}

/// Formats MRT records as `bgpdump -m` lines. Keeps the last
/// PEER_INDEX_TABLE, so feed it every record of a file in order.
#[derive(Default)]
pub struct Dumper {
    /// `PEER_IP|PEER_AS|` text of each PEER_INDEX_TABLE entry, back to back.
    peer_text: Vec<u8>,
    /// End offset in `peer_text` of each peer.
    peer_end: Vec<u32>,
    /// `FORMAT|TIME|` of the current record.
    head: Vec<u8>,
    /// `PEER|AS|` of the current BGP4MP record; prefix text of a RIB record.
    field: Vec<u8>,
    /// A merged (AS_PATH + AS4_PATH) path, and scratch for the merge.
    merged: Vec<u8>,
    tmp: Vec<u8>,
    skipped: u64,
    /// Write JSON objects (docs/bgpdump-format.md) instead of `-m` lines.
    json: bool,
}

impl Dumper {
    /// A `bgpdump -m` formatter.
    pub fn new() -> Dumper {
        Dumper::default()
    }

    /// A formatter writing one JSON object per `-m` line, with the fields
    /// documented in docs/bgpdump-format.md ("JSON output").
    pub fn json() -> Dumper {
        Dumper {
            json: true,
            ..Dumper::default()
        }
    }

    /// RIB entries that could not be printed because their peer index was
    /// not in the PEER_INDEX_TABLE (bgpdump reads out of bounds there).
    pub fn skipped_entries(&self) -> u64 {
        self.skipped
    }

    /// Appends the lines of one record to `out`. `body` is the record body
    /// after the common header (and after the BGP4MP_ET microseconds).
    pub fn record(&mut self, info: &RecordInfo, body: &[u8], out: &mut Vec<u8>) {
        match info.mrt_type {
            12 => self.table_dump(info, body, out),
            13 => self.table_dump_v2(info, body, out),
            16 | 17 => self.bgp4mp(info, body, out),
            _ => {}
        }
    }

    fn set_head(&mut self, format: &[u8], info: &RecordInfo) {
        self.head.clear();
        if self.json {
            json::head(&mut self.head, format, info);
            return;
        }
        self.head.extend_from_slice(format);
        self.head.push(b'|');
        fmt::push_u32(&mut self.head, info.timestamp);
        if info.mrt_type == 17 {
            self.head.push(b'.');
            fmt::push_micros(&mut self.head, info.microseconds);
        }
        self.head.push(b'|');
    }
}

#[cfg(test)]
mod tests;

//! The streaming reader: frames records (RFC 6396 §2) from a possibly
//! compressed byte stream into one reused buffer and decodes them lazily.
//!
//! Error policy:
//! - A truncated header or body, a truncated compressed stream or an I/O
//!   error is fatal: every complete record before it is delivered, then one
//!   error carrying the offset of the damaged record, then `None` forever.
//! - A body that does not decode (lengths inside it do not add up) yields a
//!   non-fatal `Malformed` error for that record; since the header's length
//!   field still frames the stream, reading continues with the next record.
//! - Unknown types/subtypes are skipped by `next_record` and counted.

#![deny(clippy::indexing_slicing)]

use crate::decompress::{Compression, Source};
use crate::error::{ErrorKind, Malformed, MrtError};
use crate::header::{Header, HEADER_LEN};
use crate::peer_table::PeerTable;
use crate::record::{is_known, Body, RawRecord, Record};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Reader settings for [`MrtReader::open_with`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReaderOptions {
    /// Decompress on a background thread (default true). Has no effect on
    /// plain input.
    pub threaded: bool,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions { threaded: true }
    }
}

/// What the reader has seen so far.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Complete records framed (known or not).
    pub records: u64,
    /// Records returned decoded by `next_record`.
    pub decoded: u64,
    /// Records skipped by `next_record` for an unknown type or subtype.
    pub unknown: u64,
    /// Records whose body did not decode.
    pub malformed: u64,
}

/// A streaming MRT reader. Memory use is one record buffer plus the input
/// buffers, whatever the file size.
pub struct MrtReader<R: Read> {
    src: Source<R>,
    compression: Compression,
    /// Body of the current record (microseconds included for `_ET`).
    buf: Vec<u8>,
    /// Bytes consumed from the decompressed stream.
    pos: u64,
    done: bool,
    /// Error found while opening, reported by the first read.
    pending: Option<io::ErrorKind>,
    peers: PeerTable,
    counters: Counters,
}

impl MrtReader<File> {
    /// Opens a file (plain, gzip or bzip2), decompressing on a background
    /// thread.
    pub fn open(path: impl AsRef<Path>) -> io::Result<Self> {
        Self::open_with(path, ReaderOptions::default())
    }

    /// As [`MrtReader::open`], with options.
    pub fn open_with(path: impl AsRef<Path>, opts: ReaderOptions) -> io::Result<Self> {
        let f = File::open(path)?;
        Ok(if opts.threaded {
            MrtReader::new_threaded(f)
        } else {
            MrtReader::new(f)
        })
    }
}

impl<R: Read> MrtReader<R> {
    /// Reads from `r`, detecting compression; decompresses on this thread.
    pub fn new(r: R) -> Self {
        Self::from_source(Source::new(r))
    }

    fn from_source(s: (Source<R>, Compression, Option<io::ErrorKind>)) -> Self {
        let (src, compression, pending) = s;
        MrtReader {
            src,
            compression,
            buf: Vec::with_capacity(4096),
            pos: 0,
            done: false,
            pending,
            peers: PeerTable::default(),
            counters: Counters::default(),
        }
    }

    /// The compression detected from the first bytes.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Bytes consumed so far from the decompressed stream.
    pub fn offset(&self) -> u64 {
        self.pos
    }

    /// Record and error counts so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// The latest PEER_INDEX_TABLE read by `next_record` (empty if none).
    pub fn peer_table(&self) -> &PeerTable {
        &self.peers
    }

    fn fail(&mut self, offset: u64, kind: ErrorKind) -> MrtError {
        self.done = true;
        MrtError::new(offset, kind)
    }

    fn io_kind(&self, e: &io::Error) -> ErrorKind {
        // Decoders report a stream cut short as UnexpectedEof.
        if e.kind() == io::ErrorKind::UnexpectedEof && self.compression != Compression::None {
            ErrorKind::TruncatedStream
        } else {
            ErrorKind::Io(e.kind())
        }
    }

    /// Frames the next record into `self.buf`. Returns the header (with
    /// microseconds filled in) and where the body starts in `buf`.
    fn fill_next(&mut self) -> Option<Result<(Header, u64, usize), MrtError>> {
        if self.done {
            return None;
        }
        let offset = self.pos;
        if let Some(k) = self.pending.take() {
            return Some(Err(self.fail(offset, ErrorKind::Io(k))));
        }
        let mut hb = [0u8; HEADER_LEN];
        let mut got = 0;
        while got < HEADER_LEN {
            match self.src.read(hb.get_mut(got..).unwrap_or(&mut [])) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let k = self.io_kind(&e);
                    return Some(Err(self.fail(offset, k)));
                }
            }
        }
        if got == 0 {
            self.done = true;
            return None;
        }
        if got < HEADER_LEN {
            return Some(Err(
                self.fail(offset, ErrorKind::TruncatedHeader { got: got as u8 })
            ));
        }
        let mut header = Header::parse(&hb);
        self.buf.clear();
        // read_to_end grows the buffer only as data arrives, so a huge
        // length field in damaged input cannot force a huge allocation.
        let want = u64::from(header.length);
        let r = (&mut self.src).take(want).read_to_end(&mut self.buf);
        if let Err(e) = r {
            let k = self.io_kind(&e);
            return Some(Err(self.fail(offset, k)));
        }
        let body_got = self.buf.len() as u64;
        if body_got < want {
            let k = ErrorKind::TruncatedBody {
                expected: header.length,
                got: body_got as u32,
            };
            return Some(Err(self.fail(offset, k)));
        }
        self.pos += HEADER_LEN as u64 + want;
        self.counters.records += 1;
        let mut start = 0;
        if Header::is_extended(header.mrt_type) {
            // RFC 6396 §3: the microsecond field is part of the body length.
            let Some(&us) = self.buf.first_chunk::<4>() else {
                self.counters.malformed += 1;
                let why = Malformed::Short {
                    field: "microseconds",
                };
                let k = ErrorKind::Malformed {
                    mrt_type: header.mrt_type,
                    subtype: header.subtype,
                    why,
                };
                return Some(Err(MrtError::new(offset, k)));
            };
            header.microseconds = Some(u32::from_be_bytes(us));
            start = 4;
        }
        Some(Ok((header, offset, start)))
    }

    /// The next record, framed but not decoded, whatever its type. Needed for
    /// lossless copying and for measuring framing alone.
    pub fn next_raw(&mut self) -> Option<Result<RawRecord<'_>, MrtError>> {
        match self.fill_next()? {
            Err(e) => Some(Err(e)),
            Ok((header, offset, start)) => {
                let body = self.buf.get(start..).unwrap_or(&[]);
                Some(Ok(RawRecord {
                    header,
                    offset,
                    body,
                }))
            }
        }
    }

    /// The next decoded record. Unknown types/subtypes are skipped and
    /// counted; see the module documentation for the error policy.
    pub fn next_record(&mut self) -> Option<Result<Record<'_>, MrtError>> {
        loop {
            let (header, offset, start) = match self.fill_next()? {
                Err(e) => return Some(Err(e)),
                Ok(x) => x,
            };
            if !is_known(header.mrt_type, header.subtype) {
                self.counters.unknown += 1;
                continue;
            }
            let raw = self.buf.get(start..).unwrap_or(&[]);
            return match Body::parse(header.mrt_type, header.subtype, raw) {
                Ok(Some(body)) => {
                    if let Body::PeerIndexTable(t) = &body {
                        self.peers.load(t);
                    }
                    self.counters.decoded += 1;
                    Some(Ok(Record {
                        header,
                        offset,
                        body,
                        raw,
                        peers: &self.peers,
                    }))
                }
                Ok(None) => {
                    // is_known said yes; keep the reader going regardless.
                    self.counters.unknown += 1;
                    Some(Err(MrtError::new(
                        offset,
                        ErrorKind::Malformed {
                            mrt_type: header.mrt_type,
                            subtype: header.subtype,
                            why: Malformed::Short { field: "body" },
                        },
                    )))
                }
                Err(why) => {
                    self.counters.malformed += 1;
                    let k = ErrorKind::Malformed {
                        mrt_type: header.mrt_type,
                        subtype: header.subtype,
                        why,
                    };
                    Some(Err(MrtError::new(offset, k)))
                }
            };
        }
    }
}

impl<R: Read + Send + 'static> MrtReader<R> {
    /// Like [`MrtReader::new`], but compressed input is decompressed on a
    /// background thread so that parsing overlaps decompression.
    pub fn new_threaded(r: R) -> Self {
        Self::from_source(Source::new_threaded(r))
    }
}

//! MRT writer. Each record is encoded into one reused buffer and written
//! with a single `write_all`; output may be gzip- or bzip2-compressed.

use crate::bgp4mp::{Message, Peering, StateChange};
use crate::decompress::Compression;
use crate::header::{subtypes as st, types, Header};
use crate::peer_table::{Peer, PeerIndexTable};
use crate::record::{encode_record, Body, Record};
use crate::rib::{Rib, RibEntry};
use base::{AfiSafi, Prefix, Safi};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::net::Ipv4Addr;
use std::path::Path;

enum Output<W: Write> {
    Plain(BufWriter<W>),
    Gzip(flate2::write::GzEncoder<W>),
    Bzip2(bzip2::write::BzEncoder<W>),
}

/// Writes MRT records to `W`.
pub struct MrtWriter<W: Write> {
    out: Output<W>,
    buf: Vec<u8>,
    records: u64,
}

impl MrtWriter<File> {
    /// Creates (truncates) a file, compressing as asked.
    pub fn create(path: impl AsRef<Path>, compression: Compression) -> io::Result<Self> {
        Ok(MrtWriter::with_compression(
            File::create(path)?,
            compression,
        ))
    }
}

impl<W: Write> MrtWriter<W> {
    /// Plain output, buffered.
    pub fn new(w: W) -> Self {
        Self::with_compression(w, Compression::None)
    }

    /// Output compressed with `compression`, buffered.
    pub fn with_compression(w: W, compression: Compression) -> Self {
        let out = match compression {
            Compression::None => Output::Plain(BufWriter::with_capacity(1 << 16, w)),
            Compression::Gzip => Output::Gzip(flate2::write::GzEncoder::new(
                w,
                flate2::Compression::default(),
            )),
            Compression::Bzip2 => Output::Bzip2(bzip2::write::BzEncoder::new(
                w,
                bzip2::Compression::default(),
            )),
        };
        MrtWriter {
            out,
            buf: Vec::with_capacity(4096),
            records: 0,
        }
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    fn emit(&mut self) -> io::Result<()> {
        let r = match &mut self.out {
            Output::Plain(w) => w.write_all(&self.buf),
            Output::Gzip(w) => w.write_all(&self.buf),
            Output::Bzip2(w) => w.write_all(&self.buf),
        };
        self.buf.clear();
        r?;
        self.records += 1;
        Ok(())
    }

    /// Re-encodes a decoded record (lossless: see [`Record::encode`]).
    pub fn write_record(&mut self, rec: &Record<'_>) -> io::Result<()> {
        self.write_with_header(&rec.header, &rec.body)
    }

    /// Encodes `body` under `header` (its length field is recomputed).
    pub fn write_with_header(&mut self, header: &Header, body: &Body<'_>) -> io::Result<()> {
        self.buf.clear();
        encode_record(header, body, &mut self.buf)?;
        self.emit()
    }

    /// Encodes `body` with the type/subtype it implies. BGP4MP bodies are
    /// written as BGP4MP_ET when `microseconds` is given; other types
    /// ignore `microseconds` (only BGP4MP has an `_ET` form in use).
    pub fn write_body(
        &mut self,
        timestamp: u32,
        microseconds: Option<u32>,
        body: &Body<'_>,
    ) -> io::Result<()> {
        let (mut t, subtype) = body.kind();
        let mut us = None;
        if t == types::BGP4MP && microseconds.is_some() {
            t = types::BGP4MP_ET;
            us = microseconds;
        }
        self.write_with_header(&Header::new(timestamp, us, t, subtype), body)
    }

    /// Writes a record from a header and a raw body (after the microsecond
    /// field for `_ET` types). The length field is computed from `body`;
    /// the microseconds are written when `header.microseconds` is set.
    pub fn write_raw(&mut self, header: &Header, body: &[u8]) -> io::Result<()> {
        self.buf.clear();
        header.encode(body.len(), &mut self.buf)?;
        self.buf.extend_from_slice(body);
        self.emit()
    }

    /// TABLE_DUMP_V2 PEER_INDEX_TABLE (RFC 6396 §4.3.1).
    pub fn write_peer_index_table(
        &mut self,
        timestamp: u32,
        collector_bgp_id: Ipv4Addr,
        view_name: &str,
        peers: &[Peer],
    ) -> io::Result<()> {
        self.buf.clear();
        let h = Header::new(timestamp, None, types::TABLE_DUMP_V2, st::PEER_INDEX_TABLE);
        self.buf.resize(12, 0);
        PeerIndexTable::encode_parts(
            collector_bgp_id,
            view_name.as_bytes(),
            peers.iter().copied(),
            &mut self.buf,
        )?;
        self.patch_header(&h)?;
        self.emit()
    }

    /// A RIB_IPV4/IPV6_UNICAST/MULTICAST record (RFC 6396 §4.3.2), or its
    /// RFC 8050 ADD-PATH form when `add_path` (entries then carry
    /// `path_id`, 0 when absent). `safi` must be unicast or multicast.
    pub fn write_rib(
        &mut self,
        timestamp: u32,
        sequence: u32,
        prefix: Prefix,
        safi: Safi,
        add_path: bool,
        entries: &[RibEntry<'_>],
    ) -> io::Result<()> {
        self.write_rib_entries(
            timestamp,
            sequence,
            prefix,
            safi,
            add_path,
            entries.iter().copied(),
        )
    }

    /// [`Self::write_rib`] with the entries from an iterator, so that a
    /// caller dumping a whole table need not collect each prefix's entries.
    pub fn write_rib_entries<'e>(
        &mut self,
        timestamp: u32,
        sequence: u32,
        prefix: Prefix,
        safi: Safi,
        add_path: bool,
        entries: impl ExactSizeIterator<Item = RibEntry<'e>>,
    ) -> io::Result<()> {
        let subtype =
            Rib::subtype_for(AfiSafi::new(prefix.afi(), safi), add_path).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "RIB SAFI must be unicast or multicast",
                )
            })?;
        self.buf.clear();
        let h = Header::new(timestamp, None, types::TABLE_DUMP_V2, subtype);
        self.buf.resize(12, 0);
        Rib::encode_parts(sequence, prefix, entries, add_path, &mut self.buf)?;
        self.patch_header(&h)?;
        self.emit()
    }

    /// BGP4MP MESSAGE_AS4 (or BGP4MP_ET when `microseconds` is given).
    /// `message` is the full BGP message, marker included.
    pub fn write_bgp4mp_message(
        &mut self,
        timestamp: u32,
        microseconds: Option<u32>,
        peering: &Peering,
        message: &[u8],
    ) -> io::Result<()> {
        let m = Message {
            subtype: st::MESSAGE_AS4,
            peering: *peering,
            message,
        };
        self.write_body(timestamp, microseconds, &Body::Message(m))
    }

    /// BGP4MP STATE_CHANGE_AS4 (or BGP4MP_ET when `microseconds` is given).
    pub fn write_bgp4mp_state_change(
        &mut self,
        timestamp: u32,
        microseconds: Option<u32>,
        peering: &Peering,
        old_state: u16,
        new_state: u16,
    ) -> io::Result<()> {
        let s = StateChange {
            subtype: st::STATE_CHANGE_AS4,
            peering: *peering,
            old_state,
            new_state,
        };
        self.write_body(timestamp, microseconds, &Body::StateChange(s))
    }

    /// Fills the 12 header bytes reserved at the front of `buf`.
    fn patch_header(&mut self, h: &Header) -> io::Result<()> {
        let body_len = self.buf.len().saturating_sub(12);
        let (b, n) = h.wire_bytes(body_len)?;
        if let (Some(dst), Some(src)) = (self.buf.get_mut(..n), b.get(..n)) {
            dst.copy_from_slice(src);
        }
        Ok(())
    }

    /// Flushes buffered (and compressed) output to the underlying writer.
    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.out {
            Output::Plain(w) => w.flush(),
            Output::Gzip(w) => w.flush(),
            Output::Bzip2(w) => w.flush(),
        }
    }

    /// Flushes, ends the compressed stream, and returns the inner writer.
    pub fn finish(self) -> io::Result<W> {
        match self.out {
            Output::Plain(w) => w.into_inner().map_err(|e| e.into_error()),
            Output::Gzip(w) => w.finish(),
            Output::Bzip2(w) => w.finish(),
        }
    }
}

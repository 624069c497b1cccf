//! Decoded records: the [`Body`] enum and dispatch on (type, subtype).

#![deny(clippy::indexing_slicing)]

use crate::bgp4mp::{self, Message, StateChange};
use crate::error::Malformed;
use crate::header::{subtypes as st, types, Header, HEADER_LEN};
use crate::peer_table::{GeoPeerTable, Peer, PeerIndexTable, PeerTable};
use crate::rib::{Rib, RibGeneric};
use crate::table_dump::TableDump;

/// A decoded record body, borrowing the reader's buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Body<'a> {
    /// TABLE_DUMP (12), subtypes 1 and 2.
    TableDump(TableDump<'a>),
    /// TABLE_DUMP_V2 PEER_INDEX_TABLE (13/1).
    PeerIndexTable(PeerIndexTable<'a>),
    /// TABLE_DUMP_V2 GEO_PEER_TABLE (13/7, RFC 6397).
    GeoPeerTable(GeoPeerTable<'a>),
    /// TABLE_DUMP_V2 RIB_IPV4/IPV6_UNICAST/MULTICAST (13/2..5) and their
    /// ADD-PATH forms (13/8..11).
    Rib(Rib<'a>),
    /// TABLE_DUMP_V2 RIB_GENERIC (13/6) and RIB_GENERIC_ADDPATH (13/12).
    RibGeneric(RibGeneric<'a>),
    /// BGP4MP / BGP4MP_ET STATE_CHANGE (0) and STATE_CHANGE_AS4 (5).
    StateChange(StateChange),
    /// BGP4MP / BGP4MP_ET message subtypes (1, 4, 6..11).
    Message(Message<'a>),
}

/// True when this crate decodes records of this type and subtype; others
/// are skipped (and counted) by [`crate::MrtReader::next_record`].
pub const fn is_known(mrt_type: u16, subtype: u16) -> bool {
    match mrt_type {
        types::TABLE_DUMP => matches!(subtype, st::AFI_IPV4 | st::AFI_IPV6),
        types::TABLE_DUMP_V2 => matches!(subtype, 1..=12),
        types::BGP4MP | types::BGP4MP_ET => bgp4mp::is_known_subtype(subtype),
        _ => false,
    }
}

impl<'a> Body<'a> {
    /// Decodes a body (after the microsecond field for `_ET` types).
    /// `Ok(None)` for a type/subtype this crate does not know.
    pub fn parse(
        mrt_type: u16,
        subtype: u16,
        body: &'a [u8],
    ) -> Result<Option<Body<'a>>, Malformed> {
        if !is_known(mrt_type, subtype) {
            return Ok(None);
        }
        let b = match mrt_type {
            types::TABLE_DUMP => Body::TableDump(TableDump::parse(subtype, body)?),
            types::TABLE_DUMP_V2 => match subtype {
                st::PEER_INDEX_TABLE => Body::PeerIndexTable(PeerIndexTable::parse(body)?),
                st::GEO_PEER_TABLE => Body::GeoPeerTable(GeoPeerTable::parse(body)?),
                st::RIB_GENERIC | st::RIB_GENERIC_ADDPATH => {
                    Body::RibGeneric(RibGeneric::parse(subtype, body)?)
                }
                _ => Body::Rib(Rib::parse(subtype, body)?),
            },
            _ if bgp4mp::is_state_change_subtype(subtype) => {
                Body::StateChange(StateChange::parse(subtype, body)?)
            }
            _ => Body::Message(Message::parse(subtype, body)?),
        };
        Ok(Some(b))
    }

    /// Appends the encoded body (without header or microseconds).
    pub fn encode(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        match self {
            Body::TableDump(b) => b.encode(out),
            Body::PeerIndexTable(b) => b.encode(out),
            Body::GeoPeerTable(b) => b.encode(out),
            Body::Rib(b) => b.encode(out),
            Body::RibGeneric(b) => b.encode(out),
            Body::StateChange(b) => b.encode(out),
            Body::Message(b) => b.encode(out),
        }
    }

    /// The (type, subtype) this body encodes as. BGP4MP bodies report
    /// BGP4MP; the writer uses BGP4MP_ET when microseconds are given.
    pub fn kind(&self) -> (u16, u16) {
        match self {
            Body::TableDump(b) => (types::TABLE_DUMP, b.subtype()),
            Body::PeerIndexTable(_) => (types::TABLE_DUMP_V2, st::PEER_INDEX_TABLE),
            Body::GeoPeerTable(_) => (types::TABLE_DUMP_V2, st::GEO_PEER_TABLE),
            Body::Rib(b) => (types::TABLE_DUMP_V2, b.subtype),
            Body::RibGeneric(b) => (types::TABLE_DUMP_V2, b.subtype),
            Body::StateChange(b) => (types::BGP4MP, b.subtype),
            Body::Message(b) => (types::BGP4MP, b.subtype),
        }
    }
}

/// A record as framed, before body decoding.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// The MRT common header.
    pub header: Header,
    /// Offset of the record's first header byte in the decompressed stream.
    pub offset: u64,
    /// The body, after the microsecond field for `_ET` types.
    pub body: &'a [u8],
}

/// A decoded record.
#[derive(Copy, Clone, Debug)]
pub struct Record<'a> {
    /// The MRT common header.
    pub header: Header,
    /// Offset of the record's first header byte in the decompressed stream.
    pub offset: u64,
    /// The decoded body.
    pub body: Body<'a>,
    /// The undecoded body bytes (after the microsecond field for `_ET`).
    pub raw: &'a [u8],
    /// The latest PEER_INDEX_TABLE seen by the reader (empty if none yet);
    /// after a PEER_INDEX_TABLE record it is that table.
    pub peers: &'a PeerTable,
}

impl Record<'_> {
    /// Resolves a RIB entry's peer index through the reader's peer table.
    pub fn peer(&self, index: u16) -> Option<&Peer> {
        self.peers.get(index)
    }

    /// Appends the whole record (header, microseconds, body), re-encoded
    /// from the decoded form. The header's type, subtype, timestamp and
    /// microseconds are kept; its length is recomputed.
    pub fn encode(&self, out: &mut Vec<u8>) -> std::io::Result<()> {
        encode_record(&self.header, &self.body, out)
    }
}

/// Appends header + body, computing the length field. The body is encoded
/// first and the header inserted in front so that no temporary is needed.
pub fn encode_record(header: &Header, body: &Body<'_>, out: &mut Vec<u8>) -> std::io::Result<()> {
    let start = out.len();
    let hlen = HEADER_LEN + if header.microseconds.is_some() { 4 } else { 0 };
    out.resize(start + hlen, 0);
    let r = body
        .encode(out)
        .and_then(|()| header.wire_bytes(out.len() - start - hlen));
    match r {
        Ok((h, n)) => {
            if let (Some(dst), Some(src)) = (out.get_mut(start..start + hlen), h.get(..n)) {
                dst.copy_from_slice(src);
            }
            Ok(())
        }
        Err(e) => {
            out.truncate(start);
            Err(e)
        }
    }
}

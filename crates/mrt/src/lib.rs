//! Streaming MRT reader and writer (RFC 6396, RFC 6397 GEO_PEER_TABLE,
//! RFC 8050 ADD-PATH).
//!
//! - [`MrtReader`] reads plain, gzip or bzip2 input (detected by magic
//!   bytes), optionally decompressing on a background thread, into one
//!   reused buffer. [`MrtReader::next_record`] returns a [`Record`] whose
//!   [`Body`] borrows that buffer; RIB entries and peer tables are iterated
//!   lazily. BGP path attributes and BGP messages stay raw `&[u8]`.
//! - [`MrtWriter`] encodes records; re-encoding a decoded record reproduces
//!   its original bytes.
//! - [`Stats`] accumulates the numbers `tessera mrt stats` prints.
//! - [`synth_out`] writes a synthetic table from `sim` as a RIB dump.

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod bgp4mp;
/// `bgpdump -m` compatible output (docs/bgpdump-format.md).
pub mod bgpdump;
pub mod decompress;
pub mod error;
#[cfg(any(test, feature = "test-support"))]
pub mod fuzz_support;
pub mod header;
pub mod peer_table;
pub mod reader;
pub mod record;
pub mod rib;
pub mod stats;
pub mod synth_out;
pub mod table_dump;
mod wire;
pub mod writer;

pub use bgp4mp::{Message, Peering, StateChange};
pub use decompress::Compression;
pub use error::{ErrorKind, Malformed, MrtError};
pub use header::{subtypes, types, Header, HEADER_LEN};
pub use peer_table::{GeoPeer, GeoPeerTable, Peer, PeerIndexTable, PeerTable};
pub use reader::{Counters, MrtReader, ReaderOptions};
pub use record::{encode_record, Body, RawRecord, Record};
pub use rib::{Rib, RibEntries, RibEntry, RibGeneric};
pub use stats::Stats;
pub use table_dump::TableDump;
pub use writer::MrtWriter;

//! The BGP Monitoring Protocol, version 3 (RFC 7854), with the Loc-RIB
//! peer type of RFC 9069 and the Adj-RIB-Out flag of RFC 8671: a pure
//! encoder ([`encode`]) of every message a monitored router sends, and a
//! zero-copy decoder ([`decode`]) of the same messages (used by tests and
//! fuzzed). The BGP PDUs inside (OPEN in Peer Up, UPDATE in Route
//! Monitoring, NOTIFICATION in Peer Down) are built and checked by
//! `bgp-wire`; [`route`] builds the one-prefix UPDATE a RIB entry becomes.
//! Time is an argument ([`Timestamp`]); nothing here opens a socket or
//! reads a clock. The collector connections, queues and the table dump are
//! `bgp_speaker::bmp`.
//!
//! Why our own: of the Rust BMP crates, `zettabgp` and `bmp-protocol` only
//! parse (the latter panics on bad headers), and `netgauze-bmp-pkt`, the
//! one maintained encoder, carries its own BGP model: every UPDATE we hold
//! as bytes would be re-parsed into its types to be written back, with a
//! large dependency tree for a format that takes a few hundred lines. BMP's
//! framing is small and fully specified, so it is written here from the
//! RFCs on top of our BGP codec, and checked against pmacct's `pmbmpd` and
//! Wireshark's dissector (`crates/tesserad/tests/bmp_interop.rs`).
//!
//! ```
//! use bmp::{decode, encode, PeerHeader, PeerType, Timestamp};
//! use std::net::{IpAddr, Ipv4Addr};
//!
//! let mut out = Vec::new();
//! encode::initiation(&[(encode::INIT_SYS_NAME, b"r1"), (encode::INIT_SYS_DESCR, b"tesserad")], &mut out);
//! let peer = PeerHeader {
//!     peer_type: PeerType::Global,
//!     flags: 0,
//!     distinguisher: 0,
//!     address: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
//!     asn: 65001,
//!     bgp_id: Ipv4Addr::new(192, 0, 2, 1),
//!     timestamp: Timestamp { secs: 1, micros: 0 },
//! };
//! encode::peer_down(&peer, encode::DownReason::RemoteNoData, &mut out);
//! let (m, used) = decode::Message::decode(&out).unwrap();
//! assert!(matches!(m, decode::Message::Initiation(_)));
//! let (m, _) = decode::Message::decode(&out[used..]).unwrap();
//! assert!(matches!(m, decode::Message::PeerDown { reason: 4, .. }));
//! ```

#![warn(missing_docs)]

pub mod decode;
pub mod encode;
mod header;
pub mod route;

pub use decode::{DecodeError, Message};
pub use header::{
    msg_type, peer_flags, PeerHeader, PeerType, Timestamp, COMMON_HEADER_LEN, PEER_HEADER_LEN,
    VERSION,
};

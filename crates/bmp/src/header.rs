//! The common header (RFC 7854 §4.1) and the per-peer header (§4.2, with
//! RFC 9069 §4.1 and RFC 8671 §4).
//!
//! ```text
//! common header                     per-peer header (42 octets)
//! +---------+------------------+    +-----------+-----------+------------------------+
//! | Version | Message Length   |    | Peer Type | Flags     | Peer Distinguisher (8) |
//! |   (1)   |      (4)         |    +-----------+-----------+------------------------+
//! +---------+------------------+    | Peer Address (16: IPv4 in the last 4)          |
//! | Type(1) |                       +------------------------------------------------+
//! +---------+                       | Peer AS (4) | Peer BGP ID (4)                  |
//!                                   | Timestamp seconds (4) | microseconds (4)       |
//!                                   +------------------------------------------------+
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// BMP version 3 (RFC 7854 §4.1).
pub const VERSION: u8 = 3;
/// Octets of the common header.
pub const COMMON_HEADER_LEN: usize = 6;
/// Octets of the per-peer header.
pub const PEER_HEADER_LEN: usize = 42;

/// Message types (RFC 7854 §4.1, §10.1).
pub mod msg_type {
    /// Route Monitoring.
    pub const ROUTE_MONITORING: u8 = 0;
    /// Statistics Report.
    pub const STATISTICS_REPORT: u8 = 1;
    /// Peer Down Notification.
    pub const PEER_DOWN: u8 = 2;
    /// Peer Up Notification.
    pub const PEER_UP: u8 = 3;
    /// Initiation.
    pub const INITIATION: u8 = 4;
    /// Termination.
    pub const TERMINATION: u8 = 5;
    /// Route Mirroring.
    pub const ROUTE_MIRRORING: u8 = 6;
}

/// Per-peer header flags.
pub mod peer_flags {
    /// V: the peer address is IPv6 (RFC 7854 §4.2).
    pub const V: u8 = 0x80;
    /// L: post-policy (RFC 7854 §4.2).
    pub const L: u8 = 0x40;
    /// A: the AS_PATH in the PDU uses 2-octet ASNs (RFC 7854 §4.2).
    pub const A: u8 = 0x20;
    /// O: Adj-RIB-Out (RFC 8671 §4).
    pub const O: u8 = 0x10;
    /// F: Loc-RIB filtered (RFC 9069 §4.2), on peer type 3 only.
    pub const F: u8 = 0x80;
}

/// Peer types (RFC 7854 §4.2, RFC 9069 §4.1).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum PeerType {
    /// 0: Global Instance Peer.
    Global,
    /// 1: RD Instance Peer.
    RdInstance,
    /// 2: Local Instance Peer.
    LocalInstance,
    /// 3: Loc-RIB Instance Peer (RFC 9069).
    LocRib,
    /// Any other value (unassigned or experimental).
    Other(u8),
}

impl PeerType {
    /// The wire value.
    pub const fn code(self) -> u8 {
        match self {
            PeerType::Global => 0,
            PeerType::RdInstance => 1,
            PeerType::LocalInstance => 2,
            PeerType::LocRib => 3,
            PeerType::Other(x) => x,
        }
    }

    /// From the wire value.
    pub const fn from_code(c: u8) -> PeerType {
        match c {
            0 => PeerType::Global,
            1 => PeerType::RdInstance,
            2 => PeerType::LocalInstance,
            3 => PeerType::LocRib,
            x => PeerType::Other(x),
        }
    }
}

/// When the monitored router saw what it reports (RFC 7854 §4.2).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Timestamp {
    /// Seconds since the Unix epoch.
    pub secs: u32,
    /// Microseconds within the second.
    pub micros: u32,
}

/// The per-peer header, decoded or to encode.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PeerHeader {
    /// Peer type.
    pub peer_type: PeerType,
    /// Flags ([`peer_flags`]). On encoding, V is set from `address`.
    pub flags: u8,
    /// Peer Distinguisher (a route distinguisher; 0 for the global
    /// instance and the default Loc-RIB).
    pub distinguisher: u64,
    /// Peer address (all zeros for a Loc-RIB peer, RFC 9069 §4.1).
    pub address: IpAddr,
    /// Peer AS (the local AS for a Loc-RIB peer).
    pub asn: u32,
    /// Peer BGP Identifier (ours for a Loc-RIB peer).
    pub bgp_id: Ipv4Addr,
    /// When the message's content was received or decided.
    pub timestamp: Timestamp,
}

impl PeerHeader {
    /// Appends the 42 octets.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut flags = self.flags;
        // V only means "IPv6 address" for peer types 0-2; RFC 9069 reuses
        // the top bit as F on Loc-RIB peers, so leave it as given there.
        if self.peer_type != PeerType::LocRib {
            flags &= !peer_flags::V;
            if self.address.is_ipv6() {
                flags |= peer_flags::V;
            }
        }
        out.push(self.peer_type.code());
        out.push(flags);
        out.extend_from_slice(&self.distinguisher.to_be_bytes());
        out.extend_from_slice(&addr16(self.address));
        out.extend_from_slice(&self.asn.to_be_bytes());
        out.extend_from_slice(&self.bgp_id.octets());
        out.extend_from_slice(&self.timestamp.secs.to_be_bytes());
        out.extend_from_slice(&self.timestamp.micros.to_be_bytes());
    }

    /// Reads the 42 octets of `b` (which must hold them).
    pub(crate) fn parse(b: &[u8; PEER_HEADER_LEN]) -> PeerHeader {
        let peer_type = PeerType::from_code(b[0]);
        let flags = b[1];
        let mut d = [0u8; 8];
        d.copy_from_slice(&b[2..10]);
        let mut a = [0u8; 16];
        a.copy_from_slice(&b[10..26]);
        let v6 = peer_type != PeerType::LocRib && flags & peer_flags::V != 0;
        PeerHeader {
            peer_type,
            flags,
            distinguisher: u64::from_be_bytes(d),
            address: addr_from16(&a, v6),
            asn: u32::from_be_bytes([b[26], b[27], b[28], b[29]]),
            bgp_id: Ipv4Addr::new(b[30], b[31], b[32], b[33]),
            timestamp: Timestamp {
                secs: u32::from_be_bytes([b[34], b[35], b[36], b[37]]),
                micros: u32::from_be_bytes([b[38], b[39], b[40], b[41]]),
            },
        }
    }
}

/// An address in BMP's 16-octet field: IPv4 in the last four octets,
/// the rest zero (RFC 7854 §4.2, "Peer Address").
pub(crate) fn addr16(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(v4) => {
            let mut b = [0u8; 16];
            b[12..].copy_from_slice(&v4.octets());
            b
        }
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// The reverse of [`addr16`], IPv6 when `v6`.
pub(crate) fn addr_from16(b: &[u8; 16], v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(Ipv6Addr::from(*b))
    } else {
        IpAddr::V4(Ipv4Addr::new(b[12], b[13], b[14], b[15]))
    }
}

/// Starts a message: the common header with a length patched by
/// [`finish`]; returns where it starts.
pub(crate) fn begin(out: &mut Vec<u8>, ty: u8) -> usize {
    let s = out.len();
    out.push(VERSION);
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.push(ty);
    s
}

/// Patches the length of the message started at `s`.
pub(crate) fn finish(out: &mut [u8], s: usize) {
    let len = u32::try_from(out.len() - s).unwrap_or(u32::MAX);
    if let Some(f) = out.get_mut(s + 1..s + 5) {
        f.copy_from_slice(&len.to_be_bytes());
    }
}

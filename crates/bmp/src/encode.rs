//! Encoders of every message a monitored router sends (RFC 7854 §4).
//! Each appends one whole message (common header included) to `out`.
//! BGP PDUs are passed as whole messages (19-octet header included), as
//! BMP carries them (§4.6, §4.9, §4.10).

use std::net::IpAddr;

use crate::header::{addr16, begin, finish, msg_type, PeerHeader};

/// Initiation / Termination information TLV: free text (RFC 7854 §4.4).
pub const INIT_STRING: u16 = 0;
/// Initiation TLV: sysDescr (§4.3).
pub const INIT_SYS_DESCR: u16 = 1;
/// Initiation TLV: sysName (§4.3).
pub const INIT_SYS_NAME: u16 = 2;
/// Peer Up information TLV: VRF/Table Name (RFC 9069 §5.1).
pub const INFO_TABLE_NAME: u16 = 3;
/// Termination TLV: reason (§4.5), a 2-octet code.
pub const TERM_REASON: u16 = 1;

/// Termination reasons (RFC 7854 §4.5).
pub mod term_reason {
    /// Session administratively closed.
    pub const ADMIN_CLOSE: u16 = 0;
    /// Unspecified reason.
    pub const UNSPECIFIED: u16 = 1;
    /// Out of resources (e.g. a queue overflowed).
    pub const OUT_OF_RESOURCES: u16 = 2;
    /// Redundant connection.
    pub const REDUNDANT: u16 = 3;
    /// Session permanently administratively closed.
    pub const PERMANENTLY_CLOSED: u16 = 4;
}

/// Statistics types (RFC 7854 §4.8, RFC 8671 §5).
pub mod stat {
    /// Prefixes rejected by inbound policy (32-bit counter).
    pub const REJECTED: u16 = 0;
    /// Updates treated as withdraw (RFC 7606), 32-bit counter.
    pub const UPDATES_AS_WITHDRAW: u16 = 11;
    /// Routes in the Adj-RIB-In (64-bit gauge).
    pub const ADJ_RIB_IN: u16 = 7;
    /// Routes in the Loc-RIB (64-bit gauge).
    pub const LOC_RIB: u16 = 8;
    /// Routes in the per-AFI/SAFI Adj-RIB-In (AFI, SAFI, 64-bit gauge).
    pub const ADJ_RIB_IN_AFI_SAFI: u16 = 9;
    /// Routes in the per-AFI/SAFI Loc-RIB (AFI, SAFI, 64-bit gauge).
    pub const LOC_RIB_AFI_SAFI: u16 = 10;
    /// Routes in the post-policy Adj-RIB-Out (RFC 8671, 64-bit gauge).
    pub const ADJ_RIB_OUT_POST: u16 = 15;
}

/// One Statistics Report entry (RFC 7854 §4.8).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stat {
    /// A 32-bit counter.
    Counter(u16, u32),
    /// A 64-bit gauge.
    Gauge(u16, u64),
    /// A 64-bit gauge per AFI/SAFI (types 9, 10, 16, 17).
    AfiSafiGauge(u16, u16, u8, u64),
}

/// Why a peer went down (RFC 7854 §4.9), with the data each reason takes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DownReason<'a> {
    /// 1: we closed the session with this NOTIFICATION (whole message).
    LocalNotification(&'a [u8]),
    /// 2: we closed it without a NOTIFICATION; the FSM event (RFC 4271 §8.1).
    LocalNoNotification(u16),
    /// 3: the peer sent this NOTIFICATION (whole message).
    RemoteNotification(&'a [u8]),
    /// 4: the connection closed without a NOTIFICATION.
    RemoteNoData,
    /// 5: the peer was de-configured and will no longer be monitored.
    Deconfigured,
    /// 6: the Loc-RIB instance went away (RFC 9069 §4.3), with
    /// information TLVs (already encoded).
    LocalSystemClosed(&'a [u8]),
}

impl DownReason<'_> {
    /// The wire code.
    pub const fn code(&self) -> u8 {
        match self {
            DownReason::LocalNotification(_) => 1,
            DownReason::LocalNoNotification(_) => 2,
            DownReason::RemoteNotification(_) => 3,
            DownReason::RemoteNoData => 4,
            DownReason::Deconfigured => 5,
            DownReason::LocalSystemClosed(_) => 6,
        }
    }
}

/// Appends one information TLV (2-octet type, 2-octet length, value);
/// a value over 65535 octets is cut.
pub fn tlv(ty: u16, value: &[u8], out: &mut Vec<u8>) {
    let v = value.get(..usize::from(u16::MAX)).unwrap_or(value);
    out.extend_from_slice(&ty.to_be_bytes());
    out.extend_from_slice(&(v.len() as u16).to_be_bytes());
    out.extend_from_slice(v);
}

/// Initiation (§4.3): information TLVs. §4.3 requires sysDescr and
/// sysName to be present.
pub fn initiation(tlvs: &[(u16, &[u8])], out: &mut Vec<u8>) {
    let s = begin(out, msg_type::INITIATION);
    for (t, v) in tlvs {
        tlv(*t, v, out);
    }
    finish(out, s);
}

/// Termination (§4.5): a reason TLV and an optional string.
pub fn termination(reason: u16, text: Option<&str>, out: &mut Vec<u8>) {
    let s = begin(out, msg_type::TERMINATION);
    if let Some(t) = text {
        tlv(INIT_STRING, t.as_bytes(), out);
    }
    tlv(TERM_REASON, &reason.to_be_bytes(), out);
    finish(out, s);
}

/// The local end of a session for Peer Up (§4.10).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LocalEnd {
    /// Our address on the session (zero for a Loc-RIB peer).
    pub address: IpAddr,
    /// Our TCP port.
    pub local_port: u16,
    /// The peer's TCP port.
    pub remote_port: u16,
}

/// Peer Up Notification (§4.10): the OPENs we sent and received (whole
/// messages), then information TLVs (already encoded, e.g. by [`tlv`]).
pub fn peer_up(
    peer: &PeerHeader,
    local: &LocalEnd,
    sent_open: &[u8],
    received_open: &[u8],
    info: &[u8],
    out: &mut Vec<u8>,
) {
    let s = begin(out, msg_type::PEER_UP);
    peer.encode(out);
    out.extend_from_slice(&addr16(local.address));
    out.extend_from_slice(&local.local_port.to_be_bytes());
    out.extend_from_slice(&local.remote_port.to_be_bytes());
    out.extend_from_slice(sent_open);
    out.extend_from_slice(received_open);
    out.extend_from_slice(info);
    finish(out, s);
}

/// Peer Down Notification (§4.9).
pub fn peer_down(peer: &PeerHeader, reason: DownReason<'_>, out: &mut Vec<u8>) {
    let s = begin(out, msg_type::PEER_DOWN);
    peer.encode(out);
    out.push(reason.code());
    match reason {
        DownReason::LocalNotification(pdu) | DownReason::RemoteNotification(pdu) => {
            out.extend_from_slice(pdu);
        }
        DownReason::LocalNoNotification(ev) => out.extend_from_slice(&ev.to_be_bytes()),
        DownReason::LocalSystemClosed(tlvs) => out.extend_from_slice(tlvs),
        DownReason::RemoteNoData | DownReason::Deconfigured => {}
    }
    finish(out, s);
}

/// Route Monitoring (§4.6): one BGP UPDATE (whole message). The flags in
/// `peer` say which RIB it comes from: none (pre-policy Adj-RIB-In), L
/// (post-policy), O or O|L (Adj-RIB-Out, RFC 8671), or peer type 3
/// (Loc-RIB, RFC 9069).
pub fn route_monitoring(peer: &PeerHeader, update: &[u8], out: &mut Vec<u8>) {
    let s = begin(out, msg_type::ROUTE_MONITORING);
    peer.encode(out);
    out.extend_from_slice(update);
    finish(out, s);
}

/// Statistics Report (§4.8).
pub fn statistics(peer: &PeerHeader, stats: &[Stat], out: &mut Vec<u8>) {
    let s = begin(out, msg_type::STATISTICS_REPORT);
    peer.encode(out);
    out.extend_from_slice(&u32::try_from(stats.len()).unwrap_or(u32::MAX).to_be_bytes());
    for st in stats {
        match *st {
            Stat::Counter(t, v) => tlv(t, &v.to_be_bytes(), out),
            Stat::Gauge(t, v) => tlv(t, &v.to_be_bytes(), out),
            Stat::AfiSafiGauge(t, afi, safi, v) => {
                let mut b = [0u8; 11];
                b[..2].copy_from_slice(&afi.to_be_bytes());
                b[2] = safi;
                b[3..].copy_from_slice(&v.to_be_bytes());
                tlv(t, &b, out);
            }
        }
    }
    finish(out, s);
}

//! Small shared types of the RIB, used by most of its files: a stored path,
//! what the RIB knows about a peer and its route counts, the error type,
//! the ADD-PATH send setting and a drained export batch. Nothing here
//! depends on the shard or its tables.

use std::net::{IpAddr, Ipv4Addr};

use base::{Afi, Asn, Prefix};

use crate::intern::{AttrHandle, SEL_LIMIT, SEL_NONE};
use crate::PeerId;

/// One stored path: 12 bytes. The stale and suppressed flags and the
/// index of the path's selection key share one 16-bit word (the room two
/// `bool`s took after the 2-byte peer id): the key itself (steps 0-3 of
/// the decision, 8 bytes) lives once per distinct value in the shard's
/// [`Interner`](crate::Interner), which hands each interned set its index
/// (see `SelKeys` in `intern.rs`). Ranking a prefix's paths then loads
/// neither their attribute sets nor 8 more bytes per path.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PathEntry {
    /// The peer the path came from.
    pub peer: PeerId,
    /// Bit 0: stale; bit 1: suppressed; bits 2-15: the selection key's
    /// index ([`SEL_NONE`]: not in the key table, read the set).
    bits: u16,
    /// RFC 7911 path identifier; 0 without ADD-PATH.
    pub path_id: u32,
    /// The path's interned attributes.
    pub attrs: AttrHandle,
}

const STALE: u16 = 1;
const SUPPRESSED: u16 = 2;
const KEY_SHIFT: u32 = 2;

// The key indices (`SEL_NONE`, `SEL_LIMIT`) are defined with the key
// table in `intern.rs`; they must fit in the bits above `KEY_SHIFT`.
const _: () = assert!(SEL_LIMIT == 1 << (16 - KEY_SHIFT));

impl PathEntry {
    /// A path that is neither stale nor suppressed, with no key index
    /// yet (`table::upsert` sets it from the set).
    pub(crate) fn new(peer: PeerId, path_id: u32, attrs: AttrHandle) -> PathEntry {
        PathEntry {
            peer,
            bits: 0,
            path_id,
            attrs,
        }
    }
    /// Kept from a session that went down with graceful restart (RFC 4724
    /// §4.2) and not re-announced since. Stale paths take part in
    /// selection like any other.
    pub fn stale(&self) -> bool {
        self.bits & STALE != 0
    }
    /// Suppressed by route-flap damping (RFC 2439): kept, not eligible
    /// for selection until released (see `damp_shard.rs`).
    pub fn suppressed(&self) -> bool {
        self.bits & SUPPRESSED != 0
    }
    pub(crate) fn set_stale(&mut self, on: bool) {
        self.set_flag(STALE, on);
    }
    pub(crate) fn set_suppressed(&mut self, on: bool) {
        self.set_flag(SUPPRESSED, on);
    }
    fn set_flag(&mut self, f: u16, on: bool) {
        if on {
            self.bits |= f;
        } else {
            self.bits &= !f;
        }
    }
    /// The index of the path's selection key in the shard's interner
    /// ([`SEL_NONE`]: none).
    pub(crate) fn key_index(&self) -> u16 {
        self.bits >> KEY_SHIFT
    }
    /// Sets the key index (kept in step with `attrs` by the table); an
    /// index that does not fit is stored as [`SEL_NONE`].
    pub(crate) fn set_key_index(&mut self, i: u16) {
        let i = if usize::from(i) < SEL_LIMIT {
            i
        } else {
            SEL_NONE
        };
        self.bits = (self.bits & (STALE | SUPPRESSED)) | i << KEY_SHIFT;
    }
}

/// What the RIB needs to know about a peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerConfig {
    /// The peer's AS.
    pub asn: Asn,
    /// BGP Identifier from its OPEN (RFC 4271 §4.2).
    pub bgp_id: Ipv4Addr,
    /// Session address (the §9.1.2.2 g tie-breaker).
    pub addr: IpAddr,
    /// External peer. Confederation-external peers count as internal for
    /// selection (RFC 5065 §5.3) and should set this to false.
    pub ebgp: bool,
    /// Keep the pre-policy Adj-RIB-In (for soft reconfiguration inbound).
    pub keep_pre_policy: bool,
    /// Keep an Adj-RIB-Out for this peer and queue updates towards it.
    pub export: bool,
}

/// Route counts of one peer in one shard (sum shards for the RIB).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerCounts {
    /// Paths currently received (accepted or rejected by import policy).
    pub received: u64,
    /// Paths currently accepted into the Adj-RIB-In.
    pub accepted: u64,
    /// Prefixes currently in the Adj-RIB-Out.
    pub advertised: u64,
    /// Prefixes whose best path (Loc-RIB) is this peer's (BIRD's
    /// "preferred"), counted as routes change.
    pub best: u64,
}

/// Why an operation was refused. Only caller mistakes; nothing a peer sends
/// can produce these.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RibError {
    /// The peer was never registered with `add_peer`.
    UnknownPeer(PeerId),
    /// Announcements without attributes.
    MissingAttributes,
    /// A handle that is not live in this shard's interner.
    DeadHandle(AttrHandle),
}

impl std::fmt::Display for RibError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RibError::UnknownPeer(p) => write!(f, "unknown peer {}", p.0),
            RibError::MissingAttributes => f.write_str("announcement without attributes"),
            RibError::DeadHandle(h) => write!(f, "dead attribute handle {}", h.index()),
        }
    }
}

impl std::error::Error for RibError {}

/// Which paths an ADD-PATH peer is sent per prefix.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum PathSelection {
    /// Every path that passes the propagation rules and export policy.
    #[default]
    All,
    /// The N (at least 1) most preferred paths; of these, those that pass
    /// the propagation rules and export policy.
    Best(u16),
}

impl PathSelection {
    pub(crate) fn limit(self) -> usize {
        match self {
            PathSelection::All => usize::MAX,
            PathSelection::Best(n) => usize::from(n.max(1)),
        }
    }
}

/// ADD-PATH send towards one peer: the families on which it was negotiated
/// (we advertised send, the peer receive, RFC 7911 §4) and the selection.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct AddPathSend {
    /// ADD-PATH send negotiated for IPv4 unicast.
    pub ipv4_unicast: bool,
    /// ADD-PATH send negotiated for IPv6 unicast.
    pub ipv6_unicast: bool,
    /// Which paths to send where it is negotiated.
    pub select: PathSelection,
}

impl AddPathSend {
    /// How many paths of `prefix` may be advertised.
    pub(crate) fn limit(&self, prefix: &Prefix) -> usize {
        let on = match prefix.afi() {
            Afi::Ipv4 => self.ipv4_unicast,
            Afi::Ipv6 => self.ipv6_unicast,
            _ => false,
        };
        if on {
            self.select.limit()
        } else {
            1
        }
    }
}

/// The queued changes for one peer. The handles are live until the next
/// mutating call on the shard (the Adj-RIB-Out holds them); look them up with
/// [`RibShard::attrs`](crate::RibShard::attrs) and encode right away.
///
/// A peer without ADD-PATH send gets `announce` and `withdraw`; a peer
/// with it (see
/// [`RibShard::set_add_path_send`](crate::RibShard::set_add_path_send))
/// gets `announce_paths` and `withdraw_paths`, where each prefix carries
/// the path identifier to send.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportBatch {
    /// Prefixes to announce, grouped by attribute set; groups ordered by
    /// handle, prefixes sorted.
    pub announce: Vec<(AttrHandle, Vec<Prefix>)>,
    /// Prefixes to withdraw, sorted.
    pub withdraw: Vec<Prefix>,
    /// ADD-PATH: (prefix, path identifier) to announce, grouped by
    /// attribute set; groups ordered by handle, entries sorted.
    pub announce_paths: Vec<(AttrHandle, Vec<(Prefix, u32)>)>,
    /// ADD-PATH: (prefix, path identifier) to withdraw, sorted.
    pub withdraw_paths: Vec<(Prefix, u32)>,
}

impl ExportBatch {
    /// Whether there is nothing to send.
    pub fn is_empty(&self) -> bool {
        self.announce.is_empty()
            && self.withdraw.is_empty()
            && self.announce_paths.is_empty()
            && self.withdraw_paths.is_empty()
    }
}

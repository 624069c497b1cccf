//! The pure RIB of Tessera's BGP speaker: no sockets, threads or clock.
//! Everything between received UPDATEs and the bytes sent to each peer.
//!
//! * The unit of state is a [`RibShard`]: it owns a subset of the prefixes
//!   (chosen by [`shard_for`]) and everything per peer it needs for them,
//!   including its own attribute [`Interner`]. Shards share nothing, so a
//!   pipeline can give each to one thread; [`Rib`] is just S shards driven
//!   from one thread, for tools and tests.
//! * Attribute sets are hash-consed and reference counted ([`AttrSet`],
//!   [`AttrHandle`], 4 bytes); the semantically relevant fields for
//!   best-path selection are precomputed when a set is interned.
//! * A stored path is 12 bytes ([`PathEntry`], including the graceful
//!   restart stale flag and the 14-bit index of its selection key in the
//!   shard's interner); a prefix holds one inline or a vector of them
//!   plus the index of its best path (the Loc-RIB).
//! * Best path follows RFC 4271 §9.1.2.2 with the usual tie-breakers, see
//!   [`bestpath`].
//! * The pre-policy Adj-RIB-In (soft reconfiguration inbound) keeps an entry
//!   only for routes import policy rejected or modified; the others' set is
//!   their path's. Per-peer maps key on a 20-byte packed prefix (made when
//!   [`base::Prefix`] took 48 bytes; it is 20 too now).
//! * Adj-RIB-Out per peer remembers what was last sent and queues deltas that
//!   [`RibShard::drain_updates`] packs by attribute set;
//!   [`RibShard::resend_all`] re-queues it for a ROUTE-REFRESH. Peers
//!   whose export policy names the same [`ExportPolicy::export_group`] key
//!   (an update group) share one table per shard: the exported set per
//!   prefix and one bit per member (docs/adr/0005), where each would
//!   otherwise keep its own; each member keeps its own queue.
//! * Which route may go to which peer regardless of user policy (iBGP
//!   split horizon, route reflection RFC 4456, route-server clients RFC
//!   7947, RFC 1997 well-known communities, RFC 9234 roles and OTC, MED not
//!   leaving the AS) is [`Propagation`], an [`ExportPolicy`] wrapping the
//!   user's; [`import_check`] is the ingress side (AS_PATH, ORIGINATOR_ID
//!   and CLUSTER_LIST loops, OTC leaks).
//! * [`UpdateEncoder`] turns a drained [`ExportBatch`] into UPDATE messages
//!   for one session, doing the per-session rewriting (AS prepend, next
//!   hop, LOCAL_PREF, AS4_PATH for 2-octet peers, MP_REACH for IPv6 and
//!   RFC 8950) once per attribute set.
//! * Graceful restart, helper side (RFC 4724 §4.2): [`RibShard::mark_stale`]
//!   keeps a dropped peer's routes flagged stale
//!   ([`RibShard::mark_stale_families`]: only the families its capability
//!   listed, the others flushed at once), re-announcements clear
//!   the flag, [`RibShard::sweep_stale`] / [`RibShard::sweep_stale_afi`]
//!   remove what is left on End-of-RIB or timer expiry.
//!
//! * ADD-PATH send (RFC 7911, [`AddPathSend`]): a peer that negotiated it keeps
//!   several paths per prefix in its Adj-RIB-Out (all, or the best N), each
//!   under its own path identifier; other peers keep one handle per prefix.
//! * Enhanced route refresh (RFC 7313): [`Rib::mark_stale_afi`] flags a
//!   family's routes at the peer's BoRR; the EoRR sweep reuses the graceful
//!   restart one.
//! * Policy shortcuts: an import policy that [`ImportPolicy::accepts_all`]
//!   skips the per-UPDATE editable copy; an export policy that is
//!   [`ExportPolicy::prefix_independent`] towards a peer is asked once per
//!   (peer, source peer, set) within one export call, its rewrite (such as
//!   the eBGP MED strip) interned once, the cache dropped when the call
//!   ends.
//!
//! * Route-flap damping (RFC 2439, RFC 7196 defaults; [`damping`]): per
//!   peer, off by default; a suppressed path stays in the Adj-RIB-In,
//!   flagged [`PathEntry::suppressed`], and is not eligible for selection
//!   until [`RibShard::damping_due`] releases it at its reuse time.
//!
//! * Confederations (RFC 5065): a confederation-external peer is internal
//!   for selection ([`PeerConfig::ebgp`] false), external for propagation
//!   ([`PeerRole::confed`]: NO_EXPORT passes, NO_EXPORT_SUBCONFED and the
//!   MED strip do not) and gets our member AS in an AS_CONFED_SEQUENCE,
//!   LOCAL_PREF and the next hop unchanged ([`EncodeParams::confed`]);
//!   true eBGP peers get the path without confederation segments.
//!
//! Measured (`examples/rib_mem.rs`, 10 peers × 100k shared prefixes, 1M
//! paths, 2.3 paths per attribute set in the synthetic table): 73 bytes per
//! path of RSS with one shard, of which ~53 are attribute sets. Shards do not
//! share sets, so with 4 shards the same table needs 112 bytes per path.
//! The whole daemon (`scripts/bench-rib-memory --dut tesserad`, same
//! table over 10 BGP sessions) peaks at ~88 bytes per path of RSS.
//! `examples/encode_speed.rs`: 1M /24s over 10k sets encode into 10k
//! UPDATEs at ~70M prefixes/s (eBGP, and 2-octet iBGP with AS4_PATH).

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod addpath;
mod adjin;
mod adjout;
mod attrs;
pub mod bestpath;
mod counted;
mod damp_shard;
pub mod damping;
mod encode;
mod encode_attrs;
mod entry;
mod export;
mod gr;
mod group;
mod hash;
mod intern;
mod key;
pub mod multipath;
mod nht;
mod peer;
mod policy;
mod propagate;
mod refresh;
mod rib;
mod shard;
mod split;
mod table;
mod types;
pub mod view;

pub use attrs::{AttrSet, AttrsBuilder, Summary};
pub use bestpath::{BestPathConfig, MultipathConfig, Step};
pub use damping::{DampKey, DampParams, FigureOfMerit, Flap};
pub use encode::{EncodeParams, NextHopMode, UpdateEncoder};
pub use encode_attrs::{
    attr_fate, export_as_path, export_confed_as_path, AttrFate, DEFAULT_LOCAL_PREF,
};
pub use export::HeldBack;
pub use hash::shard_for;
pub use intern::{AttrHandle, Interner};
pub use nht::{nexthop_ip, NexthopInfo, NexthopWatch, NhState};
pub use policy::{AcceptAll, ExportPolicy, ExportVerdict, ImportPolicy, Verdict};
pub use propagate::{
    import_check, import_check_confed, import_check_with_asn, ImportCheck, ImportReject, PeerRole,
    Propagation,
};
pub use rib::Rib;
pub use shard::{HeapBytes, RibShard, RouteRef};
pub use types::{
    AddPathSend, ExportBatch, PathEntry, PathSelection, PeerConfig, PeerCounts, RibError,
};
pub use view::PeerSet;

/// A peer's index within a shard. The caller assigns ids (dense, from 0) and
/// registers the same peer under the same id in every shard.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PeerId(pub u16);

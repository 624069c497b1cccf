//! The pure BGP core under the runtime: the vocabulary sessions and the
//! RIB speak ([`msg`]) and the RIB controller [`RibCore`].
//!
//! Model: **input and time in, outbox out**, as in `bgp-fsm`. `RibCore`
//! never reads a clock, never touches a socket, never spawns a thread and
//! never sends on a channel: the runtime passes the current
//! [`base::Instant`] into every call and carries out what the call left in
//! the [`Outbox`] (bytes and commands for sessions, best-route changes,
//! log notes, measurements). Wall-clock times the core reports (session
//! up, session down, RIB start) arrive inside the inputs.
//!
//! * [`RibCore::handle`]: one [`RibInput`] from a session (Up, a batch of
//!   UPDATEs, ROUTE-REFRESH, Down).
//! * [`RibCore::tick`]: time passes (graceful-restart stale timer, RFC
//!   4724 §4.2; End-of-RIB-Refresh deadline, RFC 7313 §4);
//!   [`RibCore::next_deadline`] says when it is next due.
//! * [`RibCore::nexthop_update`]: next-hop tracking (RFC 4271 §9.1.2.1,
//!   §9.1.2.2 e) says a next hop's reachability or IGP cost changed; the
//!   next hops to resolve come out in [`Outbox::nexthops`].
//! * [`RibCore::propagate`]: one export round (best-path changes through
//!   the propagation rules and export policies into each peer's
//!   Adj-RIB-Out) and a flush of every session that may be sent to at
//!   that time (MRAI, RFC 4271 §9.2.1.1; back-pressure through
//!   [`OutQueue`]).
//!
//! Address families: unicast routes (IPv4 and IPv6) and multicast ones
//! (SAFI 2, RFC 4760 §6) are kept in two separate [`bgp_rib::Rib`]s
//! ([`RibCore::rib`], [`RibCore::mcast`]) with the same shards and peers:
//! the same prefix as unicast and as multicast are two routes, selected
//! apart; multicast ones go only to peers that negotiated a multicast
//! family, encoded with SAFI 2, and never into [`Outbox::best`] (the
//! forwarding plane's feed, unicast only). The session's decoder
//! ([`decode`]) sorts NLRI by family ([`DecodedUpdate::multicast`]) and
//! drops those of families not negotiated (RFC 4760 §7).
//!
//! The daemon (`bgp-speaker`) drives one core per RIB thread, shard or
//! stripe ([`Part`]); the trace simulator drives the same core on a
//! virtual clock. What spans parts is shared through [`PeerStatus`]
//! atomics (max-prefix totals, queued bytes) and [`FlushBarrier`]s
//! (End-of-RIB and BoRR/EoRR order across parts).
//!
//! ```
//! use std::net::Ipv4Addr;
//! use std::time::SystemTime;
//! use base::{Asn, Instant};
//! use bgp_core::{Outbox, Part, RibCore, RibSettings};
//!
//! let settings = RibSettings {
//!     router_id: Ipv4Addr::new(192, 0, 2, 1),
//!     cluster_id: Ipv4Addr::new(192, 0, 2, 1),
//!     local_asn: Asn(65000),
//!     bestpath: Default::default(),
//! };
//! let mut core = RibCore::new(settings, 1, Part::WHOLE, SystemTime::UNIX_EPOCH);
//! let mut out = Outbox::default();
//! core.tick(Instant::from_secs(1), &mut out);
//! core.propagate(Instant::from_secs(1), &mut out);
//! assert!(out.is_empty());
//! ```
//!
//! Golden event scripts in `tests/golden/` pin the behaviour (max-prefix,
//! refresh, graceful restart, End-of-RIB order, MRAI); `tests/invariants.rs`
//! checks properties over arbitrary input sequences.
//!
//! Why our own: this is Tessera's RIB logic itself; no crate implements
//! it.

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod agg;
mod aggregate;
mod core;
mod damping;
pub mod decode;
mod export;
mod flush;
mod meter;
pub mod msg;
pub mod outbox;
mod pace;
pub mod peer;
mod policy;
mod settings;
mod statics;
pub mod views;

/// For `benches/arrival.rs` only.
#[doc(hidden)]
pub use crate::core::{arrival_order, arrival_order_pairs, ArrivalScratch};
pub use crate::core::{
    best_change, best_next_hop, route_refresh, OutQueue, RibCore, RibCounters, CROWDED_SESSIONS,
    ENHANCED_REFRESH_STALE, GR_STALE_PATH_TIME, NEW_PREFIX_ROUND, OUT_QUEUE_LIMIT, OUT_QUEUE_LOW,
};
pub use aggregate::{covers, Aggregate};
pub use bytes::Bytes;
pub use meter::{Meter, NoMeter};
pub use msg::{
    fan_out, split_updates, DecodedUpdate, FlushBarrier, LinkAddrs, Multicast, NexthopUpdate,
    PeerStatus, RibInput, SessionCmd, SessionUp, MAX_SHARDS,
};
pub use outbox::{
    concat, BestChange, Level, Marker, Markers, Note, Outbox, Output, Sample, Stage, ViewBatch,
};
pub use pace::{RoundPacer, ROUND_COST_FACTOR, ROUND_FLOOR, ROUND_MIN};
pub use peer::{MaxPrefix, MaxPrefixAction, PeerEntry, PeerMeta, PolicyRef, StaleFamily, UpState};
pub use settings::{Part, RibSettings, STATIC_PEER};
pub use statics::StaticRoute;

//! The messages between sessions and the RIB: session -> RIB
//! ([`RibInput`]), RIB or control plane -> session ([`SessionCmd`]), and
//! the per-peer status every side can read ([`PeerStatus`]).
//!
//! Sessions decode and validate UPDATEs themselves (RFC 7606 applied
//! there) and hand the RIB [`DecodedUpdate`]s in batches: the RIB never
//! sees a socket or raw bytes. None of these types names a pipeline mode
//! or a channel; the runtime (`bgp-speaker`) carries them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base::AfiSafi;
use bgp_fsm::{DownReason, Negotiated};
use bgp_rib::{AttrsBuilder, PeerId};
use bgp_wire::{Nlri, NotificationMessage};

/// One UPDATE as the RIB wants it. RFC 7606 is already applied: a
/// treat-as-withdraw UPDATE arrives with its announcements moved to
/// `withdraw` and `attrs` None; discarded attributes are simply absent.
#[derive(Clone, Debug, Default)]
pub struct DecodedUpdate {
    /// Path attributes (MP_REACH/MP_UNREACH removed: their next hop is in
    /// the builder's next hop, their NLRI in `announce`/`withdraw`).
    /// Shared, so that the parts of an UPDATE split over RIB shards do not
    /// each copy them.
    pub attrs: Option<Arc<AttrsBuilder>>,
    /// Prefixes announced with `attrs`.
    pub announce: Vec<Nlri>,
    /// Prefixes withdrawn.
    pub withdraw: Vec<Nlri>,
    /// This UPDATE is the End-of-RIB marker of this family (RFC 4724 §2).
    pub end_of_rib: Option<AfiSafi>,
    /// The NLRI of a multicast (SAFI 2) MP_REACH_NLRI / MP_UNREACH_NLRI:
    /// a table of their own (RFC 4760 §6); `announce`/`withdraw` above
    /// are unicast only.
    pub multicast: Multicast,
}

/// Multicast (SAFI 2) NLRI of one UPDATE, IPv4 or IPv6.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Multicast {
    /// Their attributes, next hop from MP_REACH_NLRI (apart from
    /// [`DecodedUpdate::attrs`]: classic IPv4 unicast NLRI of the same
    /// UPDATE use NEXT_HOP).
    pub attrs: Option<Arc<AttrsBuilder>>,
    /// Prefixes announced with `attrs`.
    pub announce: Vec<Nlri>,
    /// Prefixes withdrawn.
    pub withdraw: Vec<Nlri>,
}

impl Multicast {
    /// No multicast NLRI.
    pub fn is_empty(&self) -> bool {
        self.announce.is_empty() && self.withdraw.is_empty()
    }
}

/// What a session reports when it reaches Established.
#[derive(Clone, Debug)]
pub struct SessionUp {
    /// What the OPEN exchange settled (families, ADD-PATH, GR, 4-octet ASN...).
    pub negotiated: Negotiated,
    /// Our end of the TCP connection.
    pub local_addr: SocketAddr,
    /// The peer's end of the TCP connection.
    pub remote_addr: SocketAddr,
    /// Set by the runtime when the RIB is split over several shard
    /// threads: the End-of-RIB after the initial table goes out once,
    /// after every shard's part of it (RFC 4724 §2).
    pub eor_barrier: Option<Arc<FlushBarrier>>,
    /// When the session reached Established (every shard shows the same
    /// time in `show protocols`, `show route` and RIB dumps).
    pub since: std::time::SystemTime,
    /// The runtime's number for this Established session (it grows with
    /// each new session of the peer); the core keeps it so the runtime can
    /// tell bytes encoded for an old session from those of the current one.
    pub session: u64,
    /// Our addresses on the link the session runs over, read by the
    /// runtime when the session came up: routes of the other family need
    /// a next hop from them (RFC 4760 §3, RFC 2545 §3, RFC 8950).
    pub link: LinkAddrs,
}

/// Our IPv4, global IPv6 and link-local IPv6 addresses on the interface
/// that holds a session's local address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkAddrs {
    /// Our IPv4 address on the link.
    pub v4: Option<Ipv4Addr>,
    /// Our global IPv6 address on the link.
    pub v6: Option<Ipv6Addr>,
    /// Our link-local IPv6 address on the link.
    pub v6_link_local: Option<Ipv6Addr>,
}

impl LinkAddrs {
    /// Only the session's own address (when no interface holds it, as
    /// for a 127/8 alias, or in a simulation).
    pub fn of(local: IpAddr) -> LinkAddrs {
        let mut out = LinkAddrs::default();
        match local {
            IpAddr::V4(v) => out.v4 = Some(v),
            IpAddr::V6(v) => match v.to_ipv4_mapped() {
                Some(v4) => out.v4 = Some(v4),
                None if v.is_unicast_link_local() => out.v6_link_local = Some(v),
                None => out.v6 = Some(v),
            },
        }
        out
    }
}

/// Session task -> RIB thread.
#[derive(Debug)]
pub enum RibInput {
    /// The session reached Established.
    Up {
        /// The neighbour.
        peer: PeerId,
        /// What was negotiated, and where.
        up: Box<SessionUp>,
    },
    /// UPDATEs in arrival order, batched by the session (up to a size or
    /// until its socket has no more ready data).
    Updates {
        /// The neighbour.
        peer: PeerId,
        /// The UPDATEs, in arrival order.
        updates: Vec<DecodedUpdate>,
    },
    /// The peer sent ROUTE-REFRESH (RFC 2918; `subtype` per RFC 7313:
    /// 0 request, 1 BoRR, 2 EoRR).
    RouteRefresh {
        /// The neighbour.
        peer: PeerId,
        /// The address family asked for.
        family: AfiSafi,
        /// 0 request, 1 BoRR, 2 EoRR (RFC 7313 §3).
        subtype: u8,
        /// Set by the runtime with several shards: the BoRR goes out
        /// before any shard's re-sent routes and the EoRR after all of
        /// them (RFC 7313 §4).
        barrier: Option<Arc<FlushBarrier>>,
    },
    /// The Established session ended: flush its routes (or mark them stale
    /// under graceful restart, RFC 4724 §4.2).
    Down {
        /// The neighbour.
        peer: PeerId,
        /// Why the session ended.
        reason: DownReason,
        /// The peer negotiated graceful restart and the session ended in a
        /// way that allows retaining its routes.
        graceful: bool,
        /// Wall-clock time of the end (`show protocols`).
        at: std::time::SystemTime,
    },
}

/// What next-hop resolution found for one next hop (the runtime watches
/// the kernel's routing table; see [`crate::RibCore::nexthop_update`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct NexthopUpdate {
    /// The next hop (the global address for IPv6).
    pub nexthop: std::net::IpAddr,
    /// Resolvable through a route that is not a BGP route of ours.
    pub reachable: bool,
    /// The resolving route's metric; 0 when directly connected.
    pub igp_cost: u32,
}

impl RibInput {
    /// The peer this input is about.
    pub fn peer(&self) -> PeerId {
        match self {
            RibInput::Up { peer, .. }
            | RibInput::Updates { peer, .. }
            | RibInput::RouteRefresh { peer, .. }
            | RibInput::Down { peer, .. } => *peer,
        }
    }
}

/// Which part of `input` each of `n` RIB parts gets, as (part index,
/// input): UPDATEs split by [`bgp_rib::shard_for`] ([`split_updates`]),
/// the rest to every part, with a [`FlushBarrier`] for the markers that
/// must go out once (End-of-RIB after the initial table, BoRR/EoRR).
pub fn fan_out(input: RibInput, n: usize) -> Vec<(usize, RibInput)> {
    if n <= 1 {
        return vec![(0, input)];
    }
    match input {
        RibInput::Updates { peer, updates } => split_updates(updates, n)
            .into_iter()
            .enumerate()
            .filter(|(_, u)| !u.is_empty())
            .map(|(i, updates)| (i, RibInput::Updates { peer, updates }))
            .collect(),
        RibInput::Up { peer, mut up } => {
            up.eor_barrier = Some(FlushBarrier::new(n));
            (0..n)
                .map(|i| {
                    let up = up.clone();
                    (i, RibInput::Up { peer, up })
                })
                .collect()
        }
        RibInput::RouteRefresh {
            peer,
            family,
            subtype,
            ..
        } => {
            let barrier = Some(FlushBarrier::new(n));
            (0..n)
                .map(|i| {
                    let m = RibInput::RouteRefresh {
                        peer,
                        family,
                        subtype,
                        barrier: barrier.clone(),
                    };
                    (i, m)
                })
                .collect()
        }
        RibInput::Down {
            peer,
            reason,
            graceful,
            at,
        } => (0..n)
            .map(|i| {
                let m = RibInput::Down {
                    peer,
                    reason,
                    graceful,
                    at,
                };
                (i, m)
            })
            .collect(),
    }
}

/// RIB thread or control plane -> session task.
#[derive(Debug)]
pub enum SessionCmd {
    /// Complete, encoded BGP messages (UPDATEs, End-of-RIB), written in
    /// order. The session subtracts their length from
    /// [`PeerStatus::out_queued_bytes`] once written.
    Send(Vec<u8>),
    /// Ask the peer to re-send its routes (RFC 2918).
    SendRouteRefresh {
        /// The family to ask for.
        family: AfiSafi,
    },
    /// Administrative stop (RFC 4271 event 2): send this NOTIFICATION (a
    /// Cease with RFC 8203/9003 shutdown text, or Cease/1 max-prefix with
    /// RFC 4486 data), go Idle. With `restart_after`, start again after
    /// that delay (max-prefix "restart"); without, stay down until
    /// [`SessionCmd::Start`].
    Stop {
        /// The NOTIFICATION to send before closing.
        notification: NotificationMessage,
        /// Start again after this delay; `None`: stay down.
        restart_after: Option<Duration>,
    },
    /// Administrative start (RFC 4271 event 1).
    Start,
    /// End the session task for good (peer removed or its session
    /// parameters changed on reload): send this NOTIFICATION if a
    /// connection is open, report `Down` if it was Established, exit.
    Terminate {
        /// The NOTIFICATION to send if a connection is open.
        notification: NotificationMessage,
    },
}

/// Most shard threads a RIB is split over.
pub const MAX_SHARDS: usize = 64;

/// Splits a batch by owning shard, keeping arrival order within each
/// shard. An UPDATE whose prefixes all belong to one shard moves whole (no
/// copy); one spanning shards is cut, its attributes shared by the parts
/// that get announcements. End-of-RIB markers go to every shard (each
/// sweeps its own stale routes, RFC 4724 §4.2).
pub fn split_updates(updates: Vec<DecodedUpdate>, n: usize) -> Vec<Vec<DecodedUpdate>> {
    let n = n.clamp(1, MAX_SHARDS);
    if n == 1 {
        return vec![updates];
    }
    // First pass: the shard of every prefix of the batch (one flat list,
    // in each UPDATE's list order), the shards each UPDATE touches (0:
    // every shard, an End-of-RIB or an UPDATE without NLRI), and how many
    // pieces each shard gets, so that nothing below grows by doubling (the
    // session thread runs this for every batch).
    let mut shards: Vec<u8> = Vec::new();
    let mut touches: Vec<u64> = Vec::with_capacity(updates.len());
    // Pieces per shard, beside the UPDATEs every shard gets.
    let mut pieces = [0usize; MAX_SHARDS];
    let mut every = 0;
    for u in &updates {
        let mut mask = 0u64;
        if !to_every_part(u) {
            for x in nlri_of(u) {
                // n <= MAX_SHARDS = 64 fits a byte and a bit of the mask.
                let s = bgp_rib::shard_for(&x.prefix, n);
                shards.push(s as u8);
                mask |= 1 << s;
            }
        }
        touches.push(mask);
        if mask == 0 {
            every += 1;
        }
        for s in shards_in(mask) {
            if let Some(c) = pieces.get_mut(s) {
                *c += 1;
            }
        }
    }
    let mut out: Vec<Vec<DecodedUpdate>> = pieces
        .iter()
        .take(n)
        .map(|&c| Vec::with_capacity(c + every))
        .collect();
    // Per cut UPDATE: each touched shard's count of prefixes in each of
    // the four lists (reset as its piece is made).
    let mut counts = [[0u32; 4]; MAX_SHARDS];
    let mut at = 0;
    for (u, mask) in updates.into_iter().zip(touches) {
        if mask == 0 {
            for part in out.iter_mut() {
                part.push(u.clone());
            }
            continue;
        }
        let m = &u.multicast;
        let lens = [
            u.announce.len(),
            u.withdraw.len(),
            m.announce.len(),
            m.withdraw.len(),
        ];
        let total: usize = lens.iter().sum();
        let own = shards.get(at..at + total).unwrap_or_default();
        at += total;
        if mask.count_ones() == 1 {
            if let Some(part) = out.get_mut(mask.trailing_zeros() as usize) {
                part.push(u);
            }
            continue;
        }
        // Cut: each touched shard gets a piece with exact-size lists, the
        // attributes shared where it has announcements.
        let mut k = 0;
        for (list, len) in lens.iter().enumerate() {
            for &s in own.get(k..k + len).unwrap_or_default() {
                if let Some(c) = counts.get_mut(usize::from(s)) {
                    c[list] += 1;
                }
            }
            k += len;
        }
        for s in shards_in(mask) {
            let Some(c) = counts.get_mut(s).map(std::mem::take) else {
                continue;
            };
            let cap = |i: usize| c[i] as usize;
            let d = DecodedUpdate {
                attrs: if c[0] > 0 { u.attrs.clone() } else { None },
                announce: Vec::with_capacity(cap(0)),
                withdraw: Vec::with_capacity(cap(1)),
                end_of_rib: None,
                multicast: Multicast {
                    attrs: if c[2] > 0 { m.attrs.clone() } else { None },
                    announce: Vec::with_capacity(cap(2)),
                    withdraw: Vec::with_capacity(cap(3)),
                },
            };
            if let Some(part) = out.get_mut(s) {
                part.push(d);
            }
        }
        let lists = [&u.announce, &u.withdraw, &m.announce, &m.withdraw];
        let mut k = 0;
        for (list, nlri) in lists.into_iter().enumerate() {
            for x in nlri {
                let s = usize::from(own.get(k).copied().unwrap_or(0));
                k += 1;
                // This UPDATE's piece is the last one of its shard's part.
                let Some(d) = out.get_mut(s).and_then(|p| p.last_mut()) else {
                    continue;
                };
                match list {
                    0 => d.announce.push(*x),
                    1 => d.withdraw.push(*x),
                    2 => d.multicast.announce.push(*x),
                    _ => d.multicast.withdraw.push(*x),
                }
            }
        }
    }
    out
}

/// The shards whose bits `mask` sets, lowest first.
fn shards_in(mut mask: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let s = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            s
        })
    })
}

/// End-of-RIB markers and UPDATEs without NLRI go to every RIB part.
fn to_every_part(u: &DecodedUpdate) -> bool {
    u.end_of_rib.is_some()
        || (u.announce.is_empty() && u.withdraw.is_empty() && u.multicast.is_empty())
}

/// Every NLRI of `u`: announced, withdrawn, then multicast announced and
/// withdrawn ([`split_updates`] relies on this order).
fn nlri_of(u: &DecodedUpdate) -> impl Iterator<Item = &Nlri> {
    let m = &u.multicast;
    u.announce
        .iter()
        .chain(&u.withdraw)
        .chain(&m.announce)
        .chain(&m.withdraw)
}

/// Orders the output of several shard threads to one session around a
/// marker: the first shard to flush writes the head (BoRR, RFC 7313 §4)
/// before its routes, the last one the tail (End-of-RIB, RFC 4724 §2, or
/// EoRR) after its routes. Shards pass while holding the session's
/// [`PeerStatus::out_lock`], and hand their bytes to the session under it,
/// so the session's queue sees head, every shard's routes, tail.
#[derive(Debug)]
pub struct FlushBarrier {
    started: AtomicBool,
    remaining: std::sync::atomic::AtomicUsize,
}

impl FlushBarrier {
    /// A barrier `parts` shards must pass.
    pub fn new(parts: usize) -> Arc<FlushBarrier> {
        Arc::new(FlushBarrier {
            started: AtomicBool::new(false),
            remaining: std::sync::atomic::AtomicUsize::new(parts.max(1)),
        })
    }
    /// True for the first caller only.
    pub fn first(&self) -> bool {
        !self.started.swap(true, Ordering::AcqRel)
    }
    /// Counts one shard through; true for the last.
    pub fn last(&self) -> bool {
        self.remaining.fetch_sub(1, Ordering::AcqRel) == 1
    }
}

/// Session state as a number, for lock-free reads (`bgp_fsm::State` order).
pub mod state {
    /// Idle (RFC 4271 §8.2.2).
    pub const IDLE: u8 = 0;
    /// Connect.
    pub const CONNECT: u8 = 1;
    /// Active.
    pub const ACTIVE: u8 = 2;
    /// OpenSent.
    pub const OPEN_SENT: u8 = 3;
    /// OpenConfirm.
    pub const OPEN_CONFIRM: u8 = 4;
    /// Established.
    pub const ESTABLISHED: u8 = 5;
    /// The state's name, as RFC 4271 spells it.
    pub fn name(s: u8) -> &'static str {
        match s {
            IDLE => "Idle",
            CONNECT => "Connect",
            ACTIVE => "Active",
            OPEN_SENT => "OpenSent",
            OPEN_CONFIRM => "OpenConfirm",
            ESTABLISHED => "Established",
            _ => "?",
        }
    }
}

/// Per-peer counters and state, written by the session task (and the RIB
/// thread for `out_queued_bytes`), read by anyone (CLI, metrics, RIB for
/// back-pressure). Relaxed atomics: these are statistics.
#[derive(Debug, Default)]
pub struct PeerStatus {
    /// The session's FSM state ([`state`]).
    pub state: AtomicU8,
    /// Unix seconds of the last state change.
    pub state_since: AtomicU64,
    /// BGP messages received.
    pub msgs_in: AtomicU64,
    /// BGP messages sent.
    pub msgs_out: AtomicU64,
    /// UPDATEs received.
    pub updates_in: AtomicU64,
    /// UPDATEs sent.
    pub updates_out: AtomicU64,
    /// NOTIFICATIONs received.
    pub notifications_in: AtomicU64,
    /// NOTIFICATIONs sent.
    pub notifications_out: AtomicU64,
    /// KEEPALIVEs received.
    pub keepalives_in: AtomicU64,
    /// KEEPALIVEs sent.
    pub keepalives_out: AtomicU64,
    /// OPENs received.
    pub opens_in: AtomicU64,
    /// OPENs sent.
    pub opens_out: AtomicU64,
    /// ROUTE-REFRESH messages received (requests, BoRR and EoRR).
    pub refreshes_in: AtomicU64,
    /// ROUTE-REFRESH messages sent (requests, BoRR and EoRR).
    pub refreshes_out: AtomicU64,
    /// How many times the session reached Established.
    pub established_count: AtomicU64,
    /// Bytes handed to the session in [`SessionCmd::Send`] and not yet
    /// written: the RIB stops draining this peer's Adj-RIB-Out while it is
    /// above its limit.
    pub out_queued_bytes: AtomicU64,
    /// Sum and count of UPDATE decode times in nanoseconds.
    pub decode_ns: AtomicU64,
    /// Human-readable last error (NOTIFICATION sent/received, socket error).
    pub last_error: Mutex<String>,
    /// Prefixes received from the peer, summed over the RIB's shards
    /// (each shard adds the change of its own count), for max-prefix.
    pub rib_received: AtomicU64,
    /// Max-prefix already acted on / warned about in this session (reset
    /// by the session before it reports Established).
    pub max_prefix_tripped: AtomicBool,
    /// The max-prefix warning was logged in this session.
    pub max_prefix_warned: AtomicBool,
    /// Held by a shard thread while it passes a [`FlushBarrier`] and hands
    /// its bytes over, so markers and routes reach the session in order.
    pub out_lock: Mutex<()>,
}

impl PeerStatus {
    /// `n` queued bytes were written (or dropped): subtracts them from
    /// [`PeerStatus::out_queued_bytes`] without wrapping below zero.
    /// True when this crossed [`crate::OUT_QUEUE_LOW`] downwards: the RIB
    /// holds back the rest of this session's changes while the queue is
    /// full, so the writer should wake it.
    pub fn unqueue(&self, n: u64) -> bool {
        let old = self
            .out_queued_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(n))
            })
            .unwrap_or(0);
        let low = crate::OUT_QUEUE_LOW;
        old >= low && old.saturating_sub(n) < low
    }

    /// The session's FSM state ([`state`]).
    pub fn state(&self) -> u8 {
        self.state.load(Ordering::Relaxed)
    }
    /// Sets the last error text.
    pub fn set_last_error(&self, s: String) {
        if let Ok(mut g) = self.last_error.lock() {
            *g = s;
        }
    }
    /// The last error text (empty when none).
    pub fn last_error(&self) -> String {
        self.last_error
            .lock()
            .map(|g| g.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nlri(i: u8) -> Nlri {
        Nlri::new(format!("198.18.{i}.0/24").parse().unwrap())
    }

    /// Multicast NLRI are split by owning shard like unicast ones, into
    /// the multicast lists with the multicast attributes; an UPDATE with
    /// only multicast NLRI is not sent to every shard.
    #[test]
    fn multicast_nlri_are_split_by_shard() {
        let n = 4;
        let ua = Arc::new(AttrsBuilder::new());
        let mut ma = AttrsBuilder::new();
        ma.set_med(7);
        let ma = Arc::new(ma);
        let mut u = DecodedUpdate {
            attrs: Some(ua.clone()),
            announce: (0..8).map(nlri).collect(),
            ..DecodedUpdate::default()
        };
        u.multicast = Multicast {
            attrs: Some(ma.clone()),
            announce: (8..16).map(nlri).collect(),
            withdraw: (16..24).map(nlri).collect(),
        };
        let parts = split_updates(vec![u], n);
        let mut seen = 0;
        for (s, part) in parts.iter().enumerate() {
            for d in part {
                let owned = |x: &Nlri| bgp_rib::shard_for(&x.prefix, n) == s;
                assert!(d.announce.iter().all(owned) && d.multicast.announce.iter().all(owned));
                assert!(d.multicast.withdraw.iter().all(owned));
                assert!(d.withdraw.is_empty());
                assert_eq!(d.attrs.is_some(), !d.announce.is_empty());
                if !d.multicast.announce.is_empty() {
                    assert_eq!(d.multicast.attrs.as_deref(), Some(&*ma));
                }
                seen += d.announce.len() + d.multicast.announce.len() + d.multicast.withdraw.len();
            }
        }
        assert_eq!(seen, 24);
        // Multicast only, one prefix: one shard gets it.
        let mut u = DecodedUpdate::default();
        u.multicast.withdraw = vec![nlri(1)];
        let parts = split_updates(vec![u], n);
        assert_eq!(parts.iter().map(Vec::len).sum::<usize>(), 1);
    }

    use proptest::prelude::*;

    /// An UPDATE from a generated description: prefixes (as third octets)
    /// of the four lists, or an End-of-RIB marker.
    fn update(
        lists: &[Vec<u8>; 4],
        eor: bool,
        ua: &Arc<AttrsBuilder>,
        ma: &Arc<AttrsBuilder>,
    ) -> DecodedUpdate {
        let v = |i: usize| lists[i].iter().map(|&b| nlri(b)).collect::<Vec<_>>();
        let mut u = DecodedUpdate {
            attrs: (!lists[0].is_empty()).then(|| ua.clone()),
            announce: v(0),
            withdraw: v(1),
            ..DecodedUpdate::default()
        };
        u.multicast = Multicast {
            attrs: (!lists[2].is_empty()).then(|| ma.clone()),
            announce: v(2),
            withdraw: v(3),
        };
        if eor {
            u = DecodedUpdate {
                end_of_rib: Some(AfiSafi::IPV4_UNICAST),
                ..DecodedUpdate::default()
            };
        }
        u
    }

    proptest! {
        /// The split equals a model that filters each UPDATE by shard:
        /// each part gets, in arrival order, every marker or empty UPDATE
        /// whole, and of every other UPDATE that has a prefix it owns a
        /// piece with exactly its own prefixes of each list, in order, and
        /// the (shared) attributes where it has announcements.
        #[test]
        fn split_matches_a_filter_by_shard(
            batch in proptest::collection::vec(
                (proptest::array::uniform4(proptest::collection::vec(any::<u8>(), 0..6)), 0u8..8),
                0..24,
            ),
            n in 1usize..=17,
        ) {
            let ua = Arc::new(AttrsBuilder::new());
            let mut ma = AttrsBuilder::new();
            ma.set_med(7);
            let ma = Arc::new(ma);
            // One in eight is an End-of-RIB marker.
            let updates: Vec<DecodedUpdate> = batch
                .iter()
                .map(|(lists, k)| update(lists, *k == 0, &ua, &ma))
                .collect();
            let parts = split_updates(updates.clone(), n);
            prop_assert_eq!(parts.len(), n);
            for (s, part) in parts.iter().enumerate() {
                let own = |x: &&Nlri| bgp_rib::shard_for(&x.prefix, n) == s;
                let keep = |l: &[Nlri]| l.iter().filter(own).copied().collect::<Vec<_>>();
                let mut want = Vec::new();
                for u in &updates {
                    let m = &u.multicast;
                    if to_every_part(u) {
                        want.push(u.clone());
                        continue;
                    }
                    let (a, w, b, x) = (keep(&u.announce), keep(&u.withdraw), keep(&m.announce), keep(&m.withdraw));
                    if a.is_empty() && w.is_empty() && b.is_empty() && x.is_empty() {
                        continue;
                    }
                    want.push(DecodedUpdate {
                        attrs: if a.is_empty() { None } else { u.attrs.clone() },
                        announce: a,
                        withdraw: w,
                        end_of_rib: None,
                        multicast: Multicast {
                            attrs: if b.is_empty() { None } else { m.attrs.clone() },
                            announce: b,
                            withdraw: x,
                        },
                    });
                }
                prop_assert_eq!(part.len(), want.len(), "part {} of {}", s, n);
                for (got, w) in part.iter().zip(&want) {
                    prop_assert_eq!(&got.announce, &w.announce);
                    prop_assert_eq!(&got.withdraw, &w.withdraw);
                    prop_assert_eq!(got.end_of_rib, w.end_of_rib);
                    prop_assert_eq!(&got.multicast, &w.multicast);
                    prop_assert_eq!(got.attrs.as_deref(), w.attrs.as_deref());
                    // Shared, not copied.
                    if let (Some(g), Some(w)) = (&got.attrs, &w.attrs) {
                        prop_assert!(Arc::ptr_eq(g, w));
                    }
                }
            }
        }
    }
}

//! The messages that cross threads: session task -> RIB thread
//! ([`RibInput`]), RIB thread or control plane -> session task
//! ([`SessionCmd`]), and the per-peer status every side can read
//! ([`PeerStatus`]).
//!
//! Sessions decode and validate UPDATEs on their own threads (RFC 7606
//! applied there) and hand the RIB [`DecodedUpdate`]s in batches through a
//! bounded channel: the RIB never sees a socket or raw bytes.

use std::net::SocketAddr;
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
    pub announce: Vec<Nlri>,
    pub withdraw: Vec<Nlri>,
    /// This UPDATE is the End-of-RIB marker of this family (RFC 4724 §2).
    pub end_of_rib: Option<AfiSafi>,
}

/// What a session reports when it reaches Established.
#[derive(Clone, Debug)]
pub struct SessionUp {
    pub negotiated: Negotiated,
    pub local_addr: SocketAddr,
    pub remote_addr: SocketAddr,
    /// Set by [`RibSender`] when the RIB is split over several shard
    /// threads: the End-of-RIB after the initial table goes out once,
    /// after every shard's part of it (RFC 4724 §2).
    pub eor_barrier: Option<Arc<FlushBarrier>>,
    /// When the session reached Established (every shard shows the same
    /// time in `show protocols`, `show route` and RIB dumps).
    pub since: std::time::SystemTime,
}

/// Session task -> RIB thread.
#[derive(Debug)]
pub enum RibInput {
    Up {
        peer: PeerId,
        up: Box<SessionUp>,
    },
    /// UPDATEs in arrival order, batched by the session (up to a size or
    /// until its socket has no more ready data).
    Updates {
        peer: PeerId,
        updates: Vec<DecodedUpdate>,
    },
    /// The peer sent ROUTE-REFRESH (RFC 2918; `subtype` per RFC 7313:
    /// 0 request, 1 BoRR, 2 EoRR).
    RouteRefresh {
        peer: PeerId,
        family: AfiSafi,
        subtype: u8,
        /// Set by [`RibSender`] with several shards: the BoRR goes out
        /// before any shard's re-sent routes and the EoRR after all of
        /// them (RFC 7313 §4).
        barrier: Option<Arc<FlushBarrier>>,
    },
    /// The Established session ended: flush its routes (or mark them stale
    /// under graceful restart, RFC 4724 §4.2).
    Down {
        peer: PeerId,
        reason: DownReason,
        /// The peer negotiated graceful restart and the session ended in a
        /// way that allows retaining its routes.
        graceful: bool,
    },
}

/// RIB thread or control plane -> session task.
#[derive(Debug)]
pub enum SessionCmd {
    /// Complete, encoded BGP messages (UPDATEs, End-of-RIB), written in
    /// order. The session subtracts their length from
    /// [`PeerStatus::out_queued_bytes`] once written.
    Send(Vec<u8>),
    /// Ask the peer to re-send its routes (RFC 2918).
    SendRouteRefresh { family: AfiSafi },
    /// Administrative stop (RFC 4271 event 2): send this NOTIFICATION (a
    /// Cease with RFC 8203/9003 shutdown text, or Cease/1 max-prefix with
    /// RFC 4486 data), go Idle. With `restart_after`, start again after
    /// that delay (max-prefix "restart"); without, stay down until
    /// [`SessionCmd::Start`].
    Stop {
        notification: NotificationMessage,
        restart_after: Option<Duration>,
    },
    /// Administrative start (RFC 4271 event 1).
    Start,
    /// End the session task for good (peer removed or its session
    /// parameters changed on reload): send this NOTIFICATION if a
    /// connection is open, report `Down` if it was Established, exit.
    Terminate { notification: NotificationMessage },
}

/// Everything the RIB thread receives, on one bounded channel so that it
/// can block on a single receiver.
pub enum RibMsg {
    Input(RibInput),
    /// Periodic wake-up (MRAI, back-pressure retries, timers).
    Tick,
    /// A control request (CLI, metrics, reload), run on the RIB thread.
    Control(crate::rib::ControlFn),
}

impl std::fmt::Debug for RibMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RibMsg::Input(i) => f.debug_tuple("Input").field(i).finish(),
            RibMsg::Tick => f.write_str("Tick"),
            RibMsg::Control(_) => f.write_str("Control(..)"),
        }
    }
}

/// The sending side sessions hold, over the RIB's shard threads (one
/// for the sequential pipeline), or over the locked stripes of the
/// `per-peer` and `worker-pool` pipelines ([`crate::striped`]). Bounded:
/// a session that outruns the RIB waits here (asynchronously, so its
/// keepalives keep flowing).
///
/// With several shards an UPDATE batch is split by
/// [`bgp_rib::shard_for`] here, on the session's thread, so each shard
/// thread gets only its own prefixes; the other inputs go to every shard.
#[derive(Clone, Debug)]
pub struct RibSender {
    backend: Backend,
}

#[derive(Clone, Debug)]
enum Backend {
    /// One channel per RIB thread (sequential, sharded).
    Channels(Arc<[tokio::sync::mpsc::Sender<RibMsg>]>),
    /// `per-peer`: the caller applies its input to the stripes itself.
    Striped(Arc<crate::striped::Stripes>),
    /// `worker-pool`: the input goes to the next worker's queue.
    Pool(Arc<crate::striped::Pool>),
}

/// Room reserved for one batch (see [`RibSender::reserve`]).
pub struct RibPermit {
    inner: PermitInner,
}

enum PermitInner {
    Channels(Vec<tokio::sync::mpsc::OwnedPermit<RibMsg>>),
    Striped(Arc<crate::striped::Stripes>),
    Pool(crate::striped::PoolPermit),
}

impl RibPermit {
    /// Sends one batch, split over the shards.
    pub fn send_updates(self, peer: PeerId, updates: Vec<DecodedUpdate>) {
        match self.inner {
            PermitInner::Channels(permits) => {
                let n = permits.len();
                if n == 1 {
                    if let Some(p) = permits.into_iter().next() {
                        p.send(RibMsg::Input(RibInput::Updates { peer, updates }));
                    }
                    return;
                }
                let parts = split_updates(updates, n);
                for (p, updates) in permits.into_iter().zip(parts) {
                    if !updates.is_empty() {
                        p.send(RibMsg::Input(RibInput::Updates { peer, updates }));
                    }
                }
            }
            PermitInner::Striped(s) => s.apply_input(RibInput::Updates { peer, updates }),
            PermitInner::Pool(p) => p.send(RibInput::Updates { peer, updates }),
        }
    }
}

/// Which part of `input` each of `n` RIB parts gets, as (part index,
/// message): UPDATEs split by [`bgp_rib::shard_for`], the rest to every
/// part, with a [`FlushBarrier`] for the markers that must go out once.
pub fn fan_out(input: RibInput, n: usize) -> Vec<(usize, RibMsg)> {
    if n <= 1 {
        return vec![(0, RibMsg::Input(input))];
    }
    match input {
        RibInput::Updates { peer, updates } => split_updates(updates, n)
            .into_iter()
            .enumerate()
            .filter(|(_, u)| !u.is_empty())
            .map(|(i, updates)| (i, RibMsg::Input(RibInput::Updates { peer, updates })))
            .collect(),
        RibInput::Up { peer, mut up } => {
            up.eor_barrier = Some(FlushBarrier::new(n));
            (0..n)
                .map(|i| {
                    let up = up.clone();
                    (i, RibMsg::Input(RibInput::Up { peer, up }))
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
                    (i, RibMsg::Input(m))
                })
                .collect()
        }
        RibInput::Down {
            peer,
            reason,
            graceful,
        } => (0..n)
            .map(|i| {
                let m = RibInput::Down {
                    peer,
                    reason,
                    graceful,
                };
                (i, RibMsg::Input(m))
            })
            .collect(),
    }
}

impl RibSender {
    /// One RIB thread (the sequential pipeline, and tests).
    pub fn new(tx: tokio::sync::mpsc::Sender<RibMsg>) -> RibSender {
        RibSender::sharded(vec![tx])
    }

    /// One channel per shard thread, in shard order (the index
    /// [`bgp_rib::shard_for`] returns).
    pub fn sharded(txs: Vec<tokio::sync::mpsc::Sender<RibMsg>>) -> RibSender {
        RibSender {
            backend: Backend::Channels(Arc::from(txs)),
        }
    }

    /// The `per-peer` pipeline: senders apply their input themselves.
    pub fn striped(s: Arc<crate::striped::Stripes>) -> RibSender {
        RibSender {
            backend: Backend::Striped(s),
        }
    }

    /// The `worker-pool` pipeline.
    pub fn pool(p: Arc<crate::striped::Pool>) -> RibSender {
        RibSender {
            backend: Backend::Pool(p),
        }
    }

    /// The `per-peer` pipeline: each session gets its own thread.
    pub fn is_per_peer(&self) -> bool {
        matches!(self.backend, Backend::Striped(_))
    }

    /// Parts the RIB is split into (shards or stripes).
    pub fn shard_count(&self) -> usize {
        match &self.backend {
            Backend::Channels(c) => c.len(),
            Backend::Striped(s) => s.len(),
            Backend::Pool(p) => p.stripes().len(),
        }
    }

    /// Sends `input` where it belongs: UPDATEs split by shard, the rest to
    /// every shard. Returns false when the RIB is gone (shutting down).
    pub async fn send(&self, input: RibInput) -> bool {
        match &self.backend {
            Backend::Channels(txs) => {
                let mut ok = true;
                for (i, m) in fan_out(input, txs.len()) {
                    if let Some(tx) = txs.get(i) {
                        ok &= tx.send(m).await.is_ok();
                    }
                }
                ok
            }
            Backend::Striped(s) => {
                s.apply_input(input);
                true
            }
            Backend::Pool(p) => match p.reserve().await {
                Some(permit) => {
                    permit.send(input);
                    true
                }
                None => false,
            },
        }
    }

    /// [`Self::send`] for a thread outside the async runtime (benchmarks,
    /// in-process tests).
    pub fn blocking_send(&self, input: RibInput) -> bool {
        match &self.backend {
            Backend::Channels(txs) => {
                let mut ok = true;
                for (i, m) in fan_out(input, txs.len()) {
                    if let Some(tx) = txs.get(i) {
                        ok &= tx.blocking_send(m).is_ok();
                    }
                }
                ok
            }
            Backend::Striped(s) => {
                s.apply_input(input);
                true
            }
            Backend::Pool(p) => match p.blocking_reserve() {
                Some(permit) => {
                    permit.send(input);
                    true
                }
                None => false,
            },
        }
    }

    /// Hands `updates` over if every shard's channel has room now;
    /// otherwise gives them back untouched.
    pub fn try_send_updates(
        &self,
        peer: PeerId,
        updates: Vec<DecodedUpdate>,
    ) -> Result<(), Vec<DecodedUpdate>> {
        let inner = match &self.backend {
            Backend::Channels(txs) => {
                let mut permits = Vec::with_capacity(txs.len());
                for tx in txs.iter() {
                    match tx.clone().try_reserve_owned() {
                        Ok(p) => permits.push(p),
                        Err(_) => return Err(updates),
                    }
                }
                PermitInner::Channels(permits)
            }
            Backend::Striped(s) => PermitInner::Striped(s.clone()),
            Backend::Pool(p) => match p.try_reserve() {
                Some(permit) => PermitInner::Pool(permit),
                None => return Err(updates),
            },
        };
        RibPermit { inner }.send_updates(peer, updates);
        Ok(())
    }

    /// Waits for room on every shard's channel (cancel-safe: dropping the
    /// future releases what it reserved). None when the RIB is gone.
    pub async fn reserve(&self) -> Option<RibPermit> {
        let inner = match &self.backend {
            Backend::Channels(txs) => {
                let mut permits = Vec::with_capacity(txs.len());
                for tx in txs.iter() {
                    permits.push(tx.clone().reserve_owned().await.ok()?);
                }
                PermitInner::Channels(permits)
            }
            Backend::Striped(s) => PermitInner::Striped(s.clone()),
            Backend::Pool(p) => PermitInner::Pool(p.reserve().await?),
        };
        Some(RibPermit { inner })
    }
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
    let mut out: Vec<Vec<DecodedUpdate>> = (0..n).map(|_| Vec::new()).collect();
    for u in updates {
        if u.end_of_rib.is_some() || (u.announce.is_empty() && u.withdraw.is_empty()) {
            for part in out.iter_mut() {
                part.push(u.clone());
            }
            continue;
        }
        let first = u
            .announce
            .first()
            .or(u.withdraw.first())
            .map_or(0, |x| bgp_rib::shard_for(&x.prefix, n));
        let single = u
            .announce
            .iter()
            .chain(&u.withdraw)
            .all(|x| bgp_rib::shard_for(&x.prefix, n) == first);
        if single {
            if let Some(part) = out.get_mut(first) {
                part.push(u);
            }
            continue;
        }
        // Which shards already got their part of this UPDATE (n <= 64,
        // see MAX_SHARDS).
        let mut touched = 0u64;
        for (list, is_announce) in [(&u.announce, true), (&u.withdraw, false)] {
            for x in list {
                let s = bgp_rib::shard_for(&x.prefix, n);
                let Some(part) = out.get_mut(s) else {
                    continue;
                };
                let bit = 1u64 << (s % 64);
                if touched & bit == 0 {
                    touched |= bit;
                    part.push(DecodedUpdate::default());
                }
                let Some(d) = part.last_mut() else { continue };
                if is_announce {
                    if d.attrs.is_none() {
                        d.attrs.clone_from(&u.attrs);
                    }
                    d.announce.push(*x);
                } else {
                    d.withdraw.push(*x);
                }
            }
        }
    }
    out
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
    pub const IDLE: u8 = 0;
    pub const CONNECT: u8 = 1;
    pub const ACTIVE: u8 = 2;
    pub const OPEN_SENT: u8 = 3;
    pub const OPEN_CONFIRM: u8 = 4;
    pub const ESTABLISHED: u8 = 5;
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
    pub state: AtomicU8,
    /// Unix seconds of the last state change.
    pub state_since: AtomicU64,
    pub msgs_in: AtomicU64,
    pub msgs_out: AtomicU64,
    pub updates_in: AtomicU64,
    pub updates_out: AtomicU64,
    pub notifications_in: AtomicU64,
    pub notifications_out: AtomicU64,
    pub keepalives_in: AtomicU64,
    pub keepalives_out: AtomicU64,
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
    pub max_prefix_warned: AtomicBool,
    /// Held by a shard thread while it passes a [`FlushBarrier`] and hands
    /// its bytes over, so markers and routes reach the session in order.
    pub out_lock: Mutex<()>,
}

impl PeerStatus {
    pub fn state(&self) -> u8 {
        self.state.load(Ordering::Relaxed)
    }
    pub fn set_last_error(&self, s: String) {
        if let Ok(mut g) = self.last_error.lock() {
            *g = s;
        }
    }
    pub fn last_error(&self) -> String {
        self.last_error
            .lock()
            .map(|g| g.clone())
            .unwrap_or_default()
    }
}

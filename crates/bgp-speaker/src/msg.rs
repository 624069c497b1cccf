//! The messages that cross threads: session task -> RIB thread
//! ([`RibInput`]), RIB thread or control plane -> session task
//! ([`SessionCmd`]), and the per-peer status every side can read
//! ([`PeerStatus`]).
//!
//! Sessions decode and validate UPDATEs on their own threads (RFC 7606
//! applied there) and hand the RIB [`DecodedUpdate`]s in batches through a
//! bounded channel: the RIB never sees a socket or raw bytes.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
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
    pub attrs: Option<AttrsBuilder>,
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

/// The sending side sessions hold. Bounded: a session that outruns the RIB
/// waits here (asynchronously, so its keepalives keep flowing).
#[derive(Clone, Debug)]
pub struct RibSender(pub tokio::sync::mpsc::Sender<RibMsg>);

impl RibSender {
    /// Returns false when the RIB thread is gone (daemon shutting down).
    pub async fn send(&self, input: RibInput) -> bool {
        self.0.send(RibMsg::Input(input)).await.is_ok()
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

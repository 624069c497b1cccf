//! What one call into [`crate::RibCore`] produced, for the runtime to carry
//! out: bytes and commands for sessions, best-route changes for a
//! forwarding plane, log notes, and measurement samples.
//!
//! The core never sends anything itself. The runtime drains the outbox
//! after each call (`bgp-speaker` hands bytes to the session's writer
//! queue and logs the notes with `tracing`; a simulator delivers them on
//! its virtual clock). Order within [`Outbox::out`] is the order the core
//! decided, and must be kept per peer.

use std::fmt;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use base::{Afi, AfiSafi, Prefix};
use bgp_rib::PeerId;

use crate::msg::{FlushBarrier, PeerStatus, SessionCmd};
use crate::peer::MaxPrefixAction;

/// One thing for one session.
#[derive(Debug)]
pub enum Output {
    /// Encoded UPDATEs for `peer`, with the markers that must bracket them
    /// when a barrier orders several RIB parts' output (see [`Markers`]).
    Send {
        peer: PeerId,
        bytes: Vec<u8>,
        markers: Option<Markers>,
    },
    /// Any other command (stop, start, terminate, ROUTE-REFRESH request).
    Cmd { peer: PeerId, cmd: SessionCmd },
}

impl Output {
    /// The session this output is for.
    pub fn peer(&self) -> PeerId {
        match self {
            Output::Send { peer, .. } | Output::Cmd { peer, .. } => *peer,
        }
    }
}

/// One encoded marker message and the barrier that decides whether this
/// RIB part writes it (None: this part alone, it always does).
#[derive(Debug)]
pub struct Marker {
    pub bytes: Vec<u8>,
    pub barrier: Option<Arc<FlushBarrier>>,
}

/// Markers around one flush: `head` (BoRR, RFC 7313 §4) goes out before
/// the routes if this part is the first through its barrier, `tail`
/// (End-of-RIB, RFC 4724 §2, then EoRR) after them if it is the last.
#[derive(Debug, Default)]
pub struct Markers {
    pub head: Vec<Marker>,
    pub tail: Vec<Marker>,
}

impl Markers {
    /// Passes the barriers and returns head, `body`, tail as one buffer.
    /// Must run under the session's [`PeerStatus::out_lock`] together with
    /// the hand-over, so that every part's routes reach the session
    /// between the first head and the last tail: use
    /// [`PeerStatus::hand_over`].
    pub fn assemble(self, body: Vec<u8>) -> Vec<u8> {
        let mut buf = Vec::new();
        for m in &self.head {
            if m.barrier.as_ref().is_none_or(|b| b.first()) {
                buf.extend_from_slice(&m.bytes);
            }
        }
        if buf.is_empty() {
            buf = body;
        } else {
            buf.extend_from_slice(&body);
        }
        for m in &self.tail {
            if m.barrier.as_ref().is_none_or(|b| b.last()) {
                buf.extend_from_slice(&m.bytes);
            }
        }
        buf
    }
}

impl PeerStatus {
    /// Hands `bytes` (with their markers) to the session through `send`,
    /// counting them in [`PeerStatus::out_queued_bytes`] first (the session
    /// subtracts what it writes). With markers this holds the session's
    /// `out_lock` from the barrier checks until `send` returns. Returns the
    /// bytes handed over (0 when nothing was left to send).
    pub fn hand_over(
        &self,
        bytes: Vec<u8>,
        markers: Option<Markers>,
        send: impl FnOnce(Vec<u8>),
    ) -> usize {
        let _order = markers
            .as_ref()
            .map(|_| self.out_lock.lock().unwrap_or_else(|e| e.into_inner()));
        let buf = match markers {
            Some(m) => m.assemble(bytes),
            None => bytes,
        };
        if buf.is_empty() {
            return 0;
        }
        let n = buf.len();
        self.out_queued_bytes.fetch_add(n as u64, Ordering::Relaxed);
        send(buf);
        n
    }
}

/// One Loc-RIB change for a forwarding plane: the new best next hop, or
/// `None` when the prefix has no route any more.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BestChange {
    pub prefix: Prefix,
    pub next_hop: Option<IpAddr>,
}

/// What the core measured, when the runtime gave it a [`crate::Meter`]
/// (the core's decisions never depend on these).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Ingress checks (loops, OTC), per UPDATE of a batch.
    Policy,
    /// Applying one UPDATE to the tables (named import policies included).
    RibUpdate,
    /// A whole batch, per UPDATE (the UPDATE latency histogram).
    Batch,
    /// Collecting the changed prefixes of an export round, per prefix.
    BestPath,
    /// Export policy and encoding, per prefix of a round or per message
    /// encoded at flush.
    Export,
}

/// `n` samples of `stage` averaging `ns_each` nanoseconds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub stage: Stage,
    pub ns_each: u64,
    pub n: u64,
}

/// Something worth a log line; the runtime chooses how to log it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    SessionEstablished {
        remote: std::net::SocketAddr,
    },
    /// Down with graceful restart: routes kept as stale for this long.
    DownKeptStale {
        restart_s: u64,
    },
    DownFlushed,
    /// The graceful-restart timer ran out (RFC 4724 §4.2).
    RestartTimerExpired,
    /// No End-of-RIB-Refresh in time (RFC 7313 §4).
    NoEorr {
        afi: Afi,
    },
    EndOfRib {
        family: AfiSafi,
    },
    UpdateNotApplied {
        error: String,
    },
    MaxPrefixExceeded {
        received: u64,
        limit: u64,
        action: MaxPrefixAction,
    },
    MaxPrefixWarning {
        received: u64,
        limit: u64,
    },
    RefreshRequested {
        family: AfiSafi,
    },
    BeginRefresh {
        family: AfiSafi,
    },
    EndRefresh {
        family: AfiSafi,
        purged: usize,
    },
    RefreshSubtypeIgnored {
        subtype: u8,
    },
}

/// How loud a [`Note`] is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warn,
}

impl Note {
    pub fn level(&self) -> Level {
        match self {
            Note::SessionEstablished { .. }
            | Note::DownKeptStale { .. }
            | Note::DownFlushed
            | Note::RestartTimerExpired => Level::Info,
            Note::NoEorr { .. }
            | Note::UpdateNotApplied { .. }
            | Note::MaxPrefixExceeded { .. }
            | Note::MaxPrefixWarning { .. } => Level::Warn,
            Note::EndOfRib { .. }
            | Note::RefreshRequested { .. }
            | Note::BeginRefresh { .. }
            | Note::EndRefresh { .. }
            | Note::RefreshSubtypeIgnored { .. } => Level::Debug,
        }
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::SessionEstablished { remote } => {
                write!(f, "session established (remote {remote})")
            }
            Note::DownKeptStale { restart_s } => write!(
                f,
                "session down; keeping its routes as stale for {restart_s} s (graceful restart)"
            ),
            Note::DownFlushed => f.write_str("session down; flushing its routes"),
            Note::RestartTimerExpired => {
                f.write_str("graceful restart timer expired; flushing stale routes")
            }
            Note::NoEorr { afi } => write!(
                f,
                "no End-of-RIB-Refresh in time for {afi:?}; purging stale routes"
            ),
            Note::EndOfRib { family } => write!(f, "End-of-RIB received for {family}"),
            Note::UpdateNotApplied { error } => write!(f, "UPDATE not applied: {error}"),
            Note::MaxPrefixExceeded {
                received,
                limit,
                action,
            } => write!(
                f,
                "max-prefix exceeded: {received} received, limit {limit}, action {action:?}"
            ),
            Note::MaxPrefixWarning { received, limit } => write!(
                f,
                "max-prefix warning threshold reached: {received} received, limit {limit}"
            ),
            Note::RefreshRequested { family } => write!(f, "route refresh requested ({family})"),
            Note::BeginRefresh { family } => write!(f, "Beginning-of-RIB-Refresh ({family})"),
            Note::EndRefresh { family, purged } => write!(
                f,
                "End-of-RIB-Refresh ({family}), {purged} stale routes purged"
            ),
            Note::RefreshSubtypeIgnored { subtype } => {
                write!(f, "ROUTE-REFRESH subtype {subtype} ignored")
            }
        }
    }
}

/// Everything one call produced (see the module docs). Reuse one outbox:
/// [`Outbox::clear`] keeps the allocations.
#[derive(Debug, Default)]
pub struct Outbox {
    /// Bytes and commands for sessions, in order.
    pub out: Vec<Output>,
    /// Best-route changes, when the core was asked for them
    /// ([`crate::RibCore::want_best`]).
    pub best: Vec<BestChange>,
    /// Log notes, with the peer they are about.
    pub notes: Vec<(PeerId, Note)>,
    /// Measurements (empty without a [`crate::Meter`]).
    pub samples: Vec<Sample>,
}

impl Outbox {
    pub fn clear(&mut self) {
        self.out.clear();
        self.best.clear();
        self.notes.clear();
        self.samples.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.out.is_empty() && self.best.is_empty() && self.notes.is_empty()
    }

    pub(crate) fn cmd(&mut self, peer: PeerId, cmd: SessionCmd) {
        self.out.push(Output::Cmd { peer, cmd });
    }

    pub(crate) fn note(&mut self, peer: PeerId, note: Note) {
        self.notes.push((peer, note));
    }

    pub(crate) fn sample(&mut self, stage: Stage, total_ns: u64, n: u64) {
        let n = n.max(1);
        self.samples.push(Sample {
            stage,
            ns_each: total_ns / n,
            n,
        });
    }
}

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
use std::sync::atomic::Ordering;
use std::sync::Arc;

use base::{Afi, AfiSafi};
use bgp_rib::PeerId;
use bytes::Bytes;

use crate::msg::{FlushBarrier, PeerStatus, SessionCmd};
use crate::peer::MaxPrefixAction;

/// One thing for one session.
#[derive(Debug)]
pub enum Output {
    /// Encoded UPDATEs for `peer`, with the markers that must bracket them
    /// when a barrier orders several RIB parts' output (see [`Markers`]).
    Send {
        /// The session.
        peer: PeerId,
        /// Whole encoded BGP messages, in order, as refcounted buffers:
        /// the members of an update group whose sessions encode alike
        /// get the same buffers (one encoding, no copy per member).
        bytes: Vec<Bytes>,
        /// Markers that bracket `bytes` across RIB parts, if any are owed.
        markers: Option<Markers>,
    },
    /// Any other command (stop, start, terminate, ROUTE-REFRESH request).
    Cmd {
        /// The session.
        peer: PeerId,
        /// The command.
        cmd: SessionCmd,
    },
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
    /// One or more whole encoded messages.
    pub bytes: Vec<u8>,
    /// Decides whether this part writes them.
    pub barrier: Option<Arc<FlushBarrier>>,
}

/// Markers around one flush: `head` (BoRR, RFC 7313 §4) goes out before
/// the routes if this part is the first through its barrier, `tail`
/// (End-of-RIB, RFC 4724 §2, then EoRR) after them if it is the last.
#[derive(Debug, Default)]
pub struct Markers {
    /// Written before the routes by the first part through.
    pub head: Vec<Marker>,
    /// Written after the routes by the last part through.
    pub tail: Vec<Marker>,
}

impl Markers {
    /// Passes the barriers and returns head, `body`, tail as one list of
    /// buffers (the body's shared buffers are not copied). Must run under
    /// the session's [`PeerStatus::out_lock`] together with the
    /// hand-over, so that every part's routes reach the session between
    /// the first head and the last tail: use [`PeerStatus::hand_over`].
    pub fn assemble(self, body: Vec<Bytes>) -> Vec<Bytes> {
        let mut head = Vec::new();
        for m in &self.head {
            if m.barrier.as_ref().is_none_or(|b| b.first()) {
                head.extend_from_slice(&m.bytes);
            }
        }
        let mut tail = Vec::new();
        for m in &self.tail {
            if m.barrier.as_ref().is_none_or(|b| b.last()) {
                tail.extend_from_slice(&m.bytes);
            }
        }
        if head.is_empty() && tail.is_empty() {
            return body;
        }
        let mut out = Vec::with_capacity(body.len() + 2);
        if !head.is_empty() {
            out.push(Bytes::from(head));
        }
        out.extend(body);
        if !tail.is_empty() {
            out.push(Bytes::from(tail));
        }
        out
    }
}

/// The buffers of one [`Output::Send`] as one contiguous copy (for
/// simulators and tests that read the stream whole).
pub fn concat(chunks: &[Bytes]) -> Vec<u8> {
    let mut v = Vec::with_capacity(chunks.iter().map(Bytes::len).sum());
    for c in chunks {
        v.extend_from_slice(c);
    }
    v
}

impl PeerStatus {
    /// Hands `bytes` (with their markers) to the session through `send`,
    /// one call per non-empty buffer in order, counting them in
    /// [`PeerStatus::out_queued_bytes`] first (the session subtracts what
    /// it writes). With markers this holds the session's `out_lock` from
    /// the barrier checks until the last `send` returns. Returns the bytes
    /// handed over (0 when nothing was left to send).
    pub fn hand_over(
        &self,
        bytes: Vec<Bytes>,
        markers: Option<Markers>,
        mut send: impl FnMut(Bytes),
    ) -> usize {
        let _order = markers
            .as_ref()
            .map(|_| self.out_lock.lock().unwrap_or_else(|e| e.into_inner()));
        let bufs = match markers {
            Some(m) => m.assemble(bytes),
            None => bytes,
        };
        let n: usize = bufs.iter().map(Bytes::len).sum();
        if n == 0 {
            return 0;
        }
        self.out_queued_bytes.fetch_add(n as u64, Ordering::Relaxed);
        for b in bufs {
            if !b.is_empty() {
                send(b);
            }
        }
        n
    }
}

/// One Loc-RIB change for a forwarding plane: the new best next hop, or
/// `None` when the prefix has no route any more (the workspace's one route
/// type, [`base::RouteChange`]).
pub type BestChange = base::RouteChange;

/// What the core measured, when the runtime gave it a [`crate::Meter`]
/// (the core's decisions never depend on these).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Ingress checks (loops, OTC) per UPDATE of a batch, and named import
    /// policies per prefix evaluated.
    Policy,
    /// Applying one UPDATE to the tables, best-path reselection of its
    /// prefixes included (named import policies excluded).
    RibUpdate,
    /// A whole batch, per UPDATE (the UPDATE latency histogram).
    Batch,
    /// Collecting the changed prefixes of an export round and publishing
    /// them to the best-route feed, per prefix (the reselection itself is
    /// inline in [`Stage::RibUpdate`]).
    BestPath,
    /// Export policy and encoding, per prefix of a round or per message
    /// encoded at flush.
    Export,
}

/// `n` samples of `stage` averaging `ns_each` nanoseconds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// What was measured.
    pub stage: Stage,
    /// Nanoseconds per sample.
    pub ns_each: u64,
    /// How many samples.
    pub n: u64,
}

/// Something worth a log line; the runtime chooses how to log it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// The session came up.
    SessionEstablished {
        /// The peer's address.
        remote: std::net::SocketAddr,
    },
    /// Down with graceful restart: routes kept as stale for this long.
    DownKeptStale {
        /// The peer's Restart Time.
        restart_s: u64,
    },
    /// Session down without graceful restart: its routes are withdrawn.
    DownFlushed,
    /// The graceful-restart timer (or, once the session is back, the
    /// stale-path timer) ran out for a family (RFC 4724 §4.2).
    RestartTimerExpired {
        /// The family still stale.
        afi: Afi,
    },
    /// The restarted peer's End-of-RIB swept the stale routes it did not
    /// send again (RFC 4724 §4.2).
    StaleSwept {
        /// The family.
        family: AfiSafi,
        /// Stale routes removed.
        purged: usize,
    },
    /// A family's stale routes enter the long-lived phase (RFC 9494):
    /// kept with LLGR_STALE, least preferred, but those with NO_LLGR.
    LongLivedStale {
        /// The family.
        afi: Afi,
        /// The peer's Long-lived Stale Time.
        stale_s: u64,
    },
    /// The Long-lived Stale Time ran out (RFC 9494).
    LongLivedExpired {
        /// The family.
        afi: Afi,
    },
    /// Our own selection deferral after a graceful restart ended (RFC 4724
    /// §4.1): routes and End-of-RIB go out now.
    DeferralOver {
        /// The deferral timer ran out before every End-of-RIB came.
        by_timer: bool,
    },
    /// A family's stale routes are flushed at once (RFC 4724 §4.2).
    StaleFlushed {
        /// The family.
        afi: Afi,
        /// Why.
        why: &'static str,
    },
    /// No End-of-RIB-Refresh in time (RFC 7313 §4).
    NoEorr {
        /// The family still stale.
        afi: Afi,
    },
    /// The peer sent End-of-RIB (RFC 4724 §2).
    EndOfRib {
        /// Its family.
        family: AfiSafi,
    },
    /// An UPDATE the RIB could not apply.
    UpdateNotApplied {
        /// Why.
        error: String,
    },
    /// The peer crossed its max-prefix limit (RFC 4486).
    MaxPrefixExceeded {
        /// Prefixes received from the peer.
        received: u64,
        /// The configured limit.
        limit: u64,
        /// What is done about it.
        action: MaxPrefixAction,
    },
    /// The peer reached the max-prefix warning threshold.
    MaxPrefixWarning {
        /// Prefixes received from the peer.
        received: u64,
        /// The configured limit.
        limit: u64,
    },
    /// The peer asked for our routes again (RFC 2918).
    RefreshRequested {
        /// The family.
        family: AfiSafi,
    },
    /// The peer's Beginning-of-RIB-Refresh (RFC 7313).
    BeginRefresh {
        /// The family.
        family: AfiSafi,
    },
    /// The peer's End-of-RIB-Refresh (RFC 7313).
    EndRefresh {
        /// The family.
        family: AfiSafi,
        /// Stale routes removed.
        purged: usize,
    },
    /// A ROUTE-REFRESH subtype that does not apply here.
    RefreshSubtypeIgnored {
        /// The subtype.
        subtype: u8,
    },
}

/// How loud a [`Note`] is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Detail for debugging.
    Debug,
    /// A normal event.
    Info,
    /// Something an operator should look at.
    Warn,
}

impl Note {
    /// How loud this note is.
    pub fn level(&self) -> Level {
        match self {
            Note::SessionEstablished { .. }
            | Note::DownKeptStale { .. }
            | Note::DownFlushed
            | Note::RestartTimerExpired { .. }
            | Note::StaleSwept { .. }
            | Note::LongLivedStale { .. }
            | Note::LongLivedExpired { .. }
            | Note::DeferralOver { .. }
            | Note::StaleFlushed { .. } => Level::Info,
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
            Note::RestartTimerExpired { afi } => write!(
                f,
                "graceful restart timer expired for {afi:?}; flushing stale routes"
            ),
            Note::StaleSwept { family, purged } => write!(
                f,
                "End-of-RIB ({family}) after graceful restart: {purged} stale routes swept"
            ),
            Note::LongLivedStale { afi, stale_s } => write!(
                f,
                "{afi:?} routes kept as long-lived stale for {stale_s} s (LLGR_STALE, least preferred)"
            ),
            Note::LongLivedExpired { afi } => write!(
                f,
                "long-lived stale time expired for {afi:?}; flushing stale routes"
            ),
            Note::DeferralOver { by_timer } => {
                let why = if *by_timer {
                    "select_defer_time ran out"
                } else {
                    "End-of-RIB from every neighbour"
                };
                write!(f, "graceful restart: selection deferral over ({why}); sending routes and End-of-RIB")
            }
            Note::StaleFlushed { afi, why } => {
                write!(
                    f,
                    "{afi:?} routes flushed at once: {why} (graceful restart)"
                )
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

/// One view's changes of one export round (see [`crate::views`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewBatch {
    /// The view's name.
    pub view: String,
    /// The prefixes whose view next hops changed (`next_hop: None`: the
    /// view has no route for it any more).
    pub changes: Vec<BestChange>,
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
    /// Next hops the RIB started or stopped using, with next-hop tracking
    /// on: the runtime resolves each new one and answers with
    /// [`crate::RibCore::nexthop_update`].
    pub nexthops: Vec<bgp_rib::NexthopWatch>,
    /// The registered views' changes, one batch per view that has some
    /// (see [`crate::views`]).
    pub views: Vec<ViewBatch>,
}

impl Outbox {
    /// Empties everything, keeping the allocations.
    pub fn clear(&mut self) {
        self.out.clear();
        self.best.clear();
        self.notes.clear();
        self.samples.clear();
        self.nexthops.clear();
        self.views.clear();
    }

    /// Nothing for sessions, followers or the log.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
            && self.best.is_empty()
            && self.notes.is_empty()
            && self.nexthops.is_empty()
            && self.views.is_empty()
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

//! Counters shared between the sender threads and the reporter. Plain
//! atomics with relaxed ordering: the reporter only needs numbers that are
//! right to within a second.

use crate::error::ReplayError;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

/// Where one replayed peer is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PeerState {
    Connecting = 0,
    /// OPEN/KEEPALIVE done, UPDATEs going out.
    Established = 1,
    /// Everything and End-of-RIB written; keepalives only.
    EorSent = 2,
    Failed = 3,
    /// Closed on request.
    Stopped = 4,
    /// Closed because the trace says the recorded session went down.
    Down = 5,
}

impl PeerState {
    fn from_u8(v: u8) -> PeerState {
        match v {
            1 => PeerState::Established,
            2 => PeerState::EorSent,
            3 => PeerState::Failed,
            4 => PeerState::Stopped,
            5 => PeerState::Down,
            _ => PeerState::Connecting,
        }
    }

    /// Whether the session is up.
    pub fn is_up(self) -> bool {
        matches!(self, PeerState::Established | PeerState::EorSent)
    }
}

/// One peer's counters.
#[derive(Debug)]
pub struct PeerStats {
    state: AtomicU8,
    pub updates_sent: AtomicU64,
    pub prefixes_sent: AtomicU64,
    pub messages_received: AtomicU64,
    pub withdrawn_sent: AtomicU64,
    /// Messages not sent because the trace had the session down.
    pub skipped: AtomicU64,
    /// Sessions brought up (1 + reconnects after trace events).
    pub sessions_opened: AtomicU64,
    /// The whole feed is done (End-of-RIB written, or ended down).
    pub finished: AtomicBool,
    error: Mutex<Option<ReplayError>>,
    times: Mutex<(Option<Instant>, Option<Instant>)>,
}

impl Default for PeerStats {
    fn default() -> Self {
        PeerStats {
            state: AtomicU8::new(PeerState::Connecting as u8),
            updates_sent: AtomicU64::new(0),
            prefixes_sent: AtomicU64::new(0),
            messages_received: AtomicU64::new(0),
            withdrawn_sent: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            sessions_opened: AtomicU64::new(0),
            finished: AtomicBool::new(false),
            error: Mutex::new(None),
            times: Mutex::new((None, None)),
        }
    }
}

impl PeerStats {
    pub fn state(&self) -> PeerState {
        PeerState::from_u8(self.state.load(Relaxed))
    }

    pub(crate) fn set_state(&self, s: PeerState) {
        self.state.store(s as u8, Relaxed);
    }

    /// The first error of this peer, if it failed.
    pub fn error(&self) -> Option<ReplayError> {
        self.error.lock().ok().and_then(|e| *e)
    }

    /// Records the first error; later ones are consequences.
    pub(crate) fn fail(&self, e: ReplayError) {
        if let Ok(mut g) = self.error.lock() {
            g.get_or_insert(e);
        }
        self.set_state(PeerState::Failed);
    }

    pub(crate) fn mark_first_update(&self, t: Instant) {
        if let Ok(mut g) = self.times.lock() {
            g.0.get_or_insert(t);
        }
    }

    /// Adds one write's worth of counters.
    pub(crate) fn sent(&self, messages: u64, prefixes: u64, withdrawn: u64) {
        self.updates_sent.fetch_add(messages, Relaxed);
        self.prefixes_sent.fetch_add(prefixes, Relaxed);
        self.withdrawn_sent.fetch_add(withdrawn, Relaxed);
    }

    pub(crate) fn mark_eor(&self, t: Instant) {
        if let Ok(mut g) = self.times.lock() {
            g.1 = Some(t);
        }
    }

    /// (first UPDATE written, End-of-RIB written).
    pub fn send_window(&self) -> (Option<Instant>, Option<Instant>) {
        self.times.lock().map(|g| *g).unwrap_or((None, None))
    }
}

/// All peers' counters.
#[derive(Debug, Default)]
pub struct ReplayStats {
    pub peers: Vec<PeerStats>,
    /// When sending began: every session was up (or had failed).
    started: Mutex<Option<Instant>>,
}

/// A point-in-time sum over peers.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub peers: usize,
    pub up: usize,
    pub eor_sent: usize,
    pub failed: usize,
    /// Peers whose feed is completely sent.
    pub finished: usize,
    pub updates_sent: u64,
    pub prefixes_sent: u64,
    pub withdrawn_sent: u64,
    pub skipped: u64,
    pub messages_received: u64,
    /// Sessions opened, reopenings after a trace's session events included.
    pub sessions_opened: u64,
}

impl ReplayStats {
    pub fn new(peers: usize) -> ReplayStats {
        ReplayStats {
            peers: (0..peers).map(|_| PeerStats::default()).collect(),
            started: Mutex::new(None),
        }
    }

    /// When sending began (see the field); `None` before.
    pub fn started(&self) -> Option<Instant> {
        self.started.lock().ok().and_then(|g| *g)
    }

    pub(crate) fn mark_started(&self) {
        if let Ok(mut g) = self.started.lock() {
            g.get_or_insert_with(Instant::now);
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        let mut s = Snapshot {
            peers: self.peers.len(),
            ..Snapshot::default()
        };
        for p in &self.peers {
            let st = p.state();
            s.up += usize::from(st.is_up());
            s.eor_sent += usize::from(st == PeerState::EorSent);
            s.failed += usize::from(st == PeerState::Failed);
            s.finished += usize::from(p.finished.load(Relaxed));
            s.updates_sent += p.updates_sent.load(Relaxed);
            s.prefixes_sent += p.prefixes_sent.load(Relaxed);
            s.withdrawn_sent += p.withdrawn_sent.load(Relaxed);
            s.skipped += p.skipped.load(Relaxed);
            s.messages_received += p.messages_received.load(Relaxed);
            s.sessions_opened += p.sessions_opened.load(Relaxed);
        }
        s
    }

    /// From the first UPDATE written on any peer to the last End-of-RIB,
    /// once every peer has finished (failed peers are left out).
    pub fn send_window(&self) -> Option<(Instant, Instant)> {
        let mut first: Option<Instant> = None;
        let mut last: Option<Instant> = None;
        for p in &self.peers {
            if p.state() == PeerState::Failed {
                continue;
            }
            let (f, l) = p.send_window();
            if !p.finished.load(Relaxed) {
                return None;
            }
            // A peer that ended down wrote no End-of-RIB.
            let Some(l) = l.or(f) else { continue };
            // A peer with nothing to send has no first UPDATE.
            if let Some(f) = f {
                first = Some(first.map_or(f, |x| x.min(f)));
            }
            last = Some(last.map_or(l, |x| x.max(l)));
        }
        Some((first.or(last)?, last?))
    }
}

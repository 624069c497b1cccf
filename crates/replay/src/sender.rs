//! Driving the sessions: one session per replayed peer, each from its own
//! source address, writing that peer's pre-encoded [`Feed`](crate::feed::Feed), then
//! End-of-RIB, then keepalives until told to stop.
//!
//! The three sender variants are those of the Quagga multicore study's
//! simulation client (seed 000 §4.1.2):
//! 1. [`SenderVariant::TraceOrder`]: one thread writes every session's
//!    messages in one global order ([`crate::schedule`]: the trace's own
//!    order, or the order the traffic [`Mix`] makes);
//! 2. [`SenderVariant::RoundRobin`]: one thread, N messages per session in
//!    turn;
//! 3. [`SenderVariant::ThreadPerPeer`]: a thread per session, each writing
//!    as fast as the DUT reads; a mix limits how many send at once.
//!
//! Every session is established before the first UPDATE goes out (the
//! seed measured only after connection establishment, §4.2.1), so the
//! clock in [`ReplayStats::started`] starts with all peers ready.

use crate::conn::{Conn, Wrote};
use crate::error::{Phase, ReplayError};
pub use crate::pacing::Pacing;
use crate::pacing::{apply_event, due_end, send_eor, wait_due};
use crate::schedule::{Mix, Order};
use crate::session::SessionConfig;
use crate::stats::{PeerState, PeerStats, ReplayStats};
use crate::workload::Workload;
use base::Asn;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How messages are spread over the sessions in time.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SenderVariant {
    /// One thread writes every session's messages in one global order.
    TraceOrder,
    /// One thread writes `batch` messages to each session in turn.
    RoundRobin { batch: u32 },
    /// One thread per peer, each writing its own feed as fast as the DUT
    /// reads it: the most realistic of the three.
    ThreadPerPeer,
}

impl FromStr for SenderVariant {
    type Err = &'static str;

    /// `trace-order`, `round-robin[:N]` (N defaults to 1) or
    /// `thread-per-peer`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "trace-order" => Ok(SenderVariant::TraceOrder),
            "thread-per-peer" => Ok(SenderVariant::ThreadPerPeer),
            "round-robin" => Ok(SenderVariant::RoundRobin { batch: 1 }),
            _ => match s.strip_prefix("round-robin:").map(str::parse::<u32>) {
                Some(Ok(batch)) if batch > 0 => Ok(SenderVariant::RoundRobin { batch }),
                _ => Err("expected trace-order, round-robin[:N] or thread-per-peer"),
            },
        }
    }
}

/// Everything a replay run needs besides the workload.
#[derive(Clone, Debug)]
pub struct ReplayConfig {
    pub target: SocketAddr,
    pub target_as: Asn,
    pub local_as: Asn,
    /// One source address per peer; also its BGP Identifier when IPv4.
    pub sources: Vec<IpAddr>,
    pub hold_time: u16,
    pub connect_timeout: Duration,
    pub open_timeout: Duration,
    pub variant: SenderVariant,
    pub mix: Mix,
    pub pacing: Pacing,
    /// Seed of the random interleave (trace order without a trace).
    pub seed: u64,
    /// The AS each session speaks as, by session number: session i uses
    /// `session_as[i]`, or `local_as` where the list is shorter (empty:
    /// every session is `local_as`). See [`step_ases`] and
    /// [`crate::mrt_input::recorded_ases`].
    pub session_as: Vec<Asn>,
}

/// `n` ASes from `first`, `step` apart (`--local-as-step`): generator
/// peer i speaks as `first + i * step`. An error when they run past the
/// 4-octet range (RFC 6793) or, with a step of 0, when there is nothing
/// to do (use `local_as` alone).
pub fn step_ases(first: Asn, step: u32, n: usize) -> Result<Vec<Asn>, ReplayError> {
    (0..n)
        .map(|i| {
            u32::try_from(i)
                .ok()
                .and_then(|i| i.checked_mul(step))
                .and_then(|d| first.0.checked_add(d))
                .map(Asn)
                .ok_or(ReplayError::Config(
                    "per-peer AS numbers run past 4294967295",
                ))
        })
        .collect()
}

impl ReplayConfig {
    /// Defaults: hold time 90 s, 10 s connect and OPEN bounds,
    /// thread-per-peer, normal mix, as fast as possible.
    pub fn new(target: SocketAddr, target_as: Asn, local_as: Asn, sources: Vec<IpAddr>) -> Self {
        ReplayConfig {
            target,
            target_as,
            local_as,
            sources,
            hold_time: 90,
            connect_timeout: Duration::from_secs(10),
            open_timeout: Duration::from_secs(10),
            variant: SenderVariant::ThreadPerPeer,
            mix: Mix::Normal,
            pacing: Pacing::Fast,
            seed: 1,
            session_as: Vec::new(),
        }
    }

    /// The AS session `i` speaks as.
    pub fn as_of(&self, i: usize) -> Asn {
        self.session_as.get(i).copied().unwrap_or(self.local_as)
    }

    fn session(&self, i: usize) -> Result<SessionConfig, ReplayError> {
        let src = *self
            .sources
            .get(i)
            .ok_or(ReplayError::Config("fewer source addresses than peers"))?;
        let bgp_id = match src {
            IpAddr::V4(a) => a,
            // RFC 6286: any non-zero 32-bit value unique in the AS.
            IpAddr::V6(_) => Ipv4Addr::from(0x0a00_0000u32 | (i as u32 + 1)),
        };
        Ok(SessionConfig {
            source: Some(src),
            target: self.target,
            local_as: self.as_of(i),
            peer_as: Some(self.target_as),
            bgp_id,
            hold_time: self.hold_time,
            connect_timeout: self.connect_timeout,
            open_timeout: self.open_timeout,
            graceful_restart: false,
        })
    }

    /// The single-threaded order this configuration sends in, if any.
    pub fn order(&self) -> Option<Order> {
        let window = self.mix.window();
        match (self.variant, self.mix) {
            (SenderVariant::ThreadPerPeer, _) => None,
            (SenderVariant::TraceOrder, Mix::Normal) => Some(Order::Trace { seed: self.seed }),
            (SenderVariant::TraceOrder, _) => Some(Order::RoundRobin { batch: 1, window }),
            (SenderVariant::RoundRobin { batch }, _) => Some(Order::RoundRobin { batch, window }),
        }
    }
}

/// A running replay.
pub struct Replay {
    stats: Arc<ReplayStats>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Result<(), ReplayError>>>,
}

/// Starts the sessions. Returns at once; watch [`Replay::stats`].
pub fn start(cfg: &ReplayConfig, workload: Arc<Workload>) -> Result<Replay, ReplayError> {
    let n = workload.feeds.len();
    if cfg.sources.len() < n {
        return Err(ReplayError::Config("fewer source addresses than peers"));
    }
    if cfg.hold_time != 0 && cfg.hold_time < 3 {
        return Err(ReplayError::Config("hold time must be 0 or at least 3 s"));
    }
    let order = cfg.order();
    if let Pacing::Trace { .. } = cfg.pacing {
        if !workload.is_timed() {
            return Err(ReplayError::Config(
                "pacing by trace time needs an update dump (the input has no timestamps)",
            ));
        }
        if matches!(order, Some(Order::RoundRobin { .. })) {
            return Err(ReplayError::Config(
                "pacing by trace time works with trace order or thread-per-peer only",
            ));
        }
    }
    let stats = Arc::new(ReplayStats::new(n));
    let stop = Arc::new(AtomicBool::new(false));
    let sessions = (0..n)
        .map(|i| cfg.session(i))
        .collect::<Result<Vec<_>, _>>()?;
    let spawn_err = |e: std::io::Error| ReplayError::io(Phase::Connect, &e);
    let threads = match order {
        None => {
            let gate = Arc::new(Gate::new(n, cfg.mix.window()));
            let mut threads = Vec::with_capacity(n);
            for (i, scfg) in sessions.into_iter().enumerate() {
                let (w, st, sp, g, pacing) = (
                    workload.clone(),
                    stats.clone(),
                    stop.clone(),
                    gate.clone(),
                    cfg.pacing,
                );
                let h = std::thread::Builder::new()
                    .name(format!("replay-peer-{i}"))
                    .spawn(move || {
                        let r = run_peer(i, &scfg, &w, &st, &sp, &g, pacing);
                        if let (Err(e), Some(p)) = (r, st.peers.get(i)) {
                            p.fail(e);
                        }
                        r
                    })
                    .map_err(spawn_err)?;
                threads.push(h);
            }
            threads
        }
        Some(order) => {
            let (w, st, sp, pacing) = (workload.clone(), stats.clone(), stop.clone(), cfg.pacing);
            let h = std::thread::Builder::new()
                .name("replay-driver".into())
                .spawn(move || crate::driver::run(&sessions, &w, order, pacing, &st, &sp))
                .map_err(spawn_err)?;
            vec![h]
        }
    };
    Ok(Replay {
        stats,
        stop,
        threads,
    })
}

impl Replay {
    pub fn stats(&self) -> &Arc<ReplayStats> {
        &self.stats
    }

    /// Set it to close every session (Cease, administrative shutdown).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    pub fn request_stop(&self) {
        self.stop.store(true, Relaxed);
    }

    /// Whether every sender thread has ended (stopped or failed).
    pub fn finished(&self) -> bool {
        self.threads.iter().all(JoinHandle::is_finished)
    }

    /// Stops (if not yet) and waits; one result per peer (read from the
    /// per-peer stats, so the single-threaded variants report per peer
    /// too).
    pub fn join(self) -> Vec<Result<(), ReplayError>> {
        self.request_stop();
        let mut thread_err = None;
        for h in self.threads {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => thread_err = thread_err.or(Some(e)),
                Err(_) => {
                    thread_err = Some(ReplayError::Unsupported("sender thread panicked (bug)"))
                }
            }
        }
        self.stats
            .peers
            .iter()
            .map(|p| match (p.error(), thread_err) {
                (Some(e), _) => Err(e),
                (None, Some(e)) if p.state() != PeerState::Stopped => Err(e),
                _ => Ok(()),
            })
            .collect()
    }
}

/// Start barrier and concurrency window for thread-per-peer.
struct Gate {
    n: usize,
    window: Option<usize>,
    /// Peers whose session is up or failed.
    ready: AtomicUsize,
    /// Peers done sending (or failed).
    done: AtomicUsize,
}

impl Gate {
    fn new(n: usize, window: Option<usize>) -> Gate {
        Gate {
            n,
            window,
            ready: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
        }
    }

    /// Waits until every session is ready, then until peer `i` may send:
    /// with a window of k, peer i starts once i+1-k peers are done, so
    /// at most k send at once and the next joins as one finishes.
    fn wait_turn(&self, i: usize, stop: &AtomicBool) -> bool {
        let need = self.window.map_or(0, |k| (i + 1).saturating_sub(k));
        loop {
            if stop.load(Relaxed) {
                return false;
            }
            if self.ready.load(Relaxed) >= self.n && self.done.load(Relaxed) >= need {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Counts a peer as ready / done exactly once, whatever path it leaves by.
struct Mark<'a> {
    counter: &'a AtomicUsize,
    set: bool,
}

impl Mark<'_> {
    fn set(&mut self) {
        if !self.set {
            self.set = true;
            self.counter.fetch_add(1, Relaxed);
        }
    }
}

impl Drop for Mark<'_> {
    fn drop(&mut self) {
        self.set();
    }
}

fn run_peer(
    i: usize,
    cfg: &SessionConfig,
    w: &Workload,
    stats: &Arc<ReplayStats>,
    stop: &Arc<AtomicBool>,
    gate: &Gate,
    pacing: Pacing,
) -> Result<(), ReplayError> {
    let mut ready = Mark {
        counter: &gate.ready,
        set: false,
    };
    let mut done = Mark {
        counter: &gate.done,
        set: false,
    };
    let (Some(feed), Some(ps)) = (w.feeds.get(i), stats.peers.get(i)) else {
        return Err(ReplayError::Config("peer index out of range"));
    };
    ps.set_state(PeerState::Connecting);
    let conn = Conn::open(i, cfg, stats, stop);
    ready.set();
    let mut conn = Some(conn?);
    ps.set_state(PeerState::Established);
    if !gate.wait_turn(i, stop) {
        return finish_stopped(conn, ps);
    }
    stats.mark_started();
    let t0 = stats.started().unwrap_or_else(Instant::now);
    let n = feed.msgs.len();
    let (mut k, mut ev) = (0usize, 0usize);
    loop {
        // Session events due before message k (trace STATE_CHANGEs).
        while let Some(e) = feed.events.get(ev).filter(|e| e.before as usize <= k) {
            ev += 1;
            apply_event(i, e.kind, &mut conn, cfg, stats, stop)?;
        }
        if k >= n || stop.load(Relaxed) {
            break;
        }
        let limit = feed.events.get(ev).map_or(n, |e| e.before as usize).min(n);
        let b = match pacing {
            Pacing::Fast => feed.chunk_end(k, limit),
            Pacing::Trace { speed } => {
                if !wait_due(feed, k, t0, speed, conn.as_mut(), stop)? {
                    break;
                }
                due_end(feed, k, limit, t0, speed)
            }
        };
        let (p, wd) = feed.counts(k, b);
        match conn.as_mut() {
            Some(c) => {
                ps.mark_first_update(Instant::now());
                if c.write(feed.range(k, b), stop)? == Wrote::Stopped {
                    return finish_stopped(conn, ps);
                }
                ps.sent((b - k) as u64, p, wd);
            }
            None => {
                ps.skipped.fetch_add((b - k) as u64, Relaxed);
            }
        }
        k = b;
    }
    if stop.load(Relaxed) {
        return finish_stopped(conn, ps);
    }
    if let Some(c) = conn.as_mut() {
        if send_eor(c, feed, stop)? == Wrote::Stopped {
            return finish_stopped(conn, ps);
        }
        ps.mark_eor(Instant::now());
        ps.set_state(PeerState::EorSent);
    }
    ps.finished.store(true, Relaxed);
    done.set();
    // Hold the session up until told to stop.
    while !stop.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if let Some(c) = conn.as_mut() {
            if !c.healthy() || c.keepalive_if_due(stop)? == Wrote::Stopped {
                break;
            }
        }
    }
    finish_stopped(conn, ps)
}

/// Closes (if open) and reports the reader's error, if any.
fn finish_stopped(conn: Option<Conn>, ps: &PeerStats) -> Result<(), ReplayError> {
    if let Some(c) = conn {
        c.close()?;
    }
    if ps.state() != PeerState::Failed {
        ps.set_state(PeerState::Stopped);
    }
    Ok(())
}

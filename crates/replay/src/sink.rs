//! A trivial BGP listener that accepts any peer, completes the handshake
//! and counts what arrives: the ceiling a replay can reach when the DUT
//! costs nothing, and an exact check that a replay sent what it meant to.

use crate::error::{Phase, ReplayError};
use crate::session::{
    check_established, handshake, send_notification, MsgReader, Negotiated, SessionConfig,
};
use base::Asn;
use bgp_wire::consts::msg_type;
use bgp_wire::{encode_keepalive, Message, UpdateView};
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the sink presents itself.
#[derive(Copy, Clone, Debug)]
pub struct SinkConfig {
    /// Port 0 picks a free one; see [`Sink::local_addr`].
    pub listen: SocketAddr,
    pub local_as: Asn,
    pub bgp_id: Ipv4Addr,
    pub hold_time: u16,
    pub open_timeout: Duration,
}

/// Counters over all sessions.
#[derive(Debug, Default)]
pub struct SinkStats {
    pub sessions_accepted: AtomicU64,
    pub sessions_established: AtomicU64,
    pub sessions_failed: AtomicU64,
    pub updates: AtomicU64,
    /// Announced prefixes: IPv4 NLRI plus MP_REACH_NLRI entries.
    pub prefixes: AtomicU64,
    /// Withdrawn prefixes: IPv4 withdrawn routes plus MP_UNREACH_NLRI.
    pub withdrawn: AtomicU64,
    /// End-of-RIB markers (RFC 4724 §2), any family.
    pub end_of_rib: AtomicU64,
    /// UPDATEs that did not parse (counted, not fatal: the sink measures).
    pub malformed: AtomicU64,
    last_error: Mutex<Option<ReplayError>>,
    /// (first UPDATE read, latest End-of-RIB read), for receive rates.
    times: Mutex<(Option<Instant>, Option<Instant>)>,
}

/// A point-in-time copy of [`SinkStats`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SinkSnapshot {
    pub sessions_accepted: u64,
    pub sessions_established: u64,
    pub sessions_failed: u64,
    pub updates: u64,
    pub prefixes: u64,
    pub withdrawn: u64,
    pub end_of_rib: u64,
    pub malformed: u64,
}

impl SinkStats {
    pub fn snapshot(&self) -> SinkSnapshot {
        SinkSnapshot {
            sessions_accepted: self.sessions_accepted.load(Relaxed),
            sessions_established: self.sessions_established.load(Relaxed),
            sessions_failed: self.sessions_failed.load(Relaxed),
            updates: self.updates.load(Relaxed),
            prefixes: self.prefixes.load(Relaxed),
            withdrawn: self.withdrawn.load(Relaxed),
            end_of_rib: self.end_of_rib.load(Relaxed),
            malformed: self.malformed.load(Relaxed),
        }
    }

    /// From the first UPDATE to the latest End-of-RIB, as read.
    pub fn receive_window(&self) -> Option<(Instant, Instant)> {
        match self.times.lock().map(|g| *g) {
            Ok((Some(a), Some(b))) => Some((a, b)),
            _ => None,
        }
    }

    /// The most recent session failure, for diagnostics.
    pub fn last_error(&self) -> Option<ReplayError> {
        self.last_error.lock().ok().and_then(|e| *e)
    }
}

/// A running sink; dropping it stops it.
pub struct Sink {
    addr: SocketAddr,
    stats: Arc<SinkStats>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Sink {
    /// Binds and starts accepting in a background thread.
    pub fn start(cfg: SinkConfig) -> Result<Sink, ReplayError> {
        let listener =
            TcpListener::bind(cfg.listen).map_err(|e| ReplayError::io(Phase::Bind, &e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| ReplayError::io(Phase::Bind, &e))?;
        // Non-blocking accept, polled, so that stop is noticed promptly.
        listener
            .set_nonblocking(true)
            .map_err(|e| ReplayError::io(Phase::Bind, &e))?;
        let stats = Arc::new(SinkStats::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (stats.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("sink-accept".into())
            .spawn(move || accept_loop(listener, cfg, &st, &sp))
            .map_err(|e| ReplayError::io(Phase::Accept, &e))?;
        Ok(Sink {
            addr,
            stats,
            stop,
            thread: Some(thread),
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn stats(&self) -> &Arc<SinkStats> {
        &self.stats
    }

    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// Waits until `n` End-of-RIB markers arrived; false on timeout.
    pub fn wait_end_of_rib(&self, n: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.stats.end_of_rib.load(Relaxed) >= n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.stats.end_of_rib.load(Relaxed) >= n
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    cfg: SinkConfig,
    stats: &Arc<SinkStats>,
    stop: &Arc<AtomicBool>,
) {
    let mut sessions: Vec<JoinHandle<()>> = Vec::new();
    while !stop.load(Relaxed) {
        match listener.accept() {
            Ok((s, _)) => {
                stats.sessions_accepted.fetch_add(1, Relaxed);
                let (st, sp) = (stats.clone(), stop.clone());
                let spawned = std::thread::Builder::new()
                    .name("sink-session".into())
                    .spawn(move || {
                        if let Err(e) = serve(s, cfg, &st, &sp) {
                            st.sessions_failed.fetch_add(1, Relaxed);
                            if let Ok(mut g) = st.last_error.lock() {
                                *g = Some(e);
                            }
                        }
                    });
                if let Ok(h) = spawned {
                    sessions.push(h);
                }
                sessions.retain(|h| !h.is_finished());
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    for h in sessions {
        let _ = h.join();
    }
}

fn serve(
    mut s: TcpStream,
    cfg: SinkConfig,
    stats: &SinkStats,
    stop: &AtomicBool,
) -> Result<(), ReplayError> {
    s.set_nonblocking(false)
        .map_err(|e| ReplayError::io(Phase::Accept, &e))?;
    let _ = s.set_nodelay(true);
    let scfg = SessionConfig {
        source: None,
        target: cfg.listen,
        local_as: cfg.local_as,
        peer_as: None,
        bgp_id: cfg.bgp_id,
        hold_time: cfg.hold_time,
        connect_timeout: Duration::ZERO,
        open_timeout: cfg.open_timeout,
        graceful_restart: false,
    };
    let mut rd = MsgReader::new();
    let neg = handshake(&mut s, &mut rd, &scfg)?;
    stats.sessions_established.fetch_add(1, Relaxed);
    let r = count_loop(&mut s, &mut rd, &neg, stats, stop);
    if stop.load(Relaxed) {
        // Cease / Administrative Shutdown (RFC 4486 §3): we are going away.
        send_notification(&mut s, 6, 2);
    }
    let _ = s.shutdown(std::net::Shutdown::Both);
    r
}

fn count_loop(
    s: &mut TcpStream,
    rd: &mut MsgReader,
    neg: &Negotiated,
    stats: &SinkStats,
    stop: &AtomicBool,
) -> Result<(), ReplayError> {
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| ReplayError::io(Phase::Hold, &e))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| ReplayError::io(Phase::Hold, &e))?;
    let mut ka = Vec::new();
    encode_keepalive(neg.ctx, &mut ka).map_err(|_| ReplayError::Encode)?;
    let interval = neg.keepalive_interval();
    let mut last_ka = Instant::now();
    while !stop.load(Relaxed) {
        if let Some(iv) = interval {
            if last_ka.elapsed() >= iv {
                s.write_all(&ka)
                    .map_err(|e| ReplayError::io(Phase::Hold, &e))?;
                last_ka = Instant::now();
            }
        }
        let m = match rd.next(s, neg.ctx, Phase::Hold) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            // A replay that closes after Cease is a normal end.
            Err(ReplayError::Closed { .. }) => return Ok(()),
            Err(e) => return Err(e),
        };
        let bytes = rd.bytes(m);
        if m.msg_type != msg_type::UPDATE {
            check_established(m.msg_type, bytes, Phase::Hold).or_else(|e| match e {
                // Cease from the replay is how it says goodbye.
                ReplayError::Notification { code: 6, .. } => Ok(()),
                e => Err(e),
            })?;
            continue;
        }
        if stats.updates.fetch_add(1, Relaxed) == 0 {
            if let Ok(mut g) = stats.times.lock() {
                g.0.get_or_insert_with(Instant::now);
            }
        }
        match Message::parse(bytes, neg.ctx) {
            Ok((Message::Update(u), _)) => count_update(&u, stats),
            _ => {
                stats.malformed.fetch_add(1, Relaxed);
            }
        }
    }
    Ok(())
}

fn count_update(u: &UpdateView<'_>, stats: &SinkStats) {
    if u.end_of_rib().is_some() {
        stats.end_of_rib.fetch_add(1, Relaxed);
        if let Ok(mut g) = stats.times.lock() {
            g.1 = Some(Instant::now());
        }
        return;
    }
    let mut ann = u.nlri().map_while(Result::ok).count() as u64;
    let mut wd = u.withdrawn().map_while(Result::ok).count() as u64;
    if let Some(Ok(mp)) = u.mp_reach() {
        ann += mp.nlri().map_while(Result::ok).count() as u64;
    }
    if let Some(Ok(mp)) = u.mp_unreach() {
        wd += mp.withdrawn().map_while(Result::ok).count() as u64;
    }
    stats.prefixes.fetch_add(ann, Relaxed);
    stats.withdrawn.fetch_add(wd, Relaxed);
}

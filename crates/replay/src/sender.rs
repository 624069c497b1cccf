//! Driving the sessions: one session per replayed peer, each from its own
//! source address, writing that peer's pre-encoded [`Feed`], then
//! End-of-RIB, then keepalives until told to stop.
//!
//! The three sender variants are those of the Quagga multicore study's
//! simulation client (seed 000, §4.1): trace order over all sessions, round
//! robin N messages per session, and one thread per peer. Only the last is
//! written so far.

use crate::error::{Phase, ReplayError};
use crate::session::{
    check_established, connect, handshake, send_notification, MsgReader, Negotiated, SessionConfig,
};
use crate::stats::{PeerState, ReplayStats};
use crate::workload::{end_of_rib_v4, Workload};
use base::Asn;
use bgp_wire::encode_keepalive;
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How messages are spread over the sessions in time.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SenderVariant {
    /// One thread writes every session's messages in trace order (for MRT
    /// update dumps: the order the collector saw them).
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
}

impl ReplayConfig {
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
            local_as: self.local_as,
            peer_as: Some(self.target_as),
            bgp_id,
            hold_time: self.hold_time,
            connect_timeout: self.connect_timeout,
            open_timeout: self.open_timeout,
        })
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
    match cfg.variant {
        SenderVariant::ThreadPerPeer => {}
        SenderVariant::TraceOrder => {
            return Err(ReplayError::Unsupported(
                "sender variant trace-order (use thread-per-peer)",
            ))
        }
        SenderVariant::RoundRobin { .. } => {
            return Err(ReplayError::Unsupported(
                "sender variant round-robin (use thread-per-peer)",
            ))
        }
    }
    if cfg.sources.len() < workload.feeds.len() {
        return Err(ReplayError::Config("fewer source addresses than peers"));
    }
    if cfg.hold_time != 0 && cfg.hold_time < 3 {
        return Err(ReplayError::Config("hold time must be 0 or at least 3 s"));
    }
    let stats = Arc::new(ReplayStats::new(workload.feeds.len()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::with_capacity(workload.feeds.len());
    for i in 0..workload.feeds.len() {
        let scfg = cfg.session(i)?;
        let (w, st, sp) = (workload.clone(), stats.clone(), stop.clone());
        let h = std::thread::Builder::new()
            .name(format!("replay-peer-{i}"))
            .spawn(move || {
                let r = run_peer(i, &scfg, &w, &st, &sp);
                if let (Err(e), Some(p)) = (r, st.peers.get(i)) {
                    p.fail(e);
                }
                r
            })
            .map_err(|e| ReplayError::io(Phase::Connect, &e))?;
        threads.push(h);
    }
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

    /// Whether every peer thread has ended (stopped or failed).
    pub fn finished(&self) -> bool {
        self.threads.iter().all(JoinHandle::is_finished)
    }

    /// Stops (if not yet) and waits; one result per peer.
    pub fn join(self) -> Vec<Result<(), ReplayError>> {
        self.request_stop();
        self.threads
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or(Err(ReplayError::Unsupported("peer thread panicked (bug)")))
            })
            .collect()
    }
}

/// How long a write may make no progress before the DUT counts as stuck.
fn stall_limit(neg: &Negotiated) -> Duration {
    Duration::from_secs(u64::from(neg.hold_time.max(60)))
}

/// Outcome of a bounded write.
enum Wrote {
    All,
    Stopped,
}

/// Writes all of `buf`, giving up when `stop` is set or nothing moves for
/// `limit`. The socket's write timeout (1 s) makes this poll the flags.
fn write_bounded(
    s: &mut TcpStream,
    mut buf: &[u8],
    stop: &AtomicBool,
    reader_failed: &AtomicBool,
    limit: Duration,
) -> Result<Wrote, ReplayError> {
    let mut stalled_since: Option<Instant> = None;
    while !buf.is_empty() {
        if stop.load(Relaxed) || reader_failed.load(Relaxed) {
            return Ok(Wrote::Stopped);
        }
        match s.write(buf) {
            Ok(0) => return Err(ReplayError::Closed { phase: Phase::Send }),
            Ok(n) => {
                buf = buf.get(n..).unwrap_or(&[]);
                stalled_since = None;
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                let since = *stalled_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= limit {
                    return Err(ReplayError::Timeout {
                        phase: Phase::Send,
                        secs: limit.as_secs() as u32,
                    });
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ReplayError::io(Phase::Send, &e)),
        }
    }
    Ok(Wrote::All)
}

fn run_peer(
    i: usize,
    cfg: &SessionConfig,
    w: &Workload,
    stats: &Arc<ReplayStats>,
    stop: &Arc<AtomicBool>,
) -> Result<(), ReplayError> {
    let (Some(feed), Some(ps)) = (w.feeds.get(i), stats.peers.get(i)) else {
        return Err(ReplayError::Config("peer index out of range"));
    };
    ps.set_state(PeerState::Connecting);
    let mut s = connect(cfg)?;
    let mut rd = MsgReader::new();
    let neg = handshake(&mut s, &mut rd, cfg)?;
    ps.set_state(PeerState::Established);

    // Read everything the DUT sends so its TCP window never closes on us;
    // a NOTIFICATION or silence beyond the hold time ends the session.
    let reader_failed = Arc::new(AtomicBool::new(false));
    let reader = {
        let mut rs = s
            .try_clone()
            .map_err(|e| ReplayError::io(Phase::Hold, &e))?;
        let failed = reader_failed.clone();
        let stop_r = Arc::new(AtomicBool::new(false));
        let stops = [stop.clone(), stop_r.clone()];
        let st = stats.clone();
        let h = std::thread::Builder::new()
            .name(format!("replay-read-{i}"))
            .spawn(move || {
                let counter = st.peers.get(i).map(|p| &p.messages_received);
                let r = read_loop(&mut rs, rd, neg, &stops, counter);
                if r.is_err() {
                    failed.store(true, Relaxed);
                }
                r
            })
            .map_err(|e| ReplayError::io(Phase::Hold, &e))?;
        (h, stop_r)
    };
    let result = send_and_hold(&mut s, feed, &neg, ps, stop, &reader_failed);
    reader.1.store(true, Relaxed);
    let rres = reader.0.join().unwrap_or(Err(ReplayError::Unsupported(
        "reader thread panicked (bug)",
    )));
    match (result, rres) {
        (Err(e), _) | (Ok(()), Err(e)) => Err(e),
        (Ok(()), Ok(())) => {
            ps.set_state(PeerState::Stopped);
            Ok(())
        }
    }
}

fn send_and_hold(
    s: &mut TcpStream,
    feed: &crate::workload::Feed,
    neg: &Negotiated,
    ps: &crate::stats::PeerStats,
    stop: &AtomicBool,
    reader_failed: &AtomicBool,
) -> Result<(), ReplayError> {
    s.set_write_timeout(Some(Duration::from_secs(1)))
        .map_err(|e| ReplayError::io(Phase::Send, &e))?;
    let limit = stall_limit(neg);
    let mut last_write = Instant::now();
    for (bytes, c) in feed.chunk_slices() {
        ps.mark_first_update(Instant::now());
        match write_bounded(s, bytes, stop, reader_failed, limit)? {
            Wrote::All => {}
            Wrote::Stopped => return leave(s, reader_failed),
        }
        last_write = Instant::now();
        ps.updates_sent.fetch_add(u64::from(c.messages), Relaxed);
        ps.prefixes_sent.fetch_add(u64::from(c.prefixes), Relaxed);
    }
    if let Wrote::Stopped = write_bounded(s, &end_of_rib_v4(), stop, reader_failed, limit)? {
        return leave(s, reader_failed);
    }
    ps.mark_eor(Instant::now());
    ps.set_state(PeerState::EorSent);

    let mut ka = Vec::with_capacity(19);
    encode_keepalive(neg.ctx, &mut ka).map_err(|_| ReplayError::Encode)?;
    let interval = neg.keepalive_interval();
    loop {
        if stop.load(Relaxed) || reader_failed.load(Relaxed) {
            return leave(s, reader_failed);
        }
        std::thread::sleep(Duration::from_millis(100));
        if let Some(iv) = interval {
            if last_write.elapsed() >= iv {
                if let Wrote::Stopped = write_bounded(s, &ka, stop, reader_failed, limit)? {
                    return leave(s, reader_failed);
                }
                last_write = Instant::now();
            }
        }
    }
}

/// Closes on request with Cease / Administrative Shutdown (RFC 4486 §3);
/// when the reader failed, its error is what the caller reports.
fn leave(s: &mut TcpStream, reader_failed: &AtomicBool) -> Result<(), ReplayError> {
    if !reader_failed.load(Relaxed) {
        send_notification(s, 6, 2);
    } else {
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
    Ok(())
}

/// Reads and discards until `stop`; errors on NOTIFICATION, close, or no
/// message within the hold time (RFC 4271 §6.5).
fn read_loop(
    s: &mut TcpStream,
    mut rd: MsgReader,
    neg: Negotiated,
    stops: &[Arc<AtomicBool>; 2],
    received: Option<&std::sync::atomic::AtomicU64>,
) -> Result<(), ReplayError> {
    let stopped = || stops.iter().any(|f| f.load(Relaxed));
    s.set_read_timeout(Some(Duration::from_millis(200)))
        .map_err(|e| ReplayError::io(Phase::Hold, &e))?;
    let hold = Duration::from_secs(u64::from(neg.hold_time));
    let mut last = Instant::now();
    while !stopped() {
        match rd.next(s, neg.ctx, Phase::Hold) {
            Ok(Some(m)) => {
                check_established(m.msg_type, rd.bytes(m), Phase::Hold)?;
                last = Instant::now();
                if let Some(c) = received {
                    c.fetch_add(1, Relaxed);
                }
            }
            Ok(None) => {
                if !hold.is_zero() && last.elapsed() > hold {
                    return Err(ReplayError::Timeout {
                        phase: Phase::Hold,
                        secs: u32::from(neg.hold_time),
                    });
                }
            }
            // Our own shutdown on stop closes the socket under the reader.
            Err(_) if stopped() => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

//! Pacing and per-connection steps shared by the sender variants
//! ([`crate::sender`] runs one thread per peer, [`crate::driver`] one
//! thread for all): when a message is due, session events from a trace,
//! and End-of-RIB. A leaf below both, so neither needs the other.

use crate::conn::{Conn, Wrote};
use crate::error::{Phase, ReplayError};
use crate::feed::{EventKind, Feed, CHUNK_BYTES};
use crate::session::SessionConfig;
use crate::stats::{PeerState, ReplayStats};
use crate::workload::{end_of_rib_v4, end_of_rib_v6};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// When messages go out.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Pacing {
    /// As fast as the DUT reads (the seed's setting, §4.2.1).
    Fast,
    /// At the trace's own timestamps, `speed` times faster (1.0 = real
    /// time). Needs a timed workload (an update dump).
    Trace { speed: f64 },
}

impl FromStr for Pacing {
    type Err = &'static str;
    /// `fast`, `trace` (real time) or `trace:F` (F times faster).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = "expected fast, trace or trace:SPEED (e.g. trace:10)";
        match s {
            "fast" => Ok(Pacing::Fast),
            "trace" => Ok(Pacing::Trace { speed: 1.0 }),
            _ => match s.strip_prefix("trace:").map(str::parse::<f64>) {
                Some(Ok(speed)) if speed.is_finite() && speed > 0.0 => Ok(Pacing::Trace { speed }),
                _ => Err(bad),
            },
        }
    }
}

/// End-of-RIB for IPv4, and for IPv6 when the feed carried any (RFC 4724
/// §2: one marker per address family).
pub(crate) fn send_eor(c: &mut Conn, feed: &Feed, stop: &AtomicBool) -> Result<Wrote, ReplayError> {
    if c.write(&end_of_rib_v4(), stop)? == Wrote::Stopped {
        return Ok(Wrote::Stopped);
    }
    if feed.has_v6 {
        return c.write(&end_of_rib_v6(), stop);
    }
    Ok(Wrote::All)
}

/// Applies a trace session event to peer `i`'s connection.
pub(crate) fn apply_event(
    i: usize,
    kind: EventKind,
    conn: &mut Option<Conn>,
    cfg: &SessionConfig,
    stats: &Arc<ReplayStats>,
    stop: &Arc<AtomicBool>,
) -> Result<(), ReplayError> {
    let ps = stats.peers.get(i);
    match kind {
        EventKind::Down => {
            if let Some(c) = conn.take() {
                c.close()?;
                if let Some(p) = ps {
                    p.set_state(PeerState::Down);
                }
            }
        }
        EventKind::Up => {
            if conn.is_none() {
                *conn = Some(reopen(i, cfg, stats, stop)?);
                if let Some(p) = ps {
                    p.set_state(PeerState::Established);
                }
            }
        }
    }
    Ok(())
}

/// Opens peer `i`'s session again after the trace took it down. A DUT
/// that is still tearing down the old session may drop the new one during
/// the OPEN exchange (BIRD resets it); a real peer would retry after its
/// ConnectRetry timer (RFC 4271 §8.2.2), so retry every 200 ms for up to
/// the connect timeout.
fn reopen(
    i: usize,
    cfg: &SessionConfig,
    stats: &Arc<ReplayStats>,
    stop: &Arc<AtomicBool>,
) -> Result<Conn, ReplayError> {
    let deadline = Instant::now() + cfg.connect_timeout;
    loop {
        match Conn::open(i, cfg, stats, stop) {
            Err(e) if dropped_during_open(&e) && Instant::now() < deadline => {
                if stop.load(Relaxed) {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            r => return r,
        }
    }
}

/// The DUT closed or reset the connection before the session was up.
fn dropped_during_open(e: &ReplayError) -> bool {
    use std::io::ErrorKind as K;
    match *e {
        ReplayError::Closed { phase } => matches!(phase, Phase::Open | Phase::OpenConfirm),
        ReplayError::Io { phase, kind } => {
            matches!(phase, Phase::Open | Phase::OpenConfirm)
                && matches!(
                    kind,
                    K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe
                )
        }
        _ => false,
    }
}

/// When message `k` is due under trace pacing.
pub(crate) fn due(feed: &Feed, k: usize, t0: Instant, speed: f64) -> Instant {
    let us = feed.time_us(k).unwrap_or(0) as f64 / speed;
    t0 + Duration::from_secs_f64(us / 1e6)
}

/// Sleeps until message `k` is due, keeping the session alive; false when
/// stopped.
pub(crate) fn wait_due(
    feed: &Feed,
    k: usize,
    t0: Instant,
    speed: f64,
    mut conn: Option<&mut Conn>,
    stop: &AtomicBool,
) -> Result<bool, ReplayError> {
    let at = due(feed, k, t0, speed);
    loop {
        if stop.load(Relaxed) {
            return Ok(false);
        }
        let now = Instant::now();
        if now >= at {
            return Ok(true);
        }
        std::thread::sleep((at - now).min(Duration::from_millis(100)));
        if let Some(c) = conn.as_deref_mut() {
            if c.keepalive_if_due(stop)? == Wrote::Stopped {
                return Ok(false);
            }
        }
    }
}

/// Messages from `k` already due now, as one write (at least one).
pub(crate) fn due_end(feed: &Feed, k: usize, limit: usize, t0: Instant, speed: f64) -> usize {
    let now = Instant::now();
    let start = feed.start_of(k);
    let mut b = k + 1;
    while b < limit && due(feed, b, t0, speed) <= now && feed.start_of(b) - start < CHUNK_BYTES {
        b += 1;
    }
    b.min(limit.max(k + 1))
}

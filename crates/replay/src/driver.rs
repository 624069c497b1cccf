//! The single-threaded sender (variants 1 and 2 of seed 000 §4.1.2): one
//! thread owns every session and writes messages in the order of a
//! [`crate::schedule`]. Consecutive messages to the same session are
//! coalesced into one write (up to [`CHUNK_BYTES`]); a write that blocks
//! holds up every session, which is what this variant is about.
//!
//! A failing session is marked failed and its remaining messages skipped;
//! the others go on.

use crate::conn::{Conn, Wrote};
use crate::error::ReplayError;
use crate::feed::CHUNK_BYTES;
use crate::pacing::{apply_event, due, send_eor, Pacing};
use crate::schedule::{schedule, Order};
use crate::session::SessionConfig;
use crate::stats::{PeerState, ReplayStats};
use crate::workload::Workload;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A run of messages `a..b` of one peer waiting to be written.
#[derive(Copy, Clone)]
struct Pending {
    peer: usize,
    a: usize,
    b: usize,
}

struct Driver<'a> {
    sessions: &'a [SessionConfig],
    w: &'a Workload,
    stats: &'a Arc<ReplayStats>,
    stop: &'a Arc<AtomicBool>,
    conns: Vec<Option<Conn>>,
    /// Next session event per peer.
    ev: Vec<usize>,
    failed: Vec<bool>,
}

pub(crate) fn run(
    sessions: &[SessionConfig],
    w: &Workload,
    order: Order,
    pacing: Pacing,
    stats: &Arc<ReplayStats>,
    stop: &Arc<AtomicBool>,
) -> Result<(), ReplayError> {
    let n = w.feeds.len();
    for p in &stats.peers {
        p.set_state(PeerState::Connecting);
    }
    // Handshakes in parallel: a DUT slow to answer OPEN should not make
    // setup take n times as long.
    let opened: Vec<Result<Conn, ReplayError>> = std::thread::scope(|s| {
        let hs: Vec<_> = sessions
            .iter()
            .enumerate()
            .map(|(i, cfg)| s.spawn(move || Conn::open(i, cfg, stats, stop)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or(Err(ReplayError::Unsupported("open thread panicked (bug)")))
            })
            .collect()
    });
    let mut d = Driver {
        sessions,
        w,
        stats,
        stop,
        conns: Vec::with_capacity(n),
        ev: vec![0; n],
        failed: vec![false; n],
    };
    for (i, r) in opened.into_iter().enumerate() {
        match r {
            Ok(c) => {
                d.set_state(i, PeerState::Established);
                d.conns.push(Some(c));
            }
            Err(e) => {
                d.conns.push(None);
                d.fail(i, e);
            }
        }
    }
    let steps = schedule(w, order);
    stats.mark_started();
    let t0 = stats.started().unwrap_or_else(Instant::now);
    let mut pending: Option<Pending> = None;
    for (idx, st) in steps.iter().enumerate() {
        if stop.load(Relaxed) {
            break;
        }
        let (p, m) = (st.peer as usize, st.msg as usize);
        let Some(feed) = w.feeds.get(p) else { continue };
        if let Pacing::Trace { speed } = pacing {
            let at = due(feed, m, t0, speed);
            if at > Instant::now() {
                d.flush(pending.take());
                if !d.sleep_until(at) {
                    break;
                }
            }
        }
        let extend = pending.is_some_and(|x| {
            x.peer == p && x.b == m && feed.start_of(m) - feed.start_of(x.a) < CHUNK_BYTES
        });
        if extend {
            if let Some(x) = pending.as_mut() {
                x.b = m + 1;
            }
        } else {
            d.flush(pending.take());
            d.events_before(p, m);
            pending = Some(Pending {
                peer: p,
                a: m,
                b: m + 1,
            });
        }
        if idx % 1024 == 1023 {
            d.keepalives();
        }
    }
    d.flush(pending.take());
    if !stop.load(Relaxed) {
        for p in 0..n {
            let end = w.feeds.get(p).map_or(0, |f| f.msgs.len());
            d.events_before(p, end);
            d.finish_peer(p);
        }
    }
    while !stop.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        d.keepalives();
    }
    for (i, c) in std::mem::take(&mut d.conns).into_iter().enumerate() {
        if let Some(c) = c {
            if let Err(e) = c.close() {
                d.fail(i, e);
            }
        }
        if !d.failed.get(i).copied().unwrap_or(true) {
            d.set_state(i, PeerState::Stopped);
        }
    }
    Ok(())
}

impl Driver<'_> {
    fn set_state(&self, i: usize, s: PeerState) {
        if let Some(p) = self.stats.peers.get(i) {
            p.set_state(s);
        }
    }

    fn fail(&mut self, i: usize, e: ReplayError) {
        if let Some(p) = self.stats.peers.get(i) {
            p.fail(e);
        }
        if let Some(f) = self.failed.get_mut(i) {
            *f = true;
        }
        if let Some(c) = self.conns.get_mut(i) {
            *c = None;
        }
    }

    /// Applies peer `p`'s session events due before message `m`.
    fn events_before(&mut self, p: usize, m: usize) {
        let Some(feed) = self.w.feeds.get(p) else {
            return;
        };
        let (Some(ev), Some(cfg)) = (self.ev.get(p).copied(), self.sessions.get(p)) else {
            return;
        };
        let mut e = ev;
        while let Some(x) = feed.events.get(e).filter(|x| x.before as usize <= m) {
            e += 1;
            if self.failed.get(p).copied().unwrap_or(true) {
                continue;
            }
            if let Some(slot) = self.conns.get_mut(p) {
                if let Err(err) = apply_event(p, x.kind, slot, cfg, self.stats, self.stop) {
                    self.fail(p, err);
                }
            }
        }
        if let Some(v) = self.ev.get_mut(p) {
            *v = e;
        }
    }

    fn flush(&mut self, pend: Option<Pending>) {
        let Some(x) = pend else { return };
        let (Some(feed), Some(ps)) = (self.w.feeds.get(x.peer), self.stats.peers.get(x.peer))
        else {
            return;
        };
        let count = (x.b - x.a) as u64;
        let r = match self.conns.get_mut(x.peer).and_then(Option::as_mut) {
            None => {
                ps.skipped.fetch_add(count, Relaxed);
                return;
            }
            Some(c) => {
                ps.mark_first_update(Instant::now());
                c.write(feed.range(x.a, x.b), self.stop)
            }
        };
        match r {
            Ok(Wrote::All) => {
                let (p, wd) = feed.counts(x.a, x.b);
                ps.sent(count, p, wd);
            }
            // Stop requested, or the reader saw the DUT close: the close
            // at the end reports which.
            Ok(Wrote::Stopped) => {
                if !self.stop.load(Relaxed) {
                    if let Some(Some(c)) = self.conns.get_mut(x.peer).map(Option::take) {
                        let e = c.close().err().unwrap_or(ReplayError::Closed {
                            phase: crate::error::Phase::Send,
                        });
                        self.fail(x.peer, e);
                    }
                }
            }
            Err(e) => self.fail(x.peer, e),
        }
    }

    /// End-of-RIB (if the session is up) and the finished mark.
    fn finish_peer(&mut self, p: usize) {
        let Some(feed) = self.w.feeds.get(p) else {
            return;
        };
        let r = match self.conns.get_mut(p).and_then(Option::as_mut) {
            Some(c) => send_eor(c, feed, self.stop),
            None => Ok(Wrote::All),
        };
        match r {
            Err(e) => self.fail(p, e),
            Ok(_) => {
                if let Some(ps) = self.stats.peers.get(p) {
                    if self.conns.get(p).is_some_and(Option::is_some) {
                        ps.mark_eor(Instant::now());
                        ps.set_state(PeerState::EorSent);
                    }
                    ps.finished.store(true, Relaxed);
                }
            }
        }
    }

    fn keepalives(&mut self) {
        for i in 0..self.conns.len() {
            let r = match self.conns.get_mut(i).and_then(Option::as_mut) {
                Some(c) if !c.healthy() => Err(None),
                Some(c) => c.keepalive_if_due(self.stop).map_err(Some),
                None => continue,
            };
            match r {
                Ok(_) => {}
                Err(Some(e)) => self.fail(i, e),
                Err(None) => {
                    if let Some(Some(c)) = self.conns.get_mut(i).map(Option::take) {
                        let e = c.close().err().unwrap_or(ReplayError::Closed {
                            phase: crate::error::Phase::Hold,
                        });
                        self.fail(i, e);
                    }
                }
            }
        }
    }

    /// Sleeps until `at`, keeping sessions alive; false when stopped.
    fn sleep_until(&mut self, at: Instant) -> bool {
        loop {
            if self.stop.load(Relaxed) {
                return false;
            }
            let now = Instant::now();
            if now >= at {
                return true;
            }
            std::thread::sleep((at - now).min(Duration::from_millis(100)));
            self.keepalives();
        }
    }
}

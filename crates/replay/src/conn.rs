//! One established replay session as the senders use it: bounded writes,
//! keepalives when due, a reader thread that drains whatever the DUT sends
//! (so its TCP window never closes on us) and notices NOTIFICATIONs, and
//! a clean close with Cease.

use crate::error::{Phase, ReplayError};
use crate::session::{
    check_established, connect, handshake, send_notification, MsgReader, Negotiated, SessionConfig,
};
use crate::stats::ReplayStats;
use bgp_wire::encode_keepalive;
use std::io::{self, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub(crate) struct Conn {
    s: TcpStream,
    pub(crate) neg: Negotiated,
    reader: Option<JoinHandle<Result<(), ReplayError>>>,
    reader_stop: Arc<AtomicBool>,
    reader_failed: Arc<AtomicBool>,
    last_write: Instant,
    /// How long a write may make no progress before the DUT counts as stuck.
    limit: Duration,
    ka: Vec<u8>,
}

/// Outcome of a bounded write.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Wrote {
    All,
    /// Stop was requested or the reader failed; the caller closes.
    Stopped,
}

impl Conn {
    /// Connects, does the handshake and starts the reader for peer `i`.
    pub(crate) fn open(
        i: usize,
        cfg: &SessionConfig,
        stats: &Arc<ReplayStats>,
        stop: &Arc<AtomicBool>,
    ) -> Result<Conn, ReplayError> {
        let mut s = connect(cfg)?;
        let mut rd = MsgReader::new();
        let neg = handshake(&mut s, &mut rd, cfg)?;
        s.set_write_timeout(Some(Duration::from_secs(1)))
            .map_err(|e| ReplayError::io(Phase::Send, &e))?;
        let reader_failed = Arc::new(AtomicBool::new(false));
        let reader_stop = Arc::new(AtomicBool::new(false));
        let mut rs = s
            .try_clone()
            .map_err(|e| ReplayError::io(Phase::Hold, &e))?;
        let (failed, stops, st) = (
            reader_failed.clone(),
            [stop.clone(), reader_stop.clone()],
            stats.clone(),
        );
        let reader = std::thread::Builder::new()
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
        let mut ka = Vec::with_capacity(19);
        encode_keepalive(neg.ctx, &mut ka).map_err(|_| ReplayError::Encode)?;
        if let Some(p) = stats.peers.get(i) {
            p.sessions_opened.fetch_add(1, Relaxed);
        }
        Ok(Conn {
            s,
            neg,
            reader: Some(reader),
            reader_stop,
            reader_failed,
            last_write: Instant::now(),
            limit: Duration::from_secs(u64::from(neg.hold_time.max(60))),
            ka,
        })
    }

    /// Writes all of `buf`, giving up when `stop` is set, the reader
    /// failed, or nothing moves for the stall limit. The socket's write
    /// timeout (1 s) makes this poll the flags.
    pub(crate) fn write(
        &mut self,
        mut buf: &[u8],
        stop: &AtomicBool,
    ) -> Result<Wrote, ReplayError> {
        let mut stalled_since: Option<Instant> = None;
        while !buf.is_empty() {
            if stop.load(Relaxed) || self.reader_failed.load(Relaxed) {
                return Ok(Wrote::Stopped);
            }
            match self.s.write(buf) {
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
                    if since.elapsed() >= self.limit {
                        return Err(ReplayError::Timeout {
                            phase: Phase::Send,
                            secs: self.limit.as_secs() as u32,
                        });
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ReplayError::io(Phase::Send, &e)),
            }
        }
        self.last_write = Instant::now();
        Ok(Wrote::All)
    }

    /// Sends a KEEPALIVE when a third of the hold time passed without a
    /// write (RFC 4271 §10).
    pub(crate) fn keepalive_if_due(&mut self, stop: &AtomicBool) -> Result<Wrote, ReplayError> {
        match self.neg.keepalive_interval() {
            Some(iv) if self.last_write.elapsed() >= iv => {
                let ka = std::mem::take(&mut self.ka);
                let r = self.write(&ka, stop);
                self.ka = ka;
                r
            }
            _ => Ok(Wrote::All),
        }
    }

    /// Whether the reader is still happy (no NOTIFICATION, no close).
    pub(crate) fn healthy(&self) -> bool {
        !self.reader_failed.load(Relaxed)
    }

    /// Closes: Cease / Administrative Shutdown (RFC 4486 §3) unless the
    /// reader already failed, whose error is then returned.
    pub(crate) fn close(mut self) -> Result<(), ReplayError> {
        let healthy = self.healthy();
        // The reader stops before the Cease goes out: the DUT closing the
        // connection in answer is then the end we asked for, not an error
        // (a trace's session going down mid-run, when nothing else has
        // stopped the reader).
        self.reader_stop.store(true, Relaxed);
        if healthy {
            send_notification(&mut self.s, 6, 2);
        } else {
            let _ = self.s.shutdown(std::net::Shutdown::Both);
        }
        match self.reader.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(ReplayError::Unsupported("reader thread panicked (bug)")),
            None => Ok(()),
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Only reached without close() on an error path: make sure the
        // reader ends too.
        self.reader_stop.store(true, Relaxed);
        let _ = self.s.shutdown(std::net::Shutdown::Both);
        if let Some(h) = self.reader.take() {
            let _ = h.join();
        }
    }
}

/// Reads and discards until stopped; errors on NOTIFICATION, close, or no
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

//! MRT dumps of received BGP messages (RFC 6396 §4.4, BGP4MP_ET
//! MESSAGE_AS4) and session state changes (STATE_CHANGE_AS4), written by a
//! dedicated thread so that sessions never wait on the disk.
//!
//! Sessions hand records to an [`MrtSink`] with `try_send` on a bounded
//! channel: when the writer falls behind, records are dropped and counted
//! ([`MrtSink::dropped`]) rather than slowing a session's keepalives.
//! Files rotate on interval boundaries (like BIRD's `mrt dump period` and
//! Quagga's `dump bgp updates PATH INTERVAL`), named by a strftime-like
//! template in UTC.

use std::io;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base::Asn;
use mrt::{Compression, MrtWriter, Peering};
use tracing::warn;

/// Records queued between sessions and the writer thread.
const QUEUE: usize = 16 * 1024;
/// Buffered output reaches the file at least this often.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Where and how to dump.
#[derive(Clone, Debug)]
pub struct MrtDumpConfig {
    /// File name template: `%Y %m %d %H %M %S` (UTC) and `%%`; other
    /// `%x` are kept literally. A `.gz` or `.bz2` suffix compresses.
    pub template: String,
    /// Start a new file at every multiple of this (since the Unix epoch);
    /// `None`: one file, named after the first record's time.
    pub interval: Option<Duration>,
}

/// The session-side address of one BGP session, as MRT records it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MrtPeer {
    pub peer_as: Asn,
    pub local_as: Asn,
    pub peer_ip: IpAddr,
    pub local_ip: IpAddr,
}

impl MrtPeer {
    fn peering(&self) -> Peering {
        Peering {
            peer_as: self.peer_as,
            local_as: self.local_as,
            interface_index: 0,
            peer_ip: self.peer_ip,
            local_ip: self.local_ip,
        }
    }
}

enum Rec {
    Message {
        at: SystemTime,
        peer: MrtPeer,
        msg: Vec<u8>,
    },
    State {
        at: SystemTime,
        peer: MrtPeer,
        old: u16,
        new: u16,
    },
    /// Write everything queued so far to the file, then answer.
    Flush(mpsc::Sender<()>),
}

/// Cheap-to-clone handle that sessions record into.
#[derive(Clone, Debug)]
pub struct MrtSink {
    tx: SyncSender<Rec>,
    dropped: Arc<AtomicU64>,
}

/// The writer thread; [`MrtDumper::finish`] closes the last file.
#[derive(Debug)]
pub struct MrtDumper {
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl MrtDumper {
    /// Waits for the writer to drain (every [`MrtSink`] must be dropped
    /// first) and returns its last I/O error, if any.
    pub fn finish(mut self) -> io::Result<()> {
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("MRT writer thread panicked")),
            None => Ok(()),
        }
    }
}

/// MRT session states (RFC 6396 §4.4.1) from `crate::msg::state` numbers.
pub fn mrt_state(s: u8) -> u16 {
    u16::from(s) + 1
}

impl MrtSink {
    /// Starts the writer thread.
    pub fn start(cfg: MrtDumpConfig) -> io::Result<(MrtSink, MrtDumper)> {
        if cfg.interval.is_some_and(|i| i.as_secs() == 0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "MRT rotation interval must be at least one second",
            ));
        }
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("mrt-dump".into())
            .spawn(move || write_loop(&cfg, &rx))?;
        Ok((
            MrtSink {
                tx,
                dropped: Arc::new(AtomicU64::new(0)),
            },
            MrtDumper {
                thread: Some(thread),
            },
        ))
    }

    fn push(&self, r: Rec) {
        match self.tx.try_send(r) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Records one received BGP message (`msg`: the whole message, marker
    /// included).
    pub fn message(&self, peer: &MrtPeer, msg: &[u8]) {
        self.push(Rec::Message {
            at: SystemTime::now(),
            peer: *peer,
            msg: msg.to_vec(),
        });
    }

    /// Records a session state change (`crate::msg::state` numbers).
    pub fn state_change(&self, peer: &MrtPeer, old: u8, new: u8) {
        self.push(Rec::State {
            at: SystemTime::now(),
            peer: *peer,
            old: mrt_state(old),
            new: mrt_state(new),
        });
    }

    /// Blocks until everything recorded before this call is in the file
    /// (bounded by `timeout`). For tests and shutdown; not for sessions.
    pub fn flush(&self, timeout: Duration) -> bool {
        let (tx, rx) = mpsc::channel();
        if self.tx.send(Rec::Flush(tx)).is_err() {
            return false;
        }
        rx.recv_timeout(timeout).is_ok()
    }

    /// Records lost because the writer was behind or gone.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Expands `%Y %m %d %H %M %S %%` for `secs` since the epoch, in UTC.
pub fn expand_template(template: &str, secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, mo, d) = base::civil_from_days(days);
    let (h, mi, s) = (rem / 3600, rem / 60 % 60, rem % 60);
    let mut out = String::with_capacity(template.len() + 16);
    let mut it = template.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('Y') => out.push_str(&format!("{y:04}")),
            Some('m') => out.push_str(&format!("{mo:02}")),
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('H') => out.push_str(&format!("{h:02}")),
            Some('M') => out.push_str(&format!("{mi:02}")),
            Some('S') => out.push_str(&format!("{s:02}")),
            Some('%') => out.push('%'),
            Some(o) => {
                out.push('%');
                out.push(o);
            }
            None => out.push('%'),
        }
    }
    out
}

pub(crate) fn compression_for(path: &str) -> Compression {
    if path.ends_with(".gz") {
        Compression::Gzip
    } else if path.ends_with(".bz2") {
        Compression::Bzip2
    } else {
        Compression::None
    }
}

struct Out {
    /// Start of the interval this file covers.
    bucket: u64,
    w: MrtWriter<std::fs::File>,
}

fn split(at: SystemTime) -> (u64, u32) {
    let d = at.duration_since(UNIX_EPOCH).unwrap_or_default();
    (d.as_secs(), d.subsec_micros())
}

/// The file for a record at `secs`: the current one, or a new one when an
/// interval boundary was crossed.
fn file_for<'a>(
    cfg: &MrtDumpConfig,
    cur: &'a mut Option<Out>,
    secs: u64,
) -> io::Result<&'a mut MrtWriter<std::fs::File>> {
    let bucket = match cfg.interval {
        Some(i) => {
            let i = i.as_secs().max(1);
            secs - secs % i
        }
        None => cur.as_ref().map_or(secs, |o| o.bucket),
    };
    if cur.as_ref().is_some_and(|o| o.bucket != bucket) {
        if let Some(o) = cur.take() {
            o.w.finish()?;
        }
    }
    if cur.is_none() {
        let path = PathBuf::from(expand_template(&cfg.template, bucket));
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let comp = compression_for(&cfg.template);
        // Append: a restart within one interval must not truncate what
        // the previous run wrote (MRT is a plain record stream).
        let f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        *cur = Some(Out {
            bucket,
            w: MrtWriter::with_compression(f, comp),
        });
    }
    match cur.as_mut() {
        Some(o) => Ok(&mut o.w),
        None => Err(io::Error::other("no MRT output")),
    }
}

fn write_one(cfg: &MrtDumpConfig, cur: &mut Option<Out>, r: Rec) -> io::Result<()> {
    match r {
        Rec::Message { at, peer, msg } => {
            let (s, us) = split(at);
            file_for(cfg, cur, s)?.write_bgp4mp_message(s as u32, Some(us), &peer.peering(), &msg)
        }
        Rec::State { at, peer, old, new } => {
            let (s, us) = split(at);
            file_for(cfg, cur, s)?.write_bgp4mp_state_change(
                s as u32,
                Some(us),
                &peer.peering(),
                old,
                new,
            )
        }
        Rec::Flush(done) => {
            if let Some(o) = cur.as_mut() {
                o.w.flush()?;
            }
            let _ = done.send(());
            Ok(())
        }
    }
}

fn write_loop(cfg: &MrtDumpConfig, rx: &Receiver<Rec>) -> io::Result<()> {
    let mut cur: Option<Out> = None;
    let mut last_err: Option<io::Error> = None;
    loop {
        match rx.recv_timeout(FLUSH_EVERY) {
            Ok(r) => {
                if let Err(e) = write_one(cfg, &mut cur, r) {
                    warn!(template = %cfg.template, "MRT dump: {e}");
                    // Drop the broken file; the next record reopens.
                    cur = None;
                    last_err = Some(e);
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                if let Some(o) = cur.as_mut() {
                    if let Err(e) = o.w.flush() {
                        warn!(template = %cfg.template, "MRT dump: {e}");
                    }
                }
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    if let Some(o) = cur.take() {
        o.w.finish()?;
    }
    match last_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_expands_utc_fields() {
        // 2024-02-29 13:05:09 UTC.
        let t = 1_709_211_909;
        assert_eq!(
            expand_template("d/%Y%m%d.%H%M%S-%%-%q.mrt", t),
            "d/20240229.130509-%-%q.mrt"
        );
        assert_eq!(expand_template("%Y-%m-%d", 0), "1970-01-01");
        assert_eq!(expand_template("%Y-%m-%d", 951_782_400), "2000-02-29");
    }

    #[test]
    fn state_numbers_follow_rfc6396() {
        assert_eq!(mrt_state(crate::msg::state::IDLE), 1);
        assert_eq!(mrt_state(crate::msg::state::ESTABLISHED), 6);
    }
}

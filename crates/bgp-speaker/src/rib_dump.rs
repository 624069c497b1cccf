//! Periodic MRT TABLE_DUMP_V2 snapshots of the RIB (RFC 6396 §4.3), like
//! BIRD's `mrt dump table` and Quagga's `dump bgp routes-mrt`.
//!
//! The RIB thread encodes the records (it owns the RIB; see
//! `rib/dump.rs`) into chunks of MRT bytes and hands them to a writer
//! thread, which compresses and writes them. Each snapshot goes to
//! `NAME.tmp` and is renamed to `NAME` when complete, so a reader never sees
//! half a dump. A snapshot is a PEER_INDEX_TABLE followed by one
//! RIB_IPV4_UNICAST / RIB_IPV6_UNICAST record per prefix (the RFC 8050
//! ADD-PATH subtypes when a path carries a path identifier), with every
//! path of the prefix: the post-policy Adj-RIBs-In that the Loc-RIB is
//! chosen from.
//!
//! Limits: the RIB thread pauses UPDATE processing while it encodes (about
//! a second per 5M paths on the 2-vCPU test machine); prefixes are in hash
//! order, not sorted; the originated time of a path is when its peer's
//! session came up (Tessera keeps no per-path timestamp).

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bgp_wire::consts::{attr_flags as af, attr_type as at};
use tracing::{info, warn};

use crate::mrt_dump::{compression_for, expand_template};

/// Chunks queued between the RIB thread and the writer (each up to
/// [`CHUNK`] bytes): bounds the memory a slow disk can pin.
const QUEUE: usize = 64;
/// Encoded bytes per chunk handed to the writer.
pub const CHUNK: usize = 1 << 20;

/// Where and how often to dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RibDumpConfig {
    /// File name template, as for `[mrt] updates` (`%Y%m%d.%H%M` ...,
    /// UTC; `.gz`/`.bz2` compress).
    pub template: String,
    /// A snapshot at every multiple of this since the Unix epoch.
    pub interval: Duration,
}

enum Chunk {
    Begin(PathBuf),
    Data(Vec<u8>),
    End,
}

/// Schedules snapshots and owns the writer thread. Lives in the RIB
/// thread's state.
pub struct RibDumper {
    cfg: RibDumpConfig,
    /// Seconds since the epoch of the next snapshot.
    next_due: u64,
    tx: Option<SyncSender<Chunk>>,
    thread: Option<JoinHandle<()>>,
    /// Snapshots started.
    pub dumps: u64,
}

fn epoch_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn next_boundary(now: u64, every: u64) -> u64 {
    let every = every.max(1);
    (now / every + 1) * every
}

impl RibDumper {
    /// Starts the writer thread. The first snapshot is at the next
    /// interval boundary.
    pub fn start(cfg: RibDumpConfig) -> io::Result<RibDumper> {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("mrt-rib".into())
            .spawn(move || write_loop(&rx))?;
        let next_due = next_boundary(epoch_secs(SystemTime::now()), cfg.interval.as_secs());
        Ok(RibDumper {
            cfg,
            next_due,
            tx: Some(tx),
            thread: Some(thread),
            dumps: 0,
        })
    }

    pub fn config(&self) -> &RibDumpConfig {
        &self.cfg
    }

    /// When a snapshot is due at `now`, the time it is named after and
    /// stamped with (the boundary), and schedules the next one.
    pub fn due(&mut self, now: SystemTime) -> Option<u64> {
        let now = epoch_secs(now);
        if now < self.next_due {
            return None;
        }
        let at = self.next_due;
        self.next_due = next_boundary(now, self.cfg.interval.as_secs());
        Some(at)
    }

    /// Starts a snapshot stamped `at`; feed it with [`Self::chunk`] and end
    /// it with [`Self::end`].
    pub fn begin(&mut self, at: u64) -> bool {
        self.dumps += 1;
        let path = PathBuf::from(expand_template(&self.cfg.template, at));
        self.send(Chunk::Begin(path))
    }

    /// Hands a chunk of encoded records to the writer (blocking while the
    /// writer is [`QUEUE`] chunks behind).
    pub fn chunk(&mut self, bytes: Vec<u8>) -> bool {
        self.send(Chunk::Data(bytes))
    }

    pub fn end(&mut self) -> bool {
        self.send(Chunk::End)
    }

    fn send(&mut self, c: Chunk) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(c).is_ok())
    }
}

impl Drop for RibDumper {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Open {
    path: PathBuf,
    tmp: PathBuf,
    out: Box<dyn Write + Send>,
    bytes: u64,
    started: std::time::Instant,
}

fn open(path: PathBuf) -> io::Result<Open> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut tmp = path.clone().into_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let f = std::fs::File::create(&tmp)?;
    let out: Box<dyn Write + Send> = match compression_for(&path.to_string_lossy()) {
        mrt::Compression::Gzip => Box::new(flate2::write::GzEncoder::new(
            f,
            flate2::Compression::default(),
        )),
        mrt::Compression::Bzip2 => Box::new(bzip2::write::BzEncoder::new(
            f,
            bzip2::Compression::default(),
        )),
        mrt::Compression::None => Box::new(io::BufWriter::with_capacity(1 << 16, f)),
    };
    Ok(Open {
        path,
        tmp,
        out,
        bytes: 0,
        started: std::time::Instant::now(),
    })
}

fn write_loop(rx: &Receiver<Chunk>) {
    let mut cur: Option<Open> = None;
    let mut failed = false;
    while let Ok(c) = rx.recv() {
        match c {
            Chunk::Begin(path) => {
                if let Some(o) = cur.take() {
                    let _ = std::fs::remove_file(&o.tmp);
                }
                failed = false;
                match open(path.clone()) {
                    Ok(o) => cur = Some(o),
                    Err(e) => {
                        warn!(file = %path.display(), "MRT RIB dump not written: {e}");
                        failed = true;
                    }
                }
            }
            Chunk::Data(b) => {
                if let Some(o) = cur.as_mut().filter(|_| !failed) {
                    if let Err(e) = o.out.write_all(&b) {
                        warn!(file = %o.tmp.display(), "MRT RIB dump not written: {e}");
                        failed = true;
                    }
                    o.bytes += b.len() as u64;
                }
            }
            Chunk::End => {
                let Some(mut o) = cur.take() else { continue };
                // Dropping the encoder finishes the compressed stream.
                let r = o.out.flush();
                drop(o.out);
                match r.and_then(|_| std::fs::rename(&o.tmp, &o.path)) {
                    Ok(()) if !failed => info!(
                        file = %o.path.display(),
                        bytes = o.bytes,
                        ms = o.started.elapsed().as_millis() as u64,
                        "MRT RIB dump written"
                    ),
                    Ok(()) => {}
                    Err(e) => {
                        warn!(file = %o.path.display(), "MRT RIB dump not written: {e}");
                        let _ = std::fs::remove_file(&o.tmp);
                    }
                }
            }
        }
    }
    if let Some(o) = cur {
        let _ = std::fs::remove_file(&o.tmp);
    }
}

/// Rewrites a stored attribute block (see `bgp_rib::AttrSet::raw`: 4-octet
/// AS numbers, IPv6 next hop in an MP_REACH_NLRI without NLRI) into the
/// form TABLE_DUMP_V2 carries (RFC 6396 §4.3.4): MP_REACH_NLRI shortened to
/// next-hop length and next hop. Appends to `out`; returns false (and
/// appends nothing more) if the block does not parse.
pub fn table_dump_attrs(raw: &[u8], out: &mut Vec<u8>) -> bool {
    for a in bgp_wire::attr::AttrIter::new(raw) {
        let Ok(a) = a else { return false };
        if a.type_code == at::MP_REACH_NLRI {
            // AFI (2) SAFI (1) NH length (1) NH ...
            let Some(&nh_len) = a.value.get(3) else {
                return false;
            };
            let Some(nh) = a.value.get(4..4 + usize::from(nh_len)) else {
                return false;
            };
            let len = 1 + nh.len();
            if len > 255 {
                out.extend_from_slice(&[a.flags | af::EXTENDED_LENGTH, a.type_code]);
                out.extend_from_slice(&(len as u16).to_be_bytes());
            } else {
                out.extend_from_slice(&[a.flags & !af::EXTENDED_LENGTH, a.type_code, len as u8]);
            }
            out.push(nh_len);
            out.extend_from_slice(nh);
        } else {
            let start = a.offset as usize;
            let Some(tlv) = raw.get(start..start + a.tlv_len as usize) else {
                return false;
            };
            out.extend_from_slice(tlv);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_are_multiples_of_the_interval() {
        assert_eq!(next_boundary(7199, 7200), 7200);
        assert_eq!(next_boundary(7200, 7200), 14400);
        assert_eq!(next_boundary(5, 0), 6);
    }

    #[test]
    fn mp_reach_is_shortened_and_others_copied() {
        // ORIGIN IGP, then MP_REACH IPv6 unicast with a 16-byte next hop
        // and no NLRI (stored form).
        let mut raw = vec![0x40, 1, 1, 0, 0x80, 14, 21, 0, 2, 1, 16];
        raw.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        raw.push(0);
        let mut out = Vec::new();
        assert!(table_dump_attrs(&raw, &mut out));
        let mut want = vec![0x40, 1, 1, 0, 0x80, 14, 17, 16];
        want.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(out, want);
    }

    #[test]
    fn truncated_blocks_are_refused() {
        let mut out = Vec::new();
        assert!(!table_dump_attrs(&[0x80, 14, 3, 0, 2, 1], &mut out));
    }
}

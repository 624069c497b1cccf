//! MRT files of either kind as one workload, for `tessera replay --mrt`:
//! RIB dumps ([`crate::mrt_rib`], TABLE_DUMP_V2 and legacy TABLE_DUMP) and
//! update traces ([`crate::mrt_updates`], BGP4MP and BGP4MP_ET), told apart
//! by their first decodable record.
//!
//! One replayed session per recorded peer. Several files are played one
//! after the other (a RIB dump, then the updates that follow it; or
//! consecutive update files): a peer is the same peer in every file when
//! its (address, AS) is, and sessions are numbered in order of first
//! appearance over the files. Times of a later trace start where the
//! earlier files ended; a RIB dump's routes go out at the time its file
//! starts. The global trace order is each file's own (a RIB dump's: one
//! message per peer in turn), file after file.
//!
//! Session parameters (the AS spoken, next hops) are the caller's, by
//! session number. A file whose peers do not already have the numbers
//! the readers give them (first-seen order within the file) is read a
//! second time with the right numbers, because its routes are rewritten
//! with those parameters as they are read.

use crate::error::{Phase, ReplayError};
use crate::feed::FeedParams;
use crate::mrt_rib::{rib_workload, RibOptions};
use crate::mrt_updates::{update_workload, UpdateOptions};
use crate::schedule::{schedule, Order};
use crate::workload::{Source, Step, Workload};
use base::Asn;
use mrt::{Body, ErrorKind, MrtReader};
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Session number -> the parameters of that session.
pub type ParamsFn = Arc<dyn Fn(usize) -> FeedParams + Send + Sync>;

/// What kind of MRT file.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// TABLE_DUMP_V2 or TABLE_DUMP: one table, replayed as each peer's
    /// initial announcement.
    RibDump,
    /// BGP4MP / BGP4MP_ET: messages in time order.
    UpdateTrace,
}

impl InputKind {
    pub fn name(self) -> &'static str {
        match self {
            InputKind::RibDump => "RIB dump",
            InputKind::UpdateTrace => "update trace",
        }
    }
}

/// Which parts of the files to replay.
#[derive(Clone, Debug, Default)]
pub struct InputOptions {
    /// Recorded peers to keep, by index within each file (PEER_INDEX_TABLE
    /// order, else first-seen order); `None` keeps all.
    pub peers: Option<Vec<usize>>,
    /// Stop reading an update trace after this many UPDATEs.
    pub max_messages: Option<u64>,
    /// Stop reading a RIB dump after this many prefixes.
    pub max_prefixes: Option<u64>,
    /// Ignore STATE_CHANGE records (keep every session up).
    pub ignore_state_changes: bool,
    /// Keep the recorded next hops of update traces instead of setting
    /// them to each session's (RIB dumps always get the session's).
    pub keep_next_hops: bool,
}

/// One recorded peer of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputPeer {
    pub ip: IpAddr,
    pub asn: Asn,
    /// UPDATEs (traces) or routes (RIB dumps).
    pub count: u64,
    /// The session it is replayed as.
    pub session: usize,
}

/// What one file held.
#[derive(Clone, Debug)]
pub struct FileSummary {
    pub path: PathBuf,
    pub kind: InputKind,
    pub peers: Vec<InputPeer>,
    pub messages: u64,
    pub prefixes: u64,
    pub withdrawn: u64,
    /// Routes or records left out (malformed, other families, too long
    /// after re-encoding, ADD-PATH extras).
    pub skipped: u64,
    /// OPEN, KEEPALIVE, NOTIFICATION and _LOCAL records (traces).
    pub not_replayed: u64,
    pub truncated: bool,
}

/// The kind of `path`, from its first decodable record.
pub fn kind_of(path: &Path) -> Result<InputKind, ReplayError> {
    let mut rd = MrtReader::open(path).map_err(|e| ReplayError::io(Phase::Input, &e))?;
    // Undecodable records are skipped; a file with nothing but those
    // (or not MRT at all) says so instead of being read as empty.
    for _ in 0..1000 {
        match rd.next_record() {
            None => break,
            Some(Ok(r)) => match r.body {
                Body::TableDump(_)
                | Body::PeerIndexTable(_)
                | Body::GeoPeerTable(_)
                | Body::Rib(_)
                | Body::RibGeneric(_) => return Ok(InputKind::RibDump),
                Body::StateChange(_) | Body::Message(_) => return Ok(InputKind::UpdateTrace),
            },
            Some(Err(e)) if e.kind == ErrorKind::TruncatedStream => break,
            Some(Err(e)) if e.is_fatal() => return Err(ReplayError::Mrt(e)),
            Some(Err(_)) => {}
        }
    }
    Err(ReplayError::Input(
        "no RIB dump or update trace records (TABLE_DUMP, TABLE_DUMP_V2, BGP4MP, BGP4MP_ET)",
    ))
}

/// Reads `paths` into one workload. `params(i)` gives session i's AS and
/// next hops. Errors name no file; callers add it ([`LoadError`]).
pub fn load(
    paths: &[PathBuf],
    opts: &InputOptions,
    params: &ParamsFn,
) -> Result<(Workload, Vec<FileSummary>), LoadError> {
    if paths.is_empty() {
        return Err(LoadError {
            path: PathBuf::new(),
            error: ReplayError::Config("no MRT file given"),
        });
    }
    let mut sessions: HashMap<(IpAddr, Asn), usize> = HashMap::new();
    let mut parts: Vec<(Workload, Vec<usize>)> = Vec::new();
    let mut sums = Vec::new();
    for path in paths {
        let err = |error| LoadError {
            path: path.clone(),
            error,
        };
        let kind = kind_of(path).map_err(err)?;
        // First try: the file's sessions numbered after those seen so far
        // (right when its peers are all new).
        let base = sessions.len();
        let guess: Vec<usize> = Vec::new();
        let (mut w, mut sum) = read(path, kind, opts, params, base, &guess).map_err(err)?;
        let map = assign(&mut sessions, &sum);
        if map.iter().enumerate().any(|(i, &s)| s != base + i) {
            (w, sum) = read(path, kind, opts, params, base, &map).map_err(err)?;
        }
        for (p, s) in sum.peers.iter_mut().zip(&map) {
            p.session = *s;
        }
        sums.push(sum);
        parts.push((w, map));
    }
    if parts.len() == 1 {
        if let Some((w, _)) = parts.pop() {
            return Ok((w, sums));
        }
    }
    Ok((merge(parts, sessions.len()), sums))
}

/// The recorded AS of every session of a [`load`], by session number
/// (`--peer-as recorded`: each session speaks as its recorded peer). A
/// session is one (address, AS) over all files, so each has one AS.
pub fn recorded_ases(sums: &[FileSummary]) -> Vec<Asn> {
    let n = sums
        .iter()
        .flat_map(|s| s.peers.iter().map(|p| p.session + 1))
        .max()
        .unwrap_or(0);
    let mut out = vec![Asn(0); n];
    for p in sums.iter().flat_map(|s| &s.peers) {
        if let Some(a) = out.get_mut(p.session) {
            *a = p.asn;
        }
    }
    out
}

/// An input error with the file it is about.
#[derive(Clone, Debug)]
pub struct LoadError {
    pub path: PathBuf,
    pub error: ReplayError,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.as_os_str().is_empty() {
            write!(f, "{}", self.error)
        } else {
            write!(f, "{}: {}", self.path.display(), self.error)
        }
    }
}

impl std::error::Error for LoadError {}

/// Session numbers of the file's peers, new peers numbered next.
fn assign(sessions: &mut HashMap<(IpAddr, Asn), usize>, sum: &FileSummary) -> Vec<usize> {
    sum.peers
        .iter()
        .map(|p| {
            let next = sessions.len();
            *sessions.entry((p.ip, p.asn)).or_insert(next)
        })
        .collect()
}

/// Reads one file; local session i is global session `map[i]`, or
/// `base + i` where `map` is shorter.
fn read(
    path: &Path,
    kind: InputKind,
    opts: &InputOptions,
    params: &ParamsFn,
    base: usize,
    map: &[usize],
) -> Result<(Workload, FileSummary), ReplayError> {
    let map: Arc<Vec<usize>> = Arc::new(map.to_vec());
    let global = move |i: usize| map.get(i).copied().unwrap_or(base + i);
    match kind {
        InputKind::RibDump => {
            let ro = RibOptions {
                peers: opts.peers.clone(),
                max_prefixes: opts.max_prefixes,
                no_ipv4: false,
                no_ipv6: false,
            };
            let p = |i: usize| params(global(i));
            let (w, s) = rib_workload(path, &ro, &p)?;
            let sum = FileSummary {
                path: path.to_path_buf(),
                kind,
                peers: s
                    .peers
                    .iter()
                    .map(|p| InputPeer {
                        ip: p.ip,
                        asn: p.asn,
                        count: p.routes,
                        session: 0,
                    })
                    .collect(),
                messages: w.total_messages(),
                prefixes: w.total_prefixes(),
                withdrawn: 0,
                skipped: s.skipped_routes + s.malformed_records,
                not_replayed: 0,
                truncated: s.truncated,
            };
            Ok((w, sum))
        }
        InputKind::UpdateTrace => {
            let next_hops = if opts.keep_next_hops {
                None
            } else {
                let params = params.clone();
                let nh: crate::mrt_updates::NextHops = Arc::new(move |i| {
                    let p = params(global(i));
                    (p.next_hop, p.next_hop6())
                });
                Some(nh)
            };
            let uo = UpdateOptions {
                peers: opts.peers.clone(),
                max_messages: opts.max_messages,
                ignore_state_changes: opts.ignore_state_changes,
                next_hops,
            };
            let (w, s) = update_workload(path, &uo)?;
            let sum = FileSummary {
                path: path.to_path_buf(),
                kind,
                peers: s
                    .peers
                    .iter()
                    .map(|p| InputPeer {
                        ip: p.ip,
                        asn: p.asn,
                        count: p.messages,
                        session: 0,
                    })
                    .collect(),
                messages: w.total_messages(),
                prefixes: w.total_prefixes(),
                withdrawn: w.total_withdrawn(),
                skipped: s.too_long + s.malformed,
                not_replayed: s.not_replayed,
                truncated: s.truncated,
            };
            Ok((w, sum))
        }
    }
}

/// Plays the parts one after the other: `map[i]` of a part is the session
/// its feed i joins.
fn merge(parts: Vec<(Workload, Vec<usize>)>, sessions: usize) -> Workload {
    let timed = parts.iter().any(|(w, _)| w.is_timed());
    let traced = parts.iter().any(|(w, _)| w.source == Source::UpdateTrace);
    let mut out = Workload {
        feeds: vec![Default::default(); sessions],
        trace: Vec::new(),
        expected_prefixes: None,
        source: if traced {
            Source::UpdateTrace
        } else {
            Source::RibDump
        },
    };
    // The latest trace time so far: where the next file's times start.
    let mut time_base: u64 = 0;
    for (w, map) in &parts {
        let steps = schedule(
            w,
            Order::RoundRobin {
                batch: 1,
                window: None,
            },
        );
        let steps = if w.trace.is_empty() {
            steps
        } else {
            w.trace.clone()
        };
        let offsets: Vec<u32> = map
            .iter()
            .map(|&s| out.feeds.get(s).map_or(0, |f| f.msgs.len() as u32))
            .collect();
        out.trace.extend(steps.iter().filter_map(|st| {
            let i = st.peer as usize;
            Some(Step {
                peer: *map.get(i)? as u32,
                msg: st.msg + offsets.get(i)?,
            })
        }));
        let mut latest = time_base;
        for (i, f) in w.feeds.iter().enumerate() {
            let Some(dst) = map.get(i).and_then(|&s| out.feeds.get_mut(s)) else {
                continue;
            };
            if timed && f.times_us.len() != f.msgs.len() {
                // Untimed (a RIB dump): everything at the file's start.
                let mut g = f.clone();
                g.times_us = vec![0; f.msgs.len()];
                dst.append(&g, time_base);
            } else {
                dst.append(f, time_base);
            }
            latest = latest.max(dst.times_us.last().copied().unwrap_or(0));
        }
        // Peers absent from this file keep their times in step.
        if timed {
            for f in &mut out.feeds {
                let last = f.times_us.last().copied().unwrap_or(time_base);
                f.times_us.resize(f.msgs.len(), last);
            }
        }
        time_base = latest;
    }
    if !traced {
        out.trace.clear();
        out.expected_prefixes = Some(out.final_prefixes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed::Feed;
    use crate::workload::end_of_rib_v4;
    use std::net::Ipv4Addr;

    fn feed(n: usize, timed: bool) -> Feed {
        let mut f = Feed::default();
        for k in 0..n {
            f.push_msg(&end_of_rib_v4(), 1, 0, timed.then_some(10 * k as u64));
        }
        f
    }

    fn work(feeds: Vec<Feed>, trace: Vec<Step>, source: Source) -> Workload {
        Workload {
            feeds,
            trace,
            expected_prefixes: None,
            source,
        }
    }

    #[test]
    fn merged_files_keep_every_message_once_in_per_peer_order() {
        // A RIB dump of peers A and B, then a trace of B and C.
        let rib = work(
            vec![feed(2, false), feed(3, false)],
            vec![],
            Source::RibDump,
        );
        let tr = work(
            vec![feed(2, true), feed(1, true)],
            vec![
                Step { peer: 0, msg: 0 },
                Step { peer: 1, msg: 0 },
                Step { peer: 0, msg: 1 },
            ],
            Source::UpdateTrace,
        );
        let w = merge(vec![(rib, vec![0, 1]), (tr, vec![1, 2])], 3);
        assert_eq!(w.source, Source::UpdateTrace);
        let lens: Vec<usize> = w.feeds.iter().map(|f| f.msgs.len()).collect();
        assert_eq!(lens, [2, 5, 1]);
        assert!(w.is_timed());
        assert_eq!(w.feeds[1].times_us, [0, 0, 0, 0, 10]);
        assert_eq!(w.feeds[1].msgs[4].end, w.feeds[1].bytes.len());
        // Every message once, each peer's in order.
        assert_eq!(w.trace.len(), 8);
        let mut next = [0u32; 3];
        for s in &w.trace {
            assert_eq!(s.msg, next[s.peer as usize], "{:?}", w.trace);
            next[s.peer as usize] += 1;
        }
        // The trace part comes after the RIB part.
        assert_eq!(w.trace[5], Step { peer: 1, msg: 3 });
    }

    #[test]
    fn later_trace_times_start_where_the_earlier_ended() {
        let a = work(vec![feed(3, true)], vec![], Source::UpdateTrace);
        let b = work(vec![feed(2, true)], vec![], Source::UpdateTrace);
        let w = merge(vec![(a, vec![0]), (b, vec![0])], 1);
        assert_eq!(w.feeds[0].times_us, [0, 10, 20, 20, 30]);
    }

    #[test]
    fn bad_files_are_errors_not_panics() {
        let d = std::env::temp_dir().join(format!("replay-mrt-input-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let params: ParamsFn =
            Arc::new(|i| FeedParams::ebgp(Asn(65001), Ipv4Addr::new(127, 0, 0, 2 + i as u8)));
        for (name, bytes) in [
            ("text", b"this is not MRT at all, just some text\n".to_vec()),
            ("empty", Vec::new()),
            ("short", vec![0, 0, 0, 1, 0, 13, 0]),
        ] {
            let p = d.join(name);
            std::fs::write(&p, bytes).unwrap();
            let e = load(std::slice::from_ref(&p), &InputOptions::default(), &params).unwrap_err();
            assert_eq!(e.path, p);
            assert!(!e.to_string().is_empty());
        }
        let missing = d.join("missing");
        assert!(load(&[missing], &InputOptions::default(), &params).is_err());
        std::fs::remove_dir_all(&d).ok();
    }
}

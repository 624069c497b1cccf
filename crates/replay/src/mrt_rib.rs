//! MRT RIB dumps as workloads: every peer of the dump becomes one replayed
//! session announcing that peer's routes (RFC 6396 §4.3 TABLE_DUMP_V2 with
//! its PEER_INDEX_TABLE, the RFC 8050 ADD-PATH RIB subtypes, and legacy
//! TABLE_DUMP §4.2, whose peers are the distinct (address, AS) pairs in
//! first-seen order).
//!
//! Routes are rewritten for our session ([`crate::attrs`]) and packed by
//! attribute set ([`crate::pack`]), so each peer's feed is what that peer
//! would send when its session to the DUT comes up. Our sessions do not
//! negotiate ADD-PATH, so a peer with several paths for one prefix sends
//! only the first (the DUT would keep only the last anyway).
//!
//! The expected prefix count at the monitor is the number of distinct
//! prefixes over the selected peers: dumps list each prefix in one
//! record (V2) or in consecutive records (legacy), so it is counted
//! without a set.

use crate::attrs;
use crate::error::{Phase, ReplayError};
use crate::feed::FeedParams;
use crate::pack::Packer;
use crate::workload::{Source, Workload};
use base::{Asn, Prefix};
use mrt::{Body, ErrorKind, MrtReader};
use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;

/// Which parts of a dump to replay.
#[derive(Clone, Debug, Default)]
pub struct RibOptions {
    /// Dump peer indexes to keep (PEER_INDEX_TABLE order; legacy dumps:
    /// first-seen order); `None` keeps every peer with at least one route.
    pub peers: Option<Vec<usize>>,
    /// Stop after this many distinct prefixes (the dump's first ones).
    pub max_prefixes: Option<u64>,
    /// Leave out IPv4 or IPv6 routes.
    pub no_ipv4: bool,
    pub no_ipv6: bool,
}

/// One replayed session of a RIB dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RibPeer {
    /// Index in the dump (see [`RibOptions::peers`]).
    pub dump_index: usize,
    pub ip: IpAddr,
    pub asn: Asn,
    pub routes: u64,
}

/// What reading the dump found besides the feeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RibSummary {
    pub peers: Vec<RibPeer>,
    /// Routes left out: malformed attributes, unknown peer index, other
    /// families (multicast, RIB_GENERIC), extra ADD-PATH paths.
    pub skipped_routes: u64,
    /// Records that did not decode (skipped).
    pub malformed_records: u64,
    /// The input ended in a truncated compressed stream (the `_firstMB`
    /// sample files); everything before the cut was used.
    pub truncated: bool,
}

/// Reads a RIB dump into a workload. Sessions are numbered in order of
/// the first route seen from each selected peer; `params(i)` gives the
/// parameters of session i (its source address is the caller's i-th).
/// [`RibSummary::peers`] says which dump peer each session is.
pub fn rib_workload(
    path: &Path,
    opts: &RibOptions,
    params: &dyn Fn(usize) -> FeedParams,
) -> Result<(Workload, RibSummary), ReplayError> {
    let mut rd = MrtReader::open(path).map_err(|e| ReplayError::io(Phase::Input, &e))?;
    // One pass: a session is numbered when its first route is seen, so
    // its parameters are known before any of its routes is rewritten.
    let mut sessions: Vec<Session> = Vec::new();
    let mut by_index: HashMap<usize, usize> = HashMap::new();
    let mut legacy_peers: HashMap<(IpAddr, Asn), usize> = HashMap::new();
    let mut sum = RibSummary::default();
    let mut distinct: u64 = 0;
    let mut last_prefix: Option<Prefix> = None;
    let mut cur_prefix: Option<Prefix> = None;
    // Peers that already have a path for the current prefix (ADD-PATH).
    let mut seen_here: Vec<usize> = Vec::new();
    let want = |i: usize| opts.peers.as_ref().is_none_or(|l| l.contains(&i));
    let family_ok = |p: &Prefix| match p {
        Prefix::V4(_) => !opts.no_ipv4,
        Prefix::V6(_) => !opts.no_ipv6,
    };
    loop {
        let rec = match rd.next_record() {
            None => break,
            Some(Ok(r)) => r,
            Some(Err(e)) if e.kind == ErrorKind::TruncatedStream => {
                sum.truncated = true;
                break;
            }
            Some(Err(e)) if e.is_fatal() => return Err(ReplayError::Mrt(e)),
            Some(Err(_)) => {
                sum.malformed_records += 1;
                continue;
            }
        };
        match rec.body {
            Body::Rib(rib) => {
                let prefix = rib.prefix;
                if rib.afi_safi().safi != base::Safi::Unicast || !family_ok(&prefix) {
                    sum.skipped_routes += u64::from(rib.entry_count);
                    continue;
                }
                if opts.max_prefixes.is_some_and(|m| distinct >= m) {
                    break;
                }
                seen_here.clear();
                let mut any = false;
                for e in rib.entries() {
                    let di = usize::from(e.peer_index);
                    let Some(peer) = rec.peer(e.peer_index) else {
                        sum.skipped_routes += 1;
                        continue;
                    };
                    if !want(di) {
                        continue;
                    }
                    if seen_here.contains(&di) {
                        sum.skipped_routes += 1;
                        continue;
                    }
                    seen_here.push(di);
                    let si = *by_index.entry(di).or_insert_with(|| {
                        sessions.push(Session::new(di, peer.ip, peer.asn, params(sessions.len())));
                        sessions.len() - 1
                    });
                    if let Some(s) = sessions.get_mut(si) {
                        any |= s.add(prefix, e.attributes, true, &mut sum);
                    }
                }
                distinct += u64::from(any);
            }
            Body::TableDump(td) => {
                let prefix = td.prefix;
                if !family_ok(&prefix) {
                    sum.skipped_routes += 1;
                    continue;
                }
                let new_prefix = cur_prefix != Some(prefix);
                if new_prefix && opts.max_prefixes.is_some_and(|m| distinct >= m) {
                    break;
                }
                if new_prefix {
                    seen_here.clear();
                    cur_prefix = Some(prefix);
                }
                let next = legacy_peers.len();
                let di = *legacy_peers.entry((td.peer_ip, td.peer_as)).or_insert(next);
                if !want(di) || seen_here.contains(&di) {
                    continue;
                }
                seen_here.push(di);
                let si = *by_index.entry(di).or_insert_with(|| {
                    sessions.push(Session::new(
                        di,
                        td.peer_ip,
                        td.peer_as,
                        params(sessions.len()),
                    ));
                    sessions.len() - 1
                });
                let added = sessions
                    .get_mut(si)
                    .is_some_and(|s| s.add(prefix, td.attributes, false, &mut sum));
                // Legacy dumps repeat the prefix in consecutive records;
                // count it once, when its first route is kept.
                if added && new_prefix_for_count(&mut last_prefix, prefix) {
                    distinct += 1;
                }
            }
            Body::RibGeneric(g) => sum.skipped_routes += u64::from(g.entry_count),
            _ => {}
        }
    }
    if sessions.is_empty() {
        return Err(ReplayError::Input(
            "no routes for the selected peers in the dump",
        ));
    }
    // Session i was given params(i) in first-seen order; keep that order
    // (it is what the caller's source addresses were assigned by).
    sum.peers = sessions
        .iter()
        .map(|s| RibPeer {
            dump_index: s.dump_index,
            ip: s.ip,
            asn: s.asn,
            routes: s.routes,
        })
        .collect();
    let mut feeds = Vec::with_capacity(sessions.len());
    for s in sessions {
        let label = format!("AS{} {}", s.asn.0, s.ip);
        let mut f = s.packer.finish()?;
        f.label = label;
        feeds.push(f);
    }
    Ok((
        Workload {
            feeds,
            trace: Vec::new(),
            expected_prefixes: Some(distinct),
            source: Source::RibDump,
        },
        sum,
    ))
}

/// True when `p` differs from the last counted prefix (and records it).
fn new_prefix_for_count(last: &mut Option<Prefix>, p: Prefix) -> bool {
    if *last == Some(p) {
        return false;
    }
    *last = Some(p);
    true
}

struct Session {
    dump_index: usize,
    ip: IpAddr,
    asn: Asn,
    routes: u64,
    packer: Packer,
}

impl Session {
    fn new(dump_index: usize, ip: IpAddr, asn: Asn, mut params: FeedParams) -> Session {
        if params.as_recorded {
            // The session speaks as the recorded peer (FeedParams docs).
            params.local_as = asn;
        }
        Session {
            dump_index,
            ip,
            asn,
            routes: 0,
            packer: Packer::new(params),
        }
    }

    /// Adds one stored route; false when it had to be skipped.
    fn add(&mut self, prefix: Prefix, raw: &[u8], as4: bool, sum: &mut RibSummary) -> bool {
        let params = self.packer.params;
        let v6 = matches!(prefix, Prefix::V6(_));
        if attrs::rewrite(raw, &params, as4, v6, self.packer.scratch()).is_err() {
            sum.skipped_routes += 1;
            return false;
        }
        self.packer.add(prefix);
        self.routes += 1;
        true
    }
}

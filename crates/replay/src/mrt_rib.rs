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

/// What [`full_feeds_workload`] read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FullFeedsSummary {
    /// Distinct IPv4 unicast prefixes every feed announces.
    pub prefixes: u64,
    /// Paths over all feeds (feeds x prefixes).
    pub paths: u64,
    /// Peers of the dump that contributed paths.
    pub dump_peers: usize,
    pub skipped_routes: u64,
    pub truncated: bool,
}

/// Scenario (f) of `tessera bench` (issue 17): `feeds` sessions that
/// each announce the whole IPv4 unicast table of a RIB dump, every
/// session with its own, deterministic path per prefix, so that about
/// `feeds` x prefixes distinct paths exist and the best path differs by
/// prefix. Session `g` takes, for each prefix, the dump's path number
/// `(g + h(prefix)) mod n` of the `n` paths the dump has for it (real
/// AS paths, communities and MEDs), rewritten for the session as
/// [`rib_workload`] does (`params(g)`: our AS leads the path), then
/// puts after its own AS `(g + h(prefix) / 7) mod 3` more copies of it and
/// one upstream AS of its own ([`full_feed_upstream_as`]`(g)`), so that
/// two sessions that drew the same dump path still differ (as routes
/// from different neighbours do) and the path lengths, hence the
/// winners, vary by prefix. Only TABLE_DUMP_V2 RIB
/// records are read; `max_prefixes` keeps the dump's first ones.
pub fn full_feeds_workload(
    path: &Path,
    max_prefixes: Option<u64>,
    feeds: usize,
    params: &dyn Fn(usize) -> FeedParams,
) -> Result<(Workload, FullFeedsSummary), ReplayError> {
    if feeds == 0 || feeds > usize::from(u16::MAX) {
        return Err(ReplayError::Config("full feeds: 1..=65535 sessions"));
    }
    let mut rd = MrtReader::open(path).map_err(|e| ReplayError::io(Phase::Input, &e))?;
    let mut packers: Vec<Packer> = (0..feeds).map(|g| Packer::new(params(g))).collect();
    let mut sum = FullFeedsSummary::default();
    let mut dump_peers: Vec<bool> = Vec::new();
    loop {
        let rec = match rd.next_record() {
            None => break,
            Some(Ok(r)) => r,
            Some(Err(e)) if e.kind == ErrorKind::TruncatedStream => {
                sum.truncated = true;
                break;
            }
            Some(Err(e)) if e.is_fatal() => return Err(ReplayError::Mrt(e)),
            Some(Err(_)) => continue,
        };
        let Body::Rib(rib) = rec.body else { continue };
        let prefix = rib.prefix;
        if rib.afi_safi().safi != base::Safi::Unicast || !matches!(prefix, Prefix::V4(_)) {
            continue;
        }
        if max_prefixes.is_some_and(|m| sum.prefixes >= m) {
            break;
        }
        // Borrows from the record: one small vector per prefix.
        let mut paths: Vec<(u16, &[u8])> = Vec::with_capacity(64);
        for e in rib.entries() {
            // ADD-PATH dumps: one path per dump peer.
            if paths.iter().any(|(p, _)| *p == e.peer_index) {
                sum.skipped_routes += 1;
                continue;
            }
            paths.push((e.peer_index, e.attributes));
        }
        if paths.is_empty() {
            continue;
        }
        let h = prefix_hash(&prefix);
        let mut any = false;
        for (g, pk) in packers.iter_mut().enumerate() {
            let params = pk.params;
            // The drawn path, or the next one that rewrites cleanly.
            let n = paths.len();
            let first = (g + (h % n as u64) as usize) % n;
            let mut done = false;
            for k in 0..n {
                let Some(&(peer, raw)) = paths.get((first + k) % n) else {
                    break;
                };
                let out = pk.scratch();
                if attrs::rewrite(raw, &params, true, false, out).is_err() {
                    continue;
                }
                let extra = ((g as u64 + h / 7) % 3) as usize;
                let mut ins = [params.local_as.0; 3];
                if let Some(u) = ins.get_mut(extra) {
                    *u = full_feed_upstream_as(g);
                }
                insert_after_first_as(out, ins.get(..=extra).unwrap_or(&[]));
                pk.add(prefix);
                let i = usize::from(peer);
                if dump_peers.len() <= i {
                    dump_peers.resize(i + 1, false);
                }
                if let Some(s) = dump_peers.get_mut(i) {
                    *s = true;
                }
                done = true;
                break;
            }
            if !done {
                sum.skipped_routes += 1;
            }
            any |= done;
        }
        sum.prefixes += u64::from(any);
    }
    if sum.prefixes == 0 {
        return Err(ReplayError::Input("no IPv4 unicast routes in the dump"));
    }
    sum.dump_peers = dump_peers.iter().filter(|x| **x).count();
    let mut out = Vec::with_capacity(feeds);
    for (g, pk) in packers.into_iter().enumerate() {
        let mut f = pk.finish()?;
        f.label = format!("full feed {g}");
        sum.paths += f.prefixes;
        out.push(f);
    }
    Ok((
        Workload {
            feeds: out,
            trace: Vec::new(),
            expected_prefixes: Some(sum.prefixes),
            source: Source::RibDump,
        },
        sum,
    ))
}

/// A stable 64-bit mix of a prefix (splitmix64 of address and length).
fn prefix_hash(p: &Prefix) -> u64 {
    let (a, l) = match p {
        Prefix::V4(p) => (u128::from(p.addr_bits()), p.len()),
        Prefix::V6(p) => (u128::from(p.addr()), p.len()),
    };
    let mut z = (a as u64 ^ (a >> 64) as u64)
        .wrapping_add(u64::from(l) << 56)
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The upstream AS that full feed `g` puts after its own
/// ([`full_feeds_workload`]): 4200100000 + g, private (RFC 6996) and
/// outside what `tessera bench` uses for its sessions.
pub fn full_feed_upstream_as(g: usize) -> u32 {
    4_200_100_000 + (g as u32 % 100_000)
}

/// Inserts `asns` after the first ASN of the first AS_SEQUENCE of the
/// AS_PATH attribute in `attrs` (rewritten attributes: AS_PATH in the
/// extended-length form, 4-octet ASNs, our AS leading). Leaves `attrs`
/// as it is when the first segment is not a non-empty AS_SEQUENCE or
/// would overflow 255 ASNs.
fn insert_after_first_as(attrs: &mut Vec<u8>, asns: &[u32]) {
    let extra = asns.len();
    if extra == 0 {
        return;
    }
    let mut pos = 0usize;
    while let (Some(&flags), Some(&code)) = (attrs.get(pos), attrs.get(pos + 1)) {
        let ext = flags & 0x10 != 0;
        let (hdr, len) = if ext {
            match attrs.get(pos + 2..pos + 4) {
                Some(l) => (4, usize::from(u16::from_be_bytes([l[0], l[1]]))),
                None => return,
            }
        } else {
            match attrs.get(pos + 2) {
                Some(&l) => (3, usize::from(l)),
                None => return,
            }
        };
        if code != 2 {
            pos += hdr + len;
            continue;
        }
        let v = pos + hdr;
        let (Some(&seg_type), Some(&count)) = (attrs.get(v), attrs.get(v + 1)) else {
            return;
        };
        let new_len = len + 4 * extra;
        if !ext
            || seg_type != 2
            || count == 0
            || usize::from(count) + extra > 255
            || new_len > 0xffff
        {
            return;
        }
        if let Some(c) = attrs.get_mut(v + 1) {
            *c = count + extra as u8;
        }
        if let Some(l) = attrs.get_mut(pos + 2..pos + 4) {
            l.copy_from_slice(&(new_len as u16).to_be_bytes());
        }
        let ins: Vec<u8> = asns.iter().flat_map(|a| a.to_be_bytes()).collect();
        let at = v + 2 + 4;
        attrs.splice(at..at, ins);
        return;
    }
}

#[cfg(test)]
mod full_feed_tests {
    use super::*;
    use bgp_wire::AsPathView;

    #[test]
    fn insert_goes_after_our_as() {
        let p = FeedParams::ebgp(Asn(65001), std::net::Ipv4Addr::new(198, 18, 1, 1));
        // ORIGIN IGP, AS_PATH 3356 174 (4-octet), as stored in a dump.
        let raw = [
            0x40, 1, 1, 0, 0x40, 2, 10, 2, 2, 0, 0, 0x0d, 0x1c, 0, 0, 0, 174,
        ];
        let mut out = Vec::new();
        assert!(attrs::rewrite(&raw, &p, true, false, &mut out).is_ok());
        insert_after_first_as(&mut out, &[65001, 4_200_100_000]);
        let mut asns = Vec::new();
        for a in bgp_wire::AttrIter::new(&out) {
            let a = a.unwrap_or_else(|e| panic!("{e:?}"));
            if a.type_code == 2 {
                let v = AsPathView::parse(a.value, true).unwrap_or_else(|| panic!("path"));
                asns = v.segments().flat_map(|s| s.asns()).map(|x| x.0).collect();
            }
        }
        assert_eq!(asns, vec![65001, 65001, 4_200_100_000, 3356, 174]);
    }

    #[test]
    fn hash_is_stable_and_spreads() {
        let a: Prefix = "10.0.0.0/8".parse().unwrap_or_else(|_| panic!("prefix"));
        let b: Prefix = "10.0.0.0/9".parse().unwrap_or_else(|_| panic!("prefix"));
        assert_eq!(prefix_hash(&a), prefix_hash(&a));
        assert_ne!(prefix_hash(&a), prefix_hash(&b));
    }
}

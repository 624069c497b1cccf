//! One file's statistics: [`Stats`] over its records, plus what only a
//! whole read knows (compression, sizes, skipped records, the error that
//! ended it) and the prefixes inside BGP4MP UPDATEs, read with bgp-wire
//! (withdrawn routes, NLRI, MP_REACH_NLRI, MP_UNREACH_NLRI).

use super::counts::Stats;
use crate::bgp4mp::Message;
use crate::decompress::Compression;
use crate::error::MrtError;
use crate::reader::MrtReader;
use crate::record::{Body, Record};
use crate::rib::RibEntry;
use base::{Asn, Prefix};
use bgp_wire::{Message as BgpMessage, ParseCtx};
use std::collections::HashSet;
use std::io;
use std::net::IpAddr;
use std::path::Path;

/// Everything `tessera mrt stats` reports for one file.
pub struct FileStats {
    /// Counts over the decoded records.
    pub stats: Stats,
    /// How the file was compressed.
    pub compression: Compression,
    /// Size of the file as stored.
    pub file_bytes: u64,
    /// Decompressed bytes framed into complete records.
    pub bytes: u64,
    /// Records skipped for an unknown type or subtype.
    pub unknown: u64,
    /// Records whose body did not decode (framing intact).
    pub malformed: u64,
    /// Peers with at least one route or event: RIB entries, state changes,
    /// UPDATEs carrying prefixes (the peers of `bgpdump -m` lines).
    /// `Stats::peers` also counts peers seen only in OPEN/KEEPALIVE/...
    pub routed_peers: usize,
    /// BGP4MP messages that are UPDATEs.
    pub updates: u64,
    /// BGP4MP messages bgp-wire could not parse.
    pub bad_messages: u64,
    /// The fatal error that ended reading (truncation, I/O).
    pub error: Option<MrtError>,
}

impl FileStats {
    /// Reads the whole file (plain, gzip or bzip2; decompressed on a
    /// background thread) and counts it. Fails only when the file cannot
    /// be opened; a read error later ends the count and is kept in
    /// [`FileStats::error`].
    pub fn collect(path: &Path) -> io::Result<FileStats> {
        let file_bytes = std::fs::metadata(path)?.len();
        let mut r = MrtReader::open(path)?;
        let mut stats = Stats::new();
        let (mut updates, mut bad_messages) = (0, 0);
        let mut routed: HashSet<(IpAddr, Asn)> = HashSet::new();
        let mut error = None;
        while let Some(rec) = r.next_record() {
            let rec = match rec {
                Ok(rec) => rec,
                Err(e) if e.is_fatal() => {
                    error = Some(e);
                    break;
                }
                // Malformed body: counted by the reader, reading goes on.
                Err(_) => continue,
            };
            stats.add_record(&rec);
            match &rec.body {
                Body::Message(m) => match update_prefixes(m, &mut stats) {
                    Some(Some(n)) => {
                        updates += 1;
                        if n > 0 {
                            routed.insert((m.peering.peer_ip, m.peering.peer_as));
                        }
                    }
                    Some(None) => {}
                    None => bad_messages += 1,
                },
                Body::StateChange(c) => {
                    routed.insert((c.peering.peer_ip, c.peering.peer_as));
                }
                Body::TableDump(d) => {
                    routed.insert((d.peer_ip, d.peer_as));
                }
                Body::Rib(r) => rib_peers(&rec, r.entries(), &mut routed),
                Body::RibGeneric(r) => rib_peers(&rec, r.entries(), &mut routed),
                Body::PeerIndexTable(_) | Body::GeoPeerTable(_) => {}
            }
        }
        let c = r.counters();
        Ok(FileStats {
            stats,
            compression: r.compression(),
            file_bytes,
            bytes: r.offset(),
            routed_peers: routed.len(),
            unknown: c.unknown,
            malformed: c.malformed,
            updates,
            bad_messages,
            error,
        })
    }
}

/// Adds the peers of RIB entries, resolved through the peer table.
fn rib_peers<'a>(
    rec: &Record<'_>,
    entries: impl Iterator<Item = RibEntry<'a>>,
    set: &mut HashSet<(IpAddr, Asn)>,
) {
    let mut last = None;
    for e in entries {
        // Cheap skip: consecutive entries often repeat the peer.
        if last == Some(e.peer_index) {
            continue;
        }
        last = Some(e.peer_index);
        if let Some(p) = rec.peer(e.peer_index) {
            set.insert((p.ip, p.asn));
        }
    }
}

/// Adds the prefixes of an UPDATE (RFC 4271 §4.3 withdrawn routes and NLRI;
/// RFC 4760 MP_REACH/MP_UNREACH of IPv4/IPv6 unicast and multicast).
/// `Some(Some(n))` for an UPDATE carrying `n` prefixes, `Some(None)` for
/// another message type, `None` when bgp-wire cannot parse the message.
fn update_prefixes(m: &Message<'_>, stats: &mut Stats) -> Option<Option<usize>> {
    // RFC 6396 §4.4.3: _AS4 subtypes carry 4-octet AS numbers; RFC 8050 §3:
    // _ADDPATH subtypes carry path identifiers in every NLRI. Collectors
    // accept extended messages, so the 4096-octet limit is not enforced.
    let mut ctx = ParseCtx::modern().with_four_octet_asn(m.is_as4());
    if m.is_add_path() {
        ctx = ctx.with_add_path_all();
    }
    let (msg, _) = BgpMessage::parse(m.message, ctx).ok()?;
    let BgpMessage::Update(u) = msg else {
        return Some(None);
    };
    let mut n = 0;
    let mut add = |p: Prefix| {
        n += 1;
        stats.add_prefix(p);
    };
    // A malformed NLRI field ends its iterator with one error; the prefixes
    // before it count, as bgpdump prints them.
    u.withdrawn().flatten().for_each(|n| add(n.prefix));
    u.nlri().flatten().for_each(|n| add(n.prefix));
    if let Some(Ok(mp)) = u.mp_unreach() {
        if bgp_wire::attr::mp::is_prefix_family(mp.afi_safi) {
            mp.withdrawn().flatten().for_each(|n| add(n.prefix));
        }
    }
    if let Some(Ok(mp)) = u.mp_reach() {
        if bgp_wire::attr::mp::is_prefix_family(mp.afi_safi) {
            mp.nlri().flatten().for_each(|n| add(n.prefix));
        }
    }
    Some(Some(n))
}

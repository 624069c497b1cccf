//! `tessera mrt stats [--json] FILE...`: records per type/subtype, peers,
//! distinct prefixes, time span, unknown and malformed records,
//! compression, bytes and the error that ended reading, if any.
//!
//! Records are decoded by `mrt::MrtReader` and counted by `mrt::Stats`;
//! the prefixes inside BGP4MP UPDATE messages (withdrawn routes, NLRI,
//! MP_REACH_NLRI, MP_UNREACH_NLRI) are read with `bgp-wire`.

use super::CmdResult;
use base::{Asn, Prefix};
use bgp_wire::{Message as BgpMessage, ParseCtx};
use mrt::{subtypes as st, types, Body, Compression, MrtError, MrtReader, Stats};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// One JSON object per file, on one line.
    #[arg(long)]
    json: bool,
    /// MRT files: plain, gzip or bzip2.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Everything reported for one file.
struct FileStats {
    stats: Stats,
    compression: Compression,
    /// Size of the file as stored.
    file_bytes: u64,
    /// Decompressed bytes framed into complete records.
    bytes: u64,
    /// Records skipped for an unknown type or subtype.
    unknown: u64,
    /// Records whose body did not decode (framing intact).
    malformed: u64,
    /// Peers with at least one route or event: RIB entries, state changes,
    /// UPDATEs carrying prefixes (the peers of `bgpdump -m` lines).
    /// `Stats::peers` also counts peers seen only in OPEN/KEEPALIVE/...
    routed_peers: usize,
    /// BGP4MP messages that are UPDATEs, and those bgp-wire rejected.
    updates: u64,
    bad_messages: u64,
    /// The fatal error that ended reading (truncation, I/O).
    error: Option<MrtError>,
}

pub fn run(a: Args) -> CmdResult {
    let mut text = String::new();
    let mut failed = false;
    for path in &a.files {
        let f = collect(path)?;
        failed |= f.error.is_some();
        text.clear();
        if a.json {
            json(&mut text, path, &f)?;
        } else {
            human(&mut text, path, &f)?;
        }
        let mut w = io::stdout().lock();
        match w.write_all(text.as_bytes()).and_then(|()| w.flush()) {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
            r => r?,
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn collect(path: &Path) -> Result<FileStats, String> {
    let err = |e: io::Error| format!("{}: {e}", path.display());
    let file_bytes = std::fs::metadata(path).map_err(err)?.len();
    // `open` decompresses on a background thread.
    let mut r = MrtReader::open(path).map_err(err)?;
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

/// Adds the peers of RIB entries, resolved through the peer table.
fn rib_peers<'a>(
    rec: &mrt::Record<'_>,
    entries: impl Iterator<Item = mrt::RibEntry<'a>>,
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
fn update_prefixes(m: &mrt::Message<'_>, stats: &mut Stats) -> Option<Option<usize>> {
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

/// `TABLE_DUMP_V2/RIB_IPV4_UNICAST` and the like (RFC 6396 §4, RFC 6397,
/// RFC 8050); numbers for codes this build does not name.
fn type_name(t: u16, s: u16) -> String {
    let sub = match (t, s) {
        (types::TABLE_DUMP, st::AFI_IPV4) => "AFI_IPV4",
        (types::TABLE_DUMP, st::AFI_IPV6) => "AFI_IPV6",
        (types::TABLE_DUMP_V2, _) => match s {
            st::PEER_INDEX_TABLE => "PEER_INDEX_TABLE",
            st::RIB_IPV4_UNICAST => "RIB_IPV4_UNICAST",
            st::RIB_IPV4_MULTICAST => "RIB_IPV4_MULTICAST",
            st::RIB_IPV6_UNICAST => "RIB_IPV6_UNICAST",
            st::RIB_IPV6_MULTICAST => "RIB_IPV6_MULTICAST",
            st::RIB_GENERIC => "RIB_GENERIC",
            st::GEO_PEER_TABLE => "GEO_PEER_TABLE",
            st::RIB_IPV4_UNICAST_ADDPATH => "RIB_IPV4_UNICAST_ADDPATH",
            st::RIB_IPV4_MULTICAST_ADDPATH => "RIB_IPV4_MULTICAST_ADDPATH",
            st::RIB_IPV6_UNICAST_ADDPATH => "RIB_IPV6_UNICAST_ADDPATH",
            st::RIB_IPV6_MULTICAST_ADDPATH => "RIB_IPV6_MULTICAST_ADDPATH",
            st::RIB_GENERIC_ADDPATH => "RIB_GENERIC_ADDPATH",
            _ => "",
        },
        (types::BGP4MP | types::BGP4MP_ET, _) => match s {
            st::STATE_CHANGE => "STATE_CHANGE",
            st::MESSAGE => "MESSAGE",
            st::MESSAGE_AS4 => "MESSAGE_AS4",
            st::STATE_CHANGE_AS4 => "STATE_CHANGE_AS4",
            st::MESSAGE_LOCAL => "MESSAGE_LOCAL",
            st::MESSAGE_AS4_LOCAL => "MESSAGE_AS4_LOCAL",
            st::MESSAGE_ADDPATH => "MESSAGE_ADDPATH",
            st::MESSAGE_AS4_ADDPATH => "MESSAGE_AS4_ADDPATH",
            st::MESSAGE_LOCAL_ADDPATH => "MESSAGE_LOCAL_ADDPATH",
            st::MESSAGE_AS4_LOCAL_ADDPATH => "MESSAGE_AS4_LOCAL_ADDPATH",
            _ => "",
        },
        _ => "",
    };
    let ty = match t {
        types::TABLE_DUMP => "TABLE_DUMP".to_owned(),
        types::TABLE_DUMP_V2 => "TABLE_DUMP_V2".to_owned(),
        types::BGP4MP => "BGP4MP".to_owned(),
        types::BGP4MP_ET => "BGP4MP_ET".to_owned(),
        _ => t.to_string(),
    };
    if sub.is_empty() {
        format!("{ty}/{s}")
    } else {
        format!("{ty}/{sub}")
    }
}

fn compression_name(c: Compression) -> &'static str {
    match c {
        Compression::None => "none",
        Compression::Gzip => "gzip",
        Compression::Bzip2 => "bzip2",
    }
}

/// (IPv4, IPv6) distinct prefixes.
fn prefix_split(s: &Stats) -> (usize, usize) {
    let v4 = s
        .prefixes
        .iter()
        .filter(|p| matches!(p, Prefix::V4(_)))
        .count();
    (v4, s.prefixes.len() - v4)
}

/// ISO-8601 UTC, with microseconds for files that carry them.
fn iso8601(out: &mut String, (secs, us): (u32, u32), micros: bool) -> std::fmt::Result {
    let days = i64::from(secs / 86_400);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    write!(
        out,
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )?;
    if micros {
        write!(out, ".{us:06}")?;
    }
    out.push('Z');
    Ok(())
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day), by
/// counting 400-year eras of 146,097 days from 0000-03-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of era, 0..=146096
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // 0..=399
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // 0..=365, from March 1
    let mp = (5 * doy + 2) / 153; // 0..=11, March = 0
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn human(out: &mut String, path: &Path, f: &FileStats) -> std::fmt::Result {
    let s = &f.stats;
    writeln!(out, "file: {}", path.display())?;
    writeln!(
        out,
        "compression: {}, {} bytes stored, {} bytes of records",
        compression_name(f.compression),
        f.file_bytes,
        f.bytes
    )?;
    writeln!(out, "records: {}", s.records + f.unknown + f.malformed)?;
    for (&(t, sub), n) in &s.by_type {
        writeln!(out, "  {}: {n}", type_name(t, sub))?;
    }
    writeln!(out, "  unknown type/subtype (skipped): {}", f.unknown)?;
    writeln!(out, "  malformed (skipped): {}", f.malformed)?;
    writeln!(out, "rib entries: {}", s.rib_entries)?;
    writeln!(
        out,
        "bgp4mp: {} messages ({} updates, {} unparsable), {} state changes",
        s.messages, f.updates, f.bad_messages, s.state_changes
    )?;
    writeln!(
        out,
        "peers: {} with routes or state changes, {} seen in any record, \
         {} in the peer index table",
        f.routed_peers,
        s.peers.len(),
        s.peer_table_size
    )?;
    if s.unresolved_peer_indexes > 0 {
        writeln!(
            out,
            "rib entries with a peer index outside the table: {}",
            s.unresolved_peer_indexes
        )?;
    }
    let (v4, v6) = prefix_split(s);
    writeln!(out, "prefixes: {} (IPv4 {v4}, IPv6 {v6})", s.prefixes.len())?;
    match (s.first_time, s.last_time) {
        (Some(a), Some(b)) => {
            let us = s.has_microseconds();
            out.push_str("time span: ");
            iso8601(out, a, us)?;
            out.push_str(" - ");
            iso8601(out, b, us)?;
            writeln!(out, " (epoch {} - {})", a.0, b.0)?;
        }
        _ => out.push_str("time span: none\n"),
    }
    match &f.error {
        Some(e) => writeln!(out, "error: {e}")?,
        None => out.push_str("error: none\n"),
    }
    out.push('\n');
    Ok(())
}

/// Appends `s` as a JSON string (RFC 8259 §7).
fn json_str(out: &mut String, s: &str) -> std::fmt::Result {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if u32::from(c) < 0x20 => write!(out, "\\u{:04x}", u32::from(c))?,
            c => out.push(c),
        }
    }
    out.push('"');
    Ok(())
}

fn json_time(out: &mut String, key: &str, t: Option<(u32, u32)>, us: bool) -> std::fmt::Result {
    write!(out, ",\"{key}\":")?;
    match t {
        Some(t) => {
            write!(
                out,
                "{{\"epoch\":{},\"microseconds\":{},\"iso\":\"",
                t.0, t.1
            )?;
            iso8601(out, t, us)?;
            out.push_str("\"}");
        }
        None => out.push_str("null"),
    }
    Ok(())
}

/// One line: the fields are listed in docs/bgpdump-format.md ("mrt stats").
fn json(out: &mut String, path: &Path, f: &FileStats) -> std::fmt::Result {
    let s = &f.stats;
    out.push_str("{\"file\":");
    json_str(out, &path.display().to_string())?;
    write!(
        out,
        ",\"compression\":\"{}\",\"file_bytes\":{},\"bytes\":{},\"records\":{},\"by_type\":{{",
        compression_name(f.compression),
        f.file_bytes,
        f.bytes,
        s.records + f.unknown + f.malformed
    )?;
    for (i, (&(t, sub), n)) in s.by_type.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_str(out, &type_name(t, sub))?;
        write!(out, ":{n}")?;
    }
    let (v4, v6) = prefix_split(s);
    write!(
        out,
        "}},\"unknown\":{},\"malformed\":{},\"rib_entries\":{},\"messages\":{},\
         \"updates\":{},\"unparsable_messages\":{},\"state_changes\":{},\"peers\":{},\
         \"peers_any_record\":{},\"peer_table_size\":{},\"unresolved_peer_indexes\":{},\"prefixes\":{},\
         \"prefixes_v4\":{v4},\"prefixes_v6\":{v6}",
        f.unknown,
        f.malformed,
        s.rib_entries,
        s.messages,
        f.updates,
        f.bad_messages,
        s.state_changes,
        f.routed_peers,
        s.peers.len(),
        s.peer_table_size,
        s.unresolved_peer_indexes,
        s.prefixes.len(),
    )?;
    let us = s.has_microseconds();
    json_time(out, "first_time", s.first_time, us)?;
    json_time(out, "last_time", s.last_time, us)?;
    out.push_str(",\"error\":");
    match &f.error {
        Some(e) => {
            write!(out, "{{\"offset\":{},\"message\":", e.offset)?;
            json_str(out, &e.kind.to_string())?;
            out.push('}');
        }
        None => out.push_str("null"),
    }
    out.push_str("}\n");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        // 2000-02-29 (leap day of a century leap year) and 2100-03-01.
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(47_541), (2100, 3, 1));
        let mut s = String::new();
        iso8601(&mut s, (1_445_565_678, 509_481), true).unwrap();
        assert_eq!(s, "2015-10-23T02:01:18.509481Z");
        s.clear();
        iso8601(&mut s, (u32::MAX, 0), false).unwrap();
        assert_eq!(s, "2106-02-07T06:28:15Z");
    }

    #[test]
    fn names() {
        assert_eq!(type_name(13, 2), "TABLE_DUMP_V2/RIB_IPV4_UNICAST");
        assert_eq!(type_name(17, 4), "BGP4MP_ET/MESSAGE_AS4");
        assert_eq!(type_name(13, 99), "TABLE_DUMP_V2/99");
        assert_eq!(type_name(48, 1), "48/1");
    }
}

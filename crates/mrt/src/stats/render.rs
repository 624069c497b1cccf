//! `tessera mrt stats` output: the text report and one JSON line per file,
//! MRT type names (RFC 6396, RFC 6397, RFC 8050) and ISO-8601 times.

use super::counts::Stats;
use super::file::FileStats;
use crate::decompress::Compression;
use crate::header::{subtypes as st, types};
use base::Prefix;
use std::fmt::{self, Write as _};
use std::path::Path;

/// `TABLE_DUMP_V2/RIB_IPV4_UNICAST` and the like (RFC 6396 §4, RFC 6397,
/// RFC 8050); numbers for codes this build does not name.
pub fn type_name(t: u16, s: u16) -> String {
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
fn iso8601(out: &mut String, (secs, us): (u32, u32), micros: bool) -> fmt::Result {
    let days = i64::from(secs / 86_400);
    let rem = secs % 86_400;
    let (y, m, d) = base::civil_from_days(days);
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

impl FileStats {
    /// The text `tessera mrt stats FILE` prints, ending in an empty line.
    pub fn write_text(&self, out: &mut String, path: &Path) -> fmt::Result {
        human(out, path, self)
    }

    /// One line of JSON (the fields are listed in docs/bgpdump-format.md,
    /// "mrt stats"), newline included.
    pub fn write_json(&self, out: &mut String, path: &Path) -> fmt::Result {
        json(out, path, self)
    }
}

fn human(out: &mut String, path: &Path, f: &FileStats) -> fmt::Result {
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
fn json_str(out: &mut String, s: &str) -> fmt::Result {
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

fn json_time(out: &mut String, key: &str, t: Option<(u32, u32)>, us: bool) -> fmt::Result {
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
fn json(out: &mut String, path: &Path, f: &FileStats) -> fmt::Result {
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

//! The `--json` form of the `-m` lines: one JSON object per line with the
//! same fields, plus what `-m` drops (microseconds, path ids on every
//! entry, extended and large communities, absent vs zero LOCAL_PREF/MED).
//! Field names are documented in docs/bgpdump-format.md ("JSON output").
//!
//! Every piece after the head starts with a comma, so the pieces compose in
//! any order and the object is closed by `}` + newline. Objects are written
//! straight into the caller's buffer: no per-line allocation.

use super::attrs::{self, Attrs};
use super::fmt::{push_ipv4, push_ipv6, push_u32};
use super::line::{push_addr, Nh};
use super::RecordInfo;

/// `{"type":"FORMAT","timestamp":T,"microseconds":U`.
pub(super) fn head(out: &mut Vec<u8>, format: &[u8], info: &RecordInfo) {
    out.extend_from_slice(b"{\"type\":");
    push_str(out, format);
    out.extend_from_slice(b",\"timestamp\":");
    push_u32(out, info.timestamp);
    out.extend_from_slice(b",\"microseconds\":");
    // Only BGP4MP_ET carries microseconds (RFC 6396 §3); bgpdump's `-m`
    // ignores the field elsewhere, and so do we.
    push_u32(
        out,
        if info.mrt_type == 17 {
            info.microseconds
        } else {
            0
        },
    );
}

/// `,"entry":"B"` (or A, W, STATE).
pub(super) fn entry(out: &mut Vec<u8>, kind: &[u8]) {
    out.extend_from_slice(b",\"entry\":");
    push_str(out, kind);
}

/// `,"peer_ip":"…","peer_as":N`.
pub(super) fn peer(out: &mut Vec<u8>, ip: &[u8; 16], v6: bool, asn: u32) {
    out.extend_from_slice(b",\"peer_ip\":\"");
    push_addr(out, ip, v6);
    out.extend_from_slice(b"\",\"peer_as\":");
    push_u32(out, asn);
}

/// `,"prefix":"ADDR/LEN"`.
pub(super) fn prefix(out: &mut Vec<u8>, p: &[u8; 16], v6: bool, len: u8) {
    out.extend_from_slice(b",\"prefix\":\"");
    push_addr(out, p, v6);
    out.push(b'/');
    push_u32(out, u32::from(len));
    out.push(b'"');
}

/// `,"path_id":N`, or `null` outside ADD-PATH (RFC 8050) records.
pub(super) fn path_id(out: &mut Vec<u8>, id: Option<u32>) {
    out.extend_from_slice(b",\"path_id\":");
    match id {
        Some(id) => push_u32(out, id),
        None => out.extend_from_slice(b"null"),
    }
}

/// Closes an object that has no attributes (W lines).
pub(super) fn end(out: &mut Vec<u8>) {
    out.extend_from_slice(b"}\n");
}

/// `,"old_state":N,"new_state":N}` and the newline.
pub(super) fn state(out: &mut Vec<u8>, old: u16, new: u16) {
    out.extend_from_slice(b",\"old_state\":");
    push_u32(out, u32::from(old));
    out.extend_from_slice(b",\"new_state\":");
    push_u32(out, u32::from(new));
    end(out);
}

/// The attribute fields of a B or A line, then `}` and the newline.
/// `merged` is the AS4-merged path (4-octet ASNs) when there is one.
pub(super) fn tail(out: &mut Vec<u8>, a: &Attrs<'_>, merged: Option<&[u8]>, nh: Nh) {
    out.extend_from_slice(b",\"as_path\":\"");
    // The path text is digits, separators and brackets (or `! Error !`),
    // none of which needs escaping.
    match (merged, a.as_path) {
        (Some(m), _) => {
            attrs::write_as_path(out, m, true);
        }
        (None, Some(p)) => {
            attrs::write_as_path(out, p, a.as_path_four);
        }
        (None, None) => {}
    }
    out.extend_from_slice(match a.origin {
        0 => b"\",\"origin\":\"IGP\",\"next_hop\":".as_slice(),
        1 => b"\",\"origin\":\"EGP\",\"next_hop\":",
        _ => b"\",\"origin\":\"INCOMPLETE\",\"next_hop\":",
    });
    match nh {
        Nh::V4(v) => {
            out.push(b'"');
            push_ipv4(out, v);
            out.push(b'"');
        }
        Nh::V6(v) => {
            out.push(b'"');
            push_ipv6(out, &v);
            out.push(b'"');
        }
        Nh::Empty => out.extend_from_slice(b"null"),
    }
    // RFC 4271 §5.1.5, §5.1.4: absent is not the same as zero, so JSON
    // keeps the difference that `-m` loses.
    out.extend_from_slice(b",\"local_pref\":");
    opt_u32(out, a.has(attrs::LOCAL_PREF).then_some(a.local_pref));
    out.extend_from_slice(b",\"med\":");
    opt_u32(out, a.has(attrs::MED).then_some(a.med));
    out.extend_from_slice(b",\"communities\":[");
    for (i, c) in a.communities.unwrap_or(&[]).chunks_exact(4).enumerate() {
        sep(out, i);
        out.push(b'"');
        attrs::push_community(out, u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
        out.push(b'"');
    }
    // RFC 8092 §3: GLOBAL:LOCAL1:LOCAL2, each a 4-octet unsigned integer.
    out.extend_from_slice(b"],\"large_communities\":[");
    for (i, c) in a
        .large_communities
        .unwrap_or(&[])
        .chunks_exact(12)
        .enumerate()
    {
        sep(out, i);
        out.push(b'"');
        for (k, w) in c.chunks_exact(4).enumerate() {
            if k > 0 {
                out.push(b':');
            }
            push_u32(out, u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
        }
        out.push(b'"');
    }
    // RFC 4360 §2: 8 octets whose meaning depends on the type; printed as
    // 16 hex digits so that no type is lost or mis-decoded.
    out.extend_from_slice(b"],\"extended_communities\":[");
    for (i, c) in a.ext_communities.unwrap_or(&[]).chunks_exact(8).enumerate() {
        sep(out, i);
        out.push(b'"');
        for &b in c {
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        }
        out.push(b'"');
    }
    out.extend_from_slice(if a.has(attrs::ATOMIC_AGGREGATE) {
        b"],\"atomic_aggregate\":true,\"aggregator\":".as_slice()
    } else {
        b"],\"atomic_aggregate\":false,\"aggregator\":"
    });
    // Same test as the `-m` AGGREGATOR field.
    if a.aggr_addr != [0xff; 4] {
        out.extend_from_slice(b"{\"as\":");
        push_u32(out, a.aggr_as);
        out.extend_from_slice(b",\"ip\":\"");
        push_ipv4(out, a.aggr_addr);
        out.extend_from_slice(b"\"}");
    } else {
        out.extend_from_slice(b"null");
    }
    end(out);
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn sep(out: &mut Vec<u8>, i: usize) {
    if i > 0 {
        out.push(b',');
    }
}

fn opt_u32(out: &mut Vec<u8>, v: Option<u32>) {
    match v {
        Some(v) => push_u32(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

/// Appends `s` as a JSON string (RFC 8259 §7): quotes, backslashes and
/// control characters escaped; other bytes copied (our text is ASCII).
pub(super) fn push_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0..=0x1f => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xf)]);
            }
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

//! The `-m` lines themselves: TABLE_DUMP, TABLE_DUMP_V2 and BGP4MP(_ET).
//! In JSON mode the same walk writes the pieces of `super::json` instead.

use super::attrs::{self, Attrs, Z};
use super::fmt::{push_ipv4, push_ipv6, push_u32};
use super::json;
use super::{Dumper, RecordInfo};

/// What goes in the NEXT_HOP field.
#[derive(Clone, Copy)]
pub(super) enum Nh {
    V4([u8; 4]),
    V6([u8; 16]),
    /// bgpdump leaves its buffer unset for odd MP next-hop lengths.
    Empty,
}

fn first4(a: &[u8; 16]) -> [u8; 4] {
    [a[0], a[1], a[2], a[3]]
}

pub(super) fn push_addr(out: &mut Vec<u8>, a: &[u8; 16], v6: bool) {
    if v6 {
        push_ipv6(out, a);
    } else {
        push_ipv4(out, first4(a));
    }
}

/// `AS_PATH|ORIGIN|NEXT_HOP|LOCAL_PREF|MED|COMMUNITIES|AG|AGGREGATOR|\n`.
/// `merged` is the AS4-merged path when there is one (4-octet ASNs).
fn tail(out: &mut Vec<u8>, a: &Attrs<'_>, merged: Option<&[u8]>, nh: Nh) {
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
        0 => b"|IGP|".as_slice(),
        1 => b"|EGP|",
        _ => b"|INCOMPLETE|",
    });
    match nh {
        Nh::V4(v) => push_ipv4(out, v),
        Nh::V6(v) => push_ipv6(out, &v),
        Nh::Empty => {}
    }
    out.push(b'|');
    push_u32(
        out,
        if a.has(attrs::LOCAL_PREF) {
            a.local_pref
        } else {
            0
        },
    );
    out.push(b'|');
    push_u32(out, if a.has(attrs::MED) { a.med } else { 0 });
    out.push(b'|');
    if let Some(c) = a.communities {
        attrs::write_communities(out, c);
    }
    out.extend_from_slice(if a.has(attrs::ATOMIC_AGGREGATE) {
        b"|AG|".as_slice()
    } else {
        b"|NAG|"
    });
    if a.aggr_addr != [0xff; 4] {
        push_u32(out, a.aggr_as);
        out.push(b' ');
        push_ipv4(out, a.aggr_addr);
    }
    out.extend_from_slice(b"|\n");
}

/// Calls `f(path_id, len, addr)` for each prefix of an NLRI list, reading
/// like bgpdump's `read_prefix_list`: it stops at a prefix that does not
/// fit, and keeps host bits as received.
fn prefixes(data: &[u8], add_path: bool, mut f: impl FnMut(u32, u8, &[u8; 16])) {
    let mut z = Z::new(data);
    while z.left() > 0 {
        let id = if add_path { z.u32() } else { 0 };
        let len = z.u8();
        let n = usize::from(len).div_ceil(8);
        if z.left() < n {
            break;
        }
        let a = z.addr(n);
        f(id, len, &a);
    }
}

/// The RIB next hop: MP_REACH_NLRI's (IPv6 unicast slot first, where the
/// abbreviated RIB form lands, then IPv4 unicast), else NEXT_HOP.
fn rib_next_hop(a: &Attrs<'_>) -> Nh {
    let mp = if a.has(attrs::MP_REACH) {
        a.reach[2][1].or(a.reach[1][1])
    } else {
        None
    };
    match mp {
        Some(r) => match r.nh_len {
            4 => Nh::V4(first4(&r.nh)),
            16 | 32 => Nh::V6(r.nh),
            _ => Nh::Empty,
        },
        None => Nh::V4(a.next_hop),
    }
}

impl Dumper {
    /// Legacy TABLE_DUMP (RFC 6396 §4.2).
    pub(super) fn table_dump(&mut self, info: &RecordInfo, body: &[u8], out: &mut Vec<u8>) {
        let sub = info.subtype;
        if !(1..=4).contains(&sub) {
            return;
        }
        let (v6, four) = (sub == 2 || sub == 4, sub >= 3);
        let alen = if v6 { 16 } else { 4 };
        let mut z = Z::new(body);
        z.skip(4); // view, sequence
        let prefix = z.addr(alen);
        let mask = z.u8();
        z.skip(5); // status, originated time
        let peer = z.addr(alen);
        let peer_as = z.asn(four);
        let mut a = Attrs::read(&mut z, four);
        let merged = !four && a.merge_as4(&mut self.merged, &mut self.tmp);

        let nh = match a.reach[2][1] {
            Some(r) if a.has(attrs::MP_REACH) => Nh::V6(r.nh),
            _ => Nh::V4(a.next_hop),
        };
        self.set_head(b"TABLE_DUMP", info);
        let merged = merged.then_some(self.merged.as_slice());
        out.extend_from_slice(&self.head);
        if self.json {
            // Same address families as the `-m` line below.
            json::entry(out, b"B");
            json::peer(out, &peer, sub == 2, peer_as);
            json::prefix(out, &prefix, sub == 2, mask);
            json::path_id(out, None);
            json::tail(out, &a, merged, nh);
            return;
        }
        out.extend_from_slice(b"B|");
        // bgpdump prints IPv6 only for subtype 2 (AFI_IPv6), not 4.
        push_addr(out, &peer, sub == 2);
        out.push(b'|');
        push_u32(out, peer_as);
        out.push(b'|');
        push_addr(out, &prefix, sub == 2);
        out.push(b'/');
        push_u32(out, u32::from(mask));
        out.push(b'|');
        tail(out, &a, merged, nh);
    }

    /// TABLE_DUMP_V2 (RFC 6396 §4.3, RFC 8050 for ADD-PATH).
    pub(super) fn table_dump_v2(&mut self, info: &RecordInfo, body: &[u8], out: &mut Vec<u8>) {
        match info.subtype {
            1 => self.peer_index_table(body),
            2 | 4 | 8 | 10 => self.rib(info, body, out),
            _ => {}
        }
    }

    fn peer_index_table(&mut self, body: &[u8]) {
        self.peer_text.clear();
        self.peer_end.clear();
        let mut z = Z::new(body);
        z.skip(4); // collector BGP ID
        let name = usize::from(z.u16());
        z.skip(name);
        for _ in 0..z.u16() {
            let t = z.u8();
            z.skip(4); // peer BGP ID
            let v6 = t & 1 != 0;
            let ip = z.addr(if v6 { 16 } else { 4 });
            let asn = z.asn(t & 2 != 0);
            if self.json {
                json::peer(&mut self.peer_text, &ip, v6, asn);
            } else {
                push_addr(&mut self.peer_text, &ip, v6);
                self.peer_text.push(b'|');
                push_u32(&mut self.peer_text, asn);
                self.peer_text.push(b'|');
            }
            // Peer text is at most ~60 bytes a peer and 65535 peers.
            self.peer_end.push(self.peer_text.len() as u32);
        }
    }

    fn peer(&self, idx: u16) -> Option<&[u8]> {
        let i = usize::from(idx);
        let end = *self.peer_end.get(i)? as usize;
        let start = if i == 0 {
            0
        } else {
            *self.peer_end.get(i - 1)? as usize
        };
        self.peer_text.get(start..end)
    }

    fn rib(&mut self, info: &RecordInfo, body: &[u8], out: &mut Vec<u8>) {
        let v6 = info.subtype == 4 || info.subtype == 10;
        let add_path = info.subtype >= 8;
        self.set_head(
            if add_path {
                b"TABLE_DUMP2_AP"
            } else {
                b"TABLE_DUMP2"
            },
            info,
        );
        let mut z = Z::new(body);
        z.skip(4); // sequence
        let len = z.u8();
        let prefix = z.addr(usize::from(len).div_ceil(8));
        self.field.clear();
        if self.json {
            json::entry(&mut self.head, b"B");
            json::prefix(&mut self.field, &prefix, v6, len);
        } else {
            self.head.extend_from_slice(b"B|");
            push_addr(&mut self.field, &prefix, v6);
            self.field.push(b'/');
            push_u32(&mut self.field, u32::from(len));
            self.field.push(b'|');
        }
        for _ in 0..z.u16() {
            let idx = z.u16();
            z.skip(4); // originated time
            let path_id = if add_path { z.u32() } else { 0 };
            let a = Attrs::read(&mut z, true);
            let Some(peer) = self.peer(idx) else {
                self.skipped += 1;
                continue;
            };
            out.extend_from_slice(&self.head);
            out.extend_from_slice(peer);
            out.extend_from_slice(&self.field);
            if self.json {
                json::path_id(out, add_path.then_some(path_id));
                json::tail(out, &a, None, rib_next_hop(&a));
                continue;
            }
            if add_path {
                push_u32(out, path_id);
                out.push(b'|');
            }
            tail(out, &a, None, rib_next_hop(&a));
        }
    }

    /// BGP4MP and BGP4MP_ET (RFC 6396 §4.4, §4.5; RFC 8050 ADD-PATH).
    pub(super) fn bgp4mp(&mut self, info: &RecordInfo, body: &[u8], out: &mut Vec<u8>) {
        match info.subtype {
            0 | 5 => self.state_change(info, body, out),
            1 | 4 | 6..=11 => self.message(info, body, out),
            _ => {}
        }
    }

    fn state_change(&mut self, info: &RecordInfo, body: &[u8], out: &mut Vec<u8>) {
        let mut z = Z::new(body);
        let peer_as = z.asn(info.subtype == 5);
        z.asn(info.subtype == 5);
        let (mut peer, mut v6) = ([0u8; 16], false);
        // bgpdump's work-around for an old Zebra bug: 8-byte state changes.
        if body.len() != 8 {
            z.skip(2); // interface index
            match z.u16() {
                1 if body.len() == 20 || body.len() == 24 => peer = z.addr(4),
                2 if body.len() == 44 || body.len() == 48 => {
                    peer = z.addr(16);
                    v6 = true;
                }
                _ => return,
            }
            z.skip(if v6 { 16 } else { 4 });
        }
        let (old, new) = (z.u16(), z.u16());
        self.set_head(
            if info.mrt_type == 17 {
                b"BGP4MP_ET"
            } else {
                b"BGP4MP"
            },
            info,
        );
        out.extend_from_slice(&self.head);
        if self.json {
            json::entry(out, b"STATE");
            json::peer(out, &peer, v6, peer_as);
            json::state(out, old, new);
            return;
        }
        out.extend_from_slice(b"STATE|");
        push_addr(out, &peer, v6);
        out.push(b'|');
        push_u32(out, peer_as);
        out.push(b'|');
        push_u32(out, u32::from(old));
        out.push(b'|');
        push_u32(out, u32::from(new));
        out.push(b'\n');
    }

    fn message(&mut self, info: &RecordInfo, body: &[u8], out: &mut Vec<u8>) {
        let sub = info.subtype;
        let four = matches!(sub, 4 | 7 | 9 | 11);
        let local = matches!(sub, 6 | 7 | 10 | 11);
        let add_path = sub >= 8;
        let mut z = Z::new(body);
        // The first AS/address on the wire is the peer's (RFC 6396 §4.4.2);
        // bgpdump prints it for received and for _LOCAL (sent) messages.
        let peer_as = z.asn(four);
        z.asn(four);
        let ifindex = z.u16();
        let (peer, v6, marker_ok) = match z.u16() {
            1 => {
                let p = z.addr(4);
                z.skip(4);
                (p, false, z.arr::<16>() == [0xff; 16])
            }
            2 => {
                let p = z.addr(16);
                z.skip(16);
                (p, true, z.arr::<16>() == [0xff; 16])
            }
            // Zebra wrote OPENs without addresses or the first 4 marker
            // bytes; bgpdump copes, and so do we.
            0xffff if ifindex == 0xffff => ([0; 16], false, z.arr::<12>() == [0xff; 12]),
            _ => return,
        };
        if !marker_ok {
            return;
        }
        let size = i32::from(z.u16()) - 18;
        let mut m = Z::new(z.take(usize::try_from(size).unwrap_or(usize::MAX)));
        if m.u8() != 2 {
            return; // only UPDATEs print in -m mode
        }
        let wlen = usize::from(m.u16());
        let withdrawn = m.take(wlen);
        let mut a = Attrs::read(&mut m, four);
        let nlri = m.rest();
        let merged = !four && a.merge_as4(&mut self.merged, &mut self.tmp);

        let format: &[u8] = match (info.mrt_type == 17, local, add_path) {
            (false, false, false) => b"BGP4MP",
            (false, false, true) => b"BGP4MP_AP",
            (false, true, false) => b"BGP4MP_LOCAL",
            (false, true, true) => b"BGP4MP_LOCAL_AP",
            (true, false, false) => b"BGP4MP_ET",
            (true, false, true) => b"BGP4MP_ET_AP",
            (true, true, false) => b"BGP4MP_ET_LOCAL",
            (true, true, true) => b"BGP4MP_ET_LOCAL_AP",
        };
        self.set_head(format, info);
        self.field.clear();
        if self.json {
            json::peer(&mut self.field, &peer, v6, peer_as);
        } else {
            push_addr(&mut self.field, &peer, v6);
            self.field.push(b'|');
            push_u32(&mut self.field, peer_as);
            self.field.push(b'|');
        }

        let (head, field, js) = (&self.head, &self.field, self.json);
        let w = |out: &mut Vec<u8>, data: &[u8], pv6: bool| {
            prefixes(data, add_path, |id, len, p| {
                out.extend_from_slice(head);
                if js {
                    json::entry(out, b"W");
                    out.extend_from_slice(field);
                    json::prefix(out, p, pv6, len);
                    json::path_id(out, add_path.then_some(id));
                    json::end(out);
                    return;
                }
                out.extend_from_slice(b"W|");
                out.extend_from_slice(field);
                push_addr(out, p, pv6);
                out.push(b'/');
                push_u32(out, u32::from(len));
                if add_path {
                    out.push(b'|');
                    push_u32(out, id);
                }
                out.push(b'\n');
            });
        };
        w(out, withdrawn, false);
        for afi in 1..=2 {
            for safi in 1..=3 {
                if let Some(d) = a.unreach[afi][safi] {
                    w(out, d, afi == 2);
                }
            }
        }

        let merged = merged.then_some(self.merged.as_slice());
        let ann = |out: &mut Vec<u8>, data: &[u8], pv6: bool, nh: Nh| {
            prefixes(data, add_path, |id, len, p| {
                out.extend_from_slice(head);
                if js {
                    json::entry(out, b"A");
                    out.extend_from_slice(field);
                    json::prefix(out, p, pv6, len);
                    json::path_id(out, add_path.then_some(id));
                    json::tail(out, &a, merged, nh);
                    return;
                }
                out.extend_from_slice(b"A|");
                out.extend_from_slice(field);
                push_addr(out, p, pv6);
                out.push(b'/');
                push_u32(out, u32::from(len));
                out.push(b'|');
                if add_path {
                    push_u32(out, id);
                    out.push(b'|');
                }
                tail(out, &a, merged, nh);
            });
        };
        ann(out, nlri, false, Nh::V4(a.next_hop));
        for afi in 1..=2 {
            for safi in 1..=3 {
                if let Some(r) = a.reach[afi][safi] {
                    let nh = if afi == 2 {
                        Nh::V6(r.nh)
                    } else {
                        Nh::V4(first4(&r.nh))
                    };
                    ann(out, r.nlri, afi == 2, nh);
                }
            }
        }
    }
}

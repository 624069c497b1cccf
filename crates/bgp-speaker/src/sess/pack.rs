//! Packing UPDATEs across RIB parts at a connection's writer (issue 17).
//!
//! Each RIB part (shard thread, or stripe) owns some prefixes and packs
//! its own UPDATEs, so a received UPDATE whose prefixes fall into two
//! parts leaves as two UPDATEs with the same path attributes. The writer
//! sees every part's encoded buffers for its connection; before writing
//! what is queued it plans the bytes again: plain IPv4 announcements
//! (no withdrawn routes, NLRI in the NLRI field) with byte-equal path
//! attributes are joined into the first of them while the message fits
//! the session's maximum size (4096 octets, 65535 with RFC 8654 extended
//! messages). Nothing is copied: a joined message is a fresh 19-octet
//! header, the first message's body and the later messages' NLRI, written
//! with one `writev` (see [`Plan::segs`]); every other message is written
//! from its buffer as it is.
//!
//! Order: a joined message moves ahead of what was queued between it and
//! the message it joins. That is safe for different prefixes only, so
//! the window keeps the set of the prefixes (and path identifiers) it
//! has seen (withdrawn or announced); a message with one seen before
//! closes the window ("seal"): nothing after it joins a message before it.
//! A message that is not an UPDATE (BoRR/EoRR), an End-of-RIB, an UPDATE
//! with its routes in MP_REACH/MP_UNREACH only, or one that cannot be read
//! also seals, and is written where it stands. UPDATEs with withdrawn
//! routes are written where they stand too and mark their prefixes.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use bgp_wire::consts::msg_type;
use bgp_wire::HEADER_LEN;
use bytes::Bytes;

/// Marks the segments of [`Plan::heads`] (new headers of joined messages).
pub const HEADS: u32 = u32::MAX;

const NONE: u32 = u32::MAX;

/// One piece of the output: bytes `start..end` of window buffer `buf`, or
/// of [`Plan::heads`] when `buf` is [`HEADS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seg {
    pub buf: u32,
    pub start: u32,
    pub end: u32,
    /// The piece ends a message: an urgent message may be written after it.
    pub ends_msg: bool,
    /// UPDATEs and ROUTE-REFRESHes that end in this piece.
    pub updates: u32,
    pub refreshes: u32,
}

/// An output message: the first input message `buf[start..end]`, then the
/// NLRI of the parts chained from `first`.
#[derive(Clone, Copy, Debug)]
struct Group {
    buf: u32,
    start: u32,
    end: u32,
    /// Where its path attributes are (for the equality check).
    attrs: (u32, u32),
    /// Output length so far.
    len: u32,
    first: u32,
    last: u32,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Update,
    Refresh,
    Other,
}

/// NLRI of a later message joined to a group.
#[derive(Clone, Copy, Debug)]
struct Part {
    buf: u32,
    start: u32,
    end: u32,
    next: u32,
}

/// The key is already a hash, or a prefix key that one multiply mixes.
/// (An exact set: a bitmap of hashes sealed on false hits every few
/// hundred messages, which packed almost nothing in (c10).)
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
    fn write_u128(&mut self, v: u128) {
        let x = (v as u64) ^ ((v >> 64) as u64).rotate_left(29);
        self.0 = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The writer's packing state: its settings and buffers reused from one
/// window to the next (no allocation per message once warm).
#[derive(Default)]
pub struct Plan {
    /// The session's largest message; 0 packs nothing (before the session
    /// is Established, or when packing is off).
    max: usize,
    /// IPv4 unicast NLRI carry RFC 7911 path identifiers.
    add_path: bool,
    groups: Vec<Group>,
    parts: Vec<Part>,
    by_attrs: HashMap<u64, u32, BuildHasherDefault<IdHasher>>,
    seen: HashSet<u128, BuildHasherDefault<IdHasher>>,
    heads: Vec<u8>,
    segs: Vec<Seg>,
    /// UPDATEs joined into an earlier one, over the plan's life.
    joined: u64,
}

impl Plan {
    /// Packing for a session whose largest message is `max` octets (4096,
    /// or 65535 with RFC 8654) and whose IPv4 unicast NLRI carry path
    /// identifiers when `add_path` (RFC 7911).
    pub fn set_session(&mut self, max: usize, add_path: bool) {
        self.max = max.min(u16::MAX as usize);
        self.add_path = add_path;
    }

    /// The output pieces of the last [`Plan::plan`], in order.
    pub fn segs(&self) -> &[Seg] {
        &self.segs
    }

    /// The new headers the [`HEADS`] segments point into.
    pub fn heads(&self) -> &[u8] {
        &self.heads
    }

    /// UPDATEs joined into an earlier one so far.
    pub fn joined(&self) -> u64 {
        self.joined
    }

    /// Plans the writing of `bufs` (whole messages each, in queue order).
    pub fn plan(&mut self, bufs: &[Bytes]) {
        self.groups.clear();
        self.parts.clear();
        self.heads.clear();
        self.segs.clear();
        self.seal();
        for (bi, b) in bufs.iter().enumerate() {
            let bi = bi as u32;
            let mut off = 0usize;
            while off < b.len() {
                let len = b
                    .get(off + 16..off + 18)
                    .map_or(0, |l| u16::from_be_bytes([l[0], l[1]]) as usize);
                if len < HEADER_LEN || off + len > b.len() {
                    // Not a message boundary (cannot happen with our
                    // encoder): the rest as it is.
                    self.seal();
                    self.alone(bi, off, b.len(), Kind::Other);
                    break;
                }
                self.message(bufs, bi, off, off + len);
                off += len;
            }
        }
        self.emit();
    }

    /// Nothing after this point joins a group before it.
    fn seal(&mut self) {
        // Clearing costs the capacity: only when something is in it.
        if !self.by_attrs.is_empty() {
            self.by_attrs.clear();
        }
        if !self.seen.is_empty() {
            self.seen.clear();
        }
    }

    fn alone(&mut self, buf: u32, start: usize, end: usize, kind: Kind) {
        self.groups.push(Group {
            buf,
            start: start as u32,
            end: end as u32,
            attrs: (0, 0),
            len: (end - start) as u32,
            first: NONE,
            last: NONE,
            kind,
        });
    }

    fn message(&mut self, bufs: &[Bytes], bi: u32, start: usize, end: usize) {
        let b = &bufs[bi as usize];
        let ty = b[start + 18];
        if ty != msg_type::UPDATE {
            let kind = if ty == msg_type::ROUTE_REFRESH {
                Kind::Refresh
            } else {
                Kind::Other
            };
            self.seal();
            self.alone(bi, start, end, kind);
            return;
        }
        let Some((w, a, n)) = update_fields(&b[start + HEADER_LEN..end]) else {
            self.seal();
            self.alone(bi, start, end, Kind::Update);
            return;
        };
        let body = start + HEADER_LEN;
        if self.max == 0 || (w.0 == w.1 && n.0 == n.1) {
            // End-of-RIB, routes in MP_REACH/MP_UNREACH only, or packing
            // off: stays where it is, and nothing moves past it.
            self.seal();
            self.alone(bi, start, end, Kind::Update);
            return;
        }
        let wd = &b[body + w.0..body + w.1];
        let nl = &b[body + n.0..body + n.1];
        if self.mark(wd, nl).is_none() {
            // Unreadable NLRI: stays where it is.
            self.seal();
            self.alone(bi, start, end, Kind::Update);
            return;
        }
        if !wd.is_empty() || a.0 == a.1 {
            self.alone(bi, start, end, Kind::Update);
            return;
        }
        let attrs = &b[body + a.0..body + a.1];
        let h = hash(attrs);
        let nlen = (n.1 - n.0) as u32;
        let join = self.by_attrs.get(&h).copied().filter(|&g| {
            let grp = &self.groups[g as usize];
            let same = bufs
                .get(grp.buf as usize)
                .and_then(|gb| gb.get(grp.attrs.0 as usize..grp.attrs.1 as usize))
                == Some(attrs);
            same && (grp.len + nlen) as usize <= self.max
        });
        match join {
            Some(g) => {
                let p = self.parts.len() as u32;
                self.parts.push(Part {
                    buf: bi,
                    start: (body + n.0) as u32,
                    end: (body + n.1) as u32,
                    next: NONE,
                });
                let grp = &mut self.groups[g as usize];
                if grp.last == NONE {
                    grp.first = p;
                } else {
                    self.parts[grp.last as usize].next = p;
                }
                grp.last = p;
                grp.len += nlen;
                self.joined += 1;
            }
            None => {
                let g = self.groups.len() as u32;
                self.groups.push(Group {
                    buf: bi,
                    start: start as u32,
                    end: end as u32,
                    attrs: ((body + a.0) as u32, (body + a.1) as u32),
                    len: (end - start) as u32,
                    first: NONE,
                    last: NONE,
                    kind: Kind::Update,
                });
                self.by_attrs.insert(h, g);
            }
        }
    }

    /// Marks the prefixes of `wd` and `nl` as seen; seals first when one
    /// was seen before. None: not readable as IPv4 NLRI.
    fn mark(&mut self, wd: &[u8], nl: &[u8]) -> Option<()> {
        if self.mark_all(wd, nl)? {
            // A repeat: seal (which also clears what this message marked
            // so far) and mark it again in the new window.
            self.seal();
            self.mark_all(wd, nl)?;
        }
        Some(())
    }

    /// Marks every prefix; true when one was marked before.
    fn mark_all(&mut self, wd: &[u8], nl: &[u8]) -> Option<bool> {
        let mut hit = false;
        for field in [wd, nl] {
            let mut i = 0;
            while i < field.len() {
                let (k, next) = prefix_key(field, i, self.add_path)?;
                hit |= !self.seen.insert(k);
                i = next;
            }
        }
        Some(hit)
    }

    /// Turns the groups into output pieces; joined groups get a new header.
    fn emit(&mut self) {
        for gi in 0..self.groups.len() {
            let g = self.groups[gi];
            let (updates, refreshes) = match g.kind {
                Kind::Update => (1, 0),
                Kind::Refresh => (0, 1),
                Kind::Other => (0, 0),
            };
            if g.first == NONE {
                self.push(g.buf, g.start, g.end, true, updates, refreshes);
                continue;
            }
            let h = self.heads.len() as u32;
            self.heads.extend_from_slice(&[0xff; 16]);
            self.heads.extend_from_slice(&(g.len as u16).to_be_bytes());
            self.heads.push(msg_type::UPDATE);
            self.push(HEADS, h, h + HEADER_LEN as u32, false, 0, 0);
            self.push(g.buf, g.start + HEADER_LEN as u32, g.end, false, 0, 0);
            let mut p = g.first;
            while p != NONE {
                let part = self.parts[p as usize];
                let last = part.next == NONE;
                self.push(part.buf, part.start, part.end, last, u32::from(last), 0);
                p = part.next;
            }
        }
    }

    fn push(
        &mut self,
        buf: u32,
        start: u32,
        end: u32,
        ends_msg: bool,
        updates: u32,
        refreshes: u32,
    ) {
        if let Some(s) = self.segs.last_mut() {
            if s.buf == buf && s.end == start && buf != HEADS {
                s.end = end;
                s.ends_msg = ends_msg;
                s.updates += updates;
                s.refreshes += refreshes;
                return;
            }
        }
        self.segs.push(Seg {
            buf,
            start,
            end,
            ends_msg,
            updates,
            refreshes,
        });
    }
}

/// Offsets in an UPDATE body (after the header) of its withdrawn routes,
/// path attributes and NLRI (RFC 4271 §4.3); None when they do not add up.
type Range = (usize, usize);
fn update_fields(body: &[u8]) -> Option<(Range, Range, Range)> {
    let wl = u16::from_be_bytes([*body.first()?, *body.get(1)?]) as usize;
    let a0 = 2 + wl + 2;
    let al = u16::from_be_bytes([*body.get(2 + wl)?, *body.get(3 + wl)?]) as usize;
    let n0 = a0 + al;
    if n0 > body.len() {
        return None;
    }
    Some(((2, 2 + wl), (a0, n0), (n0, body.len())))
}

/// The IPv4 prefix (with its path identifier) at `i` as one key, and
/// where the next one starts.
fn prefix_key(f: &[u8], i: usize, add_path: bool) -> Option<(u128, usize)> {
    let mut k: u128 = 0;
    let mut i = i;
    if add_path {
        let id = f.get(i..i + 4)?;
        k = u128::from(u32::from_be_bytes([id[0], id[1], id[2], id[3]])) << 40;
        i += 4;
    }
    let len = *f.get(i)?;
    if len > 32 {
        return None;
    }
    let n = usize::from(len).div_ceil(8);
    let bytes = f.get(i + 1..i + 1 + n)?;
    let mut v = [0u8; 4];
    v[..n].copy_from_slice(bytes);
    k |= u128::from(u32::from_be_bytes(v)) | (u128::from(len) << 32);
    Some((k, i + 1 + n))
}

/// A cheap hash of a path attribute block (equality is checked on the
/// bytes).
fn hash(b: &[u8]) -> u64 {
    let mut h: u64 = b.len() as u64;
    let mut c = b.chunks_exact(8);
    for w in &mut c {
        let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        h = (h.rotate_left(5) ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    for x in c.remainder() {
        h = (h.rotate_left(5) ^ u64::from(*x)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An UPDATE: withdrawn /24s, path attributes, announced /24s (each
    /// prefix as its third octet under 10.0.x.0/24; path identifiers when
    /// `ids`).
    fn update(wd: &[u8], attrs: &[u8], nlri: &[u8], ids: bool) -> Vec<u8> {
        let field = |ps: &[u8]| {
            let mut f = Vec::new();
            for p in ps {
                if ids {
                    f.extend_from_slice(&7u32.to_be_bytes());
                }
                f.extend_from_slice(&[24, 10, 0, *p]);
            }
            f
        };
        let (w, n) = (field(wd), field(nlri));
        let mut m = vec![0xff; 16];
        let len = HEADER_LEN + 4 + w.len() + attrs.len() + n.len();
        m.extend_from_slice(&(len as u16).to_be_bytes());
        m.push(msg_type::UPDATE);
        m.extend_from_slice(&(w.len() as u16).to_be_bytes());
        m.extend_from_slice(&w);
        m.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
        m.extend_from_slice(attrs);
        m.extend_from_slice(&n);
        m
    }

    /// ORIGIN IGP, an AS_PATH of one AS, NEXT_HOP: `asn` tells sets apart.
    fn attrs(asn: u8) -> Vec<u8> {
        vec![
            0x40, 1, 1, 0, 0x40, 2, 4, 2, 1, 0, asn, 0x40, 3, 4, 192, 0, 2, 1,
        ]
    }

    fn eor() -> Vec<u8> {
        update(&[], &[], &[], false)
    }

    /// What the plan writes, as bytes.
    fn written(p: &Plan, bufs: &[Bytes]) -> Vec<u8> {
        let mut out = Vec::new();
        for s in p.segs() {
            let src: &[u8] = if s.buf == HEADS {
                p.heads()
            } else {
                &bufs[s.buf as usize]
            };
            out.extend_from_slice(&src[s.start as usize..s.end as usize]);
        }
        out
    }

    fn run(max: usize, add_path: bool, bufs: &[Vec<u8>]) -> (Plan, Vec<u8>) {
        let bufs: Vec<Bytes> = bufs.iter().map(|b| Bytes::copy_from_slice(b)).collect();
        let mut p = Plan::default();
        p.set_session(max, add_path);
        p.plan(&bufs);
        let w = written(&p, &bufs);
        (p, w)
    }

    fn cat(msgs: &[Vec<u8>]) -> Vec<u8> {
        msgs.concat()
    }

    #[test]
    fn equal_attributes_of_two_parts_become_one_update() {
        // Part 0's buffer, then part 1's: the same attribute set each.
        let b0 = cat(&[
            update(&[], &attrs(1), &[1, 3], false),
            update(&[], &attrs(2), &[5], false),
        ]);
        let b1 = cat(&[
            update(&[], &attrs(1), &[2, 4], false),
            update(&[], &attrs(2), &[6], false),
        ]);
        let (p, out) = run(4096, false, &[b0, b1]);
        let want = cat(&[
            update(&[], &attrs(1), &[1, 3, 2, 4], false),
            update(&[], &attrs(2), &[5, 6], false),
        ]);
        assert_eq!(out, want);
        assert_eq!(p.joined(), 2);
        assert_eq!(p.segs().iter().map(|s| s.updates).sum::<u32>(), 2);
        // A message boundary after each output message only.
        assert_eq!(p.segs().iter().filter(|s| s.ends_msg).count(), 2);
    }

    #[test]
    fn off_until_the_session_says_so() {
        let b0 = update(&[], &attrs(1), &[1], false);
        let b1 = update(&[], &attrs(1), &[2], false);
        let (p, out) = run(0, false, &[b0.clone(), b1.clone()]);
        assert_eq!(out, cat(&[b0, b1]));
        assert_eq!(p.joined(), 0);
        assert_eq!(p.segs().iter().map(|s| s.updates).sum::<u32>(), 2);
    }

    #[test]
    fn withdrawals_in_between_keep_the_order_of_a_prefix() {
        // 10.0.2.0/24 is withdrawn, then announced with the set of the
        // first message: the announcement must stay after the withdrawal.
        // 10.0.3.0/24 (another prefix) may move ahead of it.
        let msgs = [
            update(&[], &attrs(1), &[1], false),
            update(&[2, 9], &[], &[], false),
            update(&[], &attrs(1), &[3], false),
            update(&[], &attrs(1), &[2], false),
            update(&[], &attrs(1), &[4], false),
        ];
        let (_, out) = run(4096, false, &[cat(&msgs)]);
        let want = cat(&[
            update(&[], &attrs(1), &[1, 3], false),
            update(&[2, 9], &[], &[], false),
            update(&[], &attrs(1), &[2, 4], false),
        ]);
        assert_eq!(out, want);
    }

    #[test]
    fn a_prefix_announced_twice_is_not_reordered() {
        let msgs = [
            update(&[], &attrs(1), &[1], false),
            update(&[], &attrs(2), &[2], false),
            update(&[], &attrs(1), &[2], false),
        ];
        let (p, out) = run(4096, false, &[cat(&msgs)]);
        assert_eq!(out, cat(&msgs));
        assert_eq!(p.joined(), 0);
    }

    #[test]
    fn end_of_rib_and_refresh_markers_stay_where_they_are() {
        let mut refresh = vec![0xff; 16];
        refresh.extend_from_slice(&23u16.to_be_bytes());
        refresh.extend_from_slice(&[msg_type::ROUTE_REFRESH, 0, 1, 2, 1]);
        let msgs = [
            update(&[], &attrs(1), &[1], false),
            eor(),
            update(&[], &attrs(1), &[2], false),
            refresh.clone(),
            update(&[], &attrs(1), &[3], false),
            update(&[], &attrs(1), &[4], false),
        ];
        let (p, out) = run(4096, false, &[cat(&msgs)]);
        let want = cat(&[
            update(&[], &attrs(1), &[1], false),
            eor(),
            update(&[], &attrs(1), &[2], false),
            refresh,
            update(&[], &attrs(1), &[3, 4], false),
        ]);
        assert_eq!(out, want);
        let s = p.segs();
        assert_eq!(s.iter().map(|s| s.refreshes).sum::<u32>(), 1);
        assert_eq!(s.iter().map(|s| s.updates).sum::<u32>(), 4);
    }

    /// Splits `out` into messages, checking each header.
    fn messages(out: &[u8]) -> Vec<&[u8]> {
        let mut v = Vec::new();
        let mut off = 0;
        while off < out.len() {
            assert_eq!(&out[off..off + 16], &[0xff; 16]);
            let len = u16::from_be_bytes([out[off + 16], out[off + 17]]) as usize;
            v.push(&out[off..off + len]);
            off += len;
        }
        assert_eq!(off, out.len());
        v
    }

    fn nlri_count(m: &[u8], per: usize) -> usize {
        let (_, _, n) = update_fields(&m[HEADER_LEN..]).unwrap();
        (n.1 - n.0) / per
    }

    #[test]
    fn joined_messages_respect_the_size_limit() {
        // 250 messages of one prefix each (as from many parts), one
        // attribute set: as few messages as fit, none above the limit.
        for (max, ids, per) in [
            (4096, false, 4),
            (65535, false, 4),
            (4096, true, 8),
            (100, false, 4),
        ] {
            let msgs: Vec<Vec<u8>> = (0..250u8)
                .map(|p| update(&[], &attrs(1), &[p], ids))
                .collect();
            let bufs: Vec<Vec<u8>> = msgs.clone();
            let (_, out) = run(max, ids, &bufs);
            let got = messages(&out);
            let mut total = 0;
            for m in &got {
                assert!(m.len() <= max.max(msgs[0].len()), "{} > {max}", m.len());
                total += nlri_count(m, per);
            }
            assert_eq!(total, 250);
            let room = (max - HEADER_LEN - 4 - attrs(1).len()) / per;
            assert_eq!(got.len(), 250usize.div_ceil(room.max(1)), "max {max}");
        }
    }

    #[test]
    fn path_identifiers_are_part_of_the_prefix() {
        // With ADD-PATH the same prefix under one id twice is a repeat.
        let msgs = [
            update(&[], &attrs(1), &[1], true),
            update(&[], &attrs(2), &[1], true),
            update(&[], &attrs(1), &[1], true),
        ];
        let (p, out) = run(4096, true, &[cat(&msgs)]);
        assert_eq!(out, cat(&msgs));
        assert_eq!(p.joined(), 0);
    }

    #[test]
    fn bad_input_is_written_as_it_is() {
        let mut junk = update(&[], &attrs(1), &[1], false);
        junk.extend_from_slice(&[0xff; 10]);
        let b1 = update(&[], &attrs(1), &[2], false);
        let (_, out) = run(4096, false, &[junk.clone(), b1.clone()]);
        assert_eq!(out, cat(&[junk, b1]));
        // A prefix length above 32 in the NLRI: unreadable, left alone.
        let mut odd = update(&[], &attrs(1), &[3], false);
        let l = odd.len();
        odd[l - 4] = 33;
        let b2 = update(&[], &attrs(1), &[4], false);
        let (_, out) = run(4096, false, &[odd.clone(), b2.clone()]);
        assert_eq!(out, cat(&[odd, b2]));
    }

    #[test]
    fn buffers_are_reused_between_windows() {
        let mut p = Plan::default();
        p.set_session(4096, false);
        let a: Vec<Bytes> = vec![
            Bytes::from(update(&[], &attrs(1), &[1], false)),
            Bytes::from(update(&[], &attrs(1), &[2], false)),
        ];
        p.plan(&a);
        assert_eq!(p.segs().iter().map(|s| s.updates).sum::<u32>(), 1);
        // The next window starts clean: 10.0.1.0/24 again is no repeat.
        let b: Vec<Bytes> = vec![
            Bytes::from(update(&[], &attrs(2), &[1], false)),
            Bytes::from(update(&[], &attrs(2), &[2], false)),
        ];
        p.plan(&b);
        assert_eq!(written(&p, &b), update(&[], &attrs(2), &[1, 2], false));
        assert_eq!(p.joined(), 2);
    }
}

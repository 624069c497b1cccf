//! Packing UPDATEs across RIB parts at a connection's writer (issue 17).
//!
//! Each RIB part (shard thread, or stripe) owns some prefixes and packs
//! its own UPDATEs, so a received UPDATE whose prefixes fall into two
//! parts leaves as two UPDATEs with the same path attributes. The writer
//! sees every part's encoded buffers for its connection, each tagged with
//! its [`Origin`] (the part, and which of that part's flushes); before
//! writing what is queued it plans the bytes again: plain IPv4
//! announcements (no withdrawn routes, NLRI in the NLRI field) with
//! byte-equal path attributes are joined into the first of them while the
//! message fits the session's maximum size (4096 octets, 65535 with RFC
//! 8654 extended messages). Nothing is copied: a joined message is a fresh
//! 19-octet header, the first message's body and the later messages' NLRI,
//! written with one `writev` (see [`Plan::segs`]); every other message is
//! written from its buffer as it is.
//!
//! Order: a joined message moves ahead of what was queued between it and
//! the message it joins. Parts own disjoint prefixes, and one flush of one
//! part drains each of its pending prefixes (with its path identifier
//! under ADD-PATH) once, so a message may pass anything of other parts and
//! anything of its own flush; it never passes a message of an earlier
//! flush of its own part (that one may carry the same prefix: a withdrawal
//! before a new announcement). No prefix is read: the rule costs one
//! comparison per message, not a set of prefixes (the first version of
//! this packer, which kept one, cost +22 % CPU-s in (c10)).
//! A message that is not an UPDATE (BoRR/EoRR), an End-of-RIB or an
//! UPDATE with its routes in MP_REACH/MP_UNREACH only, one that cannot be
//! read, and any buffer without an origin close the window ("seal"):
//! nothing after it joins a message before it, and it is written where it
//! stands. UPDATEs with withdrawn routes are written where they stand.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use bgp_wire::consts::msg_type;
use bgp_wire::HEADER_LEN;
use bytes::Bytes;

/// Where a buffer on a writer's queue comes from: RIB part `part`, its
/// flush number `flush` (counted per part; one flush's messages carry
/// each prefix once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    pub part: u32,
    pub flush: u64,
}

impl Origin {
    /// Not from a RIB flush (a raw send): never joined, and seals.
    pub const NONE: Origin = Origin {
        part: u32::MAX,
        flush: u64::MAX,
    };
}

/// Pieces of one buffer are merged while below this size (the writer's
/// chunk).
const SEG_MAX: usize = 64 * 1024;

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

/// Per RIB part seen in the window: its current flush, and the last
/// output message holding anything of an earlier flush of it (a message of
/// this part joins only groups after that one).
#[derive(Clone, Copy, Debug)]
struct PartState {
    flush: u64,
    /// Highest group index holding a message of the current flush.
    cur: i64,
    /// Highest group index holding a message of an earlier flush.
    fence: i64,
}

/// The key is already a hash.
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
}

/// The writer's packing state: its settings and buffers reused from one
/// window to the next (no allocation per message once warm).
#[derive(Default)]
pub struct Plan {
    /// The session's largest message; 0 packs nothing (before the session
    /// is Established, or when packing is off).
    max: usize,
    groups: Vec<Group>,
    parts: Vec<Part>,
    by_attrs: HashMap<u64, u32, BuildHasherDefault<IdHasher>>,
    /// Indexed by part number (parts are few: one per RIB thread/stripe).
    states: Vec<Option<PartState>>,
    /// No message joins a group at or below this index.
    sealed: i64,
    heads: Vec<u8>,
    segs: Vec<Seg>,
    /// Per window buffer, the index of the last segment that reads it.
    last_use: Vec<u32>,
    /// UPDATEs joined into an earlier one, over the plan's life.
    joined: u64,
}

impl Plan {
    /// Packing for a session whose largest message is `max` octets (4096,
    /// or 65535 with RFC 8654).
    pub fn set_session(&mut self, max: usize) {
        self.max = max.min(u16::MAX as usize);
    }

    /// The output pieces of the last [`Plan::plan`], in order.
    pub fn segs(&self) -> &[Seg] {
        &self.segs
    }

    /// The new headers the [`HEADS`] segments point into.
    pub fn heads(&self) -> &[u8] {
        &self.heads
    }

    /// The index of the last segment that reads window buffer `buf` (it
    /// may be freed once that segment is written).
    pub fn last_use(&self, buf: usize) -> Option<u32> {
        self.last_use.get(buf).copied().filter(|&s| s != NONE)
    }

    /// UPDATEs joined into an earlier one so far.
    pub fn joined(&self) -> u64 {
        self.joined
    }

    /// Plans the writing of `bufs` (whole messages each, in queue order),
    /// buffer `i` from `origins[i]` (a missing origin is [`Origin::NONE`]).
    pub fn plan(&mut self, bufs: &[Bytes], origins: &[Origin]) {
        self.groups.clear();
        self.parts.clear();
        self.heads.clear();
        self.segs.clear();
        self.states.clear();
        self.sealed = -1;
        if !self.by_attrs.is_empty() {
            self.by_attrs.clear();
        }
        for (bi, b) in bufs.iter().enumerate() {
            let origin = origins.get(bi).copied().unwrap_or(Origin::NONE);
            let bi = bi as u32;
            let mut off = 0usize;
            while off < b.len() {
                let len = b
                    .get(off + 16..off + 18)
                    .map_or(0, |l| u16::from_be_bytes([l[0], l[1]]) as usize);
                if len < HEADER_LEN || off + len > b.len() {
                    // Not a message boundary (cannot happen with our
                    // encoder): the rest as it is.
                    self.alone(bi, off, b.len(), Kind::Other, true);
                    break;
                }
                self.message(bufs, bi, origin, off, off + len);
                off += len;
            }
        }
        self.emit(bufs.len());
    }

    /// A message written where it stands; `seal`: nothing after it joins
    /// a group before it.
    fn alone(&mut self, buf: u32, start: usize, end: usize, kind: Kind, seal: bool) {
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
        if seal {
            self.sealed = self.groups.len() as i64 - 1;
        }
    }

    /// The index into `states` of `origin`'s part, moved on to its
    /// flush; None for [`Origin::NONE`] (or an absurd part number).
    fn state(&mut self, origin: Origin) -> Option<usize> {
        if origin == Origin::NONE || origin.part > 4096 {
            return None;
        }
        let i = origin.part as usize;
        if i >= self.states.len() {
            self.states.resize(i + 1, None);
        }
        let st = self.states.get_mut(i)?.get_or_insert(PartState {
            flush: origin.flush,
            cur: -1,
            fence: -1,
        });
        if st.flush != origin.flush {
            st.fence = st.fence.max(st.cur);
            st.cur = -1;
            st.flush = origin.flush;
        }
        Some(i)
    }

    /// Part `i`'s current flush has a message in group `g`.
    fn placed(&mut self, i: usize, g: i64) {
        if let Some(Some(st)) = self.states.get_mut(i) {
            st.cur = st.cur.max(g);
        }
    }

    fn message(&mut self, bufs: &[Bytes], bi: u32, origin: Origin, start: usize, end: usize) {
        let b = &bufs[bi as usize];
        let ty = b[start + 18];
        if ty != msg_type::UPDATE {
            let kind = if ty == msg_type::ROUTE_REFRESH {
                Kind::Refresh
            } else {
                Kind::Other
            };
            self.alone(bi, start, end, kind, true);
            return;
        }
        let fields = update_fields(&b[start + HEADER_LEN..end]);
        let Some(((w0, w1), (a0, a1), (n0, n1))) = fields else {
            self.alone(bi, start, end, Kind::Update, true);
            return;
        };
        if self.max == 0 || (w0 == w1 && n0 == n1) {
            // End-of-RIB, routes in MP_REACH/MP_UNREACH only, or packing
            // off: stays where it is, and nothing moves past it.
            self.alone(bi, start, end, Kind::Update, true);
            return;
        }
        let Some(pi) = self.state(origin) else {
            self.alone(bi, start, end, Kind::Update, true);
            return;
        };
        // Groups at or below `floor` may hold a prefix of this message.
        let fence = self
            .states
            .get(pi)
            .copied()
            .flatten()
            .map_or(i64::MAX, |st| st.fence);
        let floor = fence.max(self.sealed);
        let here = self.groups.len() as i64;
        if w0 != w1 || a0 == a1 {
            self.placed(pi, here);
            self.alone(bi, start, end, Kind::Update, false);
            return;
        }
        let body = start + HEADER_LEN;
        let attrs = &b[body + a0..body + a1];
        let h = hash(attrs);
        let nlen = (n1 - n0) as u32;
        let join = self.by_attrs.get(&h).copied().filter(|&g| {
            let grp = &self.groups[g as usize];
            let same = bufs
                .get(grp.buf as usize)
                .and_then(|gb| gb.get(grp.attrs.0 as usize..grp.attrs.1 as usize))
                == Some(attrs);
            i64::from(g) > floor && same && (grp.len + nlen) as usize <= self.max
        });
        match join {
            Some(g) => {
                self.placed(pi, i64::from(g));
                let p = self.parts.len() as u32;
                self.parts.push(Part {
                    buf: bi,
                    start: (body + n0) as u32,
                    end: (body + n1) as u32,
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
                self.placed(pi, here);
                let g = self.groups.len() as u32;
                self.groups.push(Group {
                    buf: bi,
                    start: start as u32,
                    end: end as u32,
                    attrs: ((body + a0) as u32, (body + a1) as u32),
                    len: (end - start) as u32,
                    first: NONE,
                    last: NONE,
                    kind: Kind::Update,
                });
                self.by_attrs.insert(h, g);
            }
        }
    }

    /// Turns the groups into output pieces; joined groups get a new header.
    fn emit(&mut self, nbufs: usize) {
        self.last_use.clear();
        self.last_use.resize(nbufs, NONE);
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
            // Pieces of one buffer merge up to about `SEG_MAX`: the writer
            // cuts its chunks at piece ends, so one large buffer (a raw
            // send) still lets urgent messages through between chunks.
            let small = (s.end - s.start) as usize <= SEG_MAX;
            if s.buf == buf && s.end == start && buf != HEADS && small {
                s.end = end;
                s.ends_msg = ends_msg;
                s.updates += updates;
                s.refreshes += refreshes;
                return;
            }
        }
        if let Some(u) = self.last_use.get_mut(buf as usize) {
            *u = self.segs.len() as u32;
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
    /// prefix as its third octet under 10.0.x.0/24; path identifier 7
    /// when `ids`).
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

    fn o(part: u32, flush: u64) -> Origin {
        Origin { part, flush }
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

    /// Plans `bufs` (each with its origin) and returns what is written.
    fn run(max: usize, bufs: &[(Vec<u8>, Origin)]) -> (Plan, Vec<u8>) {
        let b: Vec<Bytes> = bufs.iter().map(|b| Bytes::copy_from_slice(&b.0)).collect();
        let origins: Vec<Origin> = bufs.iter().map(|b| b.1).collect();
        let mut p = Plan::default();
        p.set_session(max);
        p.plan(&b, &origins);
        let w = written(&p, &b);
        (p, w)
    }

    fn cat(msgs: &[Vec<u8>]) -> Vec<u8> {
        msgs.concat()
    }

    #[test]
    fn equal_attributes_of_two_parts_become_one_update() {
        // Part 0's flush, then part 1's: the same attribute sets each.
        let b0 = cat(&[
            update(&[], &attrs(1), &[1, 3], false),
            update(&[], &attrs(2), &[5], false),
        ]);
        let b1 = cat(&[
            update(&[], &attrs(1), &[2, 4], false),
            update(&[], &attrs(2), &[6], false),
        ]);
        let (p, out) = run(4096, &[(b0, o(0, 1)), (b1, o(1, 1))]);
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
        let (p, out) = run(0, &[(b0.clone(), o(0, 1)), (b1.clone(), o(1, 1))]);
        assert_eq!(out, cat(&[b0, b1]));
        assert_eq!(p.joined(), 0);
        assert_eq!(p.segs().iter().map(|s| s.updates).sum::<u32>(), 2);
    }

    #[test]
    fn a_later_flush_of_one_part_keeps_the_order_of_its_prefix() {
        // Part 0 announces 10.0.2.0/24's neighbour, withdraws 10.0.2.0/24
        // in its next flush and announces it again, with the first
        // message's set, in the one after: that announcement must stay
        // after the withdrawal. Part 1's message of the same set may join
        // any of them (its prefixes are its own): it joins the latest.
        let bufs = [
            (update(&[], &attrs(1), &[1], false), o(0, 1)),
            (update(&[2], &[], &[], false), o(0, 2)),
            (update(&[], &attrs(1), &[2], false), o(0, 3)),
            (update(&[], &attrs(1), &[3], false), o(1, 1)),
        ];
        let (p, out) = run(4096, &bufs);
        let want = cat(&[
            update(&[], &attrs(1), &[1], false),
            update(&[2], &[], &[], false),
            update(&[], &attrs(1), &[2, 3], false),
        ]);
        assert_eq!(out, want);
        assert_eq!(p.joined(), 1);
    }

    #[test]
    fn one_flush_may_join_past_its_own_withdrawals() {
        // One flush carries each prefix once: its announcement of
        // 10.0.3.0/24 may pass its withdrawal of 10.0.9.0/24.
        let msgs = cat(&[
            update(&[], &attrs(1), &[1], false),
            update(&[9], &[], &[], false),
            update(&[], &attrs(1), &[3], false),
        ]);
        let (_, out) = run(4096, &[(msgs, o(0, 1))]);
        let want = cat(&[
            update(&[], &attrs(1), &[1, 3], false),
            update(&[9], &[], &[], false),
        ]);
        assert_eq!(out, want);
    }

    #[test]
    fn end_of_rib_and_refresh_markers_stay_where_they_are() {
        let mut refresh = vec![0xff; 16];
        refresh.extend_from_slice(&23u16.to_be_bytes());
        refresh.extend_from_slice(&[msg_type::ROUTE_REFRESH, 0, 1, 2, 1]);
        let bufs = [
            (update(&[], &attrs(1), &[1], false), o(0, 1)),
            (eor(), o(0, 1)),
            (update(&[], &attrs(1), &[2], false), o(1, 1)),
            (refresh.clone(), o(1, 1)),
            (update(&[], &attrs(1), &[3], false), o(0, 2)),
            (update(&[], &attrs(1), &[4], false), o(1, 2)),
        ];
        let (p, out) = run(4096, &bufs);
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

    #[test]
    fn a_raw_send_is_never_joined_and_seals() {
        let bufs = [
            (update(&[], &attrs(1), &[1], false), o(0, 1)),
            (update(&[], &attrs(1), &[2], false), Origin::NONE),
            (update(&[], &attrs(1), &[3], false), o(1, 1)),
        ];
        let (p, out) = run(4096, &bufs);
        let msgs: Vec<Vec<u8>> = bufs.iter().map(|b| b.0.clone()).collect();
        assert_eq!(out, cat(&msgs));
        assert_eq!(p.joined(), 0);
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
        // 250 messages of one prefix each, alternately from two parts, one
        // attribute set: as few messages as fit, none above the limit
        // (4096; 65535 with RFC 8654; path identifiers of RFC 7911 make
        // each NLRI 8 octets).
        for (max, ids, per) in [
            (4096, false, 4),
            (65535, false, 4),
            (4096, true, 8),
            (100, false, 4),
        ] {
            let bufs: Vec<(Vec<u8>, Origin)> = (0..250u8)
                .map(|p| (update(&[], &attrs(1), &[p], ids), o(u32::from(p % 2), 1)))
                .collect();
            let (_, out) = run(max, &bufs);
            let got = messages(&out);
            let mut total = 0;
            for m in &got {
                assert!(m.len() <= max.max(bufs[0].0.len()), "{} > {max}", m.len());
                total += nlri_count(m, per);
            }
            assert_eq!(total, 250);
            let room = (max - HEADER_LEN - 4 - attrs(1).len()) / per;
            assert_eq!(got.len(), 250usize.div_ceil(room.max(1)), "max {max}");
        }
    }

    #[test]
    fn add_path_nlri_join_with_their_identifiers() {
        // RFC 7911: each NLRI carries its path identifier; joined, the
        // identifiers travel with their prefixes.
        let bufs = [
            (update(&[], &attrs(1), &[1, 2], true), o(0, 1)),
            (update(&[], &attrs(1), &[3], true), o(1, 1)),
        ];
        let (p, out) = run(4096, &bufs);
        assert_eq!(out, update(&[], &attrs(1), &[1, 2, 3], true));
        assert_eq!(p.joined(), 1);
    }

    #[test]
    fn a_large_buffer_is_cut_into_pieces_at_message_ends() {
        // 1 MiB of one raw send: pieces of about 64 KiB, so the writer can
        // let urgent messages (KEEPALIVE) through between them.
        let one = update(&[], &attrs(1), &[1], false);
        let mut big = Vec::new();
        while big.len() < (1 << 20) {
            big.extend_from_slice(&one);
        }
        let (p, out) = run(4096, &[(big.clone(), Origin::NONE)]);
        assert_eq!(out, big);
        assert!(p.segs().len() >= 16, "{} pieces", p.segs().len());
        for s in p.segs() {
            assert!(s.ends_msg);
            assert!((s.end - s.start) as usize <= SEG_MAX + one.len());
        }
    }

    #[test]
    fn bad_input_is_written_as_it_is() {
        let mut junk = update(&[], &attrs(1), &[1], false);
        junk.extend_from_slice(&[0xff; 10]);
        let b1 = update(&[], &attrs(1), &[2], false);
        let (p, out) = run(4096, &[(junk.clone(), o(0, 1)), (b1.clone(), o(1, 1))]);
        assert_eq!(out, cat(&[junk, b1]));
        assert_eq!(p.joined(), 0);
        // An attribute length beyond the message: left alone.
        let mut odd = update(&[], &attrs(1), &[3], false);
        odd[HEADER_LEN + 3] = 0xff;
        let b2 = update(&[], &attrs(1), &[4], false);
        let (_, out) = run(4096, &[(odd.clone(), o(0, 1)), (b2.clone(), o(1, 1))]);
        assert_eq!(out, cat(&[odd, b2]));
    }

    #[test]
    fn buffers_are_reused_between_windows_and_freed_after_last_use() {
        let mut p = Plan::default();
        p.set_session(4096);
        let a: Vec<Bytes> = vec![
            Bytes::from(update(&[], &attrs(1), &[1], false)),
            Bytes::from(update(&[], &attrs(2), &[9], false)),
            Bytes::from(update(&[], &attrs(1), &[2], false)),
        ];
        p.plan(&a, &[o(0, 1), o(0, 1), o(1, 1)]);
        assert_eq!(p.segs().iter().map(|s| s.updates).sum::<u32>(), 2);
        // Buffer 2's NLRI is read by the joined first message.
        assert!(p.last_use(2) < p.last_use(1));
        // The next window starts clean: part 1's flush 1 is not fenced.
        let b: Vec<Bytes> = vec![
            Bytes::from(update(&[], &attrs(2), &[1], false)),
            Bytes::from(update(&[], &attrs(2), &[2], false)),
        ];
        p.plan(&b, &[o(1, 2), o(1, 2)]);
        assert_eq!(written(&p, &b), update(&[], &attrs(2), &[1, 2], false));
        assert_eq!(p.joined(), 2);
    }
}

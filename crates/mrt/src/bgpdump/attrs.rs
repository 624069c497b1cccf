//! Path attributes read the way bgpdump 1.6.2 reads them, so that even odd
//! inputs print the same. bgpdump reads through a cursor that returns zeros
//! past the end of its buffer instead of failing; [`Z`] does the same, which
//! keeps every read in bounds without any error path.

use super::fmt::push_u32;

/// Zero-filling cursor (bgpdump's `mstream`): reads past the end yield zero
/// bytes and leave the cursor at the end.
#[derive(Clone, Copy)]
pub(crate) struct Z<'a> {
    b: &'a [u8],
}

impl<'a> Z<'a> {
    pub(crate) const fn new(b: &'a [u8]) -> Self {
        Z { b }
    }
    pub(crate) fn left(&self) -> usize {
        self.b.len()
    }
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.b
    }
    pub(crate) fn peek(&self) -> u8 {
        self.b.first().copied().unwrap_or(0)
    }
    /// Takes up to `n` bytes as a sub-cursor (bgpdump's `mstream_copy`).
    pub(crate) fn take(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.b.len());
        let (h, t) = self.b.split_at(n);
        self.b = t;
        h
    }
    pub(crate) fn skip(&mut self, n: usize) {
        self.take(n);
    }
    /// Reads `N` bytes, zero-filled past the end.
    pub(crate) fn arr<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        let h = self.take(N);
        a[..h.len()].copy_from_slice(h);
        a
    }
    pub(crate) fn u8(&mut self) -> u8 {
        self.arr::<1>()[0]
    }
    pub(crate) fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.arr())
    }
    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.arr())
    }
    /// An AS number of `len` (2 or 4) octets.
    pub(crate) fn asn(&mut self, four: bool) -> u32 {
        if four {
            self.u32()
        } else {
            u32::from(self.u16())
        }
    }
    /// Copies `n` bytes into a 16-byte address, zero-filled, and skips any
    /// excess (NLRI prefix bytes, next hops).
    pub(crate) fn addr(&mut self, n: usize) -> [u8; 16] {
        let mut a = [0u8; 16];
        let h = self.take(n);
        let k = h.len().min(16);
        a[..k].copy_from_slice(&h[..k]);
        a
    }
}

/// MP_REACH_NLRI as bgpdump keeps it: next hop length and first address, and
/// the NLRI bytes (empty for the abbreviated RIB form).
#[derive(Clone, Copy, Default)]
pub(crate) struct MpReach<'a> {
    pub(crate) nh_len: u8,
    pub(crate) nh: [u8; 16],
    pub(crate) nlri: &'a [u8],
}

/// AFI 1..=2 by SAFI 1..=3 (bgpdump's `BGPDUMP_MAX_AFI`/`MAX_SAFI`), index 0
/// unused; AFI/SAFI values above these are dropped as bgpdump drops them.
pub(crate) type PerAfi<T> = [[Option<T>; 4]; 3];

pub(crate) const ORIGIN: u32 = 1;
pub(crate) const AS_PATH: u32 = 2;
pub(crate) const MP_REACH: u32 = 14;
const MP_UNREACH: u32 = 15;
const AS4_PATH: u32 = 17;
const AS4_AGGREGATOR: u32 = 18;
pub(crate) const ATOMIC_AGGREGATE: u32 = 6;
pub(crate) const COMMUNITIES: u32 = 8;
pub(crate) const LOCAL_PREF: u32 = 5;
pub(crate) const MED: u32 = 4;
const AGGREGATOR: u32 = 7;
const EXT_COMMUNITIES: u32 = 16;
const LARGE_COMMUNITIES: u32 = 32;
/// RFC 6793 §9.
const AS_TRANS: u32 = 23456;

/// The attributes of one UPDATE or RIB entry.
#[derive(Clone, Copy)]
pub(crate) struct Attrs<'a> {
    /// Bit `t - 1` set when attribute type `t` (1..=32) was seen.
    pub(crate) flags: u32,
    pub(crate) origin: u8,
    pub(crate) next_hop: [u8; 4],
    pub(crate) med: u32,
    pub(crate) local_pref: u32,
    pub(crate) aggr_as: u32,
    pub(crate) aggr_addr: [u8; 4],
    new_aggr_as: u32,
    new_aggr_addr: [u8; 4],
    pub(crate) as_path: Option<&'a [u8]>,
    as4_path: Option<&'a [u8]>,
    /// Whether `as_path` holds 4-octet ASNs.
    pub(crate) as_path_four: bool,
    pub(crate) communities: Option<&'a [u8]>,
    /// EXTENDED_COMMUNITIES (RFC 4360) and LARGE_COMMUNITY (RFC 8092): not
    /// printed by `-m`, only by the JSON output.
    pub(crate) ext_communities: Option<&'a [u8]>,
    pub(crate) large_communities: Option<&'a [u8]>,
    pub(crate) reach: PerAfi<MpReach<'a>>,
    pub(crate) unreach: PerAfi<&'a [u8]>,
}

impl<'a> Attrs<'a> {
    pub(crate) fn has(&self, t: u32) -> bool {
        self.flags & (1 << (t - 1)) != 0
    }

    /// Reads the 2-octet attribute length and the attributes from `s`
    /// (bgpdump's `process_attributes`). `four` tells the ASN width.
    pub(crate) fn read(s: &mut Z<'a>, four: bool) -> Attrs<'a> {
        let total = usize::from(s.u16());
        let mut z = Z::new(s.take(total));
        let mut a = Attrs {
            flags: 0,
            origin: 0xff,
            next_hop: [0xff; 4],
            med: 0,
            local_pref: 0,
            aggr_as: u32::MAX,
            aggr_addr: [0xff; 4],
            new_aggr_as: u32::MAX,
            new_aggr_addr: [0xff; 4],
            as_path: None,
            as4_path: None,
            as_path_four: four,
            communities: None,
            ext_communities: None,
            large_communities: None,
            reach: Default::default(),
            unreach: Default::default(),
        };
        while z.left() > 0 {
            let flag = z.u8();
            let ty = z.u8();
            let len = if flag & 0x10 != 0 {
                usize::from(z.u16())
            } else {
                usize::from(z.u8())
            };
            let v = z.take(len);
            if v.len() != len {
                // bgpdump: "attribute is truncated", the rest is dropped.
                break;
            }
            a.one(u32::from(ty), v, four);
        }
        a
    }

    fn one(&mut self, ty: u32, v: &'a [u8], four: bool) {
        // RFC 7606 §3 (g): later copies of an attribute are discarded.
        // (bgpdump asserts instead; see docs/bgpdump-format.md.)
        let seen = (1..=32).contains(&ty) && self.has(ty);
        if (1..=32).contains(&ty) {
            self.flags |= 1 << (ty - 1);
        }
        let mut z = Z::new(v);
        match ty {
            MP_REACH => self.mp_reach(z),
            MP_UNREACH => {
                let (afi, safi) = (usize::from(z.u16()), usize::from(z.u8()));
                if afi <= 2 && safi <= 3 && self.unreach[afi][safi].is_none() {
                    self.unreach[afi][safi] = Some(z.rest());
                }
            }
            _ if seen => {}
            ORIGIN => self.origin = z.u8(),
            AS_PATH => self.as_path = Some(v),
            3 => self.next_hop = z.arr(),
            MED => self.med = z.u32(),
            LOCAL_PREF => self.local_pref = z.u32(),
            AGGREGATOR => {
                self.aggr_as = z.asn(four);
                self.aggr_addr = z.arr();
            }
            COMMUNITIES => self.communities = Some(v),
            EXT_COMMUNITIES => self.ext_communities = Some(v),
            LARGE_COMMUNITIES => self.large_communities = Some(v),
            AS4_PATH => self.as4_path = Some(v),
            AS4_AGGREGATOR => {
                self.new_aggr_as = z.u32();
                self.new_aggr_addr = z.arr();
            }
            _ => {}
        }
    }

    /// RFC 4760 §3, plus the RFC 6396 §4.3.4 abbreviated form (next hop
    /// only) that bgpdump recognises by a non-zero first byte anywhere.
    fn mp_reach(&mut self, mut z: Z<'a>) {
        if z.peek() != 0 {
            if self.reach[2][1].is_none() {
                let (nh_len, nh) = next_hop(&mut z);
                self.reach[2][1] = Some(MpReach {
                    nh_len,
                    nh,
                    nlri: &[],
                });
            }
            return;
        }
        let (afi, safi) = (usize::from(z.u16()), usize::from(z.u8()));
        if afi > 2 || safi > 3 || self.reach[afi][safi].is_some() {
            return;
        }
        let (nh_len, nh) = next_hop(&mut z);
        // SNPAs (RFC 2858, defunct): count, then length-prefixed blobs.
        for _ in 0..z.u8() {
            let n = usize::from(z.u8());
            z.skip(n);
        }
        self.reach[afi][safi] = Some(MpReach {
            nh_len,
            nh,
            nlri: z.rest(),
        });
    }

    /// RFC 6793 §4.2.3 for 2-octet sessions, as bgpdump does it (see
    /// docs/bgpdump-format.md): returns the merged path in `scratch`, or
    /// `false` when AS_PATH stays as it is.
    pub(crate) fn merge_as4(&mut self, scratch: &mut Vec<u8>, tmp: &mut Vec<u8>) -> bool {
        if self.has(AGGREGATOR) && self.has(AS4_AGGREGATOR) {
            if self.aggr_as != AS_TRANS {
                return false;
            }
            self.aggr_as = self.new_aggr_as;
            self.aggr_addr = self.new_aggr_addr;
        }
        let (Some(old), Some(new)) = (self.as_path, self.as4_path) else {
            return false;
        };
        if !self.has(AS4_PATH) {
            return false;
        }
        tmp.clear();
        let c_old = write_as_path(tmp, old, false);
        tmp.clear();
        let c_new = write_as_path(tmp, new, true);
        tmp.clear();
        if c_old < c_new {
            return false;
        }
        let target = c_old - c_new;
        scratch.clear();
        // bgpdump copies AS_PATH's *first* segment until the count is
        // reached (it never advances); for one AS_SEQUENCE this is exactly
        // the RFC's "leading ASNs of AS_PATH".
        let mut h = Z::new(old);
        let (ty, n) = (h.u8(), h.u8());
        let mut count = 0u32;
        while count < target {
            let seg_start = scratch.len();
            scratch.push(ty);
            scratch.push(n);
            let mut d = Z::new(h.rest());
            for _ in 0..n {
                scratch.extend_from_slice(&u32::from(d.u16()).to_be_bytes());
            }
            if ty == 1 || ty == 4 {
                count += 1;
            } else {
                if n == 0 {
                    // bgpdump would loop forever here.
                    scratch.truncate(seg_start);
                    break;
                }
                count += u32::from(n);
                if count > target {
                    let excess = count - target;
                    scratch[seg_start + 1] = n - excess as u8;
                    scratch.truncate(scratch.len() - 4 * excess as usize);
                }
            }
        }
        scratch.extend_from_slice(new);
        true
    }
}

/// bgpdump's `get_nexthop`: the length byte, then 4, 16 or 16+16 octets;
/// any other length reads nothing more (bgpdump only warns).
fn next_hop(z: &mut Z<'_>) -> (u8, [u8; 16]) {
    let len = z.u8();
    let nh = match len {
        4 => z.addr(4),
        16 => z.addr(16),
        32 => {
            let g = z.addr(16);
            z.skip(16);
            g
        }
        _ => [0; 16],
    };
    (len, nh)
}

/// Longest AS path text bgpdump builds before it appends `...`.
const MAX_ASPATH_TEXT: usize = 8000 - 100;

/// Appends AS path text (bgpdump's `process_attr_aspath_string`) and
/// returns bgpdump's ASN count (a set counts 1; 0 after an error).
pub(crate) fn write_as_path(out: &mut Vec<u8>, data: &[u8], four: bool) -> u32 {
    let start = out.len();
    let width = if four { 4 } else { 2 };
    let mut z = Z::new(data);
    let mut prev = 2u8;
    let mut last = 0u8;
    let mut space = false;
    let mut count = 0u32;
    while z.left() > 0 {
        let ty = z.u8();
        let n = z.u8();
        if !(1..=4).contains(&ty) || usize::from(n) * width > z.left() {
            out.truncate(start);
            out.extend_from_slice(b"! Error !");
            return 0;
        }
        if prev != 2 {
            out.push(close(prev));
        }
        if space {
            out.push(b' ');
        }
        if ty != 2 {
            out.push(open(ty));
        }
        space = false;
        count += if ty == 1 || ty == 4 { 1 } else { u32::from(n) };
        let sep = if ty == 1 || ty == 4 { b',' } else { b' ' };
        for _ in 0..n {
            if space {
                out.push(sep);
            } else {
                space = true;
            }
            push_u32(out, z.asn(four));
            if out.len() - start > MAX_ASPATH_TEXT {
                out.extend_from_slice(b"...");
                return count;
            }
        }
        prev = ty;
        last = ty;
    }
    if last != 0 && last != 2 {
        out.push(close(last));
    }
    count
}

const fn open(ty: u8) -> u8 {
    match ty {
        1 => b'{',
        3 => b'(',
        4 => b'[',
        _ => b' ',
    }
}

const fn close(ty: u8) -> u8 {
    match ty {
        1 => b'}',
        3 => b')',
        4 => b']',
        _ => b' ',
    }
}

/// Appends RFC 1997 communities as bgpdump prints them (no leading space).
pub(crate) fn write_communities(out: &mut Vec<u8>, data: &[u8]) {
    for (i, c) in data.chunks_exact(4).enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        push_community(out, u32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    }
}

/// Appends one RFC 1997 community: `AS:VAL`, or one of the three names
/// bgpdump knows.
pub(crate) fn push_community(out: &mut Vec<u8>, v: u32) {
    match v {
        0xFFFF_FF01 => out.extend_from_slice(b"no-export"),
        0xFFFF_FF02 => out.extend_from_slice(b"no-advertise"),
        0xFFFF_FF03 => out.extend_from_slice(b"local-AS"),
        _ => {
            push_u32(out, v >> 16);
            out.push(b':');
            push_u32(out, v & 0xffff);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(segs: &[(u8, &[u32])], four: bool) -> Vec<u8> {
        let mut d = Vec::new();
        for (t, asns) in segs {
            d.push(*t);
            d.push(asns.len() as u8);
            for a in *asns {
                if four {
                    d.extend_from_slice(&a.to_be_bytes());
                } else {
                    d.extend_from_slice(&(*a as u16).to_be_bytes());
                }
            }
        }
        d
    }

    fn text(d: &[u8], four: bool) -> (String, u32) {
        let mut o = Vec::new();
        let c = write_as_path(&mut o, d, four);
        (String::from_utf8(o).unwrap(), c)
    }

    #[test]
    fn as_path_segments() {
        let d = path(&[(2, &[3277, 6509]), (1, &[271, 7860])], true);
        assert_eq!(text(&d, true), ("3277 6509 {271,7860}".into(), 3));
        let d = path(&[(3, &[1, 2]), (2, &[3]), (4, &[4, 5])], false);
        assert_eq!(text(&d, false), ("(1 2) 3 [4,5]".into(), 4));
        assert_eq!(text(&[], true), (String::new(), 0));
        assert_eq!(text(&[9, 0], true), ("! Error !".into(), 0));
        assert_eq!(text(&[2, 2, 0, 1], false), ("! Error !".into(), 0));
    }

    #[test]
    fn as_path_is_cut_like_bgpdump() {
        let asns: Vec<u32> = (0..255).map(|i| 4_000_000_000 + i).collect();
        let segs: Vec<(u8, &[u32])> = (0..4).map(|_| (2u8, &asns[..])).collect();
        let (t, _) = text(&path(&segs, true), true);
        assert!(t.ends_with("..."));
        assert!(t.len() > 7900 && t.len() < 7920);
    }

    #[test]
    fn communities_names() {
        let mut o = Vec::new();
        let d = [
            0xff, 0xff, 0xff, 0x01, 0, 7, 0, 9, 0xff, 0xff, 0xff, 0x04, 1,
        ];
        write_communities(&mut o, &d);
        assert_eq!(o, b"no-export 7:9 65535:65284");
    }

    #[test]
    fn as4_merge() {
        let old = path(&[(2, &[1, 2, 23456, 23456])], false);
        let new = path(&[(2, &[70000, 80000])], true);
        let mut buf = Vec::new();
        buf.extend_from_slice(&[0x40, 2, old.len() as u8]);
        buf.extend_from_slice(&old);
        buf.extend_from_slice(&[0xc0, 17, new.len() as u8]);
        buf.extend_from_slice(&new);
        let mut all = (buf.len() as u16).to_be_bytes().to_vec();
        all.extend_from_slice(&buf);
        let mut z = Z::new(&all);
        let mut a = Attrs::read(&mut z, false);
        let (mut s, mut t) = (Vec::new(), Vec::new());
        assert!(a.merge_as4(&mut s, &mut t));
        assert_eq!(text(&s, true).0, "1 2 70000 80000");
    }
}

//! Per-session rewriting of a stored [`AttrSet`] into the attribute block
//! one peer is sent (RFC 4271 §5 and §9.2, RFC 4456, RFC 6793 §4.2.2,
//! RFC 9234 §5). The next hop and MP_REACH_NLRI are not written here: they
//! depend on the family and are added per message by the encoder.

use base::Asn;
use bgp_wire::attr::expected_class;
use bgp_wire::consts::{attr_flags as af, attr_type as at};
use bgp_wire::{AsPathView, Origin, RawAttr, SegmentType};

use crate::attrs::AttrSet;

/// RFC 9234 §4.1 role codes, as the role we see the peer in.
pub(crate) mod role {
    pub const PROVIDER: u8 = 0;
    pub const RS: u8 = 1;
    pub const RS_CLIENT: u8 = 2;
    pub const CUSTOMER: u8 = 3;
    pub const PEER: u8 = 4;
}

/// What the rewriting needs to know about the session.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Rewrite {
    pub(crate) local_asn: Asn,
    pub(crate) ebgp: bool,
    pub(crate) four_octet_asn: bool,
    pub(crate) route_server: bool,
    /// RFC 9234 role of the peer, for OTC egress.
    pub(crate) role: Option<u8>,
    /// RFC 5065: the peer is in another member AS of our confederation
    /// (`ebgp` is true too): `local_asn` (our member AS) goes in an
    /// AS_CONFED_SEQUENCE, confederation segments and LOCAL_PREF stay.
    pub(crate) confed: bool,
}

/// RFC 4271 §5.1.5: the LOCAL_PREF sent to internal peers when the route
/// has none (100, as BIRD and FRR use).
pub const DEFAULT_LOCAL_PREF: u32 = 100;

/// What happens to one stored path attribute on its way to a peer
/// (see [`attr_fate`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AttrFate {
    /// Not sent as stored: NEXT_HOP, MP_REACH_NLRI and MP_UNREACH_NLRI are
    /// written per message by the encoder; AS4_PATH and AS4_AGGREGATOR are
    /// regenerated when the peer needs them (RFC 6793 §4.2.2); LOCAL_PREF,
    /// ORIGINATOR_ID and CLUSTER_LIST stay inside the AS (RFC 4271 §5.1.5,
    /// RFC 4456 §8); unknown non-transitive attributes are dropped
    /// (RFC 4271 §9.1.3).
    Drop,
    /// Sent with these flags: as stored, plus Partial for unknown optional
    /// transitive attributes (RFC 4271 §9.1.3).
    Keep(u8),
    /// Rebuilt for the session: AS_PATH ([`export_as_path`]) and AGGREGATOR
    /// (its AS width follows the session's, RFC 6793 §4.2.2).
    Rebuild,
}

/// The propagation rule for one stored attribute (`type_code`, `flags`)
/// sent to an external (`ebgp`) or internal peer. The one place these
/// rules live: [`UpdateEncoder`](crate::UpdateEncoder) and the replay
/// client both follow it.
pub fn attr_fate(type_code: u8, flags: u8, ebgp: bool) -> AttrFate {
    match type_code {
        at::NEXT_HOP | at::MP_REACH_NLRI | at::MP_UNREACH_NLRI => AttrFate::Drop,
        at::AS4_PATH | at::AS4_AGGREGATOR => AttrFate::Drop,
        at::LOCAL_PREF | at::ORIGINATOR_ID | at::CLUSTER_LIST if ebgp => AttrFate::Drop,
        at::AS_PATH | at::AGGREGATOR => AttrFate::Rebuild,
        code if expected_class(code).is_none() => {
            if flags & af::TRANSITIVE != 0 {
                AttrFate::Keep(flags | af::PARTIAL)
            } else {
                AttrFate::Drop
            }
        }
        _ => AttrFate::Keep(flags),
    }
}

/// RFC 4271 §5.1.2: our AS is prepended towards external peers; a route
/// server does not prepend (RFC 7947 §2.2.2).
fn prepend_asn(local_asn: Asn, ebgp: bool, route_server: bool) -> Option<Asn> {
    (ebgp && !route_server).then_some(local_asn)
}

/// Appends the AS_PATH value a peer is sent for a stored `path` (`None`:
/// absent or unparsable, sent as empty): `local_asn` prepended towards
/// external peers unless we are a route server, merged into a leading
/// AS_SEQUENCE with room (RFC 4271 §5.1.2); confederation segments left
/// out towards external peers (RFC 5065 §5.3); ASNs written in 4 octets
/// when `four_octet` (else 2, with AS_TRANS for large ones, RFC 6793).
pub fn export_as_path(
    out: &mut Vec<u8>,
    path: Option<AsPathView<'_>>,
    local_asn: Asn,
    ebgp: bool,
    route_server: bool,
    four_octet: bool,
) {
    let prepend = prepend_asn(local_asn, ebgp, route_server).map(|a| (a, SegmentType::Sequence));
    put_path(out, path, prepend, four_octet, ebgp);
}

/// [`export_as_path`] towards a peer in another member AS of our
/// confederation (RFC 5065 §5): `member_asn` (ours) prepended in an
/// AS_CONFED_SEQUENCE, merged into a leading one with room; every segment
/// kept.
pub fn export_confed_as_path(
    out: &mut Vec<u8>,
    path: Option<AsPathView<'_>>,
    member_asn: Asn,
    four_octet: bool,
) {
    let prepend = Some((member_asn, SegmentType::ConfedSequence));
    put_path(out, path, prepend, four_octet, false);
}

/// Reusable buffers: attributes are produced in any order into `pieces`,
/// then concatenated by type code into `block` (RFC 4271 §5: the sender
/// SHOULD order attributes by type code).
#[derive(Debug, Default)]
pub(crate) struct AttrBlock {
    pieces: Vec<u8>,
    index: Vec<(u8, u32, u32)>,
    /// The rewritten attributes, sorted, without NEXT_HOP / MP_REACH_NLRI.
    pub(crate) block: Vec<u8>,
    /// Offset in `block` of the first attribute with a code above NEXT_HOP.
    pub(crate) split_nh: usize,
    /// Offset in `block` of the first attribute with a code above
    /// MP_UNREACH_NLRI (where MP_REACH_NLRI goes, in order).
    pub(crate) split_mp: usize,
    /// Scratch for AS path values.
    path_scratch: Vec<u8>,
}

/// Appends one TLV, choosing the length form from the value's size.
pub(crate) fn put_attr(out: &mut Vec<u8>, flags: u8, code: u8, value: &[u8]) {
    put_attr_with(out, flags, code, value.len(), |o| {
        o.extend_from_slice(value)
    });
}

fn put_attr_with(
    out: &mut Vec<u8>,
    flags: u8,
    code: u8,
    len: usize,
    write: impl FnOnce(&mut Vec<u8>),
) {
    let len = len.min(u16::MAX as usize);
    if len > 255 {
        out.extend_from_slice(&[flags | af::EXTENDED_LENGTH, code]);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.extend_from_slice(&[flags & !af::EXTENDED_LENGTH, code, len as u8]);
    }
    write(out);
}

/// ASNs in an AS path, as written: 2 or 4 octets each.
fn put_asn(out: &mut Vec<u8>, a: Asn, four: bool) {
    if four {
        out.extend_from_slice(&a.0.to_be_bytes());
    } else {
        out.extend_from_slice(&a.to_u16_or_trans().to_be_bytes());
    }
}

/// Writes an AS path value: `prepend` goes in front in a segment of its
/// kind (merged into a leading segment of that kind with room, RFC 4271
/// §5.1.2, RFC 5065 §5), confederation segments are left
/// out when `strip_confed` (RFC 5065 §5.3: they never leave the
/// confederation; also RFC 6793 §3 for AS4_PATH).
fn put_path(
    out: &mut Vec<u8>,
    path: Option<AsPathView<'_>>,
    prepend: Option<(Asn, SegmentType)>,
    four: bool,
    strip_confed: bool,
) {
    let mut segs = path
        .into_iter()
        .flat_map(|p| p.segments())
        .filter(|s| !(strip_confed && s.kind.is_confed()))
        // A segment with no ASN makes AS_PATH malformed (RFC 7606 §7.2).
        .filter(|s| !s.is_empty())
        .peekable();
    if let Some((a, kind)) = prepend {
        match segs.peek() {
            Some(s) if s.kind == kind && s.len() < 255 => {
                out.extend_from_slice(&[s.kind as u8, (s.len() + 1) as u8]);
                put_asn(out, a, four);
                for x in s.asns() {
                    put_asn(out, x, four);
                }
                segs.next();
            }
            _ => {
                out.extend_from_slice(&[kind as u8, 1]);
                put_asn(out, a, four);
            }
        }
    }
    for s in segs {
        out.extend_from_slice(&[s.kind as u8, s.len() as u8]);
        for x in s.asns() {
            put_asn(out, x, four);
        }
    }
}

impl AttrBlock {
    fn begin(&mut self) -> usize {
        self.pieces.len()
    }
    fn end(&mut self, code: u8, start: usize) {
        self.index
            .push((code, start as u32, self.pieces.len() as u32));
    }
    fn add(&mut self, flags: u8, code: u8, value: &[u8]) {
        let s = self.begin();
        put_attr(&mut self.pieces, flags, code, value);
        self.end(code, s);
    }

    /// Rewrites `set` for the session described by `rw` into `self.block`.
    pub(crate) fn build(&mut self, set: &AttrSet, rw: &Rewrite) {
        self.pieces.clear();
        self.index.clear();
        let (mut origin, mut lp, mut otc) = (false, false, false);
        let mut path: Option<AsPathView<'_>> = None;
        for a in set.attrs() {
            // Stored sets were encoded by us; a framing error ends the set.
            let Ok(a) = a else { break };
            let fate = match attr_fate(a.type_code, a.flags, rw.ebgp) {
                // RFC 5065 §5.3 (and FRR, BIRD): LOCAL_PREF crosses
                // member-AS boundaries; ORIGINATOR_ID and CLUSTER_LIST
                // stay in the member AS.
                AttrFate::Drop if rw.confed && a.type_code == at::LOCAL_PREF => {
                    AttrFate::Keep(a.flags)
                }
                f => f,
            };
            match fate {
                AttrFate::Drop => {}
                // A stored path that does not parse is sent as empty
                // rather than as garbage.
                AttrFate::Rebuild if a.type_code == at::AS_PATH => {
                    path = AsPathView::parse(a.value, true);
                }
                AttrFate::Rebuild => self.aggregator(&a, rw),
                AttrFate::Keep(flags) => {
                    match a.type_code {
                        at::ORIGIN => origin = true,
                        at::LOCAL_PREF => lp = true,
                        at::ONLY_TO_CUSTOMER => otc = true,
                        _ => {}
                    }
                    self.add(flags, a.type_code, a.value);
                }
            }
        }
        if !origin {
            // ORIGIN is mandatory (RFC 4271 §5.1.1); only a locally built
            // set can lack it.
            self.add(af::TRANSITIVE, at::ORIGIN, &[Origin::Incomplete as u8]);
        }
        self.as_path(path, rw);
        if (!rw.ebgp || rw.confed) && !lp {
            // RFC 4271 §5.1.5: LOCAL_PREF MUST go to internal peers
            // (confederation members too, RFC 5065 §5.3); 100 is the
            // customary default (BIRD, FRR).
            self.add(
                af::TRANSITIVE,
                at::LOCAL_PREF,
                &DEFAULT_LOCAL_PREF.to_be_bytes(),
            );
        }
        if !otc && matches!(rw.role, Some(role::CUSTOMER | role::PEER | role::RS_CLIENT)) {
            // RFC 9234 §5: towards a Customer, Peer or RS-Client add OTC
            // with the local AS when absent.
            self.add(
                af::OPTIONAL | af::TRANSITIVE,
                at::ONLY_TO_CUSTOMER,
                &rw.local_asn.0.to_be_bytes(),
            );
        }
        self.assemble();
    }

    /// AS_PATH, and AS4_PATH for a 2-octet peer (RFC 6793 §4.2.2).
    fn as_path(&mut self, path: Option<AsPathView<'_>>, rw: &Rewrite) {
        // Towards a member AS our AS goes in a confederation segment,
        // which AS4_PATH never carries (RFC 6793 §3).
        let prepend = prepend_asn(rw.local_asn, rw.ebgp, rw.route_server)
            .filter(|_| !rw.confed)
            .map(|a| (a, SegmentType::Sequence));
        let mut value = std::mem::take(&mut self.path_scratch);
        value.clear();
        if rw.confed {
            export_confed_as_path(&mut value, path, rw.local_asn, rw.four_octet_asn);
        } else {
            export_as_path(
                &mut value,
                path,
                rw.local_asn,
                rw.ebgp,
                rw.route_server,
                rw.four_octet_asn,
            );
        }
        self.add(af::TRANSITIVE, at::AS_PATH, &value);
        if !rw.four_octet_asn {
            // RFC 6793 §4.2.2: AS4_PATH only when some ASN needs 4 octets;
            // never with confederation segments (§3).
            let big = prepend.is_some_and(|(a, _)| a.is_4byte())
                || path.is_some_and(|p| {
                    p.segments()
                        .filter(|s| !s.kind.is_confed())
                        .any(|s| s.asns().any(Asn::is_4byte))
                });
            if big {
                value.clear();
                put_path(&mut value, path, prepend, true, true);
                self.add(af::OPTIONAL | af::TRANSITIVE, at::AS4_PATH, &value);
            }
        }
        self.path_scratch = value;
    }

    /// AGGREGATOR: 2-octet form plus AS4_AGGREGATOR when the ASN does not
    /// fit (RFC 6793 §4.2.2).
    fn aggregator(&mut self, a: &RawAttr<'_>, rw: &Rewrite) {
        let (Some(asn), Some(addr)) = (a.value.get(..4), a.value.get(4..8)) else {
            self.add(a.flags, a.type_code, a.value);
            return;
        };
        if rw.four_octet_asn || a.value.len() != 8 {
            self.add(a.flags, a.type_code, a.value);
            return;
        }
        let mut asn4 = [0u8; 4];
        asn4.copy_from_slice(asn);
        let asn = Asn(u32::from_be_bytes(asn4));
        let mut v = [0u8; 6];
        v[..2].copy_from_slice(&asn.to_u16_or_trans().to_be_bytes());
        v[2..].copy_from_slice(addr);
        self.add(a.flags, at::AGGREGATOR, &v);
        if asn.is_4byte() {
            self.add(af::OPTIONAL | af::TRANSITIVE, at::AS4_AGGREGATOR, a.value);
        }
    }

    /// Concatenates the pieces by type code and records the split points.
    fn assemble(&mut self) {
        self.index.sort_unstable_by_key(|&(c, _, _)| c);
        self.block.clear();
        self.split_nh = usize::MAX;
        self.split_mp = usize::MAX;
        for &(code, s, e) in &self.index {
            if code > at::NEXT_HOP && self.split_nh == usize::MAX {
                self.split_nh = self.block.len();
            }
            if code > at::MP_UNREACH_NLRI && self.split_mp == usize::MAX {
                self.split_mp = self.block.len();
            }
            if let Some(p) = self.pieces.get(s as usize..e as usize) {
                self.block.extend_from_slice(p);
            }
        }
        let n = self.block.len();
        self.split_nh = self.split_nh.min(n);
        self.split_mp = self.split_mp.min(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_fates() {
        let wk = af::TRANSITIVE;
        let opt = af::OPTIONAL;
        for code in [
            at::NEXT_HOP,
            at::MP_REACH_NLRI,
            at::AS4_PATH,
            at::AS4_AGGREGATOR,
        ] {
            assert_eq!(attr_fate(code, opt, true), AttrFate::Drop);
            assert_eq!(attr_fate(code, opt, false), AttrFate::Drop);
        }
        for code in [at::LOCAL_PREF, at::ORIGINATOR_ID, at::CLUSTER_LIST] {
            assert_eq!(attr_fate(code, wk, true), AttrFate::Drop);
            assert_eq!(attr_fate(code, wk, false), AttrFate::Keep(wk));
        }
        assert_eq!(attr_fate(at::AS_PATH, wk, true), AttrFate::Rebuild);
        assert_eq!(
            attr_fate(at::AGGREGATOR, opt | wk, false),
            AttrFate::Rebuild
        );
        assert_eq!(
            attr_fate(at::COMMUNITIES, opt | wk, true),
            AttrFate::Keep(opt | wk)
        );
        // Unknown: transitive goes on with Partial, non-transitive stops.
        assert_eq!(
            attr_fate(99, opt | wk, true),
            AttrFate::Keep(opt | wk | af::PARTIAL)
        );
        assert_eq!(attr_fate(98, opt, false), AttrFate::Drop);
    }

    fn path(v: &[u8]) -> Option<AsPathView<'_>> {
        AsPathView::parse(v, true)
    }

    #[test]
    fn exported_as_paths() {
        let mut out = Vec::new();
        // eBGP: joins a leading AS_SEQUENCE, drops confederation segments.
        let seq = [2, 1, 0, 0, 0, 174, 3, 1, 0, 0, 0, 7];
        export_as_path(&mut out, path(&seq), Asn(65001), true, false, true);
        assert_eq!(out, [2, 2, 0, 0, 0xfd, 0xe9, 0, 0, 0, 174]);
        // A leading AS_SET gets a segment of its own in front.
        out.clear();
        export_as_path(
            &mut out,
            path(&[1, 1, 0, 0, 0, 9]),
            Asn(65001),
            true,
            false,
            true,
        );
        assert_eq!(out, [2, 1, 0, 0, 0xfd, 0xe9, 1, 1, 0, 0, 0, 9]);
        // iBGP and route servers pass the path as is; none stays empty.
        out.clear();
        export_as_path(&mut out, path(&seq), Asn(65001), false, false, true);
        assert_eq!(out, seq);
        out.clear();
        export_as_path(&mut out, None, Asn(65001), true, true, true);
        assert!(out.is_empty());
        // 2-octet peers get AS_TRANS for large ASNs.
        out.clear();
        export_as_path(&mut out, None, Asn(4_200_000_000), true, false, false);
        assert_eq!(out, [2, 1, 0x5b, 0xa0]);
    }

    /// RFC 5065 §5: towards another member AS our member AS joins a
    /// leading AS_CONFED_SEQUENCE (or starts one); every segment stays.
    #[test]
    fn confederation_as_paths() {
        let mut out = Vec::new();
        // ( 65002 ) 174 -> ( 65001 65002 ) 174
        let p = [3, 1, 0, 0, 0xfd, 0xea, 2, 1, 0, 0, 0, 174];
        export_confed_as_path(&mut out, path(&p), Asn(65001), true);
        assert_eq!(
            out,
            [3, 2, 0, 0, 0xfd, 0xe9, 0, 0, 0xfd, 0xea, 2, 1, 0, 0, 0, 174]
        );
        // 174 -> ( 65001 ) 174; empty -> ( 65001 )
        out.clear();
        export_confed_as_path(&mut out, path(&[2, 1, 0, 0, 0, 174]), Asn(65001), true);
        assert_eq!(out, [3, 1, 0, 0, 0xfd, 0xe9, 2, 1, 0, 0, 0, 174]);
        out.clear();
        export_confed_as_path(&mut out, None, Asn(65001), false);
        assert_eq!(out, [3, 1, 0xfd, 0xe9]);
        // Out of the confederation the identifier replaces them all:
        // ( 65001 65002 ) 174 to a true eBGP peer from 64512 -> 64512 174.
        out.clear();
        let p = [3, 2, 0, 0, 0xfd, 0xe9, 0, 0, 0xfd, 0xea, 2, 1, 0, 0, 0, 174];
        export_as_path(&mut out, path(&p), Asn(64512), true, false, true);
        assert_eq!(out, [2, 2, 0, 0, 0xfc, 0, 0, 0, 0, 174]);
    }
}

//! Attribute sets: the mutable [`AttrsBuilder`] that import/export policy
//! edits, and the frozen, interned [`AttrSet`] the RIB stores.
//!
//! An [`AttrSet`] keeps the attributes encoded as wire TLVs (4-octet ASNs,
//! sorted by type code, the next hop as NEXT_HOP or as an MP_REACH_NLRI
//! without NLRI) in one boxed slice, plus a packed [`Summary`] of what
//! best-path selection reads, so that selection never parses.

use std::net::Ipv4Addr;

use base::Asn;
use bgp_wire::consts::attr_type as at;
use bgp_wire::{
    merge_as4_path, AttrIter, AttrValue, Community, MpReach, MpReachView, NextHop, Origin,
    ParseCtx, PathAttr, PathAttribute, RawAttr, SegmentType, UpdateView, WireError,
};

/// What the RIB stores attributes as: always 4-octet ASNs (RFC 6793).
pub(crate) const STORE_CTX: ParseCtx = ParseCtx::modern();

const HAS_LP: u8 = 1;
const HAS_MED: u8 = 2;
const HAS_ORIGINATOR: u8 = 4;
const HAS_NEIGHBOR: u8 = 8;
const LLGR_STALE: u8 = 16;
const NO_LLGR: u8 = 32;

/// The fields best-path selection reads, precomputed and packed (28 bytes).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Summary {
    local_pref: u32,
    med: u32,
    originator_id: u32,
    neighbor_as: u32,
    igp_metric: u32,
    as_path_len: u16,
    cluster_list_len: u16,
    origin: Origin,
    present: u8,
}

impl Default for Summary {
    fn default() -> Self {
        Summary {
            local_pref: 0,
            med: 0,
            originator_id: 0,
            neighbor_as: 0,
            igp_metric: 0,
            as_path_len: 0,
            cluster_list_len: 0,
            // RFC 4271 §9.1.2.2 c prefers lower ORIGIN; a set without one
            // (only possible for locally built sets) ranks last.
            origin: Origin::Incomplete,
            present: 0,
        }
    }
}

impl Summary {
    fn opt(&self, bit: u8, v: u32) -> Option<u32> {
        (self.present & bit != 0).then_some(v)
    }
    /// LOCAL_PREF (RFC 4271 §5.1.5), if present.
    pub fn local_pref(&self) -> Option<u32> {
        self.opt(HAS_LP, self.local_pref)
    }
    /// MULTI_EXIT_DISC (RFC 4271 §5.1.4), if present.
    pub fn med(&self) -> Option<u32> {
        self.opt(HAS_MED, self.med)
    }
    /// ORIGINATOR_ID (RFC 4456 §8), if present.
    pub fn originator_id(&self) -> Option<Ipv4Addr> {
        self.opt(HAS_ORIGINATOR, self.originator_id)
            .map(Ipv4Addr::from)
    }
    /// The neighbouring AS for MED comparison (RFC 4271 §9.1.2.2 c): the
    /// first ASN of the path after any leading confederation segments
    /// (RFC 5065 §5.3), when that segment is an AS_SEQUENCE.
    pub fn neighbor_as(&self) -> Option<Asn> {
        self.opt(HAS_NEIGHBOR, self.neighbor_as).map(Asn)
    }
    /// AS_PATH length for selection (RFC 4271 §9.1.2.2 a): an AS_SET counts
    /// one, confederation segments count zero (RFC 5065 §5.3).
    pub fn as_path_len(&self) -> u16 {
        self.as_path_len
    }
    /// ORIGIN; INCOMPLETE for a set without one (it then ranks last).
    pub fn origin(&self) -> Origin {
        self.origin
    }
    /// Number of CLUSTER_LIST entries (RFC 4456 §9).
    pub fn cluster_list_len(&self) -> u16 {
        self.cluster_list_len
    }
    /// The IGP cost to the next hop, as supplied by the caller.
    pub fn igp_metric(&self) -> u32 {
        self.igp_metric
    }
    /// Carries the LLGR_STALE community (RFC 9494): least preferred.
    pub fn llgr_stale(&self) -> bool {
        self.present & LLGR_STALE != 0
    }
    /// Carries the NO_LLGR community (RFC 9494).
    pub fn no_llgr(&self) -> bool {
        self.present & NO_LLGR != 0
    }
}

/// An owned, editable attribute list: what import and export policy see.
///
/// The next hop is held apart from the attributes (it comes from NEXT_HOP or
/// MP_REACH_NLRI depending on the family); MP_REACH/MP_UNREACH themselves are
/// never held. `igp_metric` is the cost to the next hop (RFC 4271 §9.1.2.2
/// e), an input from next-hop resolution, 0 by default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttrsBuilder {
    attrs: Vec<PathAttr>,
    next_hop: Option<NextHop>,
    igp_metric: u32,
    dirty: bool,
}

impl AttrsBuilder {
    /// An empty builder: no attributes, no next hop, IGP metric 0.
    pub fn new() -> AttrsBuilder {
        AttrsBuilder::default()
    }

    /// From owned attributes. NEXT_HOP becomes the next hop; an MP_REACH_NLRI
    /// supplies it instead when present; MP_UNREACH_NLRI is dropped.
    pub fn from_attrs<I: IntoIterator<Item = PathAttr>>(attrs: I) -> AttrsBuilder {
        let mut b = AttrsBuilder::default();
        let mut mp_nh = None;
        for a in attrs {
            match &a.value {
                AttrValue::NextHop(n) => {
                    b.next_hop.get_or_insert(NextHop::V4(*n));
                }
                AttrValue::MpReach(m) => mp_nh = mp_nh.or(m.next_hop()),
                AttrValue::MpUnreach(_) => {}
                _ => {
                    if b.get(a.type_code()).is_none() {
                        b.attrs.push(a);
                    }
                }
            }
        }
        if mp_nh.is_some() {
            b.next_hop = mp_nh;
        }
        b
    }

    /// From a received UPDATE. The next hop is MP_REACH_NLRI's when the
    /// UPDATE has one, else NEXT_HOP's. Repeated attributes keep the first
    /// (RFC 7606 §3 g). On a 2-octet session AS4_PATH is merged into AS_PATH
    /// (RFC 6793 §4.2.3) and dropped. Fails only on attribute framing errors;
    /// run [`UpdateView::validate`] first for the RFC 7606 checks.
    pub fn from_update(u: &UpdateView<'_>) -> Result<AttrsBuilder, WireError> {
        Self::from_update_except(u, &bgp_wire::AttrSet::default())
    }

    /// [`Self::from_update`] leaving out the attribute types in `skip`
    /// (those RFC 7606 discards) before the AS4_PATH merge.
    pub fn from_update_except(
        u: &UpdateView<'_>,
        skip: &bgp_wire::AttrSet,
    ) -> Result<AttrsBuilder, WireError> {
        let ctx = u.ctx();
        let mut attrs = Vec::new();
        let mut mp_nh = None;
        for a in u.attributes() {
            let a: RawAttr<'_> = a?;
            match a.type_code {
                at::MP_UNREACH_NLRI => {}
                at::MP_REACH_NLRI => {
                    if let Ok(PathAttribute::MpReach(m)) = a.typed(ctx) {
                        mp_nh = mp_nh.or_else(|| MpReachView::next_hop(&m));
                    }
                }
                t if skip.contains(t) => {}
                _ => attrs.push(a.to_owned(ctx)),
            }
        }
        Ok(AttrsBuilder::from_received(
            attrs,
            mp_nh,
            ctx.four_octet_asn,
        ))
    }

    /// From the attributes of a received UPDATE already typed (the
    /// validating pass, `bgp_wire::UpdateSink`, hands them over): MP
    /// attributes left out, `mp_next_hop` MP_REACH_NLRI's next hop. On a
    /// 2-octet session (`four_octet_asn` false) AS4_PATH is merged into
    /// AS_PATH (RFC 6793 §4.2.3) and dropped. The result is clean.
    pub fn from_received(
        mut attrs: Vec<PathAttr>,
        mp_next_hop: Option<NextHop>,
        four_octet_asn: bool,
    ) -> AttrsBuilder {
        if !four_octet_asn {
            merge_as4(&mut attrs);
        }
        let mut b = AttrsBuilder::from_attrs(attrs);
        if mp_next_hop.is_some() {
            b.next_hop = mp_next_hop;
        }
        b.dirty = false;
        b
    }

    /// Drops what a route from an external peer may not carry into our
    /// AS: LOCAL_PREF (RFC 4271 §5.1.5), ORIGINATOR_ID and CLUSTER_LIST
    /// (RFC 4456 §8, RFC 7606 §7.9-7.10). The one home of this rule: the
    /// session's decoder applies it once per UPDATE, and the RIB again
    /// only for attributes that did not come through it. Returns whether
    /// anything was removed (the builder is then clean again).
    pub fn strip_ebgp_ingress(&mut self) -> bool {
        let had = self.remove(at::LOCAL_PREF)
            | self.remove(at::ORIGINATOR_ID)
            | self.remove(at::CLUSTER_LIST);
        if had {
            self.mark_clean();
        }
        had
    }

    /// Whether [`Self::strip_ebgp_ingress`] would remove anything.
    pub fn needs_ebgp_strip(&self) -> bool {
        [at::LOCAL_PREF, at::ORIGINATOR_ID, at::CLUSTER_LIST]
            .iter()
            .any(|&t| self.get(t).is_some())
    }

    /// The attributes, next hop excluded.
    pub fn attrs(&self) -> &[PathAttr] {
        &self.attrs
    }
    /// The attribute of type `type_code`, if present.
    pub fn get(&self, type_code: u8) -> Option<&PathAttr> {
        self.attrs.iter().find(|a| a.type_code() == type_code)
    }
    /// Replaces the attribute of the same type, or adds it. A NEXT_HOP
    /// attribute sets the next hop instead.
    pub fn set(&mut self, a: PathAttr) {
        self.dirty = true;
        if let AttrValue::NextHop(n) = a.value {
            self.next_hop = Some(NextHop::V4(n));
            return;
        }
        match self
            .attrs
            .iter_mut()
            .find(|x| x.type_code() == a.type_code())
        {
            Some(x) => *x = a,
            None => self.attrs.push(a),
        }
    }
    /// Removes an attribute; returns whether it was there.
    pub fn remove(&mut self, type_code: u8) -> bool {
        let n = self.attrs.len();
        self.attrs.retain(|a| a.type_code() != type_code);
        let removed = self.attrs.len() != n;
        self.dirty |= removed;
        removed
    }
    /// LOCAL_PREF, if present.
    pub fn local_pref(&self) -> Option<u32> {
        match self.get(at::LOCAL_PREF).map(|a| &a.value) {
            Some(AttrValue::LocalPref(v)) => Some(*v),
            _ => None,
        }
    }
    /// Sets LOCAL_PREF.
    pub fn set_local_pref(&mut self, v: u32) {
        self.set(PathAttr::new(AttrValue::LocalPref(v)));
    }
    /// MULTI_EXIT_DISC, if present.
    pub fn med(&self) -> Option<u32> {
        match self.get(at::MULTI_EXIT_DISC).map(|a| &a.value) {
            Some(AttrValue::Med(v)) => Some(*v),
            _ => None,
        }
    }
    /// Sets MULTI_EXIT_DISC.
    pub fn set_med(&mut self, v: u32) {
        self.set(PathAttr::new(AttrValue::Med(v)));
    }
    /// The next hop (NEXT_HOP or the MP_REACH_NLRI next hop), if any.
    pub fn next_hop(&self) -> Option<NextHop> {
        self.next_hop
    }
    /// Sets the next hop.
    pub fn set_next_hop(&mut self, nh: NextHop) {
        self.dirty = true;
        self.next_hop = Some(nh);
    }
    /// Cost to the next hop, for selection (RFC 4271 §9.1.2.2 e); 0 by default.
    pub fn igp_metric(&self) -> u32 {
        self.igp_metric
    }
    /// Sets the cost to the next hop.
    pub fn set_igp_metric(&mut self, m: u32) {
        self.dirty = true;
        self.igp_metric = m;
    }
    /// Whether a setter ran since construction or [`Self::mark_clean`]. The
    /// RIB uses it to reuse the interned set of an unmodified builder.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }
    /// Clears the dirty flag (see [`Self::is_dirty`]).
    pub fn mark_clean(&mut self) {
        self.dirty = false;
    }

    /// Encodes the stored form into `out` (cleared first) and returns the
    /// summary. Attributes are sorted by type code so that the same set
    /// received in a different order interns to the same handle.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) -> Summary {
        out.clear();
        let mut order: Vec<(u8, usize)> = self
            .attrs
            .iter()
            .enumerate()
            .map(|(i, a)| (a.type_code(), i))
            .collect();
        order.sort_unstable();
        let nh_attr = self.next_hop.map(|nh| match nh {
            NextHop::V4(a) => PathAttr::new(AttrValue::NextHop(a)),
            // RFC 4760 §3: IPv6 next hops travel in MP_REACH_NLRI; stored
            // here with no NLRI, the exporter adds them.
            other => PathAttr::new(AttrValue::MpReach(MpReach::new(
                base::AfiSafi::IPV6_UNICAST,
                other,
                Vec::new(),
            ))),
        });
        let nh_code = nh_attr.as_ref().map(PathAttr::type_code);
        let mut nh_done = nh_attr.is_none();
        let mut s = Summary {
            igp_metric: self.igp_metric,
            ..Summary::default()
        };
        for (code, i) in order {
            if !nh_done && nh_code.is_some_and(|c| c <= code) {
                if let Some(a) = &nh_attr {
                    a.encode(STORE_CTX, out);
                }
                nh_done = true;
            }
            let Some(a) = self.attrs.get(i) else { continue };
            a.encode(STORE_CTX, out);
            summarize(&a.value, &mut s);
        }
        if let (false, Some(a)) = (nh_done, &nh_attr) {
            a.encode(STORE_CTX, out);
        }
        s
    }
}

/// Folds one attribute into the summary.
fn summarize(v: &AttrValue, s: &mut Summary) {
    match v {
        AttrValue::Origin(o) => s.origin = *o,
        AttrValue::LocalPref(v) => {
            s.local_pref = *v;
            s.present |= HAS_LP;
        }
        AttrValue::Med(v) => {
            s.med = *v;
            s.present |= HAS_MED;
        }
        AttrValue::OriginatorId(a) => {
            s.originator_id = u32::from(*a);
            s.present |= HAS_ORIGINATOR;
        }
        AttrValue::Communities(c) => {
            if c.contains(&Community::LLGR_STALE) {
                s.present |= LLGR_STALE;
            }
            if c.contains(&Community::NO_LLGR) {
                s.present |= NO_LLGR;
            }
        }
        AttrValue::ClusterList(c) => {
            s.cluster_list_len = c.len().min(u16::MAX as usize) as u16;
        }
        AttrValue::AsPath(p) => {
            s.as_path_len = p.path_len().min(u16::MAX as usize) as u16;
            let first = p.segments.iter().find(|seg| !seg.kind.is_confed());
            if let Some(seg) = first.filter(|seg| seg.kind == SegmentType::Sequence) {
                if let Some(a) = seg.asns.first() {
                    s.neighbor_as = a.0;
                    s.present |= HAS_NEIGHBOR;
                }
            }
        }
        _ => {}
    }
}

/// RFC 6793 §4.2.3 on a 2-octet session: rebuild AGGREGATOR from
/// AS4_AGGREGATOR and AS_PATH from AS4_PATH, then drop both.
fn merge_as4(attrs: &mut Vec<PathAttr>) {
    let as4_agg = attrs.iter().find_map(|a| match &a.value {
        AttrValue::As4Aggregator(g) => Some(*g),
        _ => None,
    });
    attrs.retain(|a| a.type_code() != at::AS4_AGGREGATOR);
    // An AGGREGATOR with a real ASN means the AS4 attributes are stale
    // (added before an OLD speaker aggregated): ignore them.
    let mut agg_real = false;
    for a in attrs.iter_mut() {
        if let AttrValue::Aggregator(g) = &mut a.value {
            match as4_agg {
                Some(real) if g.asn == Asn::TRANS => *g = real,
                _ => agg_real |= g.asn != Asn::TRANS,
            }
        }
    }
    let Some(i4) = attrs.iter().position(|a| a.type_code() == at::AS4_PATH) else {
        return;
    };
    let as4 = match &attrs[i4].value {
        AttrValue::As4Path(p) => Some(p.clone()),
        _ => None,
    };
    attrs.remove(i4);
    let (Some(as4), false) = (as4, agg_real) else {
        return;
    };
    for a in attrs.iter_mut() {
        if let AttrValue::AsPath(p) = &a.value {
            a.value = AttrValue::AsPath(merge_as4_path(p, &as4));
        }
    }
}

/// A frozen attribute set as stored by the RIB: the TLVs in stored form and
/// their [`Summary`]. Obtain one through [`crate::Interner::get`].
#[derive(Clone, Debug, Default)]
pub struct AttrSet {
    raw: Box<[u8]>,
    summary: Summary,
    /// The index of the set's selection key in its interner's key table
    /// (0: none); in what would be padding, so a set is 48 bytes either
    /// way. Not part of the set's value: equality and hashing ignore it.
    sel: u16,
}

impl PartialEq for AttrSet {
    fn eq(&self, o: &AttrSet) -> bool {
        self.summary == o.summary && self.raw == o.raw
    }
}

impl Eq for AttrSet {}

impl std::hash::Hash for AttrSet {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.raw.hash(h);
        self.summary.hash(h);
    }
}

impl AttrSet {
    pub(crate) fn new(raw: Box<[u8]>, summary: Summary) -> AttrSet {
        AttrSet {
            raw,
            summary,
            sel: 0,
        }
    }
    /// The selection key index the interner gave this set (0: none).
    pub(crate) fn sel(&self) -> u16 {
        self.sel
    }
    pub(crate) fn set_sel(&mut self, i: u16) {
        self.sel = i;
    }
    pub(crate) fn take_raw(&mut self) -> Box<[u8]> {
        std::mem::take(&mut self.raw)
    }
    /// What selection and export read without parsing the TLVs.
    pub fn summary(&self) -> &Summary {
        &self.summary
    }
    /// The stored TLVs (4-octet ASNs, see the module docs).
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }
    /// The stored attributes; parse each with [`Self::ctx`].
    pub fn attrs(&self) -> AttrIter<'_> {
        AttrIter::new(&self.raw)
    }
    /// The context the stored attributes are encoded in.
    pub const fn ctx() -> ParseCtx {
        STORE_CTX
    }
    /// The first stored attribute of type `type_code`.
    pub fn find(&self, type_code: u8) -> Option<RawAttr<'_>> {
        self.attrs()
            .map_while(Result::ok)
            .find(|a| a.type_code == type_code)
    }
    /// The next hop: NEXT_HOP if present, else the MP_REACH_NLRI next hop.
    pub fn next_hop(&self) -> Option<NextHop> {
        if let Some(a) = self.find(at::NEXT_HOP) {
            if let Ok(PathAttribute::NextHop(n)) = a.typed(STORE_CTX) {
                return Some(NextHop::V4(n));
            }
        }
        match self.find(at::MP_REACH_NLRI)?.typed(STORE_CTX) {
            Ok(PathAttribute::MpReach(m)) => m.next_hop(),
            _ => None,
        }
    }
    /// An editable copy (for export policy).
    pub fn to_builder(&self) -> AttrsBuilder {
        let mut b = AttrsBuilder::from_attrs(
            self.attrs()
                .map_while(Result::ok)
                .map(|a| a.to_owned(STORE_CTX)),
        );
        b.igp_metric = self.summary.igp_metric;
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bgp_wire::{AsPath, AsSegment, Community};

    fn asp(segs: &[(SegmentType, &[u32])]) -> PathAttr {
        PathAttr::new(AttrValue::AsPath(AsPath {
            segments: segs
                .iter()
                .map(|(k, a)| AsSegment {
                    kind: *k,
                    asns: a.iter().map(|&x| Asn(x)).collect(),
                })
                .collect(),
        }))
    }

    #[test]
    fn summary_fields_and_path_length_rules() {
        use SegmentType::*;
        let b = AttrsBuilder::from_attrs([
            PathAttr::new(AttrValue::Origin(Origin::Egp)),
            asp(&[
                (ConfedSequence, &[65001, 65002]),
                (Sequence, &[64500, 64501]),
                (Set, &[1, 2, 3]),
                (ConfedSet, &[65003]),
            ]),
            PathAttr::new(AttrValue::NextHop(Ipv4Addr::new(192, 0, 2, 1))),
            PathAttr::new(AttrValue::Med(7)),
            PathAttr::new(AttrValue::OriginatorId(Ipv4Addr::new(10, 0, 0, 9))),
            PathAttr::new(AttrValue::ClusterList(vec![Ipv4Addr::new(1, 1, 1, 1); 3])),
        ]);
        let mut out = Vec::new();
        let s = b.encode(&mut out);
        // RFC 4271 §9.1.2.2 a: 2 (sequence) + 1 (set) + 0 (confed).
        assert_eq!(s.as_path_len(), 3);
        assert_eq!(s.neighbor_as(), Some(Asn(64500)));
        assert_eq!(s.origin(), Origin::Egp);
        assert_eq!(s.med(), Some(7));
        assert_eq!(s.local_pref(), None);
        assert_eq!(s.originator_id(), Some(Ipv4Addr::new(10, 0, 0, 9)));
        assert_eq!(s.cluster_list_len(), 3);
        let set = AttrSet::new(out.into(), s);
        assert_eq!(
            set.next_hop(),
            Some(NextHop::V4(Ipv4Addr::new(192, 0, 2, 1)))
        );
        // Stored sorted by type code.
        let codes: Vec<u8> = set.attrs().map(|a| a.unwrap().type_code).collect();
        assert_eq!(codes, vec![1, 2, 3, 4, 9, 10]);
        assert_eq!(set.to_builder().attrs(), {
            let mut v = b.attrs().to_vec();
            v.sort_by_key(PathAttr::type_code);
            v
        });
    }

    #[test]
    fn order_does_not_change_encoding_and_v6_next_hop_roundtrips() {
        let nh = NextHop::V6("2001:db8::1".parse().unwrap());
        let a = PathAttr::new(AttrValue::Communities(vec![Community(1)]));
        let o = PathAttr::new(AttrValue::Origin(Origin::Igp));
        let mut b1 = AttrsBuilder::from_attrs([a.clone(), o.clone()]);
        b1.set_next_hop(nh);
        let mut b2 = AttrsBuilder::from_attrs([o, a]);
        b2.set_next_hop(nh);
        let (mut e1, mut e2) = (Vec::new(), Vec::new());
        assert_eq!(b1.encode(&mut e1), b2.encode(&mut e2));
        assert_eq!(e1, e2);
        let set = AttrSet::new(e1.into(), Summary::default());
        assert_eq!(set.next_hop(), Some(nh));
        // Leading confederation segment that is a set: no neighbour AS.
        let mut s = Summary::default();
        summarize(&asp(&[(SegmentType::Set, &[5, 6])]).value, &mut s);
        assert_eq!(s.neighbor_as(), None);
        assert_eq!(s.as_path_len(), 1);
    }

    #[test]
    fn as4_path_is_merged_on_two_octet_sessions() {
        let mut v = vec![
            asp(&[(SegmentType::Sequence, &[64500, 23456, 23456])]),
            PathAttr::new(AttrValue::As4Path(AsPath::from_sequence(vec![
                Asn(400_000),
                Asn(400_001),
            ]))),
        ];
        merge_as4(&mut v);
        assert_eq!(v.len(), 1);
        let agg = |a: u32| bgp_wire::Aggregator {
            asn: Asn(a),
            addr: Ipv4Addr::new(10, 0, 0, 1),
        };
        // AS4_AGGREGATOR replaces an AS_TRANS AGGREGATOR and is dropped.
        let mut w = vec![
            PathAttr::new(AttrValue::Aggregator(agg(23456))),
            PathAttr::new(AttrValue::As4Aggregator(agg(400_000))),
        ];
        merge_as4(&mut w);
        assert_eq!(w, vec![PathAttr::new(AttrValue::Aggregator(agg(400_000)))]);
        // A real 2-octet AGGREGATOR wins: AS4 attributes ignored.
        let mut w = vec![
            PathAttr::new(AttrValue::Aggregator(agg(64999))),
            PathAttr::new(AttrValue::As4Aggregator(agg(400_000))),
            asp(&[(SegmentType::Sequence, &[23456])]),
            PathAttr::new(AttrValue::As4Path(AsPath::from_sequence(vec![Asn(
                400_001,
            )]))),
        ];
        merge_as4(&mut w);
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].value, AttrValue::Aggregator(agg(64999)));
        assert_eq!(w[1], asp(&[(SegmentType::Sequence, &[23456])]));
        assert_eq!(
            v[0].value,
            AttrValue::AsPath(AsPath::from_sequence(vec![
                Asn(64500),
                Asn(400_000),
                Asn(400_001)
            ]))
        );
    }

    #[test]
    fn from_update_takes_mp_next_hop_and_drops_mp_attributes() {
        use bgp_wire::{MpReach, Nlri, UpdateMessage};
        let nh6: std::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
        let p6: base::Prefix = "2001:db8:1::/48".parse().unwrap();
        let m = UpdateMessage {
            withdrawn: vec![],
            attributes: vec![
                PathAttr::new(AttrValue::Origin(Origin::Igp)),
                asp(&[(SegmentType::Sequence, &[64500, 64501])]),
                PathAttr::new(AttrValue::MpReach(MpReach::new(
                    base::AfiSafi::IPV6_UNICAST,
                    NextHop::V6(nh6),
                    vec![Nlri::new(p6)],
                ))),
                PathAttr::new(AttrValue::LocalPref(7)),
            ],
            nlri: vec![],
        };
        let mut body = Vec::new();
        m.encode_body(ParseCtx::modern(), &mut body).unwrap();
        let v = UpdateView::parse(&body, ParseCtx::modern()).unwrap();
        let b = AttrsBuilder::from_update(&v).unwrap();
        assert!(!b.is_dirty());
        assert_eq!(b.next_hop(), Some(NextHop::V6(nh6)));
        assert_eq!(b.local_pref(), Some(7));
        assert!(b.get(at::MP_REACH_NLRI).is_none());
        assert_eq!(b.attrs().len(), 3);
        // Truncated attribute block: a framing error, not a panic.
        let cut = body.len() - 3;
        let mut bad = body[..cut].to_vec();
        bad[2..4].copy_from_slice(&((cut - 4) as u16).to_be_bytes());
        if let Ok(v) = UpdateView::parse(&bad, ParseCtx::modern()) {
            assert!(AttrsBuilder::from_update(&v).is_err());
        }
    }
}

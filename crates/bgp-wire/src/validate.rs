//! The one validating pass a speaker runs over a received UPDATE, applying
//! RFC 4271 §6.3 checks and the RFC 7606 revised error handling.

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::attr::aspath::AsPathView;
use crate::attr::mp::{MpReachView, MpUnreachView, NextHop};
use crate::attr::{PathAttribute, RawAttr};
use crate::consts::attr_type as at;
use crate::error::{Disposition, WireError};
use crate::nlri::{Nlri, NlriIter};
use crate::update::UpdateView;

/// Receives what [`UpdateView::validate_into`] reads, during the one
/// validating pass: each NLRI as it is checked, and each attribute that is
/// well-formed and the first of its type, with its typed view (so a
/// speaker builds its route from the same walk instead of typing the
/// attributes a second time). On an `Err` from the pass, what the sink
/// received is incomplete and must be dropped.
pub trait UpdateSink<'a> {
    /// An IPv4 withdrawn route, or an MP_UNREACH NLRI of a prefix family.
    fn withdrawn(&mut self, n: Nlri);
    /// An IPv4 NLRI, or an MP_REACH NLRI of a prefix family.
    fn announced(&mut self, n: Nlri);
    /// A well-formed attribute (MP_REACH/MP_UNREACH included).
    fn attribute(&mut self, raw: RawAttr<'a>, typed: &PathAttribute<'a>);
}

/// A sink that keeps nothing ([`UpdateView::validate_from`]).
struct NoSink;

impl<'a> UpdateSink<'a> for NoSink {
    fn withdrawn(&mut self, _: Nlri) {}
    fn announced(&mut self, _: Nlri) {}
    fn attribute(&mut self, _: RawAttr<'a>, _: &PathAttribute<'a>) {}
}

/// Checks every NLRI of `it`, handing each to `f`; the count, or the
/// first error.
fn walk<'a, S: UpdateSink<'a> + ?Sized>(
    it: NlriIter<'a>,
    sink: &mut S,
    f: fn(&mut S, Nlri),
) -> Result<usize, WireError> {
    let mut n = 0;
    for r in it {
        f(sink, r?);
        n += 1;
    }
    Ok(n)
}

/// Whether `p` holds AS 0 (RFC 7607 §2).
fn has_as0(p: &AsPathView<'_>) -> bool {
    p.segments().any(|g| g.asns().any(|a| a.0 == 0))
}

/// Whether `p` holds an AS_CONFED_SEQUENCE or AS_CONFED_SET (RFC 5065).
fn has_confed(p: &AsPathView<'_>) -> bool {
    p.segments().any(|g| g.kind.is_confed())
}

/// Where the sender of an UPDATE stands relative to our confederation
/// (RFC 5065), for the AS_PATH checks of §5.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ConfedSender {
    /// Outside our confederation, or we are in none: a confederation
    /// segment makes AS_PATH malformed (RFC 5065 §5).
    #[default]
    Outside,
    /// An internal peer of our member AS: confederation segments allowed.
    SameMemberAs,
    /// A peer in another member AS of our confederation: AS_PATH must
    /// begin with an AS_CONFED_SEQUENCE (RFC 5065 §5: the sender
    /// prepends its member AS in one), else it is malformed.
    OtherMemberAs,
}

impl ConfedSender {
    /// Whether `p` breaks the RFC 5065 §5 rules for this sender.
    fn malformed(self, p: &AsPathView<'_>) -> bool {
        match self {
            ConfedSender::Outside => has_confed(p),
            ConfedSender::SameMemberAs => false,
            ConfedSender::OtherMemberAs => p
                .segments()
                .next()
                .is_none_or(|g| g.kind != crate::SegmentType::ConfedSequence),
        }
    }
}

/// RFC 4271 §6.3: whether `a` is a valid IPv4 host address: not 0.0.0.0,
/// not multicast (224/4), not class E (240/4, RFC 1112 §4: reserved)
/// and so not the limited broadcast 255.255.255.255.
pub fn host_v4(a: Ipv4Addr) -> bool {
    !a.is_unspecified() && !a.is_multicast() && u32::from(a) < 0xf000_0000
}

/// RFC 4291 §2.5.2-2.5.3, §2.7: whether `a` can be an IPv6 next hop's
/// global address: not `::`, not the loopback `::1` (never sent outside a
/// node), not multicast (ff00::/8).
pub fn host_v6(a: Ipv6Addr) -> bool {
    !a.is_unspecified() && !a.is_loopback() && !a.is_multicast()
}

/// Whether an MP_REACH_NLRI next hop is made of host addresses: a 4-octet
/// one by [`host_v4`], a 16-octet one by [`host_v6`], and a 32-octet one
/// (RFC 2545 §3: global, then link-local) by [`host_v6`] for the first
/// and a link-local unicast (fe80::/10) second. Whether a link-local
/// address is usable on the session is the speaker's to judge.
pub fn next_hop_ok(nh: NextHop) -> bool {
    match nh {
        NextHop::V4(a) => host_v4(a),
        NextHop::V6(g) => host_v6(g),
        NextHop::V6LinkLocal(g, ll) => host_v6(g) && ll.is_unicast_link_local(),
    }
}

/// A set of attribute type codes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct AttrSet([u64; 4]);

impl AttrSet {
    /// Whether type code `t` is in the set.
    pub const fn contains(&self, t: u8) -> bool {
        // `t >> 6` is 0..=3: one word per 64 type codes.
        let w = match t >> 6 {
            0 => self.0[0],
            1 => self.0[1],
            2 => self.0[2],
            _ => self.0[3],
        };
        w & (1 << (t & 63)) != 0
    }
    /// Adds type code `t`.
    pub fn insert(&mut self, t: u8) {
        if let Some(w) = self.0.get_mut(usize::from(t >> 6)) {
            *w |= 1 << (t & 63);
        }
    }
    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0 == [0; 4]
    }
}

/// What [`UpdateView::validate`] found in an acceptable UPDATE.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ValidatedUpdate<'a> {
    /// IPv4 unicast withdrawn routes.
    pub withdrawn: usize,
    /// IPv4 unicast NLRI.
    pub announced: usize,
    /// The first MP_REACH_NLRI, if present and well-formed.
    pub mp_reach: Option<MpReachView<'a>>,
    /// The first MP_UNREACH_NLRI, if present and well-formed.
    pub mp_unreach: Option<MpUnreachView<'a>>,
    /// Attribute types present (first occurrence, well-formed or not).
    pub present: AttrSet,
    /// RFC 7606 "attribute discard": malformed attributes to ignore.
    pub discard: AttrSet,
    /// RFC 7606 §3 g: types that repeated; ignore all but the first.
    pub duplicates: AttrSet,
    /// The first error that led to a discard, for logging.
    pub first_discard_error: Option<WireError>,
}

impl<'a> UpdateView<'a> {
    /// Checks the whole UPDATE once. Returns `Err` with the most severe
    /// problem when it is [`Disposition::SessionReset`] or
    /// [`Disposition::TreatAsWithdraw`] (RFC 7606 §3: the strongest action
    /// wins); attribute-discard problems are reported in the summary.
    /// On treat-as-withdraw the caller still reads [`Self::withdrawn`],
    /// [`Self::nlri`] and [`Self::mp_reach`] to withdraw every NLRI.
    ///
    /// Semantic checks that need configuration (NEXT_HOP reachability,
    /// LOCAL_PREF from eBGP, first AS in AS_PATH) are the speaker's.
    pub fn validate(&self) -> Result<ValidatedUpdate<'a>, (WireError, Disposition)> {
        self.validate_from(false)
    }

    /// [`Self::validate`] for an UPDATE from an external (`ebgp`) or
    /// internal peer. From an external peer a malformed LOCAL_PREF,
    /// ORIGINATOR_ID or CLUSTER_LIST is discarded instead of withdrawing
    /// the route (RFC 7606 §7.5, §7.9, §7.10): those attributes are
    /// ignored from eBGP anyway. Well-formed ones from eBGP are the
    /// speaker's to drop.
    pub fn validate_from(
        &self,
        ebgp: bool,
    ) -> Result<ValidatedUpdate<'a>, (WireError, Disposition)> {
        self.validate_into(ebgp, &mut NoSink)
    }

    /// [`Self::validate_from`] that also hands `sink` every NLRI and every
    /// well-formed attribute as it checks them (one pass over the UPDATE).
    pub fn validate_into<S: UpdateSink<'a> + ?Sized>(
        &self,
        ebgp: bool,
        sink: &mut S,
    ) -> Result<ValidatedUpdate<'a>, (WireError, Disposition)> {
        self.validate_confed_into(ebgp, ConfedSender::Outside, sink)
    }

    /// [`Self::validate_into`] for a speaker in a confederation: `confed`
    /// says where the sender stands (RFC 5065 §5 AS_PATH checks). A
    /// confederation-external peer is passed as internal (`ebgp` false):
    /// LOCAL_PREF and the route-reflection attributes cross member-AS
    /// boundaries.
    pub fn validate_confed_into<S: UpdateSink<'a> + ?Sized>(
        &self,
        ebgp: bool,
        confed: ConfedSender,
        sink: &mut S,
    ) -> Result<ValidatedUpdate<'a>, (WireError, Disposition)> {
        let reset = |e: WireError| (e, Disposition::SessionReset);
        // RFC 7606 §5.3: the NLRI fields must parse, else nothing can be
        // withdrawn reliably.
        let withdrawn = walk(self.withdrawn(), sink, S::withdrawn).map_err(reset)?;
        let announced = walk(self.nlri(), sink, S::announced).map_err(reset)?;
        let mut s = ValidatedUpdate {
            withdrawn,
            announced,
            mp_reach: None,
            mp_unreach: None,
            present: AttrSet::default(),
            discard: AttrSet::default(),
            duplicates: AttrSet::default(),
            first_discard_error: None,
        };
        let mut worst: Option<(WireError, Disposition)> = None;
        let mut note =
            |e: WireError, s: &mut ValidatedUpdate<'a>| -> Result<(), (WireError, Disposition)> {
                let mut d = e.disposition();
                if ebgp
                    && d == Disposition::TreatAsWithdraw
                    && e.attr().is_some_and(|a| {
                        matches!(
                            a.type_code,
                            at::LOCAL_PREF | at::ORIGINATOR_ID | at::CLUSTER_LIST
                        )
                    })
                {
                    d = Disposition::AttributeDiscard;
                }
                match d {
                    Disposition::SessionReset => return Err((e, d)),
                    Disposition::AttributeDiscard => {
                        if let Some(a) = e.attr() {
                            if matches!(e, WireError::DuplicateAttribute(_)) {
                                s.duplicates.insert(a.type_code);
                            } else {
                                s.discard.insert(a.type_code);
                            }
                        }
                        s.first_discard_error.get_or_insert(e);
                    }
                    Disposition::TreatAsWithdraw => {
                        worst.get_or_insert((e, d));
                    }
                }
                Ok(())
            };
        for a in self.attributes() {
            let a = match a {
                Ok(a) => a,
                Err(e) => {
                    note(e, &mut s)?;
                    break;
                }
            };
            if s.present.contains(a.type_code) {
                note(WireError::DuplicateAttribute(a.attr_ref()), &mut s)?;
                continue;
            }
            s.present.insert(a.type_code);
            let opt_err = WireError::OptionalAttribute(a.attr_ref());
            let typed = a.typed(self.ctx());
            match typed {
                Err(e) => note(e, &mut s)?,
                // RFC 7606 §7.2: a segment with a Path Segment Length of
                // zero makes AS_PATH malformed (treat-as-withdraw). The
                // view itself keeps empty segments because MRT archives
                // carry them; only a received UPDATE is held to §7.2.
                Ok(PathAttribute::AsPath(p)) if p.segments().any(|g| g.is_empty()) => {
                    note(WireError::MalformedAsPath(a.attr_ref()), &mut s)?
                }
                // RFC 7607 §2: AS 0 makes AS_PATH malformed (RFC 7606 §7.2:
                // treat-as-withdraw) and AS4_PATH malformed (RFC 6793 §6:
                // attribute discard). RFC 5065 §5: confederation segments
                // from a peer outside our confederation (every peer when
                // we are in none), or a path from another member AS that
                // does not begin with an AS_CONFED_SEQUENCE, make AS_PATH
                // malformed (RFC 7606 §7.2: treat-as-withdraw).
                Ok(PathAttribute::AsPath(p)) if has_as0(&p) || confed.malformed(&p) => {
                    note(WireError::MalformedAsPath(a.attr_ref()), &mut s)?
                }
                Ok(PathAttribute::As4Path(p)) if has_as0(&p) => {
                    note(WireError::MalformedAsPath(a.attr_ref()), &mut s)?
                }
                // RFC 7607 §2: AS 0 in AGGREGATOR (RFC 7606 §7.7) or
                // AS4_AGGREGATOR (RFC 6793 §6): attribute discard.
                Ok(PathAttribute::Aggregator(g) | PathAttribute::As4Aggregator(g))
                    if g.asn.0 == 0 =>
                {
                    note(opt_err, &mut s)?
                }
                // RFC 4271 §6.3: the NEXT_HOP of IPv4 NLRI must be a valid
                // host address (RFC 7606 §7.3: treat-as-withdraw). Without
                // IPv4 NLRI the attribute is ignored (RFC 4760 §3).
                Ok(PathAttribute::NextHop(nh)) if announced > 0 && !host_v4(nh) => {
                    note(WireError::InvalidNextHop(a.attr_ref()), &mut s)?
                }
                Ok(PathAttribute::MpReach(m)) => {
                    // RFC 7606 §7.11: MP errors reset the session.
                    if !m.next_hop_len_ok() {
                        return Err(reset(opt_err));
                    }
                    // A next hop that is no host address (see
                    // [`next_hop_ok`]): as for NEXT_HOP, treat-as-withdraw.
                    if !m.nlri.is_empty() && m.next_hop().is_some_and(|nh| !next_hop_ok(nh)) {
                        note(WireError::InvalidNextHop(a.attr_ref()), &mut s)?;
                    }
                    if crate::attr::mp::is_prefix_family(m.afi_safi) {
                        walk(m.nlri(), sink, S::announced).map_err(|_| reset(opt_err))?;
                    }
                    s.mp_reach = Some(m);
                    sink.attribute(a, &PathAttribute::MpReach(m));
                }
                Ok(PathAttribute::MpUnreach(m)) => {
                    if crate::attr::mp::is_prefix_family(m.afi_safi) {
                        walk(m.withdrawn(), sink, S::withdrawn).map_err(|_| reset(opt_err))?;
                    }
                    s.mp_unreach = Some(m);
                    sink.attribute(a, &PathAttribute::MpUnreach(m));
                }
                Ok(t) => sink.attribute(a, &t),
            }
        }
        // RFC 4271 §6.3 / RFC 4760 §4 / RFC 7606 §3 d: mandatory attributes
        // are only required when something is announced; NEXT_HOP only for
        // the IPv4 NLRI field.
        let mp_announces = s.mp_reach.is_some_and(|m| !m.nlri.is_empty());
        if s.announced > 0 || mp_announces {
            for t in [at::ORIGIN, at::AS_PATH] {
                if !s.present.contains(t) {
                    note(WireError::MissingWellKnown { type_code: t }, &mut s)?;
                }
            }
            if s.announced > 0 && !s.present.contains(at::NEXT_HOP) {
                note(
                    WireError::MissingWellKnown {
                        type_code: at::NEXT_HOP,
                    },
                    &mut s,
                )?;
            }
        }
        match worst {
            Some(w) => Err(w),
            None => Ok(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ctx::ParseCtx;
    use crate::error::{Disposition, WireError};
    use crate::update::UpdateView;

    /// ORIGIN, the given AS_PATH value, NEXT_HOP, and 10.0.0.0/8.
    fn body(as_path: &[u8]) -> Vec<u8> {
        let mut a = vec![0x40, 1, 1, 0, 0x40, 2, as_path.len() as u8];
        a.extend_from_slice(as_path);
        a.extend_from_slice(&[0x40, 3, 4, 192, 0, 2, 1]);
        let mut b = vec![0, 0, 0, a.len() as u8];
        b.extend_from_slice(&a);
        b.extend_from_slice(&[8, 10]);
        b
    }

    #[test]
    fn zero_length_as_path_segment_is_treat_as_withdraw() {
        let ctx = ParseCtx::modern();
        // RFC 7606 §7.2: AS_SEQUENCE [65001] then an empty AS_SEQUENCE.
        let bad = body(&[2, 1, 0, 0, 0xfd, 0xe9, 2, 0]);
        let u = UpdateView::parse(&bad, ctx).unwrap();
        match u.validate() {
            Err((WireError::MalformedAsPath(a), Disposition::TreatAsWithdraw)) => {
                assert_eq!(a.type_code, 2)
            }
            other => panic!("want treat-as-withdraw for an empty segment, got {other:?}"),
        }
        // The same path without the empty segment is fine.
        let good = body(&[2, 1, 0, 0, 0xfd, 0xe9]);
        assert!(UpdateView::parse(&good, ctx).unwrap().validate().is_ok());
        // An empty AS_PATH (no segment at all, iBGP) stays valid.
        assert!(UpdateView::parse(&body(&[]), ctx)
            .unwrap()
            .validate()
            .is_ok());
    }

    /// RFC 5065 §5 (RFC 7606 §7.2 treat-as-withdraw): confederation
    /// segments only from inside the confederation, and from another
    /// member AS only behind a leading AS_CONFED_SEQUENCE.
    #[test]
    fn confederation_segments_by_sender() {
        use crate::validate::ConfedSender::{OtherMemberAs, Outside, SameMemberAs};
        use crate::validate::NoSink;
        let ctx = ParseCtx::modern();
        // ( 65002 ) 65100
        let confed_first = body(&[3, 1, 0, 0, 0xfd, 0xea, 2, 1, 0, 0, 0xfe, 0x4c]);
        // 65100 ( 65002 ): a confederation segment, not leading.
        let confed_later = body(&[2, 1, 0, 0, 0xfe, 0x4c, 3, 1, 0, 0, 0xfd, 0xea]);
        // [ 65002 ] 65100: a leading AS_CONFED_SET.
        let confed_set = body(&[4, 1, 0, 0, 0xfd, 0xea, 2, 1, 0, 0, 0xfe, 0x4c]);
        let plain = body(&[2, 1, 0, 0, 0xfe, 0x4c]);
        let empty = body(&[]);
        let cases: [(&[u8], [bool; 3]); 5] = [
            // ok from: Outside, SameMemberAs, OtherMemberAs
            (&confed_first, [false, true, true]),
            (&confed_later, [false, true, false]),
            (&confed_set, [false, true, false]),
            (&plain, [true, true, false]),
            (&empty, [true, true, false]),
        ];
        for (b, want) in cases {
            let u = UpdateView::parse(b, ctx).unwrap();
            for (from, ok) in [Outside, SameMemberAs, OtherMemberAs].into_iter().zip(want) {
                let got = u.validate_confed_into(false, from, &mut NoSink);
                match got {
                    Ok(_) => assert!(ok, "{from:?} {b:?}: accepted"),
                    Err((WireError::MalformedAsPath(_), Disposition::TreatAsWithdraw)) => {
                        assert!(!ok, "{from:?} {b:?}: refused")
                    }
                    Err(e) => panic!("{from:?}: {e:?}"),
                }
            }
        }
        // The plain entry point is the Outside check.
        let u = UpdateView::parse(&confed_first, ctx).unwrap();
        assert!(u.validate_from(false).is_err());
    }
}

//! Received UPDATE -> [`DecodedUpdate`], with RFC 7606 applied: the
//! session's half of "bad input gets the RFC's answer". Pure (sessions call
//! it on their own threads; the fuzz target `decode_update` drives it
//! directly).

use base::{Afi, AfiSafi, Safi};
use bgp_fsm::Event;
use bgp_rib::AttrsBuilder;
use bgp_wire::consts::attr_type as at;
use bgp_wire::{
    AttrValue, Disposition, NextHop, Nlri, ParseCtx, PathAttr, PathAttribute, RawAttr, UpdateSink,
    UpdateView, WireError,
};

use std::net::{IpAddr, Ipv4Addr};

use bgp_wire::AttrRef;

use crate::msg::{DecodedUpdate, LinkAddrs};

/// What the receiving end of a session knows that the next-hop checks of
/// RFC 4271 §6.3 and RFC 2545 §3 need beyond the UPDATE itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Receiver {
    /// The peer is external (a confederation-external peer counts as
    /// internal here: LOCAL_PREF crosses member-AS boundaries, RFC 5065
    /// §5.3 / FRR and BIRD).
    pub ebgp: bool,
    /// Where the peer stands relative to our confederation (RFC 5065 §5
    /// AS_PATH checks); `Outside` when we are in none.
    pub confed: bgp_wire::ConfedSender,
    /// Our addresses on the session's link, the session's local address
    /// among them: a next hop that is one of them is not used (RFC 4271
    /// §6.3: "It MUST NOT be the IP address of the receiving speaker").
    pub own: LinkAddrs,
    /// The peer shares a subnet with us (RFC 4271 §5.1.3): only then can a
    /// link-local next hop be reached (RFC 2545 §3).
    pub on_link: bool,
}

impl Receiver {
    /// A peer of which nothing but its kind is known: no own address to
    /// compare with, link-local next hops taken as they come.
    pub const fn of(ebgp: bool) -> Receiver {
        Receiver {
            ebgp,
            confed: bgp_wire::ConfedSender::Outside,
            own: LinkAddrs {
                v4: None,
                v6: None,
                v6_link_local: None,
            },
            on_link: true,
        }
    }

    fn is_own(&self, a: IpAddr) -> bool {
        match a {
            IpAddr::V4(v) => self.own.v4 == Some(v),
            IpAddr::V6(v) => self.own.v6 == Some(v) || self.own.v6_link_local == Some(v),
        }
    }

    /// The next hop the routes of this UPDATE use, after the checks that
    /// need the session (the wire's validation did those that do not):
    /// `Err` (treat-as-withdraw, as for a next hop that is no host
    /// address) when it is our own address, or a link-local one alone
    /// from a peer not on our link; a 32-octet next hop from such a peer
    /// keeps its global half (RFC 2545 §3: the link-local half is only
    /// sent to a peer that shares the subnet).
    fn judge(
        &self,
        v4: Option<(Ipv4Addr, AttrRef)>,
        mp: Option<(NextHop, AttrRef)>,
    ) -> Result<Option<NextHop>, WireError> {
        if let Some((a, r)) = v4 {
            if self.is_own(IpAddr::V4(a)) {
                return Err(WireError::InvalidNextHop(r));
            }
        }
        let Some((nh, r)) = mp else {
            return Ok(None);
        };
        let bad = Err(WireError::InvalidNextHop(r));
        Ok(Some(match nh {
            NextHop::V4(a) if self.is_own(IpAddr::V4(a)) => return bad,
            NextHop::V6(g) if self.is_own(IpAddr::V6(g)) => return bad,
            NextHop::V6(g) if g.is_unicast_link_local() && !self.on_link => return bad,
            NextHop::V6LinkLocal(g, ll)
                if self.is_own(IpAddr::V6(g)) || self.is_own(IpAddr::V6(ll)) =>
            {
                return bad
            }
            NextHop::V6LinkLocal(g, _) if !self.on_link => NextHop::V6(g),
            nh => nh,
        }))
    }
}

/// What one UPDATE turned into.
pub enum Decoded {
    /// Hand to the RIB (event 27). `note` is an RFC 7606 problem that did
    /// not reset the session, for the log.
    Ok(DecodedUpdate, Option<(WireError, Disposition)>),
    /// Reset the session with this event (28).
    Reset(Event),
}

fn collect(
    it: impl Iterator<Item = Result<Nlri, WireError>>,
    out: &mut Vec<Nlri>,
) -> Result<(), WireError> {
    for n in it {
        out.push(n?);
    }
    Ok(())
}

/// Every NLRI of the UPDATE, announced or withdrawn, as withdrawals (RFC
/// 7606 §2 treat-as-withdraw), each in its family's table; NLRI of a
/// family the session does not accept are left out (RFC 4760 §7).
fn all_as_withdrawn(u: &UpdateView<'_>, d: &mut DecodedUpdate) -> Result<(), WireError> {
    collect(u.withdrawn(), &mut d.withdraw)?;
    collect(u.nlri(), &mut d.withdraw)?;
    let ctx = u.ctx();
    if let Some(Ok(r)) = u.mp_reach() {
        if ctx.accepts_family(r.afi_safi) {
            collect(r.nlri(), withdraw_table(d, r.afi_safi))?;
        }
    }
    if let Some(Ok(w)) = u.mp_unreach() {
        if ctx.accepts_family(w.afi_safi) {
            collect(w.withdrawn(), withdraw_table(d, w.afi_safi))?;
        }
    }
    Ok(())
}

/// Where withdrawals of `af` go: multicast (SAFI 2) ones to their own
/// table (RFC 4760 §6).
fn withdraw_table(d: &mut DecodedUpdate, af: AfiSafi) -> &mut Vec<Nlri> {
    if af.safi == Safi::Multicast {
        &mut d.multicast.withdraw
    } else {
        &mut d.withdraw
    }
}

/// The first attribute of type `t` (for the NOTIFICATION data).
fn attr_ref(u: &UpdateView<'_>, t: u8) -> Option<bgp_wire::AttrRef> {
    u.attributes()
        .flatten()
        .find(|a| a.type_code == t)
        .map(|a| a.attr_ref())
}

/// Sorts the MP NLRI of a validated UPDATE by family. `d` holds the
/// classic fields' NLRI first (`classic` = (withdrawn, announced) of
/// them), then MP_REACH_NLRI's and MP_UNREACH_NLRI's.
///
/// * A family the session did not negotiate (or one we do not support) is
///   an incorrect MP attribute: RFC 4760 §7 has us delete the routes of
///   that family from the peer (we hold none: nothing of it was ever
///   accepted) and ignore its routes for the rest of the session, the
///   session reset being optional ("MAY"). We ignore them and keep the
///   session, as FRR does; the note says so in the log.
/// * IPv4 NLRI with an IPv6 next hop (16 or 32 octets) when we did not
///   advertise the Extended Next Hop Encoding capability for the family
///   (RFC 8950 §3): the next-hop length is "inconsistent with that which
///   was expected", so RFC 7606 §7.11 requires "session reset" (or
///   AFI/SAFI disable): UPDATE Message Error / Optional Attribute Error
///   (3/9), as for any other bad MP_REACH_NLRI next-hop length.
/// * Multicast (SAFI 2) NLRI go to [`DecodedUpdate::multicast`].
/// * The classic NLRI and withdrawn fields (IPv4 unicast) are ignored too
///   when IPv4 unicast was not negotiated.
///
/// Returns the note for the log, or the error that resets the session.
fn by_family(
    u: &UpdateView<'_>,
    d: &mut DecodedUpdate,
    classic: (usize, usize),
) -> Result<Option<(WireError, Disposition)>, WireError> {
    let ctx = u.ctx();
    let mut note = None;
    let mut ignored = |t: u8| {
        if let Some(a) = attr_ref(u, t) {
            note.get_or_insert((
                WireError::OptionalAttribute(a),
                Disposition::AttributeDiscard,
            ));
        }
    };
    let reach = u.mp_reach().and_then(Result::ok);
    let unreach = u.mp_unreach().and_then(Result::ok);
    let mp_announced = d.announce.split_off(classic.1.min(d.announce.len()));
    let mp_withdrawn = d.withdraw.split_off(classic.0.min(d.withdraw.len()));
    if let Some(r) = reach {
        let af = r.afi_safi;
        if !ctx.accepts_family(af) {
            ignored(at::MP_REACH_NLRI);
        } else if af.afi == Afi::Ipv4 && r.next_hop.len() != 4 && !ctx.accepts_v6_next_hop(af) {
            let a = attr_ref(u, at::MP_REACH_NLRI);
            return Err(a.map_or(WireError::InvalidNetworkField, WireError::OptionalAttribute));
        } else if af.safi == Safi::Multicast {
            d.multicast.announce = mp_announced;
        } else {
            d.announce.extend(mp_announced);
        }
    }
    if let Some(w) = unreach {
        if ctx.accepts_family(w.afi_safi) {
            withdraw_table(d, w.afi_safi).extend(mp_withdrawn);
        } else {
            ignored(at::MP_UNREACH_NLRI);
        }
    }
    // The classic fields carry IPv4 unicast: ignored the same way on a
    // session that did not negotiate it (no RFC says more; FRR does so).
    if !ctx.accepts_family(AfiSafi::IPV4_UNICAST) && classic != (0, 0) {
        d.announce.drain(..classic.1.min(d.announce.len()));
        d.withdraw.drain(..classic.0.min(d.withdraw.len()));
        note.get_or_insert((
            WireError::InvalidNetworkField,
            Disposition::AttributeDiscard,
        ));
    }
    Ok(note)
}

/// Whether the MP_REACH_NLRI next hop is not for the unicast NLRI: its
/// family is multicast, or one the session ignores (the unicast NLRI of
/// the classic field then keep NEXT_HOP).
fn mp_next_hop_apart(u: &UpdateView<'_>) -> bool {
    let ctx = u.ctx();
    matches!(u.mp_reach(), Some(Ok(r))
        if r.afi_safi.safi == Safi::Multicast || !ctx.accepts_family(r.afi_safi))
}

/// Collects an UPDATE during its validating pass: NLRI into the
/// [`DecodedUpdate`], attributes typed once into owned form.
struct Collect<'d> {
    d: &'d mut DecodedUpdate,
    attrs: Vec<PathAttr>,
    mp_next_hop: Option<NextHop>,
    /// NEXT_HOP and the MP_REACH_NLRI next hop, where they lie.
    v4_at: Option<(Ipv4Addr, AttrRef)>,
    mp_at: Option<(NextHop, AttrRef)>,
}

impl<'a> UpdateSink<'a> for Collect<'_> {
    fn withdrawn(&mut self, n: Nlri) {
        self.d.withdraw.push(n);
    }
    fn announced(&mut self, n: Nlri) {
        self.d.announce.push(n);
    }
    fn attribute(&mut self, raw: RawAttr<'a>, typed: &PathAttribute<'a>) {
        if let PathAttribute::NextHop(a) = typed {
            self.v4_at = Some((*a, raw.attr_ref()));
        }
        match typed {
            PathAttribute::MpUnreach(_) => {}
            PathAttribute::MpReach(m) => {
                self.mp_next_hop = self.mp_next_hop.or_else(|| m.next_hop());
                if self.mp_at.is_none() && !m.nlri.is_empty() {
                    self.mp_at = m.next_hop().map(|nh| (nh, raw.attr_ref()));
                }
            }
            t => self.attrs.push(PathAttr {
                flags: raw.flags,
                value: t.to_owned_value().unwrap_or_else(|| AttrValue::Raw {
                    type_code: raw.type_code,
                    value: raw.value.to_vec(),
                }),
            }),
        }
    }
}

/// The attributes as the RIB takes them: from an eBGP peer without what
/// such a route may not carry, stripped once per UPDATE, before the split
/// over RIB shards.
fn ingress(mut b: AttrsBuilder, ebgp: bool) -> std::sync::Arc<AttrsBuilder> {
    if ebgp {
        b.strip_ebgp_ingress();
    }
    std::sync::Arc::new(b)
}

/// The RFC 7606 attribute-discard problem to log, if any.
fn discard_note(v: &bgp_wire::ValidatedUpdate<'_>) -> Option<(WireError, Disposition)> {
    v.first_discard_error
        .map(|e| (e, Disposition::AttributeDiscard))
}

/// Parses the UPDATE's frame; an unparsable one resets the session and an
/// End-of-RIB marker (RFC 4724 §2) is decoded whole here.
fn open(body: &[u8], ctx: ParseCtx) -> Result<UpdateView<'_>, Box<Decoded>> {
    let u = UpdateView::parse(body, ctx)
        .map_err(|e| Box::new(Decoded::Reset(Event::update_msg_err(e, body))))?;
    if let Some(af) = u.end_of_rib() {
        let d = DecodedUpdate {
            end_of_rib: Some(af),
            ..DecodedUpdate::default()
        };
        return Err(Box::new(Decoded::Ok(d, None)));
    }
    Ok(u)
}

/// Decodes and validates one UPDATE body from an external (`ebgp`) or
/// internal peer, in one pass: the validation hands over each NLRI and
/// each well-formed attribute as it checks it. Without the session's
/// addresses ([`decode_update_for`]).
pub fn decode_update(body: &[u8], ctx: ParseCtx, ebgp: bool) -> Decoded {
    decode_update_for(body, ctx, &Receiver::of(ebgp))
}

/// [`decode_update`] on a session: the next hop is also checked against
/// what `rx` knows of it ([`Receiver`]).
pub fn decode_update_for(body: &[u8], ctx: ParseCtx, rx: &Receiver) -> Decoded {
    let ebgp = rx.ebgp;
    let reset = |e: WireError| Decoded::Reset(Event::update_msg_err(e, body));
    let u = match open(body, ctx) {
        Ok(u) => u,
        Err(done) => return *done,
    };
    let mut d = DecodedUpdate::default();
    let mut c = Collect {
        d: &mut d,
        attrs: Vec::new(),
        mp_next_hop: None,
        v4_at: None,
        mp_at: None,
    };
    let withdraw_all = |e: WireError, disp: Disposition| {
        // What the pass collected is incomplete; read every NLRI again.
        let mut d = DecodedUpdate::default();
        if let Err(e2) = all_as_withdrawn(&u, &mut d) {
            return reset(e2);
        }
        Decoded::Ok(d, Some((e, disp)))
    };
    match u.validate_confed_into(ebgp, rx.confed, &mut c) {
        Err((e, Disposition::SessionReset)) => reset(e),
        // Treat-as-withdraw (or anything milder reported as an error).
        Err((e, disp)) => withdraw_all(e, disp),
        Ok(v) => {
            let Collect {
                attrs,
                mut mp_next_hop,
                v4_at,
                mp_at,
                ..
            } = c;
            let v4_at = v4_at.filter(|_| v.announced > 0);
            match rx.judge(v4_at, mp_at) {
                Ok(Some(nh)) => mp_next_hop = Some(nh),
                Ok(None) => {}
                Err(e) => return withdraw_all(e, Disposition::TreatAsWithdraw),
            }
            // MP NLRI of a family that is not a prefix family (validation
            // leaves them raw) cannot be read: Invalid Network Field, as
            // when the NLRI were walked after validation. The first item
            // tells (prefix families were validated whole by the pass).
            // A family the session does not accept is ignored instead
            // (`by_family`).
            for (af, first) in [
                v.mp_reach.map(|r| (r.afi_safi, r.nlri().next())),
                v.mp_unreach.map(|w| (w.afi_safi, w.withdrawn().next())),
            ]
            .into_iter()
            .flatten()
            {
                if let (true, Some(Err(e))) = (ctx.accepts_family(af), first) {
                    return reset(e);
                }
            }
            let note = match by_family(&u, &mut d, (v.withdrawn, v.announced)) {
                Ok(n) => n,
                Err(e) => return reset(e),
            };
            let apart = mp_next_hop_apart(&u);
            if !d.multicast.announce.is_empty() {
                let b = AttrsBuilder::from_received(attrs.clone(), mp_next_hop, ctx.four_octet_asn);
                d.multicast.attrs = Some(ingress(b, ebgp));
            }
            if !d.announce.is_empty() {
                // RFC 7606 "attribute discard" and repeated attributes:
                // the pass handed over only the first well-formed one of
                // each type. Beside multicast NLRI, the unicast ones keep
                // NEXT_HOP.
                let nh = mp_next_hop.filter(|_| !apart);
                let b = AttrsBuilder::from_received(attrs, nh, ctx.four_octet_asn);
                d.attrs = Some(ingress(b, ebgp));
            }
            Decoded::Ok(d, discard_note(&v).or(note))
        }
    }
}

/// The decoder as it was before the one validating pass: validate, then
/// walk the NLRI again and type the attributes again
/// (`AttrsBuilder::from_update`). Kept, behind the `test-support`
/// feature, as the reference the fuzz target `decode_update` compares
/// [`decode_update`] with and the baseline of `benches/decode.rs`. It
/// differs in one known fault, corrected here: a repeated NEXT_HOP (held
/// apart from the attribute list) or, on a 2-octet session, a repeated
/// AS4_PATH (merged into AS_PATH) survived as a second copy instead of
/// being discarded (RFC 7606 §3 g); and, on a 2-octet session, an AS4_PATH
/// to be discarded (AS 0, RFC 7607 with RFC 6793 §6) was merged into
/// AS_PATH before the discard.
#[cfg(any(test, feature = "test-support"))]
pub fn decode_update_two_pass(body: &[u8], ctx: ParseCtx, ebgp: bool) -> Decoded {
    use bgp_wire::consts::attr_type as at;
    let reset = |e: WireError| Decoded::Reset(Event::update_msg_err(e, body));
    let u = match open(body, ctx) {
        Ok(u) => u,
        Err(done) => return *done,
    };
    let mut d = DecodedUpdate::default();
    let v = match u.validate_from(ebgp) {
        Err((e, Disposition::SessionReset)) => return reset(e),
        Err((e, disp)) => {
            if let Err(e2) = all_as_withdrawn(&u, &mut d) {
                return reset(e2);
            }
            return Decoded::Ok(d, Some((e, disp)));
        }
        Ok(v) => v,
    };
    let accepts = |af: AfiSafi| ctx.accepts_family(af);
    let walks = [
        collect(u.withdrawn(), &mut d.withdraw),
        collect(u.nlri(), &mut d.announce),
        v.mp_reach
            .filter(|r| accepts(r.afi_safi))
            .map_or(Ok(()), |r| collect(r.nlri(), &mut d.announce)),
        v.mp_unreach
            .filter(|w| accepts(w.afi_safi))
            .map_or(Ok(()), |w| collect(w.withdrawn(), &mut d.withdraw)),
    ];
    for w in walks {
        if let Err(e) = w {
            return reset(e);
        }
    }
    let note = match by_family(&u, &mut d, (v.withdrawn, v.announced)) {
        Ok(n) => n,
        Err(e) => return reset(e),
    };
    if !d.announce.is_empty() || !d.multicast.announce.is_empty() {
        let mut b = match AttrsBuilder::from_update_except(&u, &v.discard) {
            Ok(b) => b,
            Err(e) => return reset(e),
        };
        // Its known fault: a repeated attribute of a type taken out of
        // the list before de-duplication (NEXT_HOP, held apart; AS4_PATH,
        // merged on a 2-octet session) survived as a second copy.
        let consumed = [(at::NEXT_HOP, true), (at::AS4_PATH, !ctx.four_octet_asn)];
        for (t, taken) in consumed {
            if taken && v.duplicates.contains(t) && b.remove(t) {
                b.mark_clean();
            }
        }
        if !d.multicast.announce.is_empty() {
            d.multicast.attrs = Some(ingress(b.clone(), ebgp));
        }
        if !d.announce.is_empty() {
            if mp_next_hop_apart(&u) {
                // The unicast NLRI beside multicast ones keep NEXT_HOP.
                let mut nh_attr = u.attributes().flatten().filter_map(|a| match a.typed(ctx) {
                    Ok(PathAttribute::NextHop(n)) => Some(n),
                    _ => None,
                });
                if let Some(n) = nh_attr.next() {
                    b.set_next_hop(NextHop::V4(n));
                    b.mark_clean();
                }
            }
            d.attrs = Some(ingress(b, ebgp));
        }
    }
    Decoded::Ok(d, discard_note(&v).or(note))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bgp_wire::consts::attr_type as at;

    /// ORIGIN, AS_PATH [65001], NEXT_HOP 192.0.2.1, then `extra`
    /// attribute bytes, announcing 198.18.0.0/15.
    fn update(extra: &[u8]) -> Vec<u8> {
        let mut a = vec![0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe9];
        a.extend_from_slice(&[0x40, 3, 4, 192, 0, 2, 1]);
        a.extend_from_slice(extra);
        let mut b = vec![0, 0, 0, a.len() as u8];
        b.extend_from_slice(&a);
        b.extend_from_slice(&[15, 198, 18]);
        b
    }

    fn attrs_of(d: &Decoded) -> &AttrsBuilder {
        match d {
            Decoded::Ok(d, _) => d.attrs.as_deref().expect("attributes"),
            Decoded::Reset(e) => panic!("reset: {e:?}"),
        }
    }

    fn same(a: &Decoded, b: &Decoded) -> bool {
        match (a, b) {
            (Decoded::Ok(x, nx), Decoded::Ok(y, ny)) => {
                x.announce == y.announce
                    && x.withdraw == y.withdraw
                    && x.multicast == y.multicast
                    && x.end_of_rib == y.end_of_rib
                    && x.attrs == y.attrs
                    && nx == ny
            }
            (Decoded::Reset(x), Decoded::Reset(y)) => format!("{x:?}") == format!("{y:?}"),
            _ => false,
        }
    }

    /// The one-pass decoder and the two-pass reference agree (the fuzz
    /// target `decode_update` checks this on arbitrary input).
    #[test]
    fn one_pass_matches_the_two_pass_reference() {
        let ctx = ParseCtx::modern();
        for extra in [
            &[][..],
            &[0xc0, 3, 8, 16, 0, 121, 234, 0, 0, 83, 249],
            &[0x40, 5, 4, 0, 0, 0, 200],
            &[0x40, 1, 1, 7],
        ] {
            let body = update(extra);
            for ebgp in [false, true] {
                let a = decode_update(&body, ctx, ebgp);
                let b = decode_update_two_pass(&body, ctx, ebgp);
                assert!(same(&a, &b), "{extra:?} ebgp={ebgp}");
            }
        }
    }

    /// RFC 7606 §3 g: a repeated NEXT_HOP (here with optional-transitive
    /// flags and 8 octets) is discarded; the two-pass decoder kept it as a
    /// raw attribute that the route then carried.
    #[test]
    fn repeated_next_hop_is_discarded() {
        let body = update(&[0xc0, 3, 8, 16, 0, 121, 234, 0, 0, 83, 249]);
        let ctx = ParseCtx::modern();
        let d = decode_update(&body, ctx, true);
        let b = attrs_of(&d);
        assert!(b.get(at::NEXT_HOP).is_none(), "{b:?}");
        assert_eq!(
            b.next_hop(),
            Some(NextHop::V4(std::net::Ipv4Addr::new(192, 0, 2, 1)))
        );
    }

    /// RFC 7606 §3 g on a 2-octet session: a repeated AS4_PATH is
    /// discarded; the first is merged into AS_PATH and gone (the two-pass
    /// decoder kept the repeat, found by the fuzz target).
    #[test]
    fn repeated_as4_path_is_discarded_on_a_two_octet_session() {
        let as4 = [0xc0, 17, 6, 2, 1, 0, 0, 0xfd, 0xe9];
        let mut extra = as4.to_vec();
        extra.extend_from_slice(&as4);
        // AS_PATH in 2-octet form for this session: [65001] -> [23456].
        let mut a = vec![0x40, 1, 1, 0, 0x40, 2, 4, 2, 1, 0x5b, 0xa0];
        a.extend_from_slice(&[0x40, 3, 4, 192, 0, 2, 1]);
        a.extend_from_slice(&extra);
        let mut body = vec![0, 0, 0, a.len() as u8];
        body.extend_from_slice(&a);
        body.extend_from_slice(&[15, 198, 18]);
        let ctx = ParseCtx::legacy();
        let d = decode_update(&body, ctx, true);
        let b = attrs_of(&d);
        assert!(b.get(at::AS4_PATH).is_none(), "{b:?}");
        assert!(same(&d, &decode_update_two_pass(&body, ctx, true)));
    }

    /// MP_REACH_NLRI for IPv4 with SAFI 2 and next hop 192.0.2.9,
    /// 198.18.0.0/15, and the same prefix in the classic field (NEXT_HOP
    /// 192.0.2.1).
    const MP_REACH_V4_MULTICAST: [u8; 15] =
        [0x80, 14, 12, 0, 1, 2, 4, 192, 0, 2, 9, 0, 15, 198, 18];

    fn session(families: &[AfiSafi], ext_nh: &[AfiSafi]) -> ParseCtx {
        ParseCtx::modern().with_session_families(families, ext_nh)
    }

    fn ok(d: Decoded) -> (DecodedUpdate, Option<(WireError, Disposition)>) {
        match d {
            Decoded::Ok(d, note) => (d, note),
            Decoded::Reset(e) => panic!("reset: {e:?}"),
        }
    }

    /// RFC 4760 §6: multicast NLRI are kept apart from unicast ones (they
    /// used to land in `announce`, beside the unicast route of the same
    /// prefix), with the MP_REACH_NLRI next hop; the unicast NLRI of the
    /// same UPDATE keep NEXT_HOP. Both decoders agree.
    #[test]
    fn multicast_nlri_are_kept_apart() {
        use std::net::Ipv4Addr;
        let body = update(&MP_REACH_V4_MULTICAST);
        let p: base::Prefix = "198.18.0.0/15".parse().unwrap();
        let both = [AfiSafi::IPV4_UNICAST, AfiSafi::IPV4_MULTICAST];
        for ctx in [ParseCtx::modern(), session(&both, &[])] {
            let got = decode_update(&body, ctx, true);
            assert!(same(&got, &decode_update_two_pass(&body, ctx, true)));
            let (d, note) = ok(got);
            assert_eq!(note, None);
            assert_eq!(d.announce, vec![Nlri::new(p)]);
            assert_eq!(d.multicast.announce, vec![Nlri::new(p)]);
            let nh =
                |a: &Option<std::sync::Arc<AttrsBuilder>>| a.as_ref().and_then(|b| b.next_hop());
            assert_eq!(nh(&d.attrs), Some(NextHop::V4(Ipv4Addr::new(192, 0, 2, 1))));
            assert_eq!(
                nh(&d.multicast.attrs),
                Some(NextHop::V4(Ipv4Addr::new(192, 0, 2, 9)))
            );
        }
        // A multicast withdrawal (MP_UNREACH_NLRI, AFI 1, SAFI 2).
        let body = [0, 0, 0, 9, 0x80, 15, 6, 0, 1, 2, 15, 198, 18];
        let (d, _) = ok(decode_update(&body, session(&both, &[]), true));
        assert!(d.withdraw.is_empty());
        assert_eq!(d.multicast.withdraw, vec![Nlri::new(p)]);
    }

    /// RFC 4760 §7: NLRI of a family the session did not negotiate (here
    /// IPv4 multicast, and an unsupported SAFI 4) are ignored, the rest of
    /// the UPDATE applies and the session stays up; the log gets a note.
    #[test]
    fn families_not_negotiated_are_ignored() {
        let ctx = session(&[AfiSafi::IPV4_UNICAST], &[]);
        let p: base::Prefix = "198.18.0.0/15".parse().unwrap();
        let mut safi4 = MP_REACH_V4_MULTICAST;
        safi4[5] = 4;
        for mp in [MP_REACH_V4_MULTICAST, safi4] {
            let body = update(&mp);
            let got = decode_update(&body, ctx, true);
            assert!(same(&got, &decode_update_two_pass(&body, ctx, true)));
            let (d, note) = ok(got);
            assert_eq!(d.announce, vec![Nlri::new(p)]);
            assert!(d.multicast.is_empty(), "{d:?}");
            // The ignored attribute's next hop is not the unicast one's.
            let nh = d.attrs.as_ref().and_then(|b| b.next_hop());
            let want = NextHop::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));
            assert_eq!(nh, Some(want));
            let Some((WireError::OptionalAttribute(a), Disposition::AttributeDiscard)) = note
            else {
                panic!("note {note:?}");
            };
            assert_eq!(a.type_code, at::MP_REACH_NLRI);
        }
        // Withdrawals of it too.
        let body = [0, 0, 0, 9, 0x80, 15, 6, 0, 1, 2, 15, 198, 18];
        let (d, _) = ok(decode_update(&body, ctx, true));
        assert!(d.withdraw.is_empty() && d.multicast.is_empty(), "{d:?}");
        // IPv4 unicast in the classic field of an IPv6-only session.
        let v6 = session(&[AfiSafi::IPV6_UNICAST], &[]);
        let body = update(&[]);
        let got = decode_update(&body, v6, true);
        assert!(same(&got, &decode_update_two_pass(&body, v6, true)));
        let (d, note) = ok(got);
        assert!(d.announce.is_empty() && d.attrs.is_none(), "{d:?}");
        assert!(note.is_some());
    }

    /// RFC 8950 §3 and RFC 7606 §7.11: IPv4 NLRI with an IPv6 next hop are
    /// accepted only when we advertised Extended Next Hop Encoding for the
    /// family; otherwise the next-hop length is not the expected one and
    /// the session is reset with 3/9.
    #[test]
    fn ipv6_next_hop_for_ipv4_needs_the_capability() {
        // ORIGIN, AS_PATH [65001], MP_REACH AFI 1 SAFI 1, next hop
        // 2001:db8::1, 198.18.0.0/15.
        let mut a = vec![0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe9];
        a.extend_from_slice(&[0x80, 14, 24, 0, 1, 1, 16]);
        a.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        a.extend_from_slice(&[0, 15, 198, 18]);
        let mut body = vec![0, 0, 0, a.len() as u8];
        body.extend_from_slice(&a);
        let v4 = [AfiSafi::IPV4_UNICAST];
        match decode_update(&body, session(&v4, &[]), true) {
            Decoded::Reset(Event::UpdateMsgErr(n)) => assert_eq!((n.code, n.subcode), (3, 9)),
            Decoded::Reset(e) => panic!("{e:?}"),
            Decoded::Ok(d, _) => panic!("accepted without RFC 8950: {d:?}"),
        }
        let (d, note) = ok(decode_update(&body, session(&v4, &v4), true));
        assert_eq!(note, None);
        assert_eq!(d.announce.len(), 1);
        let nh = d.attrs.as_ref().and_then(|b| b.next_hop());
        assert_eq!(nh, Some(NextHop::V6("2001:db8::1".parse().unwrap())));
    }

    /// From an eBGP peer LOCAL_PREF, ORIGINATOR_ID and CLUSTER_LIST are
    /// dropped once, here; from iBGP they stay.
    #[test]
    fn ebgp_ingress_attributes_are_stripped_once() {
        let extra = [
            0x40, 5, 4, 0, 0, 0, 200, // LOCAL_PREF 200
            0x80, 9, 4, 192, 0, 2, 9, // ORIGINATOR_ID
            0x80, 10, 4, 192, 0, 2, 10, // CLUSTER_LIST
        ];
        let body = update(&extra);
        let ctx = ParseCtx::modern();
        let e = decode_update(&body, ctx, true);
        let i = decode_update(&body, ctx, false);
        for t in [at::LOCAL_PREF, at::ORIGINATOR_ID, at::CLUSTER_LIST] {
            assert!(attrs_of(&e).get(t).is_none(), "eBGP kept {t}");
            assert!(attrs_of(&i).get(t).is_some(), "iBGP lost {t}");
        }
    }

    /// ORIGIN, AS_PATH [65001] and an IPv6 MP_REACH_NLRI for
    /// 2001:db8::/32 with the next hop made of `nh` (16 or 32 octets).
    fn update6(nh: &[std::net::Ipv6Addr]) -> Vec<u8> {
        let mut mp = vec![0, 2, 1, (16 * nh.len()) as u8];
        for a in nh {
            mp.extend_from_slice(&a.octets());
        }
        mp.extend_from_slice(&[0, 32, 0x20, 1, 0xd, 0xb8]);
        let mut a = vec![0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe9];
        a.extend_from_slice(&[0x80, 14, mp.len() as u8]);
        a.extend_from_slice(&mp);
        let mut b = vec![0, 0, 0, a.len() as u8];
        b.extend_from_slice(&a);
        b
    }

    fn withdrawn_for(d: &Decoded) -> Option<WireError> {
        match d {
            Decoded::Ok(d, Some((e, Disposition::TreatAsWithdraw))) => {
                assert!(d.announce.is_empty() && !d.withdraw.is_empty());
                Some(*e)
            }
            _ => None,
        }
    }

    /// RFC 4271 §6.3: a next hop that is the receiving speaker's own
    /// address (the session's local address, or ours of the other family
    /// on that link) is not used: treat-as-withdraw.
    #[test]
    fn own_address_as_next_hop_is_treat_as_withdraw() {
        let ctx = ParseCtx::modern();
        let mine: std::net::Ipv6Addr = "2001:db8:1::1".parse().unwrap();
        let ll: std::net::Ipv6Addr = "fe80::1".parse().unwrap();
        let rx = Receiver {
            ebgp: true,
            confed: bgp_wire::ConfedSender::Outside,
            own: LinkAddrs {
                v4: Some(Ipv4Addr::new(192, 0, 2, 1)),
                v6: Some(mine),
                v6_link_local: Some(ll),
            },
            on_link: true,
        };
        // NEXT_HOP 192.0.2.1 is ours.
        let e = withdrawn_for(&decode_update_for(&update(&[]), ctx, &rx));
        assert!(matches!(e, Some(WireError::InvalidNextHop(a)) if a.type_code == at::NEXT_HOP));
        // Not ours: used.
        let other = Receiver {
            own: LinkAddrs::of(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2))),
            ..rx
        };
        assert!(attrs_of(&decode_update_for(&update(&[]), ctx, &other))
            .next_hop()
            .is_some());
        let peer: std::net::Ipv6Addr = "2001:db8:1::2".parse().unwrap();
        let peer_ll: std::net::Ipv6Addr = "fe80::2".parse().unwrap();
        for nh in [vec![mine], vec![peer, ll], vec![mine, peer_ll]] {
            let e = withdrawn_for(&decode_update_for(&update6(&nh), ctx, &rx));
            assert!(
                matches!(e, Some(WireError::InvalidNextHop(a)) if a.type_code == at::MP_REACH_NLRI),
                "{nh:?}"
            );
        }
        let d = decode_update_for(&update6(&[peer, peer_ll]), ctx, &rx);
        assert_eq!(
            attrs_of(&d).next_hop(),
            Some(NextHop::V6LinkLocal(peer, peer_ll))
        );
    }

    /// RFC 2545 §3: a link-local next hop is only usable from a peer on our
    /// link. Alone (16 octets) from another peer: treat-as-withdraw; as
    /// the second half of 32 octets: dropped, the global half is used.
    #[test]
    fn link_local_next_hop_needs_a_peer_on_our_link() {
        let ctx = ParseCtx::modern();
        let g: std::net::Ipv6Addr = "2001:db8:1::2".parse().unwrap();
        let ll: std::net::Ipv6Addr = "fe80::2".parse().unwrap();
        let far = Receiver {
            on_link: false,
            ..Receiver::of(false)
        };
        let near = Receiver::of(false);
        let e = withdrawn_for(&decode_update_for(&update6(&[ll]), ctx, &far));
        assert!(matches!(e, Some(WireError::InvalidNextHop(_))));
        let d = decode_update_for(&update6(&[ll]), ctx, &near);
        assert_eq!(attrs_of(&d).next_hop(), Some(NextHop::V6(ll)));
        let d = decode_update_for(&update6(&[g, ll]), ctx, &far);
        assert_eq!(attrs_of(&d).next_hop(), Some(NextHop::V6(g)));
        let d = decode_update_for(&update6(&[g, ll]), ctx, &near);
        assert_eq!(attrs_of(&d).next_hop(), Some(NextHop::V6LinkLocal(g, ll)));
    }

    /// RFC 5065 §5: a path behind our member AS's AS_CONFED_SEQUENCE from
    /// a peer in another member AS is taken with its LOCAL_PREF (decoded as
    /// internal); the same from outside the confederation is withdrawn.
    #[test]
    fn confederation_paths_from_members_and_outsiders() {
        let ctx = ParseCtx::modern();
        // ORIGIN, AS_PATH ( 65002 ) 65100, NEXT_HOP, LOCAL_PREF 200.
        let mut a = vec![0x40, 1, 1, 0, 0x40, 2, 12];
        a.extend_from_slice(&[3, 1, 0, 0, 0xfd, 0xea, 2, 1, 0, 0, 0xfe, 0x4c]);
        a.extend_from_slice(&[0x40, 3, 4, 192, 0, 2, 1, 0x40, 5, 4, 0, 0, 0, 200]);
        let mut b = vec![0, 0, 0, a.len() as u8];
        b.extend_from_slice(&a);
        b.extend_from_slice(&[15, 198, 18]);
        let member = Receiver {
            confed: bgp_wire::ConfedSender::OtherMemberAs,
            ..Receiver::of(false)
        };
        let d = decode_update_for(&b, ctx, &member);
        assert_eq!(attrs_of(&d).local_pref(), Some(200));
        let outsider = Receiver::of(true);
        let e = withdrawn_for(&decode_update_for(&b, ctx, &outsider));
        assert!(matches!(e, Some(WireError::MalformedAsPath(_))), "{e:?}");
        // From another member AS a path must start with a confed sequence.
        let e = withdrawn_for(&decode_update_for(&update(&[]), ctx, &member));
        assert!(matches!(e, Some(WireError::MalformedAsPath(_))), "{e:?}");
    }
}

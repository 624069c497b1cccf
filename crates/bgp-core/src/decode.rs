//! Received UPDATE -> [`DecodedUpdate`], with RFC 7606 applied: the
//! session's half of "bad input gets the RFC's answer". Pure (sessions call
//! it on their own threads; the fuzz target `decode_update` drives it
//! directly).

use bgp_fsm::Event;
use bgp_rib::AttrsBuilder;
use bgp_wire::{
    AttrValue, Disposition, NextHop, Nlri, ParseCtx, PathAttr, PathAttribute, RawAttr, UpdateSink,
    UpdateView, WireError,
};

use crate::msg::DecodedUpdate;

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
/// 7606 §2 treat-as-withdraw).
fn all_as_withdrawn(u: &UpdateView<'_>, d: &mut DecodedUpdate) -> Result<(), WireError> {
    collect(u.withdrawn(), &mut d.withdraw)?;
    collect(u.nlri(), &mut d.withdraw)?;
    if let Some(Ok(r)) = u.mp_reach() {
        collect(r.nlri(), &mut d.withdraw)?;
    }
    if let Some(Ok(w)) = u.mp_unreach() {
        collect(w.withdrawn(), &mut d.withdraw)?;
    }
    Ok(())
}

/// Collects an UPDATE during its validating pass: NLRI into the
/// [`DecodedUpdate`], attributes typed once into owned form.
struct Collect<'d> {
    d: &'d mut DecodedUpdate,
    attrs: Vec<PathAttr>,
    mp_next_hop: Option<NextHop>,
}

impl<'a> UpdateSink<'a> for Collect<'_> {
    fn withdrawn(&mut self, n: Nlri) {
        self.d.withdraw.push(n);
    }
    fn announced(&mut self, n: Nlri) {
        self.d.announce.push(n);
    }
    fn attribute(&mut self, raw: RawAttr<'a>, typed: &PathAttribute<'a>) {
        match typed {
            PathAttribute::MpUnreach(_) => {}
            PathAttribute::MpReach(m) => {
                self.mp_next_hop = self.mp_next_hop.or_else(|| m.next_hop());
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

/// Decodes and validates one UPDATE body from an external (`ebgp`) or
/// internal peer, in one pass: the validation hands over each NLRI and
/// each well-formed attribute as it checks it.
pub fn decode_update(body: &[u8], ctx: ParseCtx, ebgp: bool) -> Decoded {
    let reset = |e: WireError| Decoded::Reset(Event::update_msg_err(e, body));
    let u = match UpdateView::parse(body, ctx) {
        Ok(u) => u,
        Err(e) => return reset(e),
    };
    let mut d = DecodedUpdate::default();
    if let Some(af) = u.end_of_rib() {
        d.end_of_rib = Some(af);
        return Decoded::Ok(d, None);
    }
    let mut c = Collect {
        d: &mut d,
        attrs: Vec::new(),
        mp_next_hop: None,
    };
    match u.validate_into(ebgp, &mut c) {
        Err((e, Disposition::SessionReset)) => reset(e),
        Err((e, disp)) => {
            // Treat-as-withdraw (or anything milder reported as an error):
            // what the pass collected is incomplete; read every NLRI again.
            let mut d = DecodedUpdate::default();
            if let Err(e2) = all_as_withdrawn(&u, &mut d) {
                return reset(e2);
            }
            Decoded::Ok(d, Some((e, disp)))
        }
        Ok(v) => {
            let Collect {
                attrs, mp_next_hop, ..
            } = c;
            // MP NLRI of a family that is not a prefix family (validation
            // leaves them raw) cannot be read: Invalid Network Field, as
            // when the NLRI were walked after validation. The first item
            // tells (prefix families were validated whole by the pass).
            for first in [
                v.mp_reach.and_then(|r| r.nlri().next()),
                v.mp_unreach.and_then(|w| w.withdrawn().next()),
            ] {
                if let Some(Err(e)) = first {
                    return reset(e);
                }
            }
            if !d.announce.is_empty() {
                // RFC 7606 "attribute discard" and repeated attributes:
                // the pass handed over only the first well-formed one of
                // each type.
                let mut b = AttrsBuilder::from_received(attrs, mp_next_hop, ctx.four_octet_asn);
                // Once per UPDATE, before the split over RIB shards.
                if ebgp {
                    b.strip_ebgp_ingress();
                }
                d.attrs = Some(std::sync::Arc::new(b));
            }
            let note = v
                .first_discard_error
                .map(|e| (e, Disposition::AttributeDiscard));
            Decoded::Ok(d, note)
        }
    }
}

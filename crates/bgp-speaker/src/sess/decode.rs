//! Received UPDATE -> [`DecodedUpdate`], with RFC 7606 applied: the
//! session's half of "bad input gets the RFC's answer".

use bgp_fsm::Event;
use bgp_rib::AttrsBuilder;
use bgp_wire::{Disposition, Nlri, ParseCtx, UpdateView, WireError};

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

/// Decodes and validates one UPDATE body from an external (`ebgp`) or
/// internal peer.
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
    match u.validate_from(ebgp) {
        Err((e, Disposition::SessionReset)) => reset(e),
        Err((e, disp)) => {
            // Treat-as-withdraw (or anything milder reported as an error).
            if let Err(e2) = all_as_withdrawn(&u, &mut d) {
                return reset(e2);
            }
            Decoded::Ok(d, Some((e, disp)))
        }
        Ok(v) => {
            if let Err(e) = collect(u.withdrawn(), &mut d.withdraw) {
                return reset(e);
            }
            if let Err(e) = collect(u.nlri(), &mut d.announce) {
                return reset(e);
            }
            if let Some(r) = v.mp_reach {
                if let Err(e) = collect(r.nlri(), &mut d.announce) {
                    return reset(e);
                }
            }
            if let Some(w) = v.mp_unreach {
                if let Err(e) = collect(w.withdrawn(), &mut d.withdraw) {
                    return reset(e);
                }
            }
            if !d.announce.is_empty() {
                let mut b = match AttrsBuilder::from_update(&u) {
                    Ok(b) => b,
                    Err(e) => return reset(e),
                };
                // RFC 7606 "attribute discard": drop what validation
                // flagged; repeated attributes already keep the first.
                if !v.discard.is_empty() {
                    for t in 0..=255u8 {
                        if v.discard.contains(t) {
                            b.remove(t);
                        }
                    }
                    b.mark_clean();
                }
                // RFC 7606 §7.9/§7.10 (and RFC 4456 §8): ORIGINATOR_ID
                // and CLUSTER_LIST from an external peer are discarded.
                if ebgp {
                    let had = b.remove(bgp_wire::consts::attr_type::ORIGINATOR_ID)
                        | b.remove(bgp_wire::consts::attr_type::CLUSTER_LIST);
                    if had {
                        b.mark_clean();
                    }
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

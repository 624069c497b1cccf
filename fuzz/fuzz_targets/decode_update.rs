//! One received UPDATE body through the daemon's decode path with RFC 7606
//! handling (`bgp_core::decode::decode_update`, what every session runs),
//! checked against a reference decoder that takes two passes (validate,
//! then type the attributes again and walk the NLRI again: the daemon's
//! path before it became one pass), then interned as the RIB does.
//!
//! Input: one context byte, then the UPDATE body (after the 19-byte
//! header). Context: bit 0 4-octet AS (RFC 6793), bit 1 eBGP peer, bit 2
//! extended messages (RFC 8654), bits 4-7 ADD-PATH receive for IPv4
//! unicast, IPv4 multicast, IPv6 unicast, IPv6 multicast (RFC 7911).
#![no_main]

use base::AfiSafi;
use bgp_core::decode::Decoded as Got;
use bgp_fsm::Event;
use bgp_rib::{AttrsBuilder, Interner};
use bgp_wire::consts::attr_type as at;
use bgp_wire::{Disposition, Nlri, ParseCtx, UpdateView, WireError, HEADER_LEN};
use libfuzzer_sys::fuzz_target;

fn ctx_of(sel: u8) -> ParseCtx {
    let ap = sel >> 4;
    ParseCtx::legacy()
        .with_four_octet_asn(sel & 1 != 0)
        .with_extended_message(sel & 4 != 0)
        .with_add_path(AfiSafi::IPV4_UNICAST, ap & 1 != 0)
        .with_add_path(AfiSafi::IPV4_MULTICAST, ap & 2 != 0)
        .with_add_path(AfiSafi::IPV6_UNICAST, ap & 4 != 0)
        .with_add_path(AfiSafi::IPV6_MULTICAST, ap & 8 != 0)
}

/// The reference decoder's result.
#[derive(Default)]
struct Decoded {
    attrs: Option<AttrsBuilder>,
    announce: Vec<Nlri>,
    withdraw: Vec<Nlri>,
    end_of_rib: Option<AfiSafi>,
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

fn all_as_withdrawn(u: &UpdateView<'_>, d: &mut Decoded) -> Result<(), WireError> {
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

/// The reference: `Ok` = handed to the RIB (with the RFC 7606 note),
/// `Err` = session reset with this NOTIFICATION event.
fn reference(
    body: &[u8],
    ctx: ParseCtx,
    ebgp: bool,
) -> Result<(Decoded, Option<(WireError, Disposition)>), Event> {
    let reset = |e: WireError| Event::update_msg_err(e, body);
    let u = UpdateView::parse(body, ctx).map_err(reset)?;
    let mut d = Decoded::default();
    if let Some(af) = u.end_of_rib() {
        d.end_of_rib = Some(af);
        return Ok((d, None));
    }
    match u.validate_from(ebgp) {
        Err((e, Disposition::SessionReset)) => Err(reset(e)),
        Err((e, disp)) => {
            all_as_withdrawn(&u, &mut d).map_err(reset)?;
            Ok((d, Some((e, disp))))
        }
        Ok(v) => {
            collect(u.withdrawn(), &mut d.withdraw).map_err(reset)?;
            collect(u.nlri(), &mut d.announce).map_err(reset)?;
            assert_eq!(d.withdraw.len(), v.withdrawn, "withdrawn count");
            assert_eq!(d.announce.len(), v.announced, "announced count");
            if let Some(r) = v.mp_reach {
                collect(r.nlri(), &mut d.announce).map_err(reset)?;
            }
            if let Some(w) = v.mp_unreach {
                collect(w.withdrawn(), &mut d.withdraw).map_err(reset)?;
            }
            if !d.announce.is_empty() {
                let mut b = AttrsBuilder::from_update(&u).map_err(reset)?;
                // The two-pass decoder's one known fault, fixed by the
                // one-pass one: a repeated NEXT_HOP (held apart from the
                // attribute list) survived as a raw attribute instead of
                // being discarded (RFC 7606 §3 g).
                if v.duplicates.contains(at::NEXT_HOP) && b.remove(at::NEXT_HOP) {
                    b.mark_clean();
                }
                if !v.discard.is_empty() {
                    for t in 0..=255u8 {
                        if v.discard.contains(t) {
                            b.remove(t);
                        }
                    }
                    b.mark_clean();
                }
                if ebgp {
                    let had = b.remove(at::ORIGINATOR_ID)
                        | b.remove(at::CLUSTER_LIST)
                        | b.remove(at::LOCAL_PREF);
                    if had {
                        b.mark_clean();
                    }
                }
                for t in 0..=255u8 {
                    if v.discard.contains(t) {
                        assert!(b.get(t).is_none(), "discarded attribute {t} kept");
                    }
                }
                d.attrs = Some(b);
            }
            let note = v
                .first_discard_error
                .map(|e| (e, Disposition::AttributeDiscard));
            Ok((d, note))
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let ctx = ctx_of(sel);
    let ebgp = sel & 2 != 0;
    // The framer refuses longer messages before decode is reached.
    if body.len() + HEADER_LEN > ctx.max_message_len() {
        return;
    }
    let want = reference(body, ctx, ebgp);
    let got = bgp_core::decode::decode_update(body, ctx, ebgp);
    let (d, note) = match (got, want) {
        (Got::Reset(ev), Err(ref_ev)) => {
            assert!(matches!(ev, Event::UpdateMsgErr(_)), "{ev:?}");
            assert_eq!(format!("{ev:?}"), format!("{ref_ev:?}"), "reset event");
            return;
        }
        (Got::Ok(d, note), Ok((r, ref_note))) => {
            assert_eq!(d.announce, r.announce, "announced NLRI");
            assert_eq!(d.withdraw, r.withdraw, "withdrawn NLRI");
            assert_eq!(d.end_of_rib, r.end_of_rib, "End-of-RIB");
            assert_eq!(d.attrs.as_deref(), r.attrs.as_ref(), "attributes");
            assert_eq!(note, ref_note, "RFC 7606 note");
            (d, note)
        }
        (Got::Reset(ev), Ok(_)) => panic!("one-pass decoder resets ({ev:?}), reference does not"),
        (Got::Ok(..), Err(ev)) => panic!("reference resets ({ev:?}), one-pass decoder does not"),
    };
    if let Some((_, disp)) = note {
        assert_ne!(disp, Disposition::SessionReset);
    }
    if d.end_of_rib.is_some() {
        assert!(d.announce.is_empty() && d.withdraw.is_empty() && d.attrs.is_none());
    }
    assert_eq!(d.attrs.is_some(), !d.announce.is_empty());
    if let Some(b) = d.attrs.as_deref() {
        for t in [at::MP_REACH_NLRI, at::MP_UNREACH_NLRI] {
            assert!(b.get(t).is_none(), "MP attribute {t} left in the builder");
        }
        if ebgp {
            for t in [at::ORIGINATOR_ID, at::CLUSTER_LIST, at::LOCAL_PREF] {
                assert!(b.get(t).is_none(), "attribute {t} kept from an eBGP peer");
            }
        }
        // What the RIB does next: intern, and read back.
        let mut rib = Interner::new();
        let h = rib.intern(b);
        let set = rib.get(h).expect("interned set");
        let n = set.attrs().map_while(Result::ok).count();
        std::hint::black_box((n, set.summary().as_path_len(), set.next_hop()));
        let again = set.to_builder();
        assert_eq!(rib.intern(&again), h, "re-interning a set changes it");
    }
});

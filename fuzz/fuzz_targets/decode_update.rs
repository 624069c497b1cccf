//! One received UPDATE body through the daemon's decode path with RFC 7606
//! handling (`bgp_core::decode::decode_update`, what every session runs),
//! checked against a reference decoder that takes two passes (validate,
//! then type the attributes again and walk the NLRI again: the daemon's
//! path before it became one pass), then interned as the RIB does.
//!
//! Input: one context byte, then the UPDATE body (after the 19-byte
//! header). Context: bit 0 4-octet AS (RFC 6793), bit 1 eBGP peer, bit 2
//! extended messages (RFC 8654), bit 3 the peer shares our subnet (for
//! the session's next-hop checks, `decode_update_for`), bits 4-7 ADD-PATH
//! receive for IPv4 unicast, IPv4 multicast, IPv6 unicast, IPv6 multicast
//! (RFC 7911). Each input is also decoded as from inside a confederation
//! (RFC 5065 §5 AS_PATH checks): from our member AS when bit 1 is clear,
//! from another member AS when it is set.
#![no_main]

use base::AfiSafi;
use bgp_core::decode::{
    decode_update, decode_update_for, decode_update_two_pass, Decoded, Receiver,
};
use bgp_core::LinkAddrs;
use bgp_fsm::Event;
use bgp_rib::Interner;
use bgp_wire::consts::attr_type as at;
use bgp_wire::{AttrValue, ConfedSender, Disposition, ParseCtx, SegmentType, HEADER_LEN};
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
    let want = decode_update_two_pass(body, ctx, ebgp);
    let got = decode_update(body, ctx, ebgp);
    // The same with the session's next-hop checks (RFC 4271 §6.3, RFC
    // 2545 §3) against fixed own addresses.
    let rx = Receiver {
        ebgp,
        confed: ConfedSender::Outside,
        own: LinkAddrs {
            v4: Some(std::net::Ipv4Addr::new(192, 0, 2, 1)),
            v6: Some(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
            v6_link_local: Some(std::net::Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1)),
        },
        on_link: sel & 8 != 0,
    };
    let checked = decode_update_for(body, ctx, &rx);
    // Inside a confederation: the same resets; a route from another
    // member AS is only kept behind a leading AS_CONFED_SEQUENCE.
    let from = if ebgp {
        ConfedSender::OtherMemberAs
    } else {
        ConfedSender::SameMemberAs
    };
    let member = Receiver {
        confed: from,
        ..Receiver::of(false)
    };
    let confed = decode_update_for(body, ctx, &member);
    if let Decoded::Ok(c, _) = &confed {
        if let (Some(b), ConfedSender::OtherMemberAs) = (c.attrs.as_deref(), from) {
            let first = match b.get(at::AS_PATH).map(|a| &a.value) {
                Some(AttrValue::AsPath(p)) => p.segments.first().map(|s| s.kind),
                _ => None,
            };
            assert_eq!(first, Some(SegmentType::ConfedSequence), "member path kept");
        }
    }
    let (d, note) = match (got, want) {
        (Decoded::Reset(ev), Decoded::Reset(ref_ev)) => {
            assert!(matches!(confed, Decoded::Reset(_)), "confederation decode kept it");
            assert!(matches!(ev, Event::UpdateMsgErr(_)), "{ev:?}");
            assert_eq!(format!("{ev:?}"), format!("{ref_ev:?}"), "reset event");
            return;
        }
        (Decoded::Ok(d, note), Decoded::Ok(r, ref_note)) => {
            assert!(!matches!(confed, Decoded::Reset(_)), "confederation decode resets");
            assert_eq!(d.announce, r.announce, "announced NLRI");
            assert_eq!(d.withdraw, r.withdraw, "withdrawn NLRI");
            assert_eq!(d.end_of_rib, r.end_of_rib, "End-of-RIB");
            assert_eq!(d.attrs, r.attrs, "attributes");
            assert_eq!(d.multicast, r.multicast, "multicast NLRI");
            assert_eq!(note, ref_note, "RFC 7606 note");
            (d, note)
        }
        (Decoded::Reset(ev), Decoded::Ok(..)) => {
            panic!("one-pass decoder resets ({ev:?}), reference does not")
        }
        (Decoded::Ok(..), Decoded::Reset(ev)) => {
            panic!("reference resets ({ev:?}), one-pass decoder does not")
        }
    };
    if let Some((_, disp)) = note {
        assert_ne!(disp, Disposition::SessionReset);
    }
    // The session's checks never reset; they keep the routes or withdraw
    // them all.
    match checked {
        Decoded::Reset(ev) => panic!("next-hop checks reset ({ev:?})"),
        Decoded::Ok(c, _) => assert!(
            c.announce == d.announce || (c.announce.is_empty() && c.attrs.is_none()),
            "next-hop checks neither kept nor withdrew the routes"
        ),
    }
    if d.end_of_rib.is_some() {
        assert!(d.announce.is_empty() && d.withdraw.is_empty() && d.attrs.is_none());
    }
    assert_eq!(d.attrs.is_some(), !d.announce.is_empty());
    assert_eq!(d.multicast.attrs.is_some(), !d.multicast.announce.is_empty());
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

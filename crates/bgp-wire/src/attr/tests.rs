//! Hand-made attribute vectors, both directions, and malformed ones mapped
//! to their NOTIFICATION subcode and RFC 7606 disposition.

use std::net::Ipv4Addr;

use base::{AfiSafi, Asn};

use super::aspath::SegmentType;
use super::*;
use crate::error::Disposition;

const WK: u8 = 0x40;
const ON: u8 = 0x80;
const OT: u8 = 0xc0;

fn tlv(flags: u8, code: u8, value: &[u8]) -> Vec<u8> {
    let mut v = vec![flags, code];
    if flags & af::EXTENDED_LENGTH != 0 {
        v.extend_from_slice(&(value.len() as u16).to_be_bytes());
    } else {
        v.push(value.len() as u8);
    }
    v.extend_from_slice(value);
    v
}

/// Parses one attribute, checks it re-encodes exactly, returns the owned value.
fn good(bytes: &[u8], ctx: ParseCtx) -> AttrValue {
    let raw = AttrIter::new(bytes).next().unwrap().unwrap();
    raw.typed(ctx).unwrap();
    let owned = raw.to_owned(ctx);
    let mut out = Vec::new();
    owned.encode(ctx, &mut out);
    assert_eq!(out, bytes, "re-encode of {:?}", owned);
    assert!(!matches!(owned.value, AttrValue::Raw { .. }) || raw.is_optional());
    owned.value
}

fn bad(bytes: &[u8], ctx: ParseCtx) -> WireError {
    let raw = AttrIter::new(bytes).next().unwrap().unwrap();
    let e = raw.typed(ctx).unwrap_err();
    // Malformed attributes still round-trip through the raw owned form.
    let mut out = Vec::new();
    raw.to_owned(ctx).encode(ctx, &mut out);
    assert_eq!(out, bytes);
    e
}

const C2: ParseCtx = ParseCtx::legacy();
const C4: ParseCtx = ParseCtx::modern();

#[test]
fn origin() {
    assert_eq!(good(&tlv(WK, 1, &[0]), C2), AttrValue::Origin(Origin::Igp));
    assert_eq!(
        good(&tlv(WK, 1, &[2]), C2),
        AttrValue::Origin(Origin::Incomplete)
    );
    let b = tlv(WK, 1, &[3]);
    let e = bad(&b, C2);
    assert_eq!(e.code(), (3, 6));
    assert_eq!(e.disposition(), Disposition::TreatAsWithdraw);
    assert_eq!(e.notification(&b).data, b, "data is the whole attribute");
    let e = bad(&tlv(WK, 1, &[0, 0]), C2);
    assert_eq!(
        (e.code(), e.disposition()),
        ((3, 5), Disposition::TreatAsWithdraw)
    );
    let e = bad(&tlv(OT, 1, &[0]), C2);
    assert_eq!(
        (e.code(), e.disposition()),
        ((3, 4), Disposition::TreatAsWithdraw)
    );
}

#[test]
fn as_path_and_as4_path() {
    let v = good(&tlv(WK, 2, &[2, 2, 0, 1, 0xfd, 0xe8]), C2);
    let AttrValue::AsPath(p) = v else { panic!() };
    assert_eq!(p.segments[0].kind, SegmentType::Sequence);
    assert_eq!(p.segments[0].asns, vec![Asn(1), Asn(65000)]);
    let v = good(&tlv(WK, 2, &[2, 1, 0, 3, 0x0d, 0x40, 1, 1, 0, 0, 0, 5]), C4);
    let AttrValue::AsPath(p) = v else { panic!() };
    assert_eq!(p.path_len(), 2);
    let v = good(&tlv(OT, 17, &[2, 1, 0, 3, 0x0d, 0x40]), C2);
    assert_eq!(
        v,
        AttrValue::As4Path(AsPath::from_sequence(vec![Asn(200_000)]))
    );
    // A 4-octet path on a 2-octet session: malformed (odd segment).
    let e = bad(&tlv(WK, 2, &[2, 1, 0, 3, 0x0d, 0x40]), C2);
    assert_eq!(
        (e.code(), e.disposition()),
        ((3, 11), Disposition::TreatAsWithdraw)
    );
    // Malformed AS4_PATH is discarded (RFC 6793 §6 via RFC 7606).
    let e = bad(&tlv(OT, 17, &[9, 1, 0, 0, 0, 1]), C2);
    assert_eq!(e.disposition(), Disposition::AttributeDiscard);
    let e = bad(&tlv(ON, 2, &[]), C2);
    assert_eq!(e.code(), (3, 4));
}

#[test]
fn next_hop_med_local_pref_originator_otc() {
    assert_eq!(
        good(&tlv(WK, 3, &[192, 0, 2, 1]), C2),
        AttrValue::NextHop(Ipv4Addr::new(192, 0, 2, 1))
    );
    assert_eq!(good(&tlv(ON, 4, &[0, 0, 1, 0]), C2), AttrValue::Med(256));
    assert_eq!(
        good(&tlv(WK, 5, &[0, 0, 0, 100]), C2),
        AttrValue::LocalPref(100)
    );
    assert_eq!(
        good(&tlv(ON, 9, &[10, 0, 0, 1]), C2),
        AttrValue::OriginatorId(Ipv4Addr::new(10, 0, 0, 1))
    );
    assert_eq!(
        good(&tlv(OT, 35, &[0, 0, 0xfd, 0xe8]), C2),
        AttrValue::OnlyToCustomer(Asn(65000))
    );
    for (flags, code) in [(WK, 3), (ON, 4), (WK, 5), (ON, 9), (OT, 35)] {
        let e = bad(&tlv(flags, code, &[1, 2, 3]), C2);
        assert_eq!(e.code(), (3, 5), "type {code}");
        assert_eq!(e.disposition(), Disposition::TreatAsWithdraw, "type {code}");
    }
    // MED flagged well-known: flags error, treat-as-withdraw (RFC 7606 §7.4).
    let e = bad(&tlv(WK, 4, &[0, 0, 0, 1]), C2);
    assert_eq!(
        (e.code(), e.disposition()),
        ((3, 4), Disposition::TreatAsWithdraw)
    );
}

#[test]
fn atomic_aggregate_and_aggregators() {
    assert_eq!(good(&tlv(WK, 6, &[]), C2), AttrValue::AtomicAggregate);
    let e = bad(&tlv(WK, 6, &[1]), C2);
    assert_eq!(
        (e.code(), e.disposition()),
        ((3, 5), Disposition::AttributeDiscard)
    );
    let agg = Aggregator {
        asn: Asn(65001),
        addr: Ipv4Addr::new(10, 0, 0, 9),
    };
    assert_eq!(
        good(&tlv(OT, 7, &[0xfd, 0xe9, 10, 0, 0, 9]), C2),
        AttrValue::Aggregator(agg)
    );
    assert_eq!(
        good(&tlv(OT, 7, &[0, 0, 0xfd, 0xe9, 10, 0, 0, 9]), C4),
        AttrValue::Aggregator(agg)
    );
    assert_eq!(
        good(&tlv(OT, 18, &[0, 0, 0xfd, 0xe9, 10, 0, 0, 9]), C2),
        AttrValue::As4Aggregator(agg)
    );
    // 8-octet AGGREGATOR on a 2-octet session.
    let e = bad(&tlv(OT, 7, &[0, 0, 0xfd, 0xe9, 10, 0, 0, 9]), C2);
    assert_eq!(
        (e.code(), e.disposition()),
        ((3, 5), Disposition::AttributeDiscard)
    );
    let e = bad(&tlv(OT, 18, &[1, 2, 3]), C2);
    assert_eq!(e.disposition(), Disposition::AttributeDiscard);
}

#[test]
fn communities() {
    let v = good(
        &tlv(OT, 8, &[0xff, 0xff, 0xff, 0x01, 0xfd, 0xe8, 0, 100]),
        C2,
    );
    assert_eq!(
        v,
        AttrValue::Communities(vec![Community::NO_EXPORT, Community(0xfde8_0064)])
    );
    assert_eq!(Community(0xfde8_0064).to_string(), "65000:100");
    let v = good(&tlv(OT, 16, &[0, 2, 0xfd, 0xe8, 0, 0, 0, 1]), C2);
    let AttrValue::ExtendedCommunities(x) = v else {
        panic!()
    };
    assert_eq!(
        (x[0].type_high(), x[0].subtype(), x[0].is_transitive()),
        (0, 2, true)
    );
    let v6 = [0u8; 20];
    assert_eq!(
        good(&tlv(OT, 25, &v6), C2),
        AttrValue::Ipv6ExtendedCommunities(vec![Ipv6ExtCommunity(v6)])
    );
    let l = [0, 0, 0xfd, 0xe8, 0, 0, 0, 1, 0, 0, 0, 2];
    let v = good(&tlv(OT, 32, &l), C2);
    let AttrValue::LargeCommunities(x) = v else {
        panic!()
    };
    assert_eq!(x[0].to_string(), "65000:1:2");
    let v = good(&tlv(ON, 10, &[1, 1, 1, 1, 2, 2, 2, 2]), C2);
    assert_eq!(
        v,
        AttrValue::ClusterList(vec![Ipv4Addr::new(1, 1, 1, 1), Ipv4Addr::new(2, 2, 2, 2)])
    );
    // RFC 7606 §7.8/7.10/7.14/7.15, RFC 8092 §6: length not a non-zero
    // multiple of the item size is treat-as-withdraw.
    for (flags, code, len) in [
        (OT, 8, 5),
        (OT, 8, 0),
        (OT, 16, 7),
        (OT, 25, 8),
        (OT, 32, 13),
        (ON, 10, 3),
    ] {
        let e = bad(&tlv(flags, code, &vec![0; len]), C2);
        assert_eq!(e.code(), (3, 5), "type {code}");
        assert_eq!(e.disposition(), Disposition::TreatAsWithdraw, "type {code}");
    }
}

#[test]
fn mp_attributes() {
    let mut v = vec![0, 2, 1, 16];
    v.extend_from_slice(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    v.extend_from_slice(&[0, 32, 0x20, 1, 0xd, 0xb8]);
    let AttrValue::MpReach(m) = good(&tlv(ON, 14, &v), C4) else {
        panic!()
    };
    assert_eq!(m.afi_safi, AfiSafi::IPV6_UNICAST);
    assert_eq!(m.nlri.prefixes().len(), 1);
    let AttrValue::MpUnreach(m) = good(&tlv(ON, 15, &[0, 2, 1, 32, 0x20, 1, 0xd, 0xb8]), C4) else {
        panic!()
    };
    assert_eq!(
        m.withdrawn.prefixes()[0].prefix.to_string(),
        "2001:db8::/32"
    );
    // ADD-PATH in MP_REACH follows the context per AFI/SAFI.
    let ap = C4.with_add_path(AfiSafi::IPV6_UNICAST, true);
    let AttrValue::MpUnreach(m) = good(&tlv(ON, 15, &[0, 2, 1, 0, 0, 0, 9, 16, 0x20, 1]), ap)
    else {
        panic!()
    };
    assert_eq!(m.withdrawn.prefixes()[0].path_id, Some(9));
    // Next hop overrunning the value: 3/9, session reset (RFC 7606 §7.11).
    let e = bad(&tlv(ON, 14, &[0, 1, 1, 16, 1, 2]), C4);
    assert_eq!(
        (e.code(), e.disposition()),
        ((3, 9), Disposition::SessionReset)
    );
    let e = bad(&tlv(ON, 15, &[0, 1]), C4);
    assert_eq!(
        (e.code(), e.disposition()),
        ((3, 9), Disposition::SessionReset)
    );
    // NLRI that do not parse: typed view is fine (lazy), owned form is raw.
    let b = tlv(ON, 15, &[0, 1, 1, 33, 1, 2, 3, 4, 5]);
    let raw = AttrIter::new(&b).next().unwrap().unwrap();
    assert!(matches!(
        raw.to_owned(C4).value,
        AttrValue::Raw { type_code: 15, .. }
    ));
}

#[test]
fn unknown_attributes() {
    // Optional transitive unknown: kept raw, Partial added when forwarded.
    let b = tlv(OT, 99, &[1, 2, 3]);
    let raw = AttrIter::new(&b).next().unwrap().unwrap();
    assert!(matches!(raw.typed(C2), Ok(PathAttribute::Unknown(_))));
    let o = raw.to_owned(C2);
    assert_eq!(o.for_propagation().unwrap().flags, OT | af::PARTIAL);
    let mut out = Vec::new();
    o.encode(C2, &mut out);
    assert_eq!(out, b);
    // Optional non-transitive unknown: not forwarded.
    let b = tlv(ON, 99, &[]);
    let o = AttrIter::new(&b).next().unwrap().unwrap().to_owned(C2);
    assert_eq!(o.for_propagation(), None);
    // Well-known unknown: 3/2, and the data is the attribute.
    let b = tlv(WK, 99, &[7]);
    let e = bad(&b, C2);
    assert_eq!(e.code(), (3, 2));
    assert_eq!(e.notification(&b).data, b);
}

#[test]
fn extended_length_flag_is_kept_and_forced() {
    // Extended length on a short value, as some routers send: kept.
    let b = tlv(WK | af::EXTENDED_LENGTH, 1, &[1]);
    assert_eq!(b.len(), 5);
    assert_eq!(good(&b, C2), AttrValue::Origin(Origin::Egp));
    // A long value without the flag gets it.
    let a = PathAttr::new(AttrValue::Communities((0..100).map(Community).collect()));
    let mut out = Vec::new();
    a.encode(C2, &mut out);
    assert_eq!(out[0], OT | af::EXTENDED_LENGTH);
    assert_eq!(&out[2..4], &400u16.to_be_bytes());
    let back = AttrIter::new(&out).next().unwrap().unwrap();
    assert_eq!(back.value.len(), 400);
}

#[test]
fn overrun_is_treat_as_withdraw_unless_mp() {
    let mut b = tlv(WK, 1, &[0]);
    b.extend_from_slice(&[0x40, 2, 9, 2, 1]);
    let mut it = AttrIter::new(&b);
    assert!(it.next().unwrap().is_ok());
    let e = it.next().unwrap().unwrap_err();
    assert_eq!(
        e,
        WireError::AttributeOverrun {
            type_code: 2,
            offset: 4
        }
    );
    assert_eq!(
        (e.code(), e.disposition()),
        ((3, 5), Disposition::TreatAsWithdraw)
    );
    assert!(it.next().is_none());
    let e = AttrIter::new(&[0x80, 14, 50, 0])
        .next()
        .unwrap()
        .unwrap_err();
    assert_eq!(e.disposition(), Disposition::SessionReset);
    let e = AttrIter::new(&[0x40]).next().unwrap().unwrap_err();
    assert_eq!(
        e,
        WireError::AttributeOverrun {
            type_code: 0,
            offset: 0
        }
    );
}

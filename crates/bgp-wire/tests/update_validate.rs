//! Whole UPDATE messages built by hand: parsing, the RFC 7606 validating
//! pass, and NOTIFICATION data for each error.

use base::{AfiSafi, Asn, Prefix};
use bgp_wire::consts::attr_type as at;
use bgp_wire::*;

fn tlv(flags: u8, code: u8, value: &[u8]) -> Vec<u8> {
    let mut v = vec![flags, code, value.len() as u8];
    v.extend_from_slice(value);
    v
}

/// Builds an UPDATE body from its three parts.
fn body(withdrawn: &[u8], attrs: &[Vec<u8>], nlri: &[u8]) -> Vec<u8> {
    let a: Vec<u8> = attrs.concat();
    let mut b = (withdrawn.len() as u16).to_be_bytes().to_vec();
    b.extend_from_slice(withdrawn);
    b.extend_from_slice(&(a.len() as u16).to_be_bytes());
    b.extend_from_slice(&a);
    b.extend_from_slice(nlri);
    b
}

fn message(body: &[u8]) -> Vec<u8> {
    let mut m = MARKER.to_vec();
    m.extend_from_slice(&((body.len() + 19) as u16).to_be_bytes());
    m.push(2);
    m.extend_from_slice(body);
    m
}

fn origin() -> Vec<u8> {
    tlv(0x40, 1, &[0])
}
fn as_path4() -> Vec<u8> {
    tlv(0x40, 2, &[2, 2, 0, 0, 0xfd, 0xe8, 0, 3, 0x0d, 0x40])
}
fn next_hop() -> Vec<u8> {
    tlv(0x40, 3, &[192, 0, 2, 1])
}

const CTX: ParseCtx = ParseCtx::modern();

#[test]
fn typical_ipv4_update() {
    let b = body(
        &[16, 10, 1],
        &[
            origin(),
            as_path4(),
            next_hop(),
            tlv(0xc0, 8, &[0xfd, 0xe8, 0, 1]),
        ],
        &[24, 192, 0, 2, 22, 198, 51, 100],
    );
    let m = message(&b);
    let (msg, n) = Message::parse(&m, CTX).unwrap();
    assert_eq!(n, m.len());
    let Message::Update(u) = msg else { panic!() };
    let w: Vec<_> = u
        .withdrawn()
        .map(|r| r.unwrap().prefix.to_string())
        .collect();
    assert_eq!(w, vec!["10.1.0.0/16"]);
    let a: Vec<_> = u.nlri().map(|r| r.unwrap().prefix.to_string()).collect();
    assert_eq!(a, vec!["192.0.2.0/24", "198.51.100.0/22"]);
    let s = u.validate().unwrap();
    assert_eq!((s.withdrawn, s.announced), (1, 2));
    assert!(s.present.contains(at::COMMUNITIES));
    assert!(s.discard.is_empty() && s.first_discard_error.is_none());
    let PathAttribute::AsPath(p) = u.find_attr(at::AS_PATH).unwrap().typed(CTX).unwrap() else {
        panic!()
    };
    assert_eq!(p.origin_asn(), Some(Asn(200_000)));
    // Byte-exact round trip through the owned form.
    let mut out = Vec::new();
    msg.to_owned().unwrap().encode(CTX, &mut out).unwrap();
    assert_eq!(out, m);
}

#[test]
fn ipv6_update_and_end_of_rib() {
    let mut mp = vec![0, 2, 1, 16];
    mp.extend_from_slice(
        &"2001:db8::1"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
    );
    mp.extend_from_slice(&[0, 32, 0x20, 1, 0xd, 0xb8]);
    let b = body(&[], &[origin(), as_path4(), tlv(0x80, 14, &mp)], &[]);
    let u = UpdateView::parse(&b, CTX).unwrap();
    let s = u.validate().unwrap();
    let m = s.mp_reach.unwrap();
    assert_eq!(m.afi_safi, AfiSafi::IPV6_UNICAST);
    let p: Vec<Prefix> = m.nlri().map(|r| r.unwrap().prefix).collect();
    assert_eq!(p, vec!["2001:db8::/32".parse().unwrap()]);
    assert_eq!(u.end_of_rib(), None);

    let eor4 = body(&[], &[], &[]);
    assert_eq!(
        UpdateView::parse(&eor4, CTX).unwrap().end_of_rib(),
        Some(AfiSafi::IPV4_UNICAST)
    );
    let eor6 = body(&[], &[tlv(0x80, 15, &[0, 2, 1])], &[]);
    let u = UpdateView::parse(&eor6, CTX).unwrap();
    assert_eq!(u.end_of_rib(), Some(AfiSafi::IPV6_UNICAST));
    assert!(u.validate().is_ok(), "withdraw-only UPDATE needs no ORIGIN");
}

#[test]
fn length_fields_overrunning_the_message_reset() {
    let mut b = body(&[], &[origin()], &[]);
    b[3] = 50; // total path attribute length beyond the message
    let e = UpdateView::parse(&b, CTX).unwrap_err();
    assert_eq!(
        (e.code(), e.disposition()),
        ((3, 1), Disposition::SessionReset)
    );
    let e = UpdateView::parse(&[0, 9, 0], CTX).unwrap_err();
    assert_eq!(e, WireError::MalformedAttributeList);
    let m = message(&[0, 0, 0]);
    assert_eq!(
        Message::parse(&m, CTX).unwrap_err(),
        WireError::BadMessageLength { length: 22 }
    );
}

#[test]
fn missing_well_known() {
    let b = body(&[], &[origin(), as_path4()], &[8, 10]);
    let (e, d) = UpdateView::parse(&b, CTX).unwrap().validate().unwrap_err();
    assert_eq!(e, WireError::MissingWellKnown { type_code: 3 });
    assert_eq!((e.code(), d), ((3, 3), Disposition::TreatAsWithdraw));
    assert_eq!(e.notification(&b).data, vec![3]);
    let b = body(&[], &[as_path4(), next_hop()], &[8, 10]);
    let (e, _) = UpdateView::parse(&b, CTX).unwrap().validate().unwrap_err();
    assert_eq!(e, WireError::MissingWellKnown { type_code: 1 });
}

#[test]
fn malformed_attribute_dispositions_and_data() {
    // Bad ORIGIN value: treat-as-withdraw, data is the attribute, located
    // in the body past the withdrawn routes.
    let bad_origin = tlv(0x40, 1, &[7]);
    let b = body(
        &[8, 10],
        &[bad_origin.clone(), as_path4(), next_hop()],
        &[8, 11],
    );
    let (e, d) = UpdateView::parse(&b, CTX).unwrap().validate().unwrap_err();
    assert_eq!((e.code(), d), ((3, 6), Disposition::TreatAsWithdraw));
    assert_eq!(e.attr().unwrap().offset, 6);
    assert_eq!(e.notification(&b).data, bad_origin);

    // Malformed AGGREGATOR is discarded; the UPDATE is accepted.
    let b = body(
        &[],
        &[origin(), as_path4(), next_hop(), tlv(0xc0, 7, &[1, 2, 3])],
        &[8, 10],
    );
    let s = UpdateView::parse(&b, CTX).unwrap().validate().unwrap();
    assert!(s.discard.contains(at::AGGREGATOR));
    assert_eq!(s.first_discard_error.unwrap().code(), (3, 5));

    // Duplicate LOCAL_PREF: keep the first.
    let lp = tlv(0x40, 5, &[0, 0, 0, 100]);
    let b = body(
        &[],
        &[origin(), as_path4(), next_hop(), lp.clone(), lp],
        &[8, 10],
    );
    let s = UpdateView::parse(&b, CTX).unwrap().validate().unwrap();
    assert!(s.duplicates.contains(at::LOCAL_PREF));

    // Duplicate MP_UNREACH: session reset.
    let mpu = tlv(0x80, 15, &[0, 2, 1]);
    let b = body(&[], &[mpu.clone(), mpu], &[]);
    let (e, d) = UpdateView::parse(&b, CTX).unwrap().validate().unwrap_err();
    assert_eq!((e.code(), d), ((3, 1), Disposition::SessionReset));

    // MP_REACH NLRI that do not parse: session reset, 3/9.
    let b = body(
        &[],
        &[
            origin(),
            as_path4(),
            tlv(
                0x80,
                14,
                &[
                    0, 2, 1, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 129,
                ],
            ),
        ],
        &[],
    );
    let (e, d) = UpdateView::parse(&b, CTX).unwrap().validate().unwrap_err();
    assert_eq!((e.code(), d), ((3, 9), Disposition::SessionReset));

    // IPv6 MP_REACH with a 4-octet next hop: session reset.
    let b = body(
        &[],
        &[
            origin(),
            as_path4(),
            tlv(0x80, 14, &[0, 2, 1, 4, 1, 2, 3, 4, 0]),
        ],
        &[],
    );
    let (_, d) = UpdateView::parse(&b, CTX).unwrap().validate().unwrap_err();
    assert_eq!(d, Disposition::SessionReset);

    // Worst disposition wins: a discard and a withdraw give withdraw.
    let b = body(
        &[],
        &[
            tlv(0xc0, 7, &[1]),
            tlv(0x40, 1, &[9]),
            as_path4(),
            next_hop(),
        ],
        &[8, 10],
    );
    let (e, d) = UpdateView::parse(&b, CTX).unwrap().validate().unwrap_err();
    assert_eq!((e.code(), d), ((3, 6), Disposition::TreatAsWithdraw));

    // Attribute overrunning the attribute block: treat-as-withdraw (§4).
    // The cut-off last octet (0) then reads as NLRI 0.0.0.0/0, so the NLRI
    // can still be located.
    let mut b = body(
        &[],
        &[origin(), as_path4(), tlv(0x40, 3, &[192, 0, 2, 0])],
        &[],
    );
    let alen = u16::from_be_bytes([b[2], b[3]]);
    b[2..4].copy_from_slice(&(alen - 1).to_be_bytes());
    let (e, d) = UpdateView::parse(&b, CTX).unwrap().validate().unwrap_err();
    assert_eq!(d, Disposition::TreatAsWithdraw, "{e:?}");

    // NLRI field that does not parse: 3/10, session reset.
    let b = body(
        &[],
        &[origin(), as_path4(), next_hop()],
        &[33, 1, 2, 3, 4, 5],
    );
    let (e, d) = UpdateView::parse(&b, CTX).unwrap().validate().unwrap_err();
    assert_eq!((e.code(), d), ((3, 10), Disposition::SessionReset));
}

#[test]
fn add_path_nlri_in_update() {
    let ctx = CTX.with_add_path(AfiSafi::IPV4_UNICAST, true);
    let b = body(
        &[0, 0, 0, 1, 8, 10],
        &[origin(), as_path4(), next_hop()],
        &[0, 0, 0, 2, 16, 10, 1],
    );
    let u = UpdateView::parse(&b, ctx).unwrap();
    assert_eq!(u.withdrawn().next().unwrap().unwrap().path_id, Some(1));
    let n = u.nlri().next().unwrap().unwrap();
    assert_eq!(
        (n.path_id, n.prefix.to_string()),
        (Some(2), "10.1.0.0/16".to_string())
    );
    assert!(u.validate().is_ok());
    let mut out = Vec::new();
    u.to_owned().unwrap().encode_body(ctx, &mut out).unwrap();
    assert_eq!(out, b);
}

#[test]
fn other_message_types_and_header_errors() {
    let mut k = MARKER.to_vec();
    k.extend_from_slice(&[0, 19, 4]);
    assert_eq!(Message::parse(&k, CTX).unwrap(), (Message::Keepalive, 19));
    let mut out = Vec::new();
    encode_keepalive(CTX, &mut out).unwrap();
    assert_eq!(out, k);
    k[18] = 9;
    let e = Message::parse(&k, CTX).unwrap_err();
    assert_eq!((e.code(), e.notification(&[]).data), ((1, 3), vec![9]));
    k[18] = 4;
    k[17] = 20;
    k.push(0);
    assert_eq!(Message::parse(&k, CTX).unwrap_err().code(), (1, 2));
    k[0] = 0;
    assert_eq!(Message::parse(&k, CTX).unwrap_err().code(), (1, 1));
    // A buffer cut short of the announced length.
    let mut u = MARKER.to_vec();
    u.extend_from_slice(&[0, 30, 2, 0, 0]);
    assert_eq!(
        Message::parse(&u, CTX).unwrap_err(),
        WireError::BadMessageLength { length: 30 }
    );
    // Encoding refuses messages over the session maximum.
    let big = UpdateMessage {
        nlri: (0..1100u32)
            .map(|i| Nlri::new(Prefix::V4(base::Prefix4::new(i << 8, 24).unwrap())))
            .collect(),
        ..Default::default()
    };
    let mut out = vec![1, 2];
    let e = big.encode(ParseCtx::legacy(), &mut out).unwrap_err();
    assert!(matches!(e, EncodeError::MessageTooLong { max: 4096, .. }));
    assert_eq!(out, vec![1, 2], "output left as it was");
    assert!(big.encode(ParseCtx::modern(), &mut out).is_ok());
}

/// The RFC 7606 result of validating `b`: `Ok` with the discarded types,
/// or the error and its disposition.
fn verdict(b: &[u8]) -> Result<AttrSet, (WireError, Disposition)> {
    UpdateView::parse(b, CTX)
        .unwrap()
        .validate()
        .map(|v| v.discard)
}

fn assert_withdraw(b: &[u8], want: fn(&WireError) -> bool, what: &str) {
    match verdict(b) {
        Err((e, Disposition::TreatAsWithdraw)) if want(&e) => {}
        other => panic!("{what}: want treat-as-withdraw, got {other:?}"),
    }
}

/// RFC 4271 §6.3 / RFC 7606 §7.3: a NEXT_HOP that is no IPv4 host address
/// (0.0.0.0, multicast, class E, broadcast) withdraws the IPv4 NLRI; no
/// NOTIFICATION (3/8 would reset). Without IPv4 NLRI it is ignored (RFC
/// 4760 §3).
#[test]
fn next_hop_that_is_no_host_address_is_treat_as_withdraw() {
    for nh in [
        [0, 0, 0, 0],
        [224, 0, 0, 5],
        [239, 255, 255, 250],
        [240, 0, 0, 1],
        [255, 255, 255, 255],
    ] {
        let b = body(&[], &[origin(), as_path4(), tlv(0x40, 3, &nh)], &[8, 10]);
        assert_withdraw(
            &b,
            |e| matches!(e, WireError::InvalidNextHop(a) if a.type_code == 3),
            &format!("NEXT_HOP {nh:?}"),
        );
    }
    for nh in [[192, 0, 2, 1], [198, 18, 0, 1], [223, 255, 255, 254]] {
        let b = body(&[], &[origin(), as_path4(), tlv(0x40, 3, &nh)], &[8, 10]);
        assert!(verdict(&b).is_ok(), "NEXT_HOP {nh:?} is a host address");
    }
    // Only IPv6 NLRI: a NEXT_HOP of 0.0.0.0 beside them is ignored.
    let b = body(
        &[],
        &[
            origin(),
            as_path4(),
            tlv(0x40, 3, &[0, 0, 0, 0]),
            tlv(0x80, 14, &mp_reach6(&["2001:db8::1"])),
        ],
        &[],
    );
    assert!(verdict(&b).is_ok());
}

/// An IPv6 unicast MP_REACH_NLRI value for 2001:db8::/32 with the next
/// hop made of `addrs` (one: 16 octets; two: 32).
fn mp_reach6(addrs: &[&str]) -> Vec<u8> {
    let mut mp = vec![0, 2, 1, (16 * addrs.len()) as u8];
    for a in addrs {
        mp.extend_from_slice(&a.parse::<std::net::Ipv6Addr>().unwrap().octets());
    }
    mp.extend_from_slice(&[0, 32, 0x20, 1, 0xd, 0xb8]);
    mp
}

/// The same for MP_REACH_NLRI next hops: `::`, `::1`, multicast; in a
/// 32-octet next hop (RFC 2545 §3) the second address must be link-local.
#[test]
fn mp_reach_next_hop_that_is_no_host_address_is_treat_as_withdraw() {
    for nh in [
        &["::"][..],
        &["::1"],
        &["ff02::1"],
        &["ff0e::1"],
        &["2001:db8::1", "2001:db8::2"],
        &["2001:db8::1", "::"],
        &["::1", "fe80::1"],
        &["2001:db8::1", "ff02::1"],
    ] {
        let b = body(
            &[],
            &[origin(), as_path4(), tlv(0x80, 14, &mp_reach6(nh))],
            &[],
        );
        assert_withdraw(
            &b,
            |e| matches!(e, WireError::InvalidNextHop(a) if a.type_code == 14),
            &format!("MP next hop {nh:?}"),
        );
    }
    for nh in [
        &["2001:db8::1"][..],
        &["2001:db8::1", "fe80::1"],
        &["fe80::1"],
    ] {
        let b = body(
            &[],
            &[origin(), as_path4(), tlv(0x80, 14, &mp_reach6(nh))],
            &[],
        );
        assert!(verdict(&b).is_ok(), "MP next hop {nh:?}");
    }
    // A withdrawal-only MP_REACH (no NLRI) has nothing to check.
    let b = body(
        &[],
        &[tlv(
            0x80,
            14,
            &[
                0, 2, 1, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            ],
        )],
        &[],
    );
    assert!(verdict(&b).is_ok());
}

/// RFC 7607 §2: AS 0 in AS_PATH is a malformed AS_PATH (treat-as-withdraw,
/// RFC 7606 §7.2); in AS4_PATH, AGGREGATOR or AS4_AGGREGATOR the attribute
/// is discarded (RFC 6793 §6, RFC 7606 §7.7).
#[test]
fn as_zero() {
    // AS_SEQUENCE [65000, 0]; AS_SET {0}.
    for path in [
        &[2, 2, 0, 0, 0xfd, 0xe8, 0, 0, 0, 0][..],
        &[2, 1, 0, 0, 0xfd, 0xe8, 1, 1, 0, 0, 0, 0],
    ] {
        let b = body(&[], &[origin(), tlv(0x40, 2, path), next_hop()], &[8, 10]);
        assert_withdraw(
            &b,
            |e| matches!(e, WireError::MalformedAsPath(a) if a.type_code == 2),
            &format!("AS_PATH {path:?}"),
        );
    }
    // The same with 2-octet ASNs.
    let b = body(
        &[],
        &[
            origin(),
            tlv(0x40, 2, &[2, 2, 0xfd, 0xe8, 0, 0]),
            next_hop(),
        ],
        &[8, 10],
    );
    let u = UpdateView::parse(&b, ParseCtx::legacy()).unwrap();
    assert!(matches!(
        u.validate(),
        Err((WireError::MalformedAsPath(_), Disposition::TreatAsWithdraw))
    ));
    for (t, flags, value) in [
        (at::AS4_PATH, 0xc0, &[2, 1, 0, 0, 0, 0][..]),
        (at::AGGREGATOR, 0xc0, &[0, 0, 0, 0, 192, 0, 2, 9]),
        (at::AS4_AGGREGATOR, 0xc0, &[0, 0, 0, 0, 192, 0, 2, 9]),
    ] {
        let b = body(
            &[],
            &[origin(), as_path4(), next_hop(), tlv(flags, t, value)],
            &[8, 10],
        );
        let d = verdict(&b).unwrap_or_else(|e| panic!("type {t}: {e:?}"));
        assert!(d.contains(t), "type {t} with AS 0 is discarded");
    }
    // Neighbours: AS 1 / AS 23456 (AS_TRANS) are fine everywhere.
    let b = body(
        &[],
        &[
            origin(),
            tlv(0x40, 2, &[2, 2, 0, 0, 0, 1, 0, 0, 0x5b, 0xa0]),
            next_hop(),
            tlv(0xc0, at::AGGREGATOR, &[0, 0, 0, 1, 192, 0, 2, 9]),
        ],
        &[8, 10],
    );
    assert!(verdict(&b).unwrap().is_empty());
}

/// RFC 5065 §5 / RFC 7606 §7.2: AS_CONFED_SEQUENCE or AS_CONFED_SET from a
/// peer outside the confederation (tesserad is in none, so any peer) make
/// AS_PATH malformed: treat-as-withdraw.
#[test]
fn confederation_segments_from_outside_are_treat_as_withdraw() {
    for seg_type in [3u8, 4] {
        let path = [seg_type, 1, 0, 0, 0xfd, 0xe9, 2, 1, 0, 0, 0xfd, 0xe8];
        let b = body(&[], &[origin(), tlv(0x40, 2, &path), next_hop()], &[8, 10]);
        assert_withdraw(
            &b,
            |e| matches!(e, WireError::MalformedAsPath(a) if a.type_code == 2),
            &format!("segment type {seg_type}"),
        );
    }
}

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

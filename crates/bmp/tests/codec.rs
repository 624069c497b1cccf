//! Encode -> decode of every message type, a byte vector written by hand
//! from RFC 7854 §4, the one-prefix UPDATEs read back by bgp-wire, and
//! the decoder on arbitrary input.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use base::{Afi, AfiSafi, Prefix, Safi};
use bgp_wire::{NotificationMessage, OpenMessage, ParseCtx, UpdateView, HEADER_LEN};
use bmp::decode::{decode_all, message_len, Message};
use bmp::encode::{self, DownReason, LocalEnd, Stat};
use bmp::{peer_flags, PeerHeader, PeerType, Timestamp};
use proptest::prelude::*;

fn peer(addr: IpAddr, flags: u8) -> PeerHeader {
    PeerHeader {
        peer_type: PeerType::Global,
        flags,
        distinguisher: 0,
        address: addr,
        asn: 65001,
        bgp_id: Ipv4Addr::new(10, 0, 0, 1),
        timestamp: Timestamp {
            secs: 1_700_000_000,
            micros: 42,
        },
    }
}

fn open(asn: u16, id: [u8; 4]) -> Vec<u8> {
    let o = OpenMessage {
        version: 4,
        my_as: asn,
        hold_time: 90,
        bgp_id: Ipv4Addr::from(id),
        params: Vec::new(),
        extended_params: false,
    };
    let mut b = Vec::new();
    o.encode(ParseCtx::legacy(), &mut b).unwrap();
    b
}

#[test]
fn initiation_bytes_match_rfc_layout() {
    let mut out = Vec::new();
    encode::initiation(&[(encode::INIT_SYS_NAME, b"r1")], &mut out);
    // version 3, length 12, type 4; TLV type 2, length 2, "r1".
    assert_eq!(out, [3, 0, 0, 0, 12, 4, 0, 2, 0, 2, b'r', b'1']);
    let (m, n) = Message::decode(&out).unwrap();
    assert_eq!(n, 12);
    let Message::Initiation(t) = m else { panic!() };
    assert_eq!(t.get(encode::INIT_SYS_NAME), Some(&b"r1"[..]));
}

#[test]
fn peer_header_bytes() {
    let mut out = Vec::new();
    let mut p = peer(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7)), peer_flags::L);
    p.timestamp = Timestamp { secs: 1, micros: 2 };
    p.encode(&mut out);
    let mut want = vec![0u8, 0x40];
    want.extend_from_slice(&[0; 8]);
    want.extend_from_slice(&[0; 12]);
    want.extend_from_slice(&[192, 0, 2, 7]);
    want.extend_from_slice(&65001u32.to_be_bytes());
    want.extend_from_slice(&[10, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2]);
    assert_eq!(out, want);
}

#[test]
fn every_message_round_trips() {
    let v4 = peer(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)), 0);
    let v6 = peer(
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1)),
        peer_flags::L | peer_flags::O,
    );
    let loc = PeerHeader {
        peer_type: PeerType::LocRib,
        address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        ..v4
    };
    let (sent, recv) = (open(65000, [1, 1, 1, 1]), open(65001, [2, 2, 2, 2]));
    let mut notif = Vec::new();
    NotificationMessage::new(6, 2, Vec::new())
        .encode(ParseCtx::legacy(), &mut notif)
        .unwrap();
    let mut upd = Vec::new();
    let p: Prefix = "2001:db8:1::/48".parse().unwrap();
    bmp::route::withdraw(&p, Safi::Unicast, None, &mut upd);

    let mut out = Vec::new();
    encode::initiation(
        &[
            (encode::INIT_SYS_DESCR, b"tesserad"),
            (encode::INIT_SYS_NAME, b"r1"),
        ],
        &mut out,
    );
    let mut info = Vec::new();
    encode::tlv(encode::INFO_TABLE_NAME, b"global", &mut info);
    let local = LocalEnd {
        address: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)),
        local_port: 179,
        remote_port: 40000,
    };
    encode::peer_up(&v4, &local, &sent, &recv, &info, &mut out);
    encode::route_monitoring(&v6, &upd, &mut out);
    encode::route_monitoring(&loc, &upd, &mut out);
    encode::statistics(
        &v4,
        &[
            Stat::Counter(encode::stat::REJECTED, 3),
            Stat::Gauge(encode::stat::ADJ_RIB_IN, 1 << 40),
            Stat::AfiSafiGauge(encode::stat::LOC_RIB_AFI_SAFI, 2, 1, 9),
        ],
        &mut out,
    );
    encode::peer_down(&v4, DownReason::RemoteNotification(&notif), &mut out);
    encode::peer_down(&v4, DownReason::LocalNotification(&notif), &mut out);
    encode::peer_down(&v4, DownReason::LocalNoNotification(18), &mut out);
    encode::peer_down(&v4, DownReason::RemoteNoData, &mut out);
    encode::peer_down(&v4, DownReason::Deconfigured, &mut out);
    encode::peer_down(&loc, DownReason::LocalSystemClosed(&info), &mut out);
    encode::termination(encode::term_reason::ADMIN_CLOSE, Some("bye"), &mut out);

    let (msgs, err) = decode_all(&out);
    assert_eq!(err, None);
    assert_eq!(msgs.len(), 12);
    match msgs[1] {
        Message::PeerUp {
            peer,
            local: l,
            sent_open,
            received_open,
            info: i,
        } => {
            assert_eq!(peer, v4);
            assert_eq!(l, local);
            assert_eq!(sent_open, &sent[..]);
            assert_eq!(received_open, &recv[..]);
            assert_eq!(i.get(encode::INFO_TABLE_NAME), Some(&b"global"[..]));
        }
        ref m => panic!("{m:?}"),
    }
    match msgs[2] {
        Message::RouteMonitoring { peer, update } => {
            assert_eq!(peer.address, v6.address);
            assert_eq!(peer.flags, peer_flags::V | peer_flags::L | peer_flags::O);
            assert_eq!(update, &upd[..]);
        }
        ref m => panic!("{m:?}"),
    }
    assert_eq!(msgs[3].peer().unwrap().peer_type, PeerType::LocRib);
    match msgs[4] {
        Message::Statistics { stats, .. } => {
            let v: Vec<(u16, usize)> = stats.iter().map(|(t, v)| (t, v.len())).collect();
            assert_eq!(v, [(0, 4), (7, 8), (10, 11)]);
            assert_eq!(stats.get(7), Some(&(1u64 << 40).to_be_bytes()[..]));
        }
        ref m => panic!("{m:?}"),
    }
    let reasons: Vec<u8> = msgs[5..11]
        .iter()
        .map(|m| match m {
            Message::PeerDown { reason, .. } => *reason,
            m => panic!("{m:?}"),
        })
        .collect();
    assert_eq!(reasons, [3, 1, 2, 4, 5, 6]);
    let Message::Termination(t) = msgs[11] else {
        panic!()
    };
    assert_eq!(t.get(encode::TERM_REASON), Some(&[0u8, 0][..]));
    assert_eq!(t.get(encode::INIT_STRING), Some(&b"bye"[..]));
}

fn update_of(b: &[u8]) -> UpdateView<'_> {
    UpdateView::parse(&b[HEADER_LEN..], ParseCtx::modern()).unwrap()
}

#[test]
fn one_prefix_updates_read_back() {
    // IPv4: ORIGIN IGP, AS_PATH [65001], NEXT_HOP 192.0.2.1 (as the RIB keeps it).
    let attrs4 = [
        0x40, 1, 1, 0, //
        0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe9, //
        0x40, 3, 4, 192, 0, 2, 1,
    ];
    let p4: Prefix = "198.18.5.0/24".parse().unwrap();
    let mut b = Vec::new();
    assert!(bmp::route::announce(
        &p4,
        Safi::Unicast,
        None,
        &attrs4,
        &mut b
    ));
    let u = update_of(&b);
    let nlri: Vec<Prefix> = u.nlri().map(|n| n.unwrap().prefix).collect();
    assert_eq!(nlri, [p4]);
    assert_eq!(u.find_attr(3).unwrap().value, &[192, 0, 2, 1]);

    // IPv6: MP_REACH_NLRI with only the next hop, plus a NEXT_HOP that must go.
    let mut attrs6 = vec![0x40, 1, 1, 0, 0x40, 3, 4, 192, 0, 2, 1];
    attrs6.extend_from_slice(&[0x80, 14, 21, 0, 2, 1, 16]);
    attrs6.extend_from_slice(&Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 9).octets());
    attrs6.push(0);
    let p6: Prefix = "2001:db8:5::/48".parse().unwrap();
    b.clear();
    assert!(bmp::route::announce(
        &p6,
        Safi::Unicast,
        Some(7),
        &attrs6,
        &mut b
    ));
    let body = &b[HEADER_LEN..];
    let ctx = ParseCtx::modern().with_add_path(AfiSafi::IPV6_UNICAST, true);
    let u = UpdateView::parse(body, ctx).unwrap();
    assert!(u.find_attr(3).is_none());
    let mp = u.mp_reach().unwrap().unwrap();
    let n: Vec<_> = mp.nlri().map(|n| n.unwrap()).collect();
    assert_eq!(n.len(), 1);
    assert_eq!((n[0].prefix, n[0].path_id), (p6, Some(7)));

    // Withdrawals and End-of-RIB.
    b.clear();
    bmp::route::withdraw(&p4, Safi::Unicast, None, &mut b);
    let u = update_of(&b);
    assert_eq!(
        u.withdrawn().map(|n| n.unwrap().prefix).collect::<Vec<_>>(),
        [p4]
    );
    b.clear();
    bmp::route::end_of_rib(Afi::Ipv6, Safi::Unicast, &mut b);
    assert_eq!(update_of(&b).end_of_rib(), Some(AfiSafi::IPV6_UNICAST));
    b.clear();
    bmp::route::end_of_rib(Afi::Ipv4, Safi::Unicast, &mut b);
    assert_eq!(b.len(), 23);
    assert_eq!(update_of(&b).end_of_rib(), Some(AfiSafi::IPV4_UNICAST));
    // IPv6 without a next hop (a route we originate): the unspecified one.
    b.clear();
    assert!(bmp::route::announce(
        &p6,
        Safi::Unicast,
        None,
        &attrs4,
        &mut b
    ));
    let u = update_of(&b);
    let mp = u.mp_reach().unwrap().unwrap();
    assert_eq!(mp.next_hop, &[0u8; 16]);
    assert_eq!(
        mp.nlri().map(|n| n.unwrap().prefix).collect::<Vec<_>>(),
        [p6]
    );
    // A malformed block: refused, nothing appended.
    b.clear();
    assert!(!bmp::route::announce(
        &p4,
        Safi::Unicast,
        None,
        &[0x40, 1, 5, 0],
        &mut b
    ));
    assert!(b.is_empty());
}

#[test]
fn bad_messages_are_refused() {
    assert_eq!(message_len(&[3, 0, 0]), Ok(None));
    assert!(Message::decode(&[1, 0, 0, 0, 6, 4]).is_err());
    assert!(Message::decode(&[3, 0, 0, 0, 5, 4]).is_err());
    assert!(Message::decode(&[3, 0, 0, 0, 7, 4, 0]).is_err()); // TLV cut
    assert!(Message::decode(&[3, 0, 0, 0, 6, 9]).is_err()); // type 9
                                                            // Route Monitoring with a KEEPALIVE inside.
    let mut out = Vec::new();
    let mut ka = Vec::new();
    bgp_wire::encode_keepalive(ParseCtx::legacy(), &mut ka).unwrap();
    encode::route_monitoring(&peer(IpAddr::V4(Ipv4Addr::LOCALHOST), 0), &ka, &mut out);
    assert!(Message::decode(&out).is_err());
    // Statistics whose count lies.
    out.clear();
    encode::statistics(
        &peer(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
        &[Stat::Counter(0, 1)],
        &mut out,
    );
    out[6 + 42 + 3] = 2;
    assert!(Message::decode(&out).is_err());
}

proptest! {
    #[test]
    fn decoder_never_panics(data in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = decode_all(&data);
        let mut d = data.clone();
        if d.len() >= 6 {
            d[0] = 3;
            let n = (d.len() as u32).to_be_bytes();
            d[1..5].copy_from_slice(&n);
            let _ = Message::decode(&d);
        }
    }

    #[test]
    fn announce_reads_back(len in 0u8..=32, a in any::<u32>(), id in proptest::option::of(any::<u32>())) {
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len)) };
        let p = Prefix::V4(base::Prefix4::new(a & mask, len).unwrap());
        let attrs = [0x40u8, 1, 1, 0, 0x40, 3, 4, 192, 0, 2, 1];
        let mut b = Vec::new();
        prop_assert!(bmp::route::announce(&p, Safi::Unicast, id, &attrs, &mut b));
        let ctx = ParseCtx::modern().with_add_path(AfiSafi::IPV4_UNICAST, id.is_some());
        let u = UpdateView::parse(&b[HEADER_LEN..], ctx).unwrap();
        let n: Vec<_> = u.nlri().map(|n| n.unwrap()).collect();
        prop_assert_eq!(n.len(), 1);
        prop_assert_eq!(n[0].path_id, id);
        prop_assert_eq!(n[0].prefix, p);
    }
}

//! The session against a hand-driven peer on a local socket: RFC 7606
//! treat-as-withdraw and attribute discard reach the RIB as such, an
//! UPDATE that cannot be parsed resets the session with the exact
//! NOTIFICATION of RFC 4271 §6.3, an empty UPDATE is the IPv4 End-of-RIB,
//! ROUTE-REFRESH reaches the RIB, and a big `Send` backlog does not hold
//! back keepalives.

mod session_common;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use base::{AfiSafi, Prefix};
use bgp_fsm::ConnectionMode;
use bgp_speaker::msg::{RibInput, SessionCmd};
use bgp_speaker::rib::RibMsg;
use bgp_speaker::sess::{spawn_session, Registry, SessionHandle};
use session_common::*;
use tokio::net::TcpListener;
use tokio::sync::mpsc::Receiver;

/// Our session (127.78.n.1) connected to a raw peer (127.78.n.2), both
/// past the OPEN exchange and Established ([`established_raw`]).
async fn established(n: u8) -> (SessionHandle, RawPeer, Receiver<RibMsg>) {
    established_with(n, 90, 1024).await
}

/// [`established`] with our hold time and the RIB channel's capacity.
async fn established_with(
    n: u8,
    hold: u16,
    rib_cap: usize,
) -> (SessionHandle, RawPeer, Receiver<RibMsg>) {
    established_opts(n, hold, rib_cap, false).await
}

/// [`established_with`], both sides with enhanced route refresh (RFC
/// 7313) when `enhanced`.
async fn established_opts(
    n: u8,
    hold: u16,
    rib_cap: usize,
    enhanced: bool,
) -> (SessionHandle, RawPeer, Receiver<RibMsg>) {
    let (rib, mut rx) = rib_channel_cap(rib_cap);
    let extra: &[bgp_wire::Capability] = if enhanced {
        &[bgp_wire::Capability::EnhancedRouteRefresh]
    } else {
        &[]
    };
    let tune = |p: &mut bgp_speaker::sess::SessionParams| {
        p.fsm.hold_time = hold;
        p.fsm.enhanced_route_refresh = enhanced;
    };
    let (h, peer) = established_raw(78, n, rib, &mut rx, tune, extra).await;
    (h, peer, rx)
}

fn pfx(s: &str) -> Prefix {
    s.parse().expect("prefix")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rfc7606_treat_as_withdraw_and_attribute_discard() {
    let (h, mut peer, mut rx) = established(1).await;

    // A valid announcement first.
    peer.send(&update(&[], &good_attrs(), &[16, 10, 4])).await;
    let u = next_updates(&mut rx).await;
    assert_eq!(u.len(), 1);
    assert_eq!(u[0].announce.len(), 1);
    assert_eq!(u[0].announce[0].prefix, pfx("10.4.0.0/16"));
    assert!(u[0].attrs.is_some());

    // ORIGIN 7 is undefined: RFC 7606 §7.1 treat-as-withdraw. The
    // announced prefix and the withdrawn one both become withdrawals.
    let mut bad = good_attrs();
    bad[3] = 7;
    peer.send(&update(&[16, 10, 4], &bad, &[16, 10, 5])).await;
    let u = next_updates(&mut rx).await;
    assert_eq!(u.len(), 1);
    assert!(u[0].announce.is_empty(), "{u:?}");
    assert!(u[0].attrs.is_none());
    let w: Vec<Prefix> = u[0].withdraw.iter().map(|n| n.prefix).collect();
    assert_eq!(w, vec![pfx("10.4.0.0/16"), pfx("10.5.0.0/16")]);

    // ATOMIC_AGGREGATE with a 1-octet value: RFC 7606 §7.6 attribute
    // discard. The route stays, without the attribute.
    let mut a = good_attrs();
    a.extend_from_slice(&[0x40, 6, 1, 0]);
    peer.send(&update(&[], &a, &[16, 10, 6])).await;
    let u = next_updates(&mut rx).await;
    assert_eq!(u[0].announce.len(), 1);
    assert_eq!(u[0].announce[0].prefix, pfx("10.6.0.0/16"));
    let attrs = u[0].attrs.as_ref().expect("attributes kept");
    assert!(attrs.get(6).is_none(), "ATOMIC_AGGREGATE must be discarded");
    assert!(attrs.get(1).is_some() && attrs.get(2).is_some());

    // An empty UPDATE is the IPv4 unicast End-of-RIB (RFC 4724 §2).
    peer.send(&update(&[], &[], &[])).await;
    let u = next_updates(&mut rx).await;
    assert_eq!(u[0].end_of_rib, Some(AfiSafi::IPV4_UNICAST));

    // ROUTE-REFRESH for IPv4 unicast (RFC 2918).
    peer.send(&message(5, &[0, 1, 0, 1])).await;
    let (fam, sub) = expect_input(&mut rx, 5, "RouteRefresh", |i| match i {
        RibInput::RouteRefresh {
            family, subtype, ..
        } => Some((*family, *subtype)),
        _ => None,
    })
    .await;
    assert_eq!((fam, sub), (AfiSafi::IPV4_UNICAST, 0));

    // Still up: none of this reset the session.
    assert_eq!(h.status.notifications_out.load(Ordering::Relaxed), 0);
    assert_eq!(h.status.updates_in.load(Ordering::Relaxed), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unparsable_update_resets_with_exact_notification() {
    let (h, mut peer, mut rx) = established(2).await;
    unparsable_update_resets_3_1(&h, &mut peer, &mut rx).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalives_are_not_held_back_by_a_send_backlog() {
    let (h, mut peer, mut rx) = established(3).await;
    // 8 MB of UPDATEs queued at once, then a ROUTE-REFRESH: urgent
    // messages (OPEN, KEEPALIVE, NOTIFICATION, ROUTE-REFRESH) share one
    // queue that the writer serves between 64 KB chunks of the backlog, so
    // the ROUTE-REFRESH (unlike a KEEPALIVE, sent on demand, not on a
    // timer) shows that a keepalive would not wait behind the backlog.
    let one = update(&[], &good_attrs(), &[24, 10, 9, 9]);
    let mut big = Vec::with_capacity(8 << 20);
    while big.len() < (8 << 20) {
        big.extend_from_slice(&one);
    }
    let total = big.len() as u64;
    let refreshes = h.status.refreshes_out.load(Ordering::Relaxed);
    h.status
        .out_queued_bytes
        .fetch_add(total, Ordering::Relaxed);
    h.cmd.send(SessionCmd::Send(big)).expect("alive");
    h.cmd
        .send(SessionCmd::SendRouteRefresh {
            family: AfiSafi::IPV4_UNICAST,
        })
        .expect("alive");
    // When the session task puts the ROUTE-REFRESH in the writer's urgent
    // queue (it counts it then) is up to the scheduler: on a loaded
    // machine the writer wrote 5 MB of the backlog first (seen at load
    // 4). So wait, without reading, until it is queued, and note how much
    // of the backlog was written by then; from there the writer may finish
    // the chunk it is in and no more.
    let end = Instant::now() + Duration::from_secs(20);
    while h.status.refreshes_out.load(Ordering::Relaxed) == refreshes {
        assert!(Instant::now() < end, "the ROUTE-REFRESH never queued");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let written = total.saturating_sub(h.status.out_queued_bytes.load(Ordering::Relaxed));
    // The ROUTE-REFRESH must arrive before the whole backlog: read until
    // it shows up and count the UPDATEs in front of it.
    let mut updates_before = 0u64;
    loop {
        let (ty, _) = peer.read(10).await.expect("message");
        match ty {
            2 => updates_before += 1,
            5 => break,
            _ => {}
        }
    }
    let all = total / one.len() as u64;
    // What was written when it was queued (a chunk counts once written),
    // plus the chunk in flight then and at most one more, each 64 KB and
    // the end of one UPDATE (sess/io.rs `CHUNK`).
    let chunk = (64 * 1024 + one.len()) as u64;
    let allowed = (written + 2 * chunk) / one.len() as u64;
    assert!(
        updates_before <= allowed && updates_before < all,
        "ROUTE-REFRESH waited behind {updates_before} of {all} UPDATEs; \
         {written} bytes were written when it was queued (allowed {allowed})"
    );
    // Drain the rest; the queued byte count returns to zero.
    let mut seen = updates_before;
    while seen < all {
        match peer.read(10).await {
            Some((2, _)) => seen += 1,
            Some(_) => {}
            None => panic!("backlog cut short at {seen} of {all}"),
        }
    }
    wait_for(5, "out_queued_bytes to drain", || {
        match h.status.out_queued_bytes.load(Ordering::Relaxed) {
            0 => Ok(()),
            n => Err(format!("{n} bytes still queued")),
        }
    });
    assert_eq!(h.status.updates_out.load(Ordering::Relaxed), all);
    assert!(rx.try_recv().is_err() || h.status.state() == 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_rib_neither_delays_keepalives_nor_expires_the_hold_timer() {
    // Hold time 3 s (keepalive every second); the RIB takes one message
    // and is then not read for 5 s while the peer has sent 2000 UPDATEs.
    let (h, mut peer, mut rx) = established_with(4, 3, 1).await;
    const N: u32 = 2000;
    let mut all = Vec::new();
    for i in 0..N {
        all.extend_from_slice(&update(
            &[],
            &good_attrs(),
            &[24, 10, (i >> 8) as u8, i as u8],
        ));
    }
    peer.send(&all).await;

    let t0 = Instant::now();
    let mut last_ka = Instant::now();
    let mut keepalives = 0;
    peer.send(&message(4, &[])).await;
    while t0.elapsed() < Duration::from_secs(5) {
        if last_ka.elapsed() >= Duration::from_millis(900) {
            peer.send(&message(4, &[])).await;
            last_ka = Instant::now();
        }
        match peer.read(1).await {
            Some((4, _)) => keepalives += 1,
            Some((ty, body)) => panic!("unexpected message {ty}: {body:?}"),
            None => {}
        }
    }
    assert!(keepalives >= 4, "only {keepalives} KEEPALIVEs in 5 s");
    assert_eq!(h.status.state(), bgp_speaker::msg::state::ESTABLISHED);
    assert_eq!(h.status.notifications_out.load(Ordering::Relaxed), 0);

    // Now drain: every UPDATE arrives, in order.
    let mut got = Vec::new();
    while got.len() < N as usize {
        for u in next_updates(&mut rx).await {
            got.extend(u.announce.iter().map(|n| n.prefix));
        }
    }
    let want: Vec<Prefix> = (0..N)
        .map(|i| pfx(&format!("10.{}.{}.0/24", i >> 8, i & 0xff)))
        .collect();
    assert_eq!(got, want);
}

/// Both connections of a collision (§6.8): `c1` ours (outgoing, OPEN
/// already read from it), `c2` the peer's (incoming, nothing read yet),
/// and the OPEN the peer sends with Identifier `peer_id`.
async fn collision(
    n: u8,
    peer_id: Ipv4Addr,
) -> (
    RawPeer,
    RawPeer,
    Vec<u8>,
    SocketAddr,
    Receiver<RibMsg>,
    SessionHandle,
) {
    let us = IpAddr::from([127, 78, n, 1]);
    let peer_ip = IpAddr::from([127, 78, n, 2]);
    let l = TcpListener::bind(SocketAddr::new(peer_ip, 0))
        .await
        .expect("bind raw peer");
    let reg = Registry::default();
    let ours = SocketAddr::new(us, 17900);
    bgp_speaker::sess::listen(vec![ours], reg.clone())
        .await
        .expect("bind our listener");
    let (rib, rx) = rib_channel();
    let mut p = params(
        l.local_addr().expect("addr"),
        us,
        RAW_PEER_AS,
        ConnectionMode::Both,
    );
    p.fsm.families = vec![AfiSafi::IPV4_UNICAST];
    // Kept alive by the caller: dropping the handle ends the session.
    let h = spawn_session(&tokio::runtime::Handle::current(), p, rib, &reg, None);
    let (s1, _) = tokio::time::timeout(Duration::from_secs(5), l.accept())
        .await
        .expect("outgoing connection in time")
        .expect("accept");
    let mut c1 = RawPeer::new(s1);
    let (ty, _) = c1.read(5).await.expect("OPEN on our connection");
    assert_eq!(ty, 1);

    // The peer's own connection, from its address.
    let sock = tokio::net::TcpSocket::new_v4().expect("socket");
    sock.bind(SocketAddr::new(peer_ip, 0)).expect("bind");
    let s2 = tokio::time::timeout(Duration::from_secs(5), sock.connect(ours))
        .await
        .expect("connect in time")
        .expect("connect");
    // Give the listener a moment to hand it to the session.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let o = bgp_wire::OpenMessage::new(
        base::Asn(RAW_PEER_AS),
        90,
        peer_id,
        vec![
            bgp_wire::Capability::Multiprotocol(AfiSafi::IPV4_UNICAST),
            bgp_wire::Capability::FourOctetAsn(base::Asn(RAW_PEER_AS)),
        ],
    );
    let mut open = Vec::new();
    o.encode(bgp_wire::ParseCtx::legacy(), &mut open)
        .expect("encode");
    (c1, RawPeer::new(s2), open, ours, rx, h)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collision_keeps_the_peers_connection_when_its_identifier_is_higher() {
    // We are 10.255.0.1, the peer 10.255.0.9: the connection it opened
    // survives; ours is closed with Cease 6/7.
    let (mut c1, mut c2, open, ours, mut rx, _h) = collision(5, Ipv4Addr::new(10, 255, 0, 9)).await;
    c1.send(&open).await;
    let (ty, body) = c1.read_non_keepalive(5).await.expect("NOTIFICATION");
    assert_eq!(
        (ty, body),
        (3, vec![6, 7]),
        "Cease / Connection Collision Resolution"
    );
    assert!(c1.read(5).await.is_none(), "our connection is closed");

    let (ty, _) = c2.read(5).await.expect("OPEN on the surviving connection");
    assert_eq!(ty, 1);
    c2.send(&open).await;
    c2.send(&message(4, &[])).await;
    let local = expect_input(&mut rx, 5, "Up", |i| match i {
        RibInput::Up { up, .. } => Some(up.local_addr),
        _ => None,
    })
    .await;
    assert_eq!(local, ours, "established on the incoming connection");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collision_keeps_our_connection_when_our_identifier_is_higher() {
    // The peer is 10.0.0.9 < 10.255.0.1: our outgoing connection
    // survives and the incoming one is closed.
    let (mut c1, mut c2, open, ours, mut rx, _h) = collision(6, Ipv4Addr::new(10, 0, 0, 9)).await;
    c1.send(&open).await;
    c1.send(&message(4, &[])).await;
    let local = expect_input(&mut rx, 5, "Up", |i| match i {
        RibInput::Up { up, .. } => Some(up.local_addr),
        _ => None,
    })
    .await;
    assert_ne!(local, ours, "established on our outgoing connection");
    // The incoming connection never got an OPEN and is closed.
    assert!(
        c2.read(5).await.is_none(),
        "the colliding connection is closed"
    );
    let (ty, _) = c1.read(3).await.expect("KEEPALIVE on the kept connection");
    assert_eq!(ty, 4);
}

/// Both speakers connected at once and each sent its OPEN on its own
/// connection only (the peer's OPEN is on `c2`; `c1`, ours, carries
/// nothing from the peer): the session must read the peer's Identifier
/// from `c2` while it waits in OpenSent. Before, each side waited for an
/// OPEN on its own connection while the other's sat unread in the
/// colliding one, and both hung until the OpenSent hold timer (4 min).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simultaneous_open_keeps_the_peers_connection_when_its_identifier_is_higher() {
    let (mut c1, mut c2, open, ours, mut rx, _h) = collision(7, Ipv4Addr::new(10, 255, 0, 9)).await;
    c2.send(&open).await;
    let (ty, body) = c1
        .read_non_keepalive(5)
        .await
        .expect("NOTIFICATION on our connection without an OPEN on it");
    assert_eq!(
        (ty, body),
        (3, vec![6, 7]),
        "Cease / Connection Collision Resolution"
    );
    let (ty, _) = c2.read(5).await.expect("our OPEN on the peer's connection");
    assert_eq!(ty, 1);
    let (ty, _) = c2
        .read(5)
        .await
        .expect("KEEPALIVE: the peer's OPEN was read");
    assert_eq!(ty, 4);
    c2.send(&message(4, &[])).await;
    let local = expect_input(&mut rx, 5, "Up", |i| match i {
        RibInput::Up { up, .. } => Some(up.local_addr),
        _ => None,
    })
    .await;
    assert_eq!(local, ours, "established on the incoming connection");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simultaneous_open_keeps_our_connection_when_our_identifier_is_higher() {
    let (mut c1, mut c2, open, ours, mut rx, _h) = collision(8, Ipv4Addr::new(10, 0, 0, 9)).await;
    c2.send(&open).await;
    // Ours wins: the peer's connection is closed at once, not left unread.
    let t = std::time::Instant::now();
    assert!(
        c2.read(8).await.is_none(),
        "no message on the losing connection"
    );
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "the colliding connection was closed ({:?}), not left to time out",
        t.elapsed()
    );
    // The peer, having lost its own, answers on ours.
    c1.send(&open).await;
    c1.send(&message(4, &[])).await;
    let local = expect_input(&mut rx, 5, "Up", |i| match i {
        RibInput::Up { up, .. } => Some(up.local_addr),
        _ => None,
    })
    .await;
    assert_ne!(local, ours, "established on our outgoing connection");
}

/// The NOTIFICATION the session answers `msg` with on an Established
/// session (127.78.`n`.x), checking that the connection closes after it.
async fn answer_to(n: u8, enhanced: bool, msg: &[u8]) -> Vec<u8> {
    let (_h, mut peer, _rx) = established_opts(n, 90, 1024, enhanced).await;
    peer.send(msg).await;
    let (ty, body) = peer
        .read_non_keepalive(5)
        .await
        .unwrap_or_else(|| panic!("no NOTIFICATION for {msg:?}"));
    assert_eq!(ty, 3, "NOTIFICATION for {msg:?}");
    assert!(peer.read(5).await.is_none(), "connection closed after it");
    body
}

/// RFC 4271 §6.1: a length that does not suit the message type is a
/// Message Header Error / Bad Message Length (1/2) with the length (2
/// octets) as data: KEEPALIVE other than 19, UPDATE under 23, OPEN under
/// 29, NOTIFICATION under 21; ROUTE-REFRESH other than 23 (RFC 2918 §3)
/// from a peer without enhanced route refresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_length_for_the_type_is_bad_message_length() {
    let cases: [(u8, &[u8]); 7] = [
        (4, &[0]),
        (4, &[0; 4]),
        (2, &[0, 0, 0]),
        (1, &[4, 0xfd, 0xea, 0, 90, 10, 255, 0, 2]),
        (3, &[6]),
        (5, &[0, 1, 0]),
        (5, &[0, 1, 0, 1, 0]),
    ];
    for (i, (ty, body)) in cases.into_iter().enumerate() {
        let len = (19 + body.len()) as u16;
        let got = answer_to(20 + i as u8, false, &message(ty, body)).await;
        let mut want = vec![1, 2];
        want.extend_from_slice(&len.to_be_bytes());
        assert_eq!(got, want, "type {ty}, length {len}");
    }
}

/// RFC 7313 §5: with enhanced route refresh negotiated, a ROUTE-REFRESH
/// of a length other than 23 is ROUTE-REFRESH Message Error / Invalid
/// Message Length (7/1), the whole message as data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_route_refresh_length_with_enhanced_refresh_is_7_1() {
    for (i, body) in [&[0, 1, 1, 1, 0][..], &[0, 1, 2]].into_iter().enumerate() {
        let msg = message(5, body);
        let got = answer_to(30 + i as u8, true, &msg).await;
        let mut want = vec![7, 1];
        want.extend_from_slice(&msg);
        assert_eq!(got, want);
    }
}

/// RFC 7607 §2: an OPEN claiming AS 0 gets OPEN Message Error / Bad Peer
/// AS (2/2), even where any peer AS would be accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_from_as_zero_is_bad_peer_as() {
    let (rib, _rx) = rib_channel();
    let (_h, mut peer) = connect_raw(78, 40, rib, |p| p.fsm.peer_asn = None).await;
    let (ty, _) = peer.read(5).await.expect("OPEN from the speaker");
    assert_eq!(ty, 1);
    let open = bgp_wire::OpenMessage::new(base::Asn(0), 90, Ipv4Addr::new(10, 255, 0, 2), vec![]);
    let mut b = Vec::new();
    open.encode(bgp_wire::ParseCtx::legacy(), &mut b)
        .expect("encode OPEN");
    peer.send(&b).await;
    let (ty, body) = peer.read_non_keepalive(5).await.expect("NOTIFICATION");
    assert_eq!((ty, body), (3, vec![2, 2]));
}

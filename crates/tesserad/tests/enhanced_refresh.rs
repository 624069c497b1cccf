//! Enhanced route refresh (RFC 7313) end to end, against the real
//! `tesserad` binary on loopback, driven by a hand-written BGP peer: no
//! Debian daemon lets a test choose which routes it re-advertises between
//! its BoRR and EoRR, and that is the behaviour under test.
//!
//! * Receiving side (§4): after the peer's BoRR, routes it does not
//!   re-advertise before its EoRR are purged; re-advertised ones stay.
//! * Sending side (§4): our answer to a ROUTE-REFRESH is BoRR, the
//!   re-advertised routes, EoRR, in that order.
//! * Without the capability (§5) BoRR/EoRR are ignored.
//!
//! Needs nothing but loopback (127.0.77.0/24 and 127.0.78.0/24, all local
//! on Linux). Bounded: every read has a timeout, tesserad is killed on drop.

mod loopback;

use loopback::{announce, refresh, wait_for, Daemon, Peer, ROUTE_REFRESH, UPDATE};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

/// IPv4 End-of-RIB is an UPDATE with empty withdrawn and attribute fields.
fn is_eor(ty: u8, body: &[u8]) -> bool {
    ty == UPDATE && body == [0, 0, 0, 0]
}

fn contains_192_0_2(body: &[u8]) -> bool {
    body.windows(4).any(|w| w == [24, 192, 0, 2])
}

#[test]
fn enhanced_route_refresh_both_directions() {
    let (me, peer_ip) = (Ipv4Addr::new(127, 0, 77, 1), Ipv4Addr::new(127, 0, 77, 2));
    let port = 17_977;
    let d = Daemon::start("err", me, peer_ip, port, true);
    let mut p = Peer::connect(peer_ip, SocketAddr::new(me.into(), port), true);

    // Initial table: our static route, then End-of-RIB.
    let mut seen_static = false;
    loop {
        let (ty, body) = p
            .read_non_keepalive()
            .expect("initial UPDATEs and End-of-RIB");
        if is_eor(ty, &body) {
            break;
        }
        seen_static |= ty == UPDATE && contains_192_0_2(&body);
    }
    assert!(seen_static, "192.0.2.0/24 not in the initial table");

    // Receiving side.
    p.send(&announce(peer_ip, &[[198, 51, 100], [203, 0, 113]]));
    wait_for(10, "both routes at tesserad", || {
        Ok((d.has_route("198.51.100.0/24") && d.has_route("203.0.113.0/24")).then_some(()))
    });
    p.send(&refresh(1)); // BoRR
    p.send(&announce(peer_ip, &[[198, 51, 100]]));
    // Until the EoRR, the stale route must still be there (RFC 7313 §4:
    // stale routes are purged only at EoRR or after the timer).
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        d.has_route("203.0.113.0/24"),
        "a stale route was removed before End-of-RIB-Refresh"
    );
    p.send(&refresh(2)); // EoRR
    wait_for(10, "203.0.113.0/24 purged by EoRR", || {
        Ok((!d.has_route("203.0.113.0/24")).then_some(()))
    });
    assert!(
        d.has_route("198.51.100.0/24"),
        "the re-advertised route was purged too"
    );

    // Sending side: ROUTE-REFRESH in, BoRR / routes / EoRR out, in order.
    p.send(&refresh(0));
    let mut order = Vec::new();
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        let (ty, body) = p.read_non_keepalive().expect("answer to ROUTE-REFRESH");
        match (ty, body.as_slice()) {
            (ROUTE_REFRESH, [0, 1, 1, 1]) => order.push("BoRR"),
            (ROUTE_REFRESH, [0, 1, 2, 1]) => {
                order.push("EoRR");
                break;
            }
            (UPDATE, b) if contains_192_0_2(b) => order.push("192.0.2.0/24"),
            (UPDATE, _) => order.push("other UPDATE"),
            (t, b) => panic!("unexpected message type {t}: {b:?}"),
        }
    }
    assert_eq!(
        order.first().copied(),
        Some("BoRR"),
        "answer must start with BoRR: {order:?}"
    );
    assert_eq!(
        order.last().copied(),
        Some("EoRR"),
        "answer must end with EoRR: {order:?}"
    );
    assert!(
        order.contains(&"192.0.2.0/24"),
        "the static route was not re-advertised between BoRR and EoRR: {order:?}"
    );
    drop(p);
    drop(d);
}

#[test]
fn borr_and_eorr_are_ignored_without_the_capability() {
    let (me, peer_ip) = (Ipv4Addr::new(127, 0, 78, 1), Ipv4Addr::new(127, 0, 78, 2));
    let port = 17_978;
    let d = Daemon::start("noerr", me, peer_ip, port, true);
    // The peer does not advertise capability 70, so it is not negotiated.
    let mut p = Peer::connect(peer_ip, SocketAddr::new(me.into(), port), false);
    p.send(&announce(peer_ip, &[[198, 51, 100], [203, 0, 113]]));
    wait_for(10, "both routes at tesserad", || {
        Ok((d.has_route("198.51.100.0/24") && d.has_route("203.0.113.0/24")).then_some(()))
    });
    p.send(&refresh(1));
    p.send(&announce(peer_ip, &[[198, 51, 100]]));
    p.send(&refresh(2));
    // A marker: a third route sent after the EoRR; once it is in, the EoRR
    // has been processed.
    p.send(&announce(peer_ip, &[[100, 64, 1]]));
    wait_for(10, "the marker route", || {
        Ok(d.has_route("100.64.1.0/24").then_some(()))
    });
    assert!(
        d.has_route("203.0.113.0/24"),
        "BoRR/EoRR acted on without enhanced route refresh negotiated (RFC 7313 §5)"
    );
    // Plain refresh still answered, without BoRR/EoRR.
    p.send(&refresh(0));
    let (ty, body) = p.read_non_keepalive().expect("answer to ROUTE-REFRESH");
    assert_eq!(ty, UPDATE, "expected an UPDATE, got type {ty}: {body:?}");
    drop(p);
    drop(d);
}

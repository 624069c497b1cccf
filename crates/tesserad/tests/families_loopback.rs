//! Address families at the edge of a running tesserad, driven by a
//! hand-written BGP peer on loopback: what no real daemon sends (a family
//! that was not negotiated, an IPv6 next hop for IPv4 NLRI without RFC
//! 8950), and what only the forwarding feed shows (multicast routes stay
//! out of it). The interop side (BIRD, FRR) is in `families.rs`.
//!
//! * RFC 4760 §7: MP_REACH_NLRI of a family that was not negotiated (IPv4
//!   multicast here; SAFI 128, which we do not support) is ignored; the
//!   rest of the UPDATE applies and the session stays up.
//! * RFC 4760 §6: a negotiated multicast route of the same prefix as a
//!   unicast one does not replace it, and neither reaches the unicast
//!   table nor the best-route feed (what the FIB follows).
//! * RFC 8950 §3 / RFC 7606 §7.11: IPv4 NLRI with an IPv6 next hop reset
//!   the session (3/9) unless we advertised Extended Next Hop Encoding.
//!
//! Needs nothing but loopback (127.0.83-86.0/24, all local on Linux).
//! Bounded: every read has a timeout, tesserad is killed on drop.

mod loopback;

use loopback::{announce, message, open_with, wait_for, Daemon, Peer, UPDATE};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// Capability TLV: Multiprotocol IPv4 multicast.
const CAP_MP_V4_MULTICAST: [u8; 6] = [1, 4, 0, 1, 0, 2];

/// An UPDATE from AS 65001: ORIGIN, AS_PATH, then `nh` as NEXT_HOP when
/// `classic` is non-empty, MP_REACH_NLRI of AFI 1 / `safi` with next hop
/// `mp_nh` for the /24s `mp`, and the classic /24s.
fn update(nh: Ipv4Addr, classic: &[[u8; 3]], safi: u8, mp_nh: &[u8], mp: &[[u8; 3]]) -> Vec<u8> {
    let mut attrs = vec![0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfd, 0xe9];
    if !classic.is_empty() {
        attrs.extend_from_slice(&[0x40, 3, 4]);
        attrs.extend_from_slice(&nh.octets());
    }
    let mut v = vec![0, 1, safi, mp_nh.len() as u8];
    v.extend_from_slice(mp_nh);
    v.push(0);
    for p in mp {
        v.push(24);
        v.extend_from_slice(p);
    }
    attrs.extend_from_slice(&[0x80, 14, v.len() as u8]);
    attrs.extend_from_slice(&v);
    let mut body = vec![0, 0];
    body.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    body.extend_from_slice(&attrs);
    for p in classic {
        body.push(24);
        body.extend_from_slice(p);
    }
    message(UPDATE, &body)
}

/// `show route PREFIX all` of tesserad, when it has the prefix.
fn route(d: &Daemon, prefix: &str) -> Option<String> {
    d.has_route(prefix).then(|| {
        d.request(&format!(
            r#"{{"command":"show_route","prefix":"{prefix}","all":true}}"#
        ))
        .unwrap_or_default()
    })
}

/// Sends a marker route and waits for it: everything sent before has
/// been processed, and the session is still up.
fn sync(d: &Daemon, p: &mut Peer, nh: Ipv4Addr, marker: [u8; 3]) {
    p.send(&announce(nh, &[marker]));
    let m = format!("{}.{}.{}.0/24", marker[0], marker[1], marker[2]);
    wait_for(10, &format!("marker route {m} (session still up)"), || {
        Ok(d.has_route(&m).then_some(()))
    });
}

#[test]
fn families_not_negotiated_are_ignored() {
    let (me, peer) = (Ipv4Addr::new(127, 0, 83, 1), Ipv4Addr::new(127, 0, 83, 2));
    let port = 17_983;
    let d = Daemon::start_conf(
        "fam-nonneg",
        me,
        peer,
        port,
        "families = [\"ipv4-unicast\"]\n",
    );
    // The peer offers IPv4 multicast; we do not: not negotiated.
    let open = open_with(65001, Ipv4Addr::new(10, 0, 0, 2), &CAP_MP_V4_MULTICAST);
    let mut p = Peer::connect_open(peer, SocketAddr::new(me.into(), port), &open);
    // 198.51.100.0/24 in the classic field, 203.0.113.0/24 as multicast
    // (next hop 127.0.83.9) in the same UPDATE.
    let mc_nh = [127, 0, 83, 9];
    p.send(&update(
        peer,
        &[[198, 51, 100]],
        2,
        &mc_nh,
        &[[203, 0, 113]],
    ));
    // SAFI 128 (unsupported here): ignored too, not a session reset.
    p.send(&update(peer, &[], 128, &mc_nh, &[[203, 0, 114]]));
    sync(&d, &mut p, peer, [100, 64, 1]);
    let r = route(&d, "198.51.100.0/24").expect("the unicast route of the UPDATE");
    assert!(
        r.contains("\"next_hop\":\"127.0.83.2\""),
        "the unicast route must keep NEXT_HOP: {r}"
    );
    for p in ["203.0.113.0/24", "203.0.114.0/24"] {
        assert!(
            route(&d, p).is_none(),
            "{p} of a family not negotiated was installed (RFC 4760 §7: ignore)"
        );
    }
}

#[test]
fn multicast_routes_stay_out_of_unicast_and_the_feed() {
    let (me, peer) = (Ipv4Addr::new(127, 0, 84, 1), Ipv4Addr::new(127, 0, 84, 2));
    let port = 17_984;
    let sock = std::env::temp_dir().join(format!("tessera-fam-feed-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&sock);
    let conf = format!(
        "families = [\"ipv4-unicast\", \"ipv4-multicast\"]\n\
         \n[dataplane]\nfeed_socket = \"{}\"\n\n[[dataplane.interface]]\nname = \"lo\"\n\
         addresses = [\"127.0.84.1/24\"]\n",
        sock.display()
    );
    let d = Daemon::start_conf("fam-mcast", me, peer, port, &conf);
    let mut feed = wait_for(
        10,
        "the feed socket",
        || Ok(UnixStream::connect(&sock).ok()),
    );
    feed.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let open = open_with(65001, Ipv4Addr::new(10, 0, 0, 2), &CAP_MP_V4_MULTICAST);
    let mut p = Peer::connect_open(peer, SocketAddr::new(me.into(), port), &open);
    // Unicast 198.51.100.0/24 via 127.0.84.2; then multicast routes for
    // the same prefix and for 203.0.113.0/24 via 127.0.84.9.
    p.send(&announce(peer, &[[198, 51, 100]]));
    p.send(&update(
        peer,
        &[],
        2,
        &[127, 0, 84, 9],
        &[[198, 51, 100], [203, 0, 113]],
    ));
    sync(&d, &mut p, peer, [100, 64, 1]);
    let r = route(&d, "198.51.100.0/24").expect("the unicast route");
    assert!(
        r.contains("\"next_hop\":\"127.0.84.2\"") && !r.contains("127.0.84.9"),
        "the multicast route replaced or joined the unicast one: {r}"
    );
    assert!(
        route(&d, "203.0.113.0/24").is_none(),
        "a multicast-only prefix is in the unicast table"
    );
    // The feed: everything up to the marker, never a multicast route.
    let marker: base::Prefix = "100.64.1.0/24".parse().expect("prefix");
    let mut seen = Vec::new();
    while !seen.iter().any(|(p, _)| *p == marker) {
        let b = fib::feed::read_batch(&mut feed).expect("a feed batch before the marker");
        seen.extend(b.iter().map(|c| (c.prefix, c.next_hop)));
    }
    let mc_nh = IpAddr::V4(Ipv4Addr::new(127, 0, 84, 9));
    for (p, nh) in &seen {
        assert!(
            p.to_string() != "203.0.113.0/24" && *nh != Some(mc_nh),
            "a multicast route reached the forwarding feed: {p} via {nh:?} (all: {seen:?})"
        );
    }
    drop(p);
    drop(d);
    let _ = std::fs::remove_file(&sock);
}

#[test]
fn ipv6_next_hop_for_ipv4_needs_extended_next_hop() {
    let v6_nh: [u8; 16] = "2001:db8::1"
        .parse::<std::net::Ipv6Addr>()
        .expect("address")
        .octets();
    // RFC 8950 capability: IPv4 unicast NLRI, IPv6 next hop.
    let cap_enh = [5, 6, 0, 1, 0, 1, 0, 2];

    // Not advertised by us (the default): session reset, 3/9.
    let (me, peer) = (Ipv4Addr::new(127, 0, 85, 1), Ipv4Addr::new(127, 0, 85, 2));
    let port = 17_985;
    let d = Daemon::start_conf(
        "fam-enh-off",
        me,
        peer,
        port,
        "families = [\"ipv4-unicast\"]\n",
    );
    let open = open_with(65001, Ipv4Addr::new(10, 0, 0, 2), &cap_enh);
    let mut p = Peer::connect_open(peer, SocketAddr::new(me.into(), port), &open);
    p.send(&update(peer, &[], 1, &v6_nh, &[[203, 0, 113]]));
    let (ty, body) = p
        .read_non_keepalive()
        .expect("a NOTIFICATION for the IPv6 next hop");
    // The initial table (our static route, End-of-RIB) may come first.
    let (ty, body) = if ty == UPDATE {
        let mut m = (ty, body);
        while m.0 == UPDATE {
            m = p.read_non_keepalive().expect("a NOTIFICATION");
        }
        m
    } else {
        (ty, body)
    };
    assert_eq!(
        (ty, body.get(..2)),
        (3, Some(&[3u8, 9][..])),
        "RFC 7606 §7.11: UPDATE Message Error / Optional Attribute Error expected"
    );
    assert!(route(&d, "203.0.113.0/24").is_none());
    drop(p);
    drop(d);

    // Advertised (extended_nexthop = true): accepted with its next hop.
    let (me, peer) = (Ipv4Addr::new(127, 0, 86, 1), Ipv4Addr::new(127, 0, 86, 2));
    let port = 17_986;
    let conf = "families = [\"ipv4-unicast\"]\nextended_nexthop = true\n";
    let d = Daemon::start_conf("fam-enh-on", me, peer, port, conf);
    let mut p = Peer::connect_open(peer, SocketAddr::new(me.into(), port), &open);
    p.send(&update(peer, &[], 1, &v6_nh, &[[203, 0, 113]]));
    sync(&d, &mut p, peer, [100, 64, 1]);
    let r = route(&d, "203.0.113.0/24").expect("the route with an IPv6 next hop");
    assert!(r.contains("\"next_hop\":\"2001:db8::1\""), "{r}");
}

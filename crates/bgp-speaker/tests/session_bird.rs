//! Session tasks against a real BIRD 2 on loopback addresses: both
//! connection directions, routes with communities, hold timer expiry,
//! administrative stop with a shutdown communication, restart.
//!
//! Each test has its own pair of addresses (127.77.N.1 is us, 127.77.N.2
//! is BIRD, port 179) and its own BIRD in a temp dir, killed on drop.

mod session_common;

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::time::Duration;

use base::{AfiSafi, Asn, Prefix};
use bgp_fsm::{ConnectionMode, DownReason};
use bgp_speaker::msg::{state, DecodedUpdate, RibInput, SessionCmd, SessionUp};
use bgp_speaker::sess::{listen, spawn_session, Registry};
use bgp_wire::{AttrValue, Capability, NotificationMessage};
use session_common::*;

fn addrs(n: u8) -> (IpAddr, IpAddr) {
    (IpAddr::from([127, 77, n, 1]), IpAddr::from([127, 77, n, 2]))
}

fn up_of(i: &RibInput) -> Option<SessionUp> {
    match i {
        RibInput::Up { up, .. } => Some((**up).clone()),
        _ => None,
    }
}

fn down_of(i: &RibInput) -> Option<DownReason> {
    match i {
        RibInput::Down { reason, .. } => Some(*reason),
        _ => None,
    }
}

fn pfx(s: &str) -> Prefix {
    s.parse().expect("prefix")
}

/// Collects UPDATEs until both End-of-RIB markers arrived.
async fn routes_until_eor(
    rx: &mut tokio::sync::mpsc::Receiver<bgp_speaker::rib::RibMsg>,
) -> Vec<DecodedUpdate> {
    let mut got = Vec::new();
    let mut eor4 = false;
    let mut eor6 = false;
    while !(eor4 && eor6) {
        let batch = expect_input(rx, 15, "UPDATEs up to both End-of-RIBs", |i| match i {
            RibInput::Updates { updates, .. } => Some(updates.clone()),
            _ => None,
        })
        .await;
        for u in batch {
            match u.end_of_rib {
                Some(AfiSafi::IPV4_UNICAST) => eor4 = true,
                Some(AfiSafi::IPV6_UNICAST) => eor6 = true,
                _ => {}
            }
            got.push(u);
        }
    }
    got
}

fn find<'a>(ups: &'a [DecodedUpdate], p: &str) -> &'a DecodedUpdate {
    let want = pfx(p);
    ups.iter()
        .find(|u| u.announce.iter().any(|n| n.prefix == want))
        .unwrap_or_else(|| panic!("{p} was not announced; got {ups:#?}"))
}

fn communities(u: &DecodedUpdate) -> Vec<u32> {
    match u.attrs.as_ref().and_then(|a| a.get(8)).map(|a| &a.value) {
        Some(AttrValue::Communities(c)) => c.iter().map(|c| c.0).collect(),
        _ => Vec::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn we_active_established_with_routes_and_communities() {
    let dir = TempDir::new("bird-active");
    let (us, bird_ip) = addrs(1);
    let bird = Bird::start(dir.path(), &bird_conf(dir.path(), us, bird_ip, true, 9, ""));
    let (rib, mut rx) = rib_channel();
    let reg = Registry::default();
    let mut p = params(
        SocketAddr::new(bird_ip, 179),
        us,
        65002,
        ConnectionMode::Both,
    );
    // Graceful restart (helper only): BIRD then sends End-of-RIB.
    p.fsm.extra_capabilities.push(Capability::GracefulRestart {
        flags: 0,
        restart_time: 120,
        families: Vec::new(),
    });
    let h = spawn_session(&tokio::runtime::Handle::current(), p, rib, &reg, None);

    let up = expect_input(&mut rx, 20, "Up", up_of).await;
    assert_eq!(up.negotiated.peer_asn, Asn(65002));
    assert!(up.negotiated.has_family(AfiSafi::IPV6_UNICAST));
    assert_eq!(up.remote_addr, SocketAddr::new(bird_ip, 179));
    assert_eq!(
        up.local_addr.ip(),
        us,
        "the session binds the configured local address"
    );
    assert_eq!(h.status.state.load(Ordering::Relaxed), state::ESTABLISHED);

    let ups = routes_until_eor(&mut rx).await;
    let u1 = find(&ups, "10.77.1.0/24");
    assert!(communities(u1).contains(&((65002 << 16) | 100)), "{u1:?}");
    match u1.attrs.as_ref().and_then(|a| a.get(32)).map(|a| &a.value) {
        Some(AttrValue::LargeCommunities(l)) => {
            assert_eq!(l.len(), 1);
            assert_eq!(
                (l[0].global_admin, l[0].local_data1, l[0].local_data2),
                (65002, 1, 2)
            );
        }
        other => panic!("no large community on 10.77.1.0/24: {other:?}"),
    }
    let u2 = find(&ups, "10.77.2.0/24");
    assert!(communities(u2).is_empty());
    let u6 = find(&ups, "2001:db8:77::/48");
    assert!(communities(u6).contains(&((65002 << 16) | 600)));
    let nh = u6.attrs.as_ref().and_then(|a| a.next_hop());
    assert_eq!(format!("{nh:?}"), "Some(V6(2001:db8::2))");
    assert!(h.status.updates_in.load(Ordering::Relaxed) >= 3);
    assert!(h.status.keepalives_out.load(Ordering::Relaxed) >= 1);

    // BIRD's side agrees.
    let out = bird
        .birdc(&["show", "protocols", "all", "peer"])
        .unwrap_or_default();
    assert!(out.contains("Established"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn we_passive_established() {
    let dir = TempDir::new("bird-passive");
    let (us, bird_ip) = addrs(2);
    let reg = Registry::default();
    listen(vec![SocketAddr::new(us, 179)], reg.clone())
        .await
        .expect("bind our listener on 127.77.2.1:179");
    let (rib, mut rx) = rib_channel();
    let p = params(
        SocketAddr::new(bird_ip, 179),
        us,
        65002,
        ConnectionMode::Passive,
    );
    let h = spawn_session(&tokio::runtime::Handle::current(), p, rib, &reg, None);
    let _bird = Bird::start(
        dir.path(),
        &bird_conf(dir.path(), us, bird_ip, false, 9, ""),
    );

    let up = expect_input(&mut rx, 20, "Up", up_of).await;
    assert_eq!(
        up.local_addr,
        SocketAddr::new(us, 179),
        "BIRD connected to our listener"
    );
    assert_eq!(up.remote_addr.ip(), bird_ip);
    let ups = expect_input(&mut rx, 15, "UPDATEs", |i| match i {
        RibInput::Updates { updates, .. } => Some(updates.clone()),
        _ => None,
    })
    .await;
    assert!(ups.iter().any(|u| !u.announce.is_empty()));
    assert_eq!(h.status.established_count.load(Ordering::Relaxed), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hold_timer_expires_when_bird_is_stopped() {
    let dir = TempDir::new("bird-hold");
    let (us, bird_ip) = addrs(3);
    let bird = Bird::start(dir.path(), &bird_conf(dir.path(), us, bird_ip, true, 3, ""));
    let (rib, mut rx) = rib_channel();
    let reg = Registry::default();
    let mut p = params(
        SocketAddr::new(bird_ip, 179),
        us,
        65002,
        ConnectionMode::Both,
    );
    p.fsm.hold_time = 3;
    let h = spawn_session(&tokio::runtime::Handle::current(), p, rib, &reg, None);
    let up = expect_input(&mut rx, 20, "Up", up_of).await;
    assert_eq!(up.negotiated.hold_time, 3);

    bird.signal(libc::SIGSTOP);
    let t0 = std::time::Instant::now();
    let reason = expect_input(&mut rx, 10, "Down", down_of).await;
    let took = t0.elapsed();
    bird.signal(libc::SIGCONT);
    assert_eq!(reason, DownReason::HoldTimerExpired);
    // 3 s hold after the last KEEPALIVE (sent every second).
    assert!(
        took <= Duration::from_secs(5),
        "hold timer fired after {took:?}"
    );
    let err = h.status.last_error();
    assert!(err.contains("NOTIFICATION 4/0"), "last_error: {err}");
    assert!(h.status.notifications_out.load(Ordering::Relaxed) >= 1);
    assert_ne!(h.status.state.load(Ordering::Relaxed), state::ESTABLISHED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn admin_stop_sends_shutdown_text_and_start_reconnects() {
    let dir = TempDir::new("bird-stop");
    let (us, bird_ip) = addrs(4);
    let bird = Bird::start(dir.path(), &bird_conf(dir.path(), us, bird_ip, true, 9, ""));
    let (rib, mut rx) = rib_channel();
    let reg = Registry::default();
    let p = params(
        SocketAddr::new(bird_ip, 179),
        us,
        65002,
        ConnectionMode::Both,
    );
    let h = spawn_session(&tokio::runtime::Handle::current(), p, rib, &reg, None);
    expect_input(&mut rx, 20, "Up", up_of).await;

    let text = "tessera test: maintenance window 42";
    h.cmd
        .send(SessionCmd::Stop {
            notification: NotificationMessage::shutdown(2, text),
            restart_after: None,
        })
        .expect("session alive");
    let reason = expect_input(&mut rx, 10, "Down", down_of).await;
    assert_eq!(reason, DownReason::ManualStop);
    let shown = wait_for(10, "BIRD to show our shutdown text", || {
        let out = bird.birdc(&["show", "protocols", "all", "peer"])?;
        if out.contains(text) {
            Ok(out)
        } else {
            Err(out)
        }
    });
    assert!(shown.contains("Administrative shutdown"), "{shown}");
    assert_eq!(h.status.state.load(Ordering::Relaxed), state::IDLE);

    // Administratively down: no reconnect on its own.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(h.status.state.load(Ordering::Relaxed), state::IDLE);

    h.cmd.send(SessionCmd::Start).expect("session alive");
    expect_input(&mut rx, 20, "Up after Start", up_of).await;
    assert_eq!(h.status.established_count.load(Ordering::Relaxed), 2);
}

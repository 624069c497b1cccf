//! Harness self-tests: every launcher and query helper in `common/`
//! exercised against a real BIRD 2 in a private namespace pair, routes
//! with communities of all three kinds in both directions, and a
//! withdrawal. These do not involve tesserad; they prove the harness so a
//! failing tesserad scenario points at tesserad.

use e2e as common;

use common::bird::Bird;
use common::peer::{wait_established, wait_gone, wait_present, wait_route, Expect, Peer, Session};
use common::Lab;

const BIRD_AS: u32 = 65000;
const X_AS: u32 = 65001;

/// BIRD in the center, `start` builds daemon X on leaf 1; then routes both
/// ways with attributes, and an extra prefix announced then withdrawn by X.
/// `x_v6_out`: whether X's IPv6 route is checked at BIRD (see
/// `openbgpd_against_bird`).
fn against_bird(
    test: &str,
    tools: &[&str],
    x_v6_out: bool,
    start: impl Fn(&Lab, &Session) -> Box<dyn Peer>,
) {
    if !common::ready(&[common::bird::TOOLS, tools, &["ip"]].concat()) {
        return;
    }
    let lab = Lab::star(test, 1);
    let leaf = lab.leaf(1).clone();
    let bs = Session::center(&lab, &leaf, BIRD_AS, X_AS);
    let xs = Session::leaf(&leaf, X_AS, BIRD_AS);
    let bird = Bird::start(&lab, "bird", &bs);
    let x = start(&lab, &xs);
    wait_established(&lab, &bird, 20);
    wait_established(&lab, x.as_ref(), 10);
    // X -> BIRD, both families.
    for r in xs.routes().into_iter().filter(|r| x_v6_out || !r.v6) {
        let nh = r.next_hop.clone();
        wait_route(
            &lab,
            &bird,
            &Expect {
                route: &r,
                as_path: vec![X_AS],
                next_hop: nh,
                med: true,
            },
            10,
        );
    }
    // BIRD -> X, both families.
    for r in bs.routes() {
        let nh = r.next_hop.clone();
        wait_route(
            &lab,
            x.as_ref(),
            &Expect {
                route: &r,
                as_path: vec![BIRD_AS],
                next_hop: nh,
                med: true,
            },
            10,
        );
    }
    // Withdrawal propagates (IPv4 and IPv6).
    let mut extra = vec!["203.0.113.0/24".to_string()];
    if x_v6_out {
        extra.push("2001:db8:ee00::/48".to_string());
    }
    x.set_extra(&extra).unwrap_or_else(|e| lab.fail(&e));
    for p in &extra {
        wait_present(&lab, &bird, p, 10);
    }
    x.set_extra(&[]).unwrap_or_else(|e| lab.fail(&e));
    for p in &extra {
        wait_gone(&lab, &bird, p, 10);
    }
    // X's counters and refresh helper work.
    let before = x.updates_received().unwrap_or_else(|e| lab.fail(&e));
    assert!(before > 0, "{} counted no UPDATE", x.kind());
    x.request_refresh().unwrap_or_else(|e| lab.fail(&e));
}

#[test]
fn bird_against_bird() {
    against_bird("bird", &[], true, |lab, s| {
        Box::new(Bird::start(lab, "x-bird", s))
    });
}

#[test]
fn frr_against_bird() {
    against_bird("frr", common::frr::TOOLS, true, |lab, s| {
        Box::new(common::frr::Frr::start(lab, "x-frr", s))
    });
}

#[test]
fn gobgp_against_bird() {
    against_bird("gobgp", common::gobgp::TOOLS, true, |lab, s| {
        Box::new(common::gobgp::Gobgp::start(lab, "x-gobgp", s))
    });
}

#[test]
fn openbgpd_against_bird() {
    // OpenBGPD 7.7 (portable, Linux) sends `::1` as the IPv6 next hop of
    // IPv6 routes over an IPv4 session, whatever `local-address` or `set
    // nexthop` says (BIRD: "Invalid NEXT_HOP attribute - address ::1 not
    // directly reachable"), so its IPv6 routes are not checked here.
    against_bird("openbgpd", common::openbgpd::TOOLS, false, |lab, s| {
        Box::new(common::openbgpd::Openbgpd::start(lab, "x-openbgpd", s))
    });
}

#[test]
fn exabgp_against_bird() {
    against_bird("exabgp", common::exabgp::TOOLS, true, |lab, s| {
        Box::new(common::exabgp::Exabgp::start(lab, "x-exabgp", s))
    });
}

//! Route-flap damping (RFC 2439) on a running tesserad against real
//! ExaBGP peers: `src` (damped) flaps 198.19.7.0/24 three times, driven
//! step by step by the test (each announcement and withdrawal is seen at
//! tesserad before the next); tesserad suppresses the route (`show route
//! damped` lists it with its penalty and reuse time, `show route ... all`
//! shows the state, the path stays in the Adj-RIB-In but is not best), the
//! second peer `dst` is sent a withdrawal and nothing more while it is
//! suppressed, and once the penalty has decayed to the reuse threshold
//! (half-life 3 s here) the route is best again and `dst` receives it. An
//! undamped peer (`dst` itself) flapping another prefix is never
//! suppressed. Then a reload (`configure`) turns damping off for `src`:
//! its suppressed route is released at once and new flaps are not counted. Run with the default (sharded) pipeline and with
//! `per-peer`; each takes ~11 s.

use e2e as common;
mod glue;

use std::time::{Duration, Instant};

use common::exabgp::{self, Exabgp};
use common::peer::{wait_established, Peer, Session};
use common::tesserad::Tesserad;
use common::Lab;
use mgmt::proto::{Data, Request, Response, RouteInfo};

const T_AS: u32 = 65000;
const P: &str = "198.19.7.0/24";

fn squeeze(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

fn announce(p: &Exabgp, prefix: &str, path: &str) {
    let nh = &p.session.local_v4;
    p.command(&format!(
        "announce route {prefix} next-hop {nh} as-path [{path}]"
    ))
    .unwrap_or_else(|e| panic!("exabgp command: {e}"));
}

fn withdraw(p: &Exabgp, prefix: &str) {
    let nh = &p.session.local_v4;
    p.command(&format!("withdraw route {prefix} next-hop {nh}"))
        .unwrap_or_else(|e| panic!("exabgp command: {e}"));
}

/// The path of `from` for `prefix` at tesserad (`show route PREFIX all`).
fn path_from(
    t: &Tesserad,
    prefix: &str,
    from: &str,
) -> Result<Option<mgmt::proto::PathInfo>, String> {
    Ok(glue::route(t, prefix)?.and_then(|r| r.paths.into_iter().find(|p| p.from == from)))
}

fn damped(t: &Tesserad) -> Result<Vec<RouteInfo>, String> {
    match glue::ask(t, r#"{"command":"show_route_damped"}"#)? {
        Data::Routes(v) => Ok(v),
        d => Err(format!("show route damped: {d:?}")),
    }
}

/// `src` announces, then withdraws, `n` times, each step seen at tesserad.
fn flap(lab: &Lab, t: &Tesserad, p: &Exabgp, name: &str, prefix: &str, path: &str, n: usize) {
    for i in 0..n {
        withdraw(p, prefix);
        lab.wait(
            10,
            &format!("{name}'s withdrawal {i} of {prefix} at tesserad"),
            || Ok(path_from(t, prefix, name)?.is_none().then_some(())),
        );
        announce(p, prefix, path);
        lab.wait(
            10,
            &format!("{name}'s announcement {i} of {prefix} at tesserad"),
            || path_from(t, prefix, name),
        );
    }
}

#[test]
fn flapping_route_is_suppressed_and_released() {
    run("damp", None);
}

/// The same with the RIB in locked stripes, applied by the sessions'
/// own threads.
#[test]
fn flapping_route_is_suppressed_and_released_per_peer() {
    run("dampp", Some("per-peer"));
}

fn run(test: &str, pipeline: Option<&str>) {
    if !common::ready(exabgp::TOOLS) {
        return;
    }
    let lab = Lab::star(test, 2);
    let [l1, l2] = [1, 2].map(|k| lab.leaf(k).clone());
    let config = |sock: &std::path::Path, damped: bool| {
        let mut s = glue::head(sock, None);
        if let Some(p) = pipeline {
            s = s.replace(
                "asn = 65000\n",
                &format!("asn = 65000\npipeline = \"{p}\"\n"),
            );
        }
        let more = if damped { "damping = true\n" } else { "" };
        s.push_str(&glue::neighbor("src", &l1, 65001, "accept", "accept", more));
        s.push_str(&glue::neighbor("dst", &l2, 65002, "accept", "accept", ""));
        if damped {
            s.push_str(
                "\n[damping]\nhalf_life = 3\nreuse = 1000\nsuppress = 2500\nmax_suppress = 12\n",
            );
        }
        s
    };
    let t = Tesserad::start_with(&lab, |sock| config(sock, true));
    let p_src = Exabgp::start(&lab, "src", &Session::leaf(&l1, 65001, T_AS));
    let p_dst = Exabgp::start(&lab, "dst", &Session::leaf(&l2, 65002, T_AS));
    for (p, name) in [(&p_src, "src"), (&p_dst, "dst")] {
        wait_established(&lab, p as &dyn Peer, 30);
        glue::wait_up(&lab, &t, name, 20);
    }

    announce(&p_src, P, "65001");
    lab.wait(10, "dst has the route", || {
        Ok(p_dst.route(P)?.map(|l| squeeze(&l)))
    });
    // No history before the first flap.
    let first = path_from(&t, P, "src").unwrap_or_else(|e| lab.fail(&e));
    assert!(
        first
            .as_ref()
            .is_some_and(|p| p.best && p.damping.is_none()),
        "{first:?}"
    );

    // The undamped peer flaps its own prefix: never suppressed.
    announce(&p_dst, "198.19.8.0/24", "65002");
    lab.wait(10, "dst's route at tesserad", || {
        path_from(&t, "198.19.8.0/24", "dst")
    });
    flap(&lab, &t, &p_dst, "dst", "198.19.8.0/24", "65002", 3);

    // Three withdraw/announce cycles: ~6000 with decay, > 2500.
    flap(&lab, &t, &p_src, "src", P, "65001", 3);
    // The daemon reckons `reuse_in` somewhere between `asking` and
    // `asked` (a query can take a while on a loaded machine): the earliest
    // release is reckoned from `asking`, the latest from `asked`.
    let asking = Instant::now();
    let list = damped(&t).unwrap_or_else(|e| lab.fail(&e));
    let asked = Instant::now();
    let [r] = list.as_slice() else {
        lab.fail(&format!("show route damped lists one route: {list:?}"));
    };
    assert_eq!(r.prefix, P);
    let [dp] = r.paths.as_slice() else {
        lab.fail(&format!("one suppressed path: {r:?}"));
    };
    let d = dp.damping.expect("damping state");
    assert_eq!(dp.from, "src");
    assert!(d.suppressed && !dp.best, "{dp:?}");
    assert!(d.penalty > 2500 && d.penalty <= 6000, "{d:?}");
    let reuse_in = Duration::from_millis(d.reuse_in_ms.expect("reuse time"));
    // 3 s x log2(penalty / 1000): between 4 and 8 s.
    assert!(
        reuse_in > Duration::from_secs(3) && reuse_in < Duration::from_secs(9),
        "{d:?}"
    );
    // Text: the path line says "damped", with the penalty and reuse time.
    let text = mgmt::render::render(
        &Request::ShowRouteDamped,
        &Response::Ok(Data::Routes(list.clone())),
        &Default::default(),
    );
    assert!(
        text.contains(P)
            && text.contains(" damped")
            && text.contains("\tDamping: penalty ")
            && text.contains(", suppressed, reuse in "),
        "{text}"
    );
    // `show route PREFIX all`: kept in the Adj-RIB-In, not best, state shown.
    let all = path_from(&t, P, "src")
        .unwrap_or_else(|e| lab.fail(&e))
        .expect("the suppressed path stays in the Adj-RIB-In");
    assert!(
        !all.best && all.damping.is_some_and(|d| d.suppressed),
        "{all:?}"
    );
    // The undamped peer's flaps left no suppression.
    assert!(list.iter().all(|r| r.prefix != "198.19.8.0/24"));
    let dst8 = path_from(&t, "198.19.8.0/24", "dst").unwrap_or_else(|e| lab.fail(&e));
    assert!(dst8.is_some_and(|p| p.best && p.damping.is_none()));

    // dst's newest news of P is a withdrawal, and stays so while suppressed.
    lab.wait(5, "dst heard the withdrawal", || {
        Ok(p_dst.route(P)?.is_none().then_some(()))
    });
    // Watch for 1.5 s, less where the reuse time comes sooner (the
    // checks above can take seconds on a loaded machine): the watch must
    // end while the route is still suppressed.
    let left = reuse_in.saturating_sub(asking.elapsed() + Duration::from_millis(500));
    std::thread::sleep(left.min(Duration::from_millis(1500)));
    if let Some(l) = p_dst.route(P).unwrap_or_else(|e| lab.fail(&e)) {
        lab.fail(&format!("dst was sent the suppressed route: {l}"));
    }
    assert!(
        asking.elapsed() < reuse_in,
        "the checks above ran past the reuse time"
    );

    // Released when the penalty has decayed to 1000: best again, sent to dst.
    lab.wait(15, "src's route best again", || {
        Ok(path_from(&t, P, "src")?.filter(|p| p.best))
    });
    let (released, since_asking) = (asked.elapsed(), asking.elapsed());
    lab.wait(5, "dst has the route again", || p_dst.route(P));
    assert!(
        since_asking + Duration::from_millis(300) >= reuse_in,
        "released {since_asking:?} after the query, before its reuse time {reuse_in:?}"
    );
    assert!(
        released < reuse_in + Duration::from_secs(2),
        "released after {released:?}, reuse time {reuse_in:?}"
    );
    let left = damped(&t).unwrap_or_else(|e| lab.fail(&e));
    assert!(left.is_empty(), "nothing suppressed any more: {left:?}");
    let after = path_from(&t, P, "src").unwrap_or_else(|e| lab.fail(&e));
    assert!(
        after.is_some_and(|p| p
            .damping
            .is_some_and(|d| !d.suppressed && d.penalty <= 1000)),
        "the history is kept until it decays below reuse / 2"
    );
    if pipeline.is_some() {
        return;
    }

    // Suppressed again, then a reload turns damping off for src: the route
    // is released at once and later flaps count for nothing.
    flap(&lab, &t, &p_src, "src", P, "65001", 3);
    lab.wait(5, "suppressed again", || {
        Ok(damped(&t)?.iter().any(|r| r.prefix == P).then_some(()))
    });
    std::fs::write(&t.config, config(&t.sock, false)).expect("rewrite config");
    let c = glue::configure(&t).unwrap_or_else(|e| lab.fail(&e));
    assert!(c.messages.iter().any(|m| m.contains("src")), "{c:?}");
    lab.wait(5, "released by the reload", || {
        Ok(path_from(&t, P, "src")?.filter(|p| p.best && p.damping.is_none()))
    });
    lab.wait(5, "dst has the route after the reload", || p_dst.route(P));
    flap(&lab, &t, &p_src, "src", P, "65001", 4);
    let p = path_from(&t, P, "src").unwrap_or_else(|e| lab.fail(&e));
    assert!(
        p.is_some_and(|p| p.best && p.damping.is_none()),
        "not damped after the reload"
    );
    assert!(damped(&t).unwrap_or_else(|e| lab.fail(&e)).is_empty());
}

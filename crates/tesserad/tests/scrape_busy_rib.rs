//! `/metrics`, `show protocols` and `show route count` answer while a RIB
//! thread is busy, with the counts it published last (issue 17,
//! `crates/bgp-speaker/src/rib/published.rs`).
//!
//! The RIB thread is held by the daemon's test hook
//! (`TESSERAD_TEST_HOLD_RIB=PATH`: a batch of UPDATEs that arrives while
//! PATH exists holds its RIB thread before it is applied, until PATH is
//! removed, and the thread shows it holds by creating `PATH.held`). So the
//! test needs no timing threshold: each answer is checked to come while
//! the marker still exists, that is while the thread provably has not
//! finished the batch. Before the counts were published, each of these
//! requests waited for every RIB thread (30 s for the CLI, then an error),
//! and a scrape too.

use e2e as common;
mod glue;

use common::exabgp::{self, Exabgp};
use common::peer::{wait_established, Session};
use common::tesserad::Tesserad;
use common::Lab;
use mgmt::metrics::check::value;
use mgmt::proto::Data;

const METRICS_PORT: u16 = 19_181;

fn accepted(t: &Tesserad) -> Result<u64, String> {
    Ok(glue::protocol(t, "peer1")?.routes.accepted)
}

fn master4_prefixes(t: &Tesserad) -> Result<u64, String> {
    match glue::ask(t, r#"{"command":"show_route","count_only":true}"#)? {
        Data::RouteCount(c) => c
            .tables
            .iter()
            .find(|x| x.table == "master4")
            .map(|x| x.prefixes)
            .ok_or_else(|| format!("no master4 in {c:?}")),
        d => Err(format!("not a route count: {d:?}")),
    }
}

#[test]
fn scrape_and_show_answer_while_a_rib_thread_is_held() {
    if !common::ready(&[exabgp::TOOLS, &["curl"]].concat()) {
        return;
    }
    let lab = Lab::star("scrapebusy", 1);
    let leaf = lab.leaf(1).clone();
    let hold = lab.path("hold-rib");
    let mut marker = hold.clone().into_os_string();
    marker.push(".held");
    let marker = std::path::PathBuf::from(marker);
    let hold_s = hold.display().to_string();
    let t = Tesserad::start_env(
        &lab,
        |sock| {
            let mut s = glue::head(sock, Some(METRICS_PORT));
            s.push_str(&glue::neighbor(
                "peer1", &leaf, 65001, "accept", "accept", "",
            ));
            s
        },
        &[],
        &[("TESSERAD_TEST_HOLD_RIB", &hold_s)],
    );
    let s = Session::leaf(&leaf, 65001, 65000);
    let p = Exabgp::start(&lab, "peer1", &s);
    wait_established(&lab, &p, 30);
    glue::wait_up(&lab, &t, "peer1", 20);
    let nh = &p.session.local_v4;
    let announce = |prefix: &str| {
        p.command(&format!("announce route {prefix} next-hop {nh}"))
            .unwrap_or_else(|e| lab.fail(&format!("exabgp command: {e}")));
    };

    // ExaBGP's two static routes (IPv4, IPv6) and one from the API:
    // applied and published.
    announce("198.19.1.0/24");
    let [f4, f6] = s.routes();
    for x in ["198.19.1.0/24", f4.prefix.as_str(), f6.prefix.as_str()] {
        lab.wait(15, &format!("tesserad has {x}"), || {
            Ok(glue::route(&t, x)?.map(|_| ()))
        });
    }
    let n0 = 3;
    lab.wait(10, "peer1's accepted count is 3", || {
        let p = glue::protocol(&t, "peer1")?;
        if p.routes.accepted == n0 {
            Ok(Some(()))
        } else {
            Err(format!("peer1: {:?}", p.routes))
        }
    });
    let prefixes0 = master4_prefixes(&t).unwrap_or_else(|e| lab.fail(&e));

    // Hold the RIB thread that receives the next batch.
    std::fs::write(&hold, b"hold\n").expect("hold file");
    // Removed however the test ends: the daemon goes on after at most
    // its own bound (60 s) anyway.
    struct Release(std::path::PathBuf);
    impl Drop for Release {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let release = Release(hold.clone());
    announce("198.19.2.0/24");
    lab.wait(15, "a RIB thread holds the batch", || {
        Ok(marker.exists().then_some(()))
    });

    // While it holds: the CLI and /metrics answer with the last
    // published counts (the new route not in them).
    let a = accepted(&t).unwrap_or_else(|e| lab.fail(&format!("show protocols while held: {e}")));
    let c = master4_prefixes(&t)
        .unwrap_or_else(|e| lab.fail(&format!("show route count while held: {e}")));
    let m = glue::scrape(&lab, METRICS_PORT)
        .unwrap_or_else(|e| lab.fail(&format!("/metrics while held: {e}")));
    let still_held = marker.exists();
    assert!(
        still_held,
        "the RIB thread let go before the answers came: the test proves nothing"
    );
    assert_eq!(a, n0, "show protocols while held: the last published count");
    assert_eq!(c, prefixes0, "show route count while held");
    assert_eq!(
        value(
            &m,
            "tessera_protocol_routes",
            &[("protocol", "peer1"), ("kind", "accepted")]
        ),
        Some(n0 as f64),
        "/metrics while held"
    );
    assert_eq!(
        value(&m, "tessera_rib_prefixes", &[("table", "master4")]),
        Some(prefixes0 as f64),
        "/metrics while held"
    );

    // Let go: the batch is applied and the counts move on.
    drop(release);
    lab.wait(15, "the held batch is applied and published", || {
        let a = accepted(&t)?;
        Ok((a == n0 + 1).then_some(()))
    });
    lab.wait(15, "the hold marker is gone", || {
        Ok((!marker.exists()).then_some(()))
    });
    assert_eq!(
        master4_prefixes(&t).unwrap_or_else(|e| lab.fail(&e)),
        prefixes0 + 1
    );
    // And a scrape, rendered on the listener's thread from the snapshots
    // (not a text kept from before the hold), has it too.
    lab.wait(15, "/metrics has the held batch's route", || {
        let m = glue::scrape(&lab, METRICS_PORT)?;
        let a = value(
            &m,
            "tessera_protocol_routes",
            &[("protocol", "peer1"), ("kind", "accepted")],
        );
        let p = value(&m, "tessera_rib_prefixes", &[("table", "master4")]);
        if a == Some((n0 + 1) as f64) && p == Some((prefixes0 + 1) as f64) {
            Ok(Some(()))
        } else {
            Err(format!("accepted {a:?}, master4 prefixes {p:?}"))
        }
    });
}

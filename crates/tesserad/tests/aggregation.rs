//! Aggregation (RFC 4271 §9.2.2.2) on a running tesserad between real
//! ExaBGP peers: `src` sends more specifics of two configured aggregates,
//! `dst` receives
//!
//! * 198.19.16.0/22 (`summary_only`, no `as_set`): AS_PATH just our AS,
//!   ATOMIC_AGGREGATE and AGGREGATOR 65000:198.18.0.1, and none of its
//!   contributors;
//! * 198.19.32.0/22 (`as_set`): AS_PATH 65000 then an AS_SET of the
//!   contributors' ASes, AGGREGATOR, no ATOMIC_AGGREGATE, and the
//!   contributors too;
//!
//! `show route PREFIX all` lists the contributors; when the last
//! contributor is withdrawn the aggregate is withdrawn, and the
//! suppressed more specifics' export follows the aggregate.

use e2e as common;
mod glue;

use common::exabgp::{self, Exabgp};
use common::peer::{wait_established, Peer, Session};
use common::tesserad::Tesserad;
use common::Lab;

const T_AS: u32 = 65000;

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

fn at_peer(p: &Exabgp, prefix: &str) -> Result<Option<String>, String> {
    Ok(p.route(prefix)?.map(|l| squeeze(&l)))
}

fn other<'a>(p: &'a mgmt::proto::PathInfo, key: &str) -> Option<&'a str> {
    p.other
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[test]
fn aggregates_announced_with_rfc4271_attributes() {
    if !common::ready(exabgp::TOOLS) {
        return;
    }
    let lab = Lab::star("aggr", 2);
    let [l1, l2] = [1, 2].map(|k| lab.leaf(k).clone());
    let t = Tesserad::start_with(&lab, |sock| {
        let mut s = glue::head(sock, None)
            .replace("asn = 65000\n", "asn = 65000\npipeline = \"sequential\"\n");
        s.push_str(&glue::neighbor("src", &l1, 65001, "accept", "accept", ""));
        s.push_str(&glue::neighbor("dst", &l2, 65002, "accept", "accept", ""));
        s.push_str(
            "\n[[aggregate]]\nprefix = \"198.19.16.0/22\"\nsummary_only = true\n\
             \n[[aggregate]]\nprefix = \"198.19.32.0/22\"\nas_set = true\n",
        );
        s
    });
    let p_src = Exabgp::start(&lab, "src", &Session::leaf(&l1, 65001, T_AS));
    let p_dst = Exabgp::start(&lab, "dst", &Session::leaf(&l2, 65002, T_AS));
    for (p, name) in [(&p_src, "src"), (&p_dst, "dst")] {
        wait_established(&lab, p as &dyn Peer, 30);
        glue::wait_up(&lab, &t, name, 20);
    }
    // Nothing to aggregate yet.
    assert!(glue::route(&t, "198.19.16.0/22")
        .unwrap_or_else(|e| lab.fail(&e))
        .is_none());

    announce(&p_src, "198.19.16.0/24", "65001 7");
    announce(&p_src, "198.19.17.0/24", "65001 8");
    announce(&p_src, "198.19.33.0/24", "65001 9");
    announce(&p_src, "198.19.34.0/24", "65001 10 11");
    // A marker after them: once dst has it, it has had the rest.
    announce(&p_src, "198.19.99.0/24", "65001");

    let a = lab.wait(15, "dst has 198.19.16.0/22", || {
        at_peer(&p_dst, "198.19.16.0/22")
    });
    lab.wait(15, "dst has the marker", || {
        at_peer(&p_dst, "198.19.99.0/24")
    });
    for want in [
        "\"as-path\":[65000]",
        "\"atomic-aggregate\":true",
        "\"aggregator\":\"65000:198.18.0.1\"",
    ] {
        if !a.contains(want) {
            lab.fail(&format!("198.19.16.0/22 at dst lacks {want}: {a}"));
        }
    }
    for x in ["198.19.16.0/24", "198.19.17.0/24"] {
        if let Some(l) = at_peer(&p_dst, x).unwrap_or_else(|e| lab.fail(&e)) {
            lab.fail(&format!("summary_only: dst was sent {x}: {l}"));
        }
    }
    let b = lab.wait(15, "dst has 198.19.32.0/22", || {
        at_peer(&p_dst, "198.19.32.0/22")
    });
    if b.contains("atomic-aggregate") || !b.contains("\"aggregator\":\"65000:198.18.0.1\"") {
        lab.fail(&format!(
            "198.19.32.0/22 at dst: AGGREGATOR, no ATOMIC_AGGREGATE: {b}"
        ));
    }
    // AS_PATH 65000 {9 10 11 65001}: ExaBGP shows the set on its own.
    for want in ["\"as-path\":[65000]", "\"as-set\":[9,10,11,65001]"] {
        if !b.contains(want) {
            lab.fail(&format!("198.19.32.0/22 at dst lacks {want}: {b}"));
        }
    }
    for x in ["198.19.33.0/24", "198.19.34.0/24"] {
        lab.wait(5, &format!("dst has contributor {x}"), || {
            at_peer(&p_dst, x)
        });
    }

    // show route PREFIX all: the aggregate and its contributors.
    let r = glue::route(&t, "198.19.16.0/22")
        .unwrap_or_else(|e| lab.fail(&e))
        .expect("the aggregate at tesserad");
    let ap = &r.paths[0];
    assert!(ap.best && ap.atomic_aggregate, "{ap:?}");
    assert_eq!(ap.aggregator, Some((65000, "198.18.0.1".parse().unwrap())));
    assert_eq!(
        other(ap, "Aggregate"),
        Some("aggregate summary_only"),
        "{ap:?}"
    );
    assert_eq!(
        other(ap, "Aggregate.contributors"),
        Some("198.19.16.0/24 198.19.17.0/24"),
        "{ap:?}"
    );
    let r = glue::route(&t, "198.19.32.0/22")
        .unwrap_or_else(|e| lab.fail(&e))
        .expect("aggregate");
    assert_eq!(other(&r.paths[0], "Aggregate"), Some("aggregate as_set"));

    // The last contributor goes: the aggregate is withdrawn and (no
    // longer summarised) nothing is left to send.
    withdraw(&p_src, "198.19.16.0/24");
    lab.wait(10, "one contributor left", || {
        let r = glue::route(&t, "198.19.16.0/22")?;
        Ok(r.and_then(|r| {
            (other(&r.paths[0], "Aggregate.contributors") == Some("198.19.17.0/24")).then_some(())
        }))
    });
    assert!(at_peer(&p_dst, "198.19.16.0/22")
        .unwrap_or_else(|e| lab.fail(&e))
        .is_some());
    withdraw(&p_src, "198.19.17.0/24");
    lab.wait(10, "dst's aggregate withdrawn", || {
        Ok(at_peer(&p_dst, "198.19.16.0/22")?.is_none().then_some(()))
    });
    assert!(glue::route(&t, "198.19.16.0/22")
        .unwrap_or_else(|e| lab.fail(&e))
        .is_none());
    // And a new contributor brings it back, still summarised.
    announce(&p_src, "198.19.18.0/24", "65001");
    lab.wait(10, "dst has the aggregate again", || {
        at_peer(&p_dst, "198.19.16.0/22")
    });
    announce(&p_src, "198.19.98.0/24", "65001");
    lab.wait(10, "dst has the second marker", || {
        at_peer(&p_dst, "198.19.98.0/24")
    });
    assert!(at_peer(&p_dst, "198.19.18.0/24")
        .unwrap_or_else(|e| lab.fail(&e))
        .is_none());
}

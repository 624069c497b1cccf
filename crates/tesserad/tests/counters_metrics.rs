//! What `show protocols all` and `/metrics` report is what crossed the
//! wire, against a real FRR peer:
//!
//! * message counts per type, OPEN and ROUTE-REFRESH included, in both
//!   directions, equal FRR's own counters for the session after route
//!   refreshes asked by each side;
//! * every metric family documented in `crates/mgmt/src/metrics/bgp.rs`
//!   is served with plausible values once routes flowed, and the
//!   `policy` stage counts the named import policy's evaluations (one per
//!   prefix), which the `rib_update` stage no longer includes.

use e2e as common;
mod glue;

use common::frr::{self, Frr};
use common::peer::{wait_established, Peer, Session};
use common::tesserad::Tesserad;
use common::Lab;
use mgmt::metrics::check::{value, Sample};
use mgmt::proto::MessageCounts;

const METRICS_PORT: u16 = 19_179;

/// FRR's "Sent Rcvd" columns of one `show bgp neighbors` statistics row.
fn frr_count(p: &Frr, row: &str) -> Result<(u64, u64), String> {
    let out = p.neighbor()?;
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with(row))
        .ok_or_else(|| format!("no {row} line in:\n{out}"))?;
    let n: Vec<u64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    match n.as_slice() {
        [s, r] => Ok((*s, *r)),
        _ => Err(format!("unparsable: {line}")),
    }
}

fn counts(t: &Tesserad) -> Result<(MessageCounts, MessageCounts), String> {
    let b = glue::protocol(t, "peer1")?
        .bgp
        .ok_or("show protocols all has no BGP block")?;
    Ok((b.messages_sent, b.messages_received))
}

/// Waits until tesserad's and FRR's ROUTE-REFRESH counts agree in both
/// directions, at least `min_sent` sent and `min_recv` received by
/// tesserad; returns (sent, received).
fn refresh_counts_agree(
    lab: &Lab,
    t: &Tesserad,
    p: &Frr,
    min_sent: u64,
    min_recv: u64,
) -> (u64, u64) {
    lab.wait(15, "ROUTE-REFRESH counts agree with FRR's", || {
        let (sent, recv) = counts(t)?;
        let (f_sent, f_recv) = frr_count(p, "Route Refresh:")?;
        let got = (sent.route_refresh, recv.route_refresh);
        if got == (f_recv, f_sent) && got.0 >= min_sent && got.1 >= min_recv {
            Ok(Some(got))
        } else {
            Err(format!(
                "tesserad sent/received {got:?}, FRR received/sent ({f_recv}, {f_sent})"
            ))
        }
    })
}

/// Metric names documented in the table of `crates/mgmt/src/metrics/bgp.rs`.
fn documented_metrics() -> Vec<String> {
    let path = common::repo_root().join("crates/mgmt/src/metrics/bgp.rs");
    let text = std::fs::read_to_string(&path).expect("bgp.rs");
    let mut names = Vec::new();
    for l in text.lines().filter(|l| l.starts_with("//! | `tessera_")) {
        let cells: Vec<&str> = l.split('|').collect();
        let first = cells.get(1).copied().unwrap_or("");
        for part in first.split('`').skip(1).step_by(2) {
            names.push(part.to_string());
        }
    }
    names
}

fn sum(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.iter().any(|(a, b)| a == k && b == v))
        })
        .map(|s| s.value)
        .sum()
}

#[test]
fn message_counts_and_metrics_tell_the_truth() {
    if !common::ready(&[frr::TOOLS, &["curl"]].concat()) {
        return;
    }
    let lab = Lab::star("counters", 1);
    let leaf = lab.leaf(1).clone();
    let t = Tesserad::start_with(&lab, |sock| {
        let mut s = glue::head(sock, Some(METRICS_PORT));
        s.push_str("\n[[static]]\nprefix = \"192.0.2.0/24\"\n");
        s.push_str(&glue::neighbor(
            "peer1", &leaf, 65001, "tag_in", "accept", "",
        ));
        s.push_str(
            "\n[policy.tag_in]\ndefault = \"accept\"\n\n[[policy.tag_in.term]]\n\
             then.local_pref = 120\n",
        );
        s
    });
    let s = Session::leaf(&leaf, 65001, 65000);
    let p = Frr::start(&lab, "peer1", &s);
    wait_established(&lab, &p, 20);
    glue::wait_up(&lab, &t, "peer1", 20);

    // Routes through the named import policy: FRR's two fixed ones and
    // ten more, packed by FRR into few UPDATEs.
    let extra: Vec<String> = (0..10).map(|i| format!("198.19.{i}.0/24")).collect();
    p.set_extra(&extra).unwrap_or_else(|e| lab.fail(&e));
    let fixed = s.routes().map(|r| r.prefix);
    for x in extra.iter().chain(&fixed) {
        lab.wait(10, &format!("tesserad has {x} with local-pref 120"), || {
            Ok(glue::route(&t, x)?
                .filter(|r| r.paths.iter().any(|p| p.local_pref == Some(120)))
                .map(|_| ()))
        });
    }

    // OPENs: one each way per connection that reached OpenSent.
    let (sent, recv) = counts(&t).unwrap_or_else(|e| lab.fail(&e));
    let (f_sent, f_recv) = frr_count(&p, "Opens:").unwrap_or_else(|e| lab.fail(&e));
    if sent.open == 0 || recv.open == 0 || (sent.open, recv.open) != (f_recv, f_sent) {
        lab.fail(&format!(
            "OPEN counts: tesserad sent {} received {}, FRR received {f_recv} sent {f_sent}",
            sent.open, recv.open
        ));
    }
    let before = refresh_counts_agree(&lab, &t, &p, 0, 0);

    // tesserad -> FRR: one ROUTE-REFRESH per negotiated family.
    t.refresh("peer1").unwrap_or_else(|e| lab.fail(&e));
    let after_ours = refresh_counts_agree(&lab, &t, &p, before.0 + 2, before.1);

    // FRR -> tesserad: FRR's request, answered (with enhanced route
    // refresh, RFC 7313) by BoRR, the routes and EoRR, which count too.
    p.request_refresh().unwrap_or_else(|e| lab.fail(&e));
    let after_theirs = refresh_counts_agree(&lab, &t, &p, after_ours.0 + 2, after_ours.1 + 1);

    // /metrics: the documented families, with values from this session.
    let m = glue::scrape(&lab, METRICS_PORT).unwrap_or_else(|e: String| lab.fail(&e));
    let documented = documented_metrics();
    assert!(
        documented.len() >= 10,
        "too few documented metrics found: {documented:?}"
    );
    for name in &documented {
        let present = m
            .iter()
            .any(|s| s.name == *name || s.name == format!("{name}_count"));
        if !present {
            lab.fail(&format!("documented metric {name} is not served"));
        }
    }
    let v = |name: &str, labels: &[(&str, &str)]| -> f64 {
        value(&m, name, labels).unwrap_or_else(|| lab.fail(&format!("no {name} {labels:?}")))
    };
    assert_eq!(v("tessera_protocol_up", &[("protocol", "peer1")]), 1.0);
    assert_eq!(
        v(
            "tessera_bgp_session_state",
            &[("protocol", "peer1"), ("state", "Established")]
        ),
        1.0
    );
    let at_least = |name: &str, labels: &[(&str, &str)], min: f64| {
        let got = v(name, labels);
        if got < min {
            let family: Vec<&Sample> = m.iter().filter(|s| s.name == name).collect();
            lab.fail(&format!(
                "{name} {labels:?} = {got}, want >= {min}: {family:?}"
            ));
        }
    };
    at_least(
        "tessera_protocol_routes",
        &[("protocol", "peer1"), ("kind", "accepted")],
        12.0,
    );
    at_least("tessera_rib_prefixes", &[("table", "master4")], 11.0);
    at_least(
        "tessera_rib_paths_by_protocol",
        &[("protocol", "peer1")],
        12.0,
    );
    at_least(
        "tessera_protocol_state_since_seconds",
        &[("protocol", "peer1")],
        1.6e9,
    );
    assert_eq!(
        v(
            "tessera_bgp_messages_sent_total",
            &[("protocol", "peer1"), ("type", "route_refresh")]
        ),
        after_theirs.0 as f64
    );
    assert_eq!(
        v(
            "tessera_bgp_messages_received_total",
            &[("protocol", "peer1"), ("type", "route_refresh")]
        ),
        after_theirs.1 as f64
    );
    for ty in ["open", "update", "keepalive"] {
        for fam in [
            "tessera_bgp_messages_sent_total",
            "tessera_bgp_messages_received_total",
        ] {
            assert!(
                v(fam, &[("protocol", "peer1"), ("type", ty)]) > 0.0,
                "{fam} {ty}"
            );
        }
    }
    assert!(v("tessera_update_processing_seconds_count", &[]) > 0.0);
    for stage in [
        "socket_read",
        "framing",
        "parse",
        "policy",
        "rib_update",
        "best_path",
        "export",
        "write",
    ] {
        let n = v("tessera_update_stage_seconds_count", &[("stage", stage)]);
        assert!(n > 0.0, "stage {stage} has no samples");
        assert!(
            sum(&m, "tessera_update_stage_seconds_sum", &[("stage", stage)]) > 0.0,
            "stage {stage} took no time"
        );
    }
    // One policy item per UPDATE (ingress checks) plus one per prefix run
    // through tag_in (at least FRR's 12 IPv4+IPv6 routes).
    let policy = v("tessera_update_stage_seconds_count", &[("stage", "policy")]);
    let rib = v(
        "tessera_update_stage_seconds_count",
        &[("stage", "rib_update")],
    );
    assert!(
        policy >= rib + 12.0,
        "the policy stage does not count the named policy's evaluations: \
         policy {policy}, rib_update {rib}"
    );
}

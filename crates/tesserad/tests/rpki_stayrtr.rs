//! RPKI origin validation end to end (RFC 6811 with VRPs over RTR, RFC
//! 8210): a real `stayrtr` serves a JSON VRP file; tesserad (two caches:
//! a preferred one where nothing listens, then stayrtr: failover) and
//! BIRD's own `rpki` protocol both read it.
//!
//! Leaf 1 (BIRD, AS 65001) and leaf 2 (BIRD, AS 65002, paths ending in
//! 65001) announce the same four prefixes, all with origin AS 65001.
//! tesserad imports leaf 1's routes unfiltered (to show every state) and
//! leaf 2's through a policy rejecting `rpki = "invalid"`.
//!
//! 1. VRPs: .200 for 65001 (valid), .201 for 65099 (invalid), .202 none
//!    (not-found), .203 for 65001 (valid). tesserad's `show route` gives
//!    those states, leaf 2's path of .201 is dropped, and BIRD's
//!    `roa_check` over the same cache agrees on every prefix.
//! 2. The file changes (.201 now 65001, .203 now 65099); stayrtr reloads
//!    it and notifies: without a restart .201 turns valid (leaf 2's path
//!    comes back from the stored Adj-RIB-In), .203 invalid (leaf 2's path
//!    goes); BIRD agrees again.
//!
//! Once per pipeline mode. stayrtr listens on tesserad's address of the link to leaf 1
//! (198.18.1.1:3323, inside the test's namespaces), so that BIRD on leaf 1
//! reaches the same cache.

use e2e as common;

use common::bird::Bird;
use common::rtr::{self, path_states, show_rpki, Paths, RTR_PORT};
use common::tesserad::Tesserad;
use common::Lab;

const PFX: [&str; 4] = [
    "198.19.200.0/24",
    "198.19.201.0/24",
    "198.19.202.0/24",
    "198.19.203.0/24",
];
/// The preferred cache: nothing listens there.
const DEAD_PORT: u16 = 3324;

fn vrp_json(roas: &[(&str, u32)]) -> String {
    let items: Vec<String> = roas
        .iter()
        .map(|(p, asn)| format!(r#"{{"prefix":"{p}","maxLength":24,"asn":"AS{asn}"}}"#))
        .collect();
    format!(
        r#"{{"metadata":{{"buildtime":"2026-11-26T00:00:00Z"}},"roas":[{}]}}"#,
        items.join(",")
    )
}

/// Replaces the VRP file at once (stayrtr never sees half a file).
fn write_vrps(lab: &Lab, roas: &[(&str, u32)]) {
    rtr::replace_file(lab, "vrps.json", &vrp_json(roas));
}

/// BIRD announcing `PFX` (with 65001 prepended when `prepend`), with an
/// RPKI protocol to the cache when `rtr` is given.
fn bird_conf(
    dir: &std::path::Path,
    s: &common::peer::Session,
    prepend: bool,
    rtr: Option<&str>,
) -> String {
    let attrs = if prepend {
        "{ bgp_path.prepend(65001); }"
    } else {
        ""
    };
    let routes: String = PFX
        .iter()
        .map(|p| format!("  route {p} unreachable {attrs};\n"))
        .collect();
    let rpki = rtr.map_or(String::new(), |a| {
        format!(
            "roa4 table r4;\nroa6 table r6;\n\
             protocol rpki rpki1 {{\n  roa4 {{ table r4; }};\n  roa6 {{ table r6; }};\n\
             \x20 remote {a} port {RTR_PORT};\n  retry keep 1;\n  refresh keep 30;\n}}\n"
        )
    });
    rtr::bird_conf(dir, s, &rpki, &routes)
}

/// The RPKI state of each path of `prefix` at tesserad, by protocol name.
fn states(t: &Tesserad, prefix: &str) -> Result<Paths, String> {
    path_states(t, prefix, &["rpki"])
}

fn want(list: &[(&str, &str)]) -> Paths {
    let mut v: Paths = list
        .iter()
        .map(|(a, b)| vec![a.to_string(), b.to_string()])
        .collect();
    v.sort();
    v
}

/// Waits until every prefix has exactly the expected paths and states.
fn wait_states(lab: &Lab, t: &Tesserad, expect: &[(&str, Paths)]) {
    rtr::wait_states(lab, t, "tesserad's RPKI states", &["rpki"], expect);
}

/// BIRD's `roa_check` of (prefix, AS 65001) in tesserad's words.
fn bird_state(b: &Bird, prefix: &str) -> Result<String, String> {
    let out = b.birdc(&["eval", &format!("roa_check(r4, {prefix}, 65001)")])?;
    // "(enum 35)1": ROA_UNKNOWN 0, ROA_VALID 1, ROA_INVALID 2.
    let last = out.trim().chars().last();
    match last {
        Some('0') => Ok("not-found".into()),
        Some('1') => Ok("valid".into()),
        Some('2') => Ok("invalid".into()),
        _ => Err(format!("unexpected birdc eval output: {out:?}")),
    }
}

/// Waits until BIRD's validation of every prefix is what tesserad says
/// for leaf 1's path.
fn cross_check(lab: &Lab, t: &Tesserad, b: &Bird) {
    lab.wait(30, "BIRD's roa_check agrees with tesserad", || {
        let mut diffs = Vec::new();
        for p in PFX {
            let ours = states(t, p)?
                .into_iter()
                .find(|row| row[0] == "peer1")
                .map(|mut row| row.swap_remove(1))
                .unwrap_or_default();
            let theirs = bird_state(b, p)?;
            if ours != theirs {
                diffs.push(format!("{p}: tesserad {ours}, BIRD {theirs}"));
            }
        }
        if diffs.is_empty() {
            Ok(Some(()))
        } else {
            Err(diffs.join("; "))
        }
    });
}

#[test]
fn rpki_with_stayrtr_and_bird_sharded() {
    scenario("rpki-sharded", "sharded");
}

#[test]
fn rpki_with_stayrtr_and_bird_sequential() {
    scenario("rpki-seq", "sequential");
}

#[test]
fn rpki_with_stayrtr_and_bird_per_peer() {
    scenario("rpki-perpeer", "per-peer");
}

#[test]
fn rpki_with_stayrtr_and_bird_worker_pool() {
    scenario("rpki-pool", "worker-pool");
}

/// The steps of the module docs, with `pipeline` (every RIB part hears
/// of VRP changes).
fn scenario(name: &str, pipeline: &str) {
    if !common::ready(&rtr::tools()) {
        return;
    }
    let lab = Lab::star(name, 2);
    let cache_addr = lab.leaf(1).center_v4.clone();
    write_vrps(&lab, &[(PFX[0], 65001), (PFX[1], 65099), (PFX[3], 65001)]);
    rtr::start_stayrtr(&lab, &cache_addr, "vrps.json");
    // peer2 imports through the policy that drops invalid routes.
    let t = rtr::start_tesserad(
        &lab,
        pipeline,
        "",
        "no-invalid",
        &format!(
            "[policy.no-invalid]\ndefault = \"accept\"\n\
             [[policy.no-invalid.term]]\nmatch.rpki = \"invalid\"\nthen.action = \"reject\"\n\n\
             [[rpki.cache]]\naddress = \"{cache_addr}\"\nport = {DEAD_PORT}\npreference = 1\nretry = 1\n\n\
             [[rpki.cache]]\naddress = \"{cache_addr}\"\nport = {RTR_PORT}\npreference = 2\nretry = 1\n"
        ),
    );
    let b1 = rtr::start_bird(&lab, 1, 65001, |d, s| {
        bird_conf(d, s, false, Some(&cache_addr))
    });
    let b2 = rtr::start_bird(&lab, 2, 65002, |d, s| bird_conf(d, s, true, None));

    // Failover: the preferred cache cannot be reached, stayrtr's data is used.
    lab.wait(30, "show rpki: stayrtr synced and in use", || {
        let v = show_rpki(&t)?;
        let c = &v["caches"];
        let ok = c[0]["state"] == "idle"
            && c[0]["active"] == false
            && c[0]["last_error"].is_string()
            && c[1]["state"] == "synced"
            && c[1]["active"] == true
            && c[1]["vrps"] == 3
            && v["vrps_v4"] == 3;
        if ok {
            Ok(Some(()))
        } else {
            Err(format!("{v}"))
        }
    });

    // Step 1.
    let s = |list: &[(&str, &str)]| want(list);
    wait_states(
        &lab,
        &t,
        &[
            (PFX[0], s(&[("peer1", "valid"), ("peer2", "valid")])),
            (PFX[1], s(&[("peer1", "invalid")])),
            (PFX[2], s(&[("peer1", "not-found"), ("peer2", "not-found")])),
            (PFX[3], s(&[("peer1", "valid"), ("peer2", "valid")])),
        ],
    );
    lab.wait(30, "BIRD rpki1 Established", || {
        let o = b1.birdc(&["show", "protocols", "rpki1"])?;
        Ok(o.contains("Established").then_some(()))
    });
    cross_check(&lab, &t, &b1);
    let serial0 = show_rpki(&t).expect("show rpki")["caches"][1]["serial"].as_u64();

    // Step 2: the file changes; no restart.
    let pid = t.pid;
    write_vrps(&lab, &[(PFX[0], 65001), (PFX[1], 65001), (PFX[3], 65099)]);
    wait_states(
        &lab,
        &t,
        &[
            (PFX[0], s(&[("peer1", "valid"), ("peer2", "valid")])),
            (PFX[1], s(&[("peer1", "valid"), ("peer2", "valid")])),
            (PFX[2], s(&[("peer1", "not-found"), ("peer2", "not-found")])),
            (PFX[3], s(&[("peer1", "invalid")])),
        ],
    );
    cross_check(&lab, &t, &b1);
    assert!(lab.alive("tesserad"), "tesserad exited");
    assert_eq!(t.pid, pid);
    let v = show_rpki(&t).expect("show rpki");
    let serial1 = v["caches"][1]["serial"].as_u64();
    assert!(
        serial1 > serial0,
        "serial did not advance: {serial0:?} -> {serial1:?} ({v})"
    );
    // Re-evaluation touched the changed prefixes only: .201 and .203 in
    // both steps' changes (the first load covers .200, .201, .203).
    let re = v["reevaluated"].as_u64().unwrap_or(0);
    assert!(
        (2..=8).contains(&re),
        "prefixes re-evaluated: {re} (expected the VRP-covered ones only)"
    );
    drop(b2);
    drop(b1);
    drop(t);
}

//! ASPA AS_PATH verification end to end (draft-ietf-sidrops-aspa-verification,
//! ASPAs over RTR version 2): a real `stayrtr` serves a JSON file with
//! `provider_authorizations`; tesserad reads it (`aspa_pdu = "8210bis-10"`:
//! stayrtr 0.5.1 sends the ASPA PDU layout of draft-ietf-sidrops-8210bis-10).
//!
//! Leaf 1 (BIRD, AS 65001) and leaf 2 (BIRD, AS 65002) are both our
//! customers (`role = "provider"` on our side: upstream verification).
//! Each announces three prefixes, the path being its own AS and then the
//! origin: .210 from 65010, .211 from 65011, .212 from 65012. tesserad
//! imports leaf 1's routes unfiltered (to show every state) and leaf 2's
//! through a policy rejecting `aspa = "invalid"`.
//!
//! 1. ASPAs: 65010 → {65001, 65002} (valid), 65011 → {65099} (invalid:
//!    65011 says neither leaf is its provider, so the route leaked),
//!    65012 none (unknown). `show route` gives those states beside the
//!    RPKI one, leaf 2's path of .211 is dropped.
//! 2. The file changes (65010 → {65099}, 65011 → {65001, 65002}); stayrtr
//!    reloads it and notifies: without a restart .210 turns invalid (leaf
//!    2's path goes), .211 valid (leaf 2's path comes back from the stored
//!    Adj-RIB-In).
//!
//! BIRD 2.0.12 has no ASPA, so there is no cross-check against it (unlike
//! `rpki_stayrtr.rs`'s origin validation).

use e2e as common;

use common::rtr::{self, show_rpki, Paths, RTR_PORT};
use common::tesserad::Tesserad;
use common::Lab;

/// (prefix, origin AS).
const PFX: [(&str, u32); 3] = [
    ("198.19.210.0/24", 65010),
    ("198.19.211.0/24", 65011),
    ("198.19.212.0/24", 65012),
];

/// stayrtr 0.5.1's JSON: one ROA (for a prefix nobody announces) and the
/// ASPAs, the same for both address families.
fn aspa_json(aspas: &[(u32, &[u32])]) -> String {
    let items: Vec<String> = aspas
        .iter()
        .map(|(c, p)| {
            let p: Vec<String> = p.iter().map(u32::to_string).collect();
            format!(r#"{{"customer_asid":{c},"providers":[{}]}}"#, p.join(","))
        })
        .collect();
    let list = items.join(",");
    format!(
        r#"{{"metadata":{{"buildtime":"2026-11-26T00:00:00Z"}},"roas":[{{"prefix":"198.19.250.0/24","maxLength":24,"asn":"AS65099"}}],"provider_authorizations":{{"ipv4":[{list}],"ipv6":[{list}]}}}}"#
    )
}

/// Replaces the file at once (stayrtr never sees half a file).
fn write_aspas(lab: &Lab, aspas: &[(u32, &[u32])]) {
    rtr::replace_file(lab, "rpki.json", &aspa_json(aspas));
}

/// BIRD announcing `PFX`, each with its origin AS prepended (BIRD adds
/// its own on export).
fn bird_conf(dir: &std::path::Path, s: &common::peer::Session) -> String {
    let routes: String = PFX
        .iter()
        .map(|(p, o)| format!("  route {p} unreachable {{ bgp_path.prepend({o}); }};\n"))
        .collect();
    rtr::bird_conf(dir, s, "", &routes)
}

/// Expected paths: (protocol, rpki, aspa state); RPKI is not-found
/// throughout.
fn want(list: &[(&str, &str)]) -> Paths {
    let mut v: Paths = list
        .iter()
        .map(|(a, b)| vec![a.to_string(), "not-found".to_string(), b.to_string()])
        .collect();
    v.sort();
    v
}

fn wait_states(lab: &Lab, t: &Tesserad, expect: &[(&str, Paths)]) {
    rtr::wait_states(lab, t, "tesserad's ASPA states", &["rpki", "aspa"], expect);
}

#[test]
fn aspa_with_stayrtr_sharded() {
    scenario("aspa-sharded", "sharded");
}

#[test]
fn aspa_with_stayrtr_sequential() {
    scenario("aspa-seq", "sequential");
}

fn scenario(name: &str, pipeline: &str) {
    if !common::ready(&rtr::tools()) {
        return;
    }
    let lab = Lab::star(name, 2);
    let cache_addr = lab.leaf(1).center_v4.clone();
    write_aspas(&lab, &[(65010, &[65001, 65002]), (65011, &[65099])]);
    rtr::start_stayrtr(&lab, &cache_addr, "rpki.json");
    // Both leaves are our customers; peer2 imports through the policy
    // that drops ASPA-invalid routes.
    let t = rtr::start_tesserad(
        &lab,
        pipeline,
        "role = \"provider\"\n",
        "no-leaks",
        &format!(
            "[policy.no-leaks]\ndefault = \"accept\"\n\
             [[policy.no-leaks.term]]\nmatch.aspa = \"invalid\"\nthen.action = \"reject\"\n\n\
             [[rpki.cache]]\naddress = \"{cache_addr}\"\nport = {RTR_PORT}\nretry = 1\naspa_pdu = \"8210bis-10\"\n"
        ),
    );
    let b1 = rtr::start_bird(&lab, 1, 65001, bird_conf);
    let b2 = rtr::start_bird(&lab, 2, 65002, bird_conf);

    lab.wait(30, "show rpki: stayrtr synced with 2 ASPAs", || {
        let v = show_rpki(&t)?;
        let ok = v["caches"][0]["state"] == "synced" && v["aspas"] == 2;
        if ok {
            Ok(Some(()))
        } else {
            Err(format!("{v}"))
        }
    });

    // Step 1.
    let [a, b, c] = PFX.map(|p| p.0);
    wait_states(
        &lab,
        &t,
        &[
            (a, want(&[("peer1", "valid"), ("peer2", "valid")])),
            (b, want(&[("peer1", "invalid")])),
            (c, want(&[("peer1", "unknown"), ("peer2", "unknown")])),
        ],
    );
    let serial0 = show_rpki(&t).expect("show rpki")["caches"][0]["serial"].as_u64();

    // Step 2: the file changes; no restart.
    let pid = t.pid;
    write_aspas(&lab, &[(65010, &[65099]), (65011, &[65001, 65002])]);
    wait_states(
        &lab,
        &t,
        &[
            (a, want(&[("peer1", "invalid")])),
            (b, want(&[("peer1", "valid"), ("peer2", "valid")])),
            (c, want(&[("peer1", "unknown"), ("peer2", "unknown")])),
        ],
    );
    assert!(lab.alive("tesserad"), "tesserad exited");
    assert_eq!(t.pid, pid);
    let v = show_rpki(&t).expect("show rpki");
    let serial1 = v["caches"][0]["serial"].as_u64();
    assert!(
        serial1 > serial0,
        "serial did not advance: {serial0:?} -> {serial1:?} ({v})"
    );
    // Only routes whose paths hold a changed customer AS were looked at
    // again: .210 and .211 of peer2 in both steps (peer1 imports
    // unfiltered, its policy does not read the state).
    let re = v["aspa_reevaluated"].as_u64().unwrap_or(0);
    assert!(
        (1..=4).contains(&re),
        "routes re-evaluated: {re} (expected those with a changed AS only)"
    );
    drop(b2);
    drop(b1);
    drop(t);
}

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

mod common;

use common::bird::Bird;
use common::peer::{wait_established, Session};
use common::tesserad::{Config, Neighbor, Tesserad};
use common::Lab;
use serde_json::Value;

const T_AS: u32 = 65000;
/// (prefix, origin AS).
const PFX: [(&str, u32); 3] = [
    ("198.19.210.0/24", 65010),
    ("198.19.211.0/24", 65011),
    ("198.19.212.0/24", 65012),
];
const RTR_PORT: u16 = 3323;

fn tools() -> Vec<&'static str> {
    [common::bird::TOOLS, &["stayrtr", "ip"]].concat()
}

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
    let tmp = lab.write("rpki.json.tmp", &aspa_json(aspas));
    std::fs::rename(&tmp, lab.path("rpki.json")).expect("rename rpki.json");
}

fn neighbor(lab: &Lab, k: u8, asn: u32) -> Neighbor {
    let l = lab.leaf(k);
    Neighbor {
        name: format!("peer{k}"),
        addr: l.v4.clone(),
        local_addr: l.center_v4.clone(),
        remote_as: asn,
        hold: 9,
        rr_client: false,
        rs_client: false,
        max_prefix: None,
    }
}

/// BIRD announcing `PFX`, each with its origin AS prepended (BIRD adds
/// its own on export).
fn bird_conf(dir: &std::path::Path, s: &Session) -> String {
    let routes: String = PFX
        .iter()
        .map(|(p, o)| format!("  route {p} unreachable {{ bgp_path.prepend({o}); }};\n"))
        .collect();
    format!(
        "router id {local};\nlog \"{dir}/bird.log\" all;\nprotocol device {{ scan time 1; }}\n\
         ipv4 table t4;\n\
         protocol static s4 {{\n  ipv4 {{ table t4; }};\n{routes}}}\n\
         protocol bgp peer {{\n  local {local} as {las};\n  neighbor {peer} as {pas};\n\
         \x20 hold time 9;\n  keepalive time 1;\n  connect retry time 1;\n  error wait time 1, 2;\n\
         \x20 ipv4 {{ table t4; import all; export all; next hop self; }};\n}}\n",
        local = s.local_v4,
        dir = dir.display(),
        las = s.local_as,
        peer = s.peer_v4,
        pas = s.peer_as,
    )
}

/// (protocol, rpki, aspa) of each path of `prefix` at tesserad.
fn states(t: &Tesserad, prefix: &str) -> Result<Vec<(String, String, String)>, String> {
    let r = t.request(&format!(
        r#"{{"command":"show_route","prefix":"{prefix}"}}"#
    ))?;
    let v: Value = serde_json::from_str(&r).map_err(|e| format!("{e}: {r}"))?;
    let mut out = Vec::new();
    let routes = v["response"]["ok"]["data"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for route in routes {
        for p in route["paths"].as_array().cloned().unwrap_or_default() {
            out.push((
                p["from"].as_str().unwrap_or("?").to_string(),
                p["rpki"].as_str().unwrap_or("absent").to_string(),
                p["aspa"].as_str().unwrap_or("absent").to_string(),
            ));
        }
    }
    out.sort();
    Ok(out)
}

/// Expected paths: (protocol, aspa state); RPKI is not-found throughout.
fn want(list: &[(&str, &str)]) -> Vec<(String, String, String)> {
    let mut v: Vec<(String, String, String)> = list
        .iter()
        .map(|(a, b)| (a.to_string(), "not-found".to_string(), b.to_string()))
        .collect();
    v.sort();
    v
}

type Expect<'a> = [(&'a str, Vec<(String, String, String)>)];

fn wait_states(lab: &Lab, t: &Tesserad, expect: &Expect<'_>) {
    lab.wait(30, "tesserad's ASPA states", || {
        let mut diffs = Vec::new();
        for (p, w) in expect {
            let got = states(t, p)?;
            if &got != w {
                diffs.push(format!("{p}: got {got:?}, want {w:?}"));
            }
        }
        if diffs.is_empty() {
            Ok(Some(()))
        } else {
            Err(diffs.join("; "))
        }
    });
}

fn show_rpki(t: &Tesserad) -> Result<Value, String> {
    let r = t.request(r#"{"command":"show_rpki"}"#)?;
    let v: Value = serde_json::from_str(&r).map_err(|e| format!("{e}: {r}"))?;
    Ok(v["response"]["ok"]["data"].clone())
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
    if !common::ready(&tools()) {
        return;
    }
    let lab = Lab::star(name, 2);
    let cache_addr = lab.leaf(1).center_v4.clone();
    write_aspas(&lab, &[(65010, &[65001, 65002]), (65011, &[65099])]);
    let file = lab.path("rpki.json").display().to_string();
    let bind = format!("{cache_addr}:{RTR_PORT}");
    let metrics = format!("{cache_addr}:0");
    lab.spawn(
        "stayrtr",
        &lab.center_ns,
        &[
            "stayrtr",
            "-bind",
            &bind,
            "-cache",
            &file,
            "-checktime=false",
            "-refresh",
            "1",
            "-metrics.addr",
            &metrics,
        ],
        &[],
    );

    let cfg = Config {
        asn: T_AS,
        router_id: "198.18.0.1".into(),
        neighbors: vec![neighbor(&lab, 1, 65001), neighbor(&lab, 2, 65002)],
        cluster_id: None,
    };
    let t = Tesserad::start_with(&lab, |sock| {
        let base = cfg.render(sock).replacen(
            "[router]\n",
            &format!("[router]\npipeline = \"{pipeline}\"\n"),
            1,
        );
        // Both leaves are our customers; peer2 imports through the policy
        // that drops ASPA-invalid routes.
        let base = base.replace(
            "import = \"accept\"",
            "role = \"provider\"\nimport = \"accept\"",
        );
        let at = base.find("name = \"peer2\"").expect("peer2 section");
        let (head, tail) = base.split_at(at);
        let tail = tail.replacen("import = \"accept\"", "import = \"no-leaks\"", 1);
        format!(
            "{head}{tail}\n\
             [policy.no-leaks]\ndefault = \"accept\"\n\
             [[policy.no-leaks.term]]\nmatch.aspa = \"invalid\"\nthen.action = \"reject\"\n\n\
             [[rpki.cache]]\naddress = \"{cache_addr}\"\nport = {RTR_PORT}\nretry = 1\naspa_pdu = \"8210bis-10\"\n"
        )
    });

    let s1 = Session::leaf(lab.leaf(1), 65001, T_AS);
    let d1 = lab.path("bird1");
    std::fs::create_dir_all(&d1).expect("bird1 dir");
    let b1 = Bird::start_conf(&lab, "bird1", &s1, &bird_conf(&d1, &s1), &[]);
    let s2 = Session::leaf(lab.leaf(2), 65002, T_AS);
    let d2 = lab.path("bird2");
    std::fs::create_dir_all(&d2).expect("bird2 dir");
    let b2 = Bird::start_conf(&lab, "bird2", &s2, &bird_conf(&d2, &s2), &[]);
    wait_established(&lab, &b1, 30);
    wait_established(&lab, &b2, 30);

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

//! `tessera cluster bench --experiments packing` on 2 nodes for 2 s
//! (issue 14): the command builds the packed and the unpacked cluster,
//! runs `tessera trafgen` in the hosts, takes each cluster down, and
//! writes CSV, JSON and SVG. Checks the generator's counts are consistent
//! (sent >= received > 0, no bad IPv4 checksum after the router, the loss
//! and reorder fields present, the packing ratio computed) and that no
//! namespace or process is left. Not a timed test: no rate is asserted.
//! Needs root, `ip`, `ping`, `bird`; bounded by `timeout`, and a failing
//! run still takes its cluster down.

use std::path::PathBuf;

#[path = "support/bins.rs"]
mod bins;

use bins::{namespaces, tesserad};

fn tessera(args: &[&str], secs: u32) -> (bool, String) {
    bins::tessera_bounded(args, secs, 10)
}

/// Takes the cluster down and removes the output when dropped (also when
/// the test fails).
struct Cleanup(PathBuf, PathBuf);
impl Drop for Cleanup {
    fn drop(&mut self) {
        let d = self.0.display().to_string();
        let _ = tessera(&["cluster", "down", "--dir", &d], 60);
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

#[test]
fn packing_experiment_on_two_nodes_counts_consistently_and_cleans_up() {
    bins::require_root_and("the cluster bench test", &["ip", "ping", "bird", "birdc"]);
    let name = format!("tb{}", std::process::id() % 100_000);
    let tmp = std::env::temp_dir();
    let dir = tmp.join(format!("tessera-cbench-test-{name}"));
    let out = tmp.join(format!("tessera-cbench-out-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("out dir");
    let _guard = Cleanup(dir.clone(), out.clone());
    let (json, csv, svg) = (out.join("r.json"), out.join("r.csv"), out.join("svg"));
    let bin = tesserad().display().to_string();
    let (ok, text) = tessera(
        &[
            "cluster",
            "bench",
            "--experiments",
            "packing",
            "--packing-nodes",
            "2",
            "--duration",
            "2",
            "--rate",
            "5000",
            "--light-rate",
            "500",
            "--flows",
            "16",
            "--name",
            &name,
            "--dir",
            &dir.display().to_string(),
            "--tesserad",
            &bin,
            "--json",
            &json.display().to_string(),
            "--csv",
            &csv.display().to_string(),
            "--svg-dir",
            &svg.display().to_string(),
        ],
        300,
    );
    assert!(ok, "cluster bench failed:\n{text}");
    assert!(
        namespaces(&name).is_empty(),
        "left: {:?}",
        namespaces(&name)
    );
    assert!(
        !dir.join("state").exists(),
        "the cluster was not taken down"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("parse");
    let runs = v["runs"].as_array().expect("runs");
    let cases: Vec<&str> = runs.iter().filter_map(|r| r["case"].as_str()).collect();
    assert_eq!(
        cases,
        [
            "packed 2n one-to-one",
            "light packed 2n one-to-one",
            "unpacked 2n one-to-one",
            "light unpacked 2n one-to-one"
        ],
        "{text}"
    );
    for r in runs {
        let sent = r["sent"].as_u64().expect("sent");
        let recv = r["received"].as_u64().expect("received");
        assert!(recv > 0 && sent >= recv, "sent {sent} received {recv}: {r}");
        assert_eq!(r["bad_checksum"].as_u64(), Some(0), "{r}");
        for k in ["loss_pct", "reorder_pct", "reordered", "seq_gaps", "rx_pps"] {
            assert!(r[k].is_number(), "{k} missing: {r}");
        }
        let loss = r["loss_pct"].as_f64().expect("loss");
        let want = 100.0 * (sent - recv) as f64 / sent as f64;
        assert!((loss - want).abs() < 1e-9, "{r}");
        assert!(r["latency_us"]["p50"].as_f64().expect("p50") > 0.0, "{r}");
        // Both hosts sent and both received (flows of each sender seen).
        assert_eq!(r["nodes"].as_u64(), Some(2));
    }
    let figs = v["figures"].as_array().expect("figures");
    let gain = figs
        .iter()
        .find(|f| f["name"].as_str() == Some("packing gain, 2 nodes one-to-one, 64 B"))
        .unwrap_or_else(|| panic!("no packing gain in {figs:?}"));
    let g = gain["ours"].as_f64().expect("ratio");
    assert!(g.is_finite() && g > 0.0, "{gain}");
    let csv = std::fs::read_to_string(&csv).expect("csv");
    assert_eq!(csv.lines().count(), 5, "{csv}");
    assert!(csv.starts_with("experiment,case,nodes,"));
    let chart = std::fs::read_to_string(svg.join("cluster-packing.svg")).expect("svg");
    assert!(
        chart.starts_with("<svg") || chart.starts_with("<?xml"),
        "{chart}"
    );
}

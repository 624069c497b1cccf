//! `tessera sim topo` and `tessera sim pick` end to end: generated
//! topologies, export and re-import, the summary, errors with line numbers,
//! and the picked vantage point.

use std::path::PathBuf;
use std::process::{Command, Output};

fn tessera(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .output()
        .expect("spawn tessera")
}

fn ok(args: &[&str]) -> String {
    let o = tessera(args);
    assert!(
        o.status.success(),
        "tessera {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8 output")
}

/// The value after `key` on the summary line starting with `line`.
fn field(summary: &str, line: &str, key: &str) -> f64 {
    let l = summary
        .lines()
        .find(|l| l.starts_with(line))
        .unwrap_or_else(|| panic!("no {line} line in {summary}"));
    let words: Vec<&str> = l.split_whitespace().collect();
    let i = words
        .iter()
        .position(|w| *w == key)
        .unwrap_or_else(|| panic!("no {key} in {l}"));
    words[i + 1].trim_end_matches(',').parse().expect("number")
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("sim_topo_cli");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.join(name)
}

#[test]
fn default_topology_is_the_seeds_brite_graph() {
    let s = ok(&["sim", "topo"]);
    assert!(s.contains("nodes:         1000"), "{s}");
    assert!(field(&s, "degree:", "min") >= 10.0, "{s}");
    assert!(field(&s, "degree:", "max") <= 15.0, "{s}");
    assert!(s.contains("provider cycle: none"), "{s}");
    assert!(s.contains("components:    1"), "{s}");
    // Real origin counts: about 10.6 prefixes per AS.
    let words: Vec<&str> = s
        .lines()
        .find(|l| l.starts_with("prefixes:"))
        .unwrap()
        .split_whitespace()
        .collect();
    let prefixes: f64 = words[1].parse().unwrap();
    assert!((7_000.0..15_000.0).contains(&prefixes), "{s}");
}

#[test]
fn export_reimport_and_same_seed_same_bytes() {
    let a = scratch("asrel-a.txt");
    let b = scratch("asrel-b.txt");
    let args = |out: &PathBuf| {
        vec![
            "sim".to_string(),
            "topo".into(),
            "--model".into(),
            "as-rel".into(),
            "--nodes".into(),
            "3000".into(),
            "--seed".into(),
            "9".into(),
            "--out".into(),
            out.display().to_string(),
        ]
    };
    let sa = ok(&args(&a).iter().map(String::as_str).collect::<Vec<_>>());
    ok(&args(&b).iter().map(String::as_str).collect::<Vec<_>>());
    let (ta, tb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(ta, tb, "same seed, different bytes");
    assert!(String::from_utf8_lossy(&ta).starts_with("# input clique: "));
    // Re-import: same nodes, links and relationships.
    let si = ok(&["sim", "topo", "--import", a.to_str().unwrap()]);
    for line in ["nodes:", "links:", "relationships:", "degree:"] {
        let pick = |s: &str| s.lines().find(|l| l.starts_with(line)).map(str::to_string);
        assert_eq!(pick(&sa), pick(&si), "{line}");
    }
    // BRITE and dot exports of a flat graph.
    let br = scratch("w.brite");
    ok(&[
        "sim",
        "topo",
        "--nodes",
        "200",
        "--out",
        br.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&br).unwrap();
    assert!(
        text.starts_with("Topology: ( 200 Nodes, "),
        "{}",
        &text[..60]
    );
    let s = ok(&[
        "sim",
        "topo",
        "--import",
        br.to_str().unwrap(),
        "--no-annotate",
    ]);
    assert!(s.contains(" 0 customer-provider, 0 peer,"), "{s}");
    let dot = ok(&[
        "sim", "topo", "--nodes", "50", "--out", "-", "--format", "dot",
    ]);
    assert!(
        dot.starts_with("graph topo {") && dot.contains(" -- "),
        "{dot}"
    );
}

#[test]
fn import_errors_name_file_and_line() {
    let p = scratch("bad-as-rel.txt");
    std::fs::write(&p, "# input clique: 1 2\n1|2|0\n2|3|7\n").unwrap();
    let o = tessera(&["sim", "topo", "--import", p.to_str().unwrap()]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains(&format!("{}:3: relationship", p.display())),
        "{e}"
    );
    // A name that tells nothing: refused unless the format is given.
    let q = scratch("line.graph");
    std::fs::write(
        &q,
        "graph [\n node [ id 0 ]\n node [ id 1 ]\n edge [ source 0 target 1 ]\n]\n",
    )
    .unwrap();
    let o = tessera(&["sim", "topo", "--import", q.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--import-format"));
    let s = ok(&[
        "sim",
        "topo",
        "--import",
        q.to_str().unwrap(),
        "--format",
        "gml",
    ]);
    assert!(
        s.contains("nodes:         2") && s.contains("links:         1"),
        "{s}"
    );
    let o = tessera(&["sim", "topo", "--min-degree", "9", "--max-degree", "3"]);
    assert!(!o.status.success());
}

#[test]
fn pick_on_a_star_a_line_and_the_default_graph() {
    // Star around AS 10: the only degree-4 node is the centre.
    let star = scratch("star.txt");
    std::fs::write(&star, "10|11|-1\n10|12|-1\n10|13|-1\n10|14|-1\n").unwrap();
    let s = ok(&["sim", "pick", "--degree", "4", star.to_str().unwrap()]);
    assert!(
        s.starts_with("AS10 (node 0): degree 4, closeness 1.0000"),
        "{s}"
    );
    let s = ok(&["sim", "pick", "--degree", "3", star.to_str().unwrap()]);
    assert!(s.contains("note: no node has degree 3"), "{s}");
    // Line 1-2-3-4-5: the middle of the degree-2 nodes.
    let line = scratch("line.txt");
    std::fs::write(&line, "1|2|0\n2|3|0\n3|4|0\n4|5|0\n").unwrap();
    let s = ok(&["sim", "pick", "--degree", "2", line.to_str().unwrap()]);
    assert!(s.starts_with("AS3 "), "{s}");
    // Default graph: a node of degree 12, same answer for the same seed.
    let a = ok(&["sim", "pick", "--degree", "12"]);
    assert!(a.contains(": degree 12,") && !a.contains("note:"), "{a}");
    assert_eq!(a, ok(&["sim", "pick", "--degree", "12"]));
}

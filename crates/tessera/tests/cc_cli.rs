//! `tessera cc sim` end to end: the scenario list, a scenario's files and
//! table, and an unknown name.

use std::path::PathBuf;
use std::process::{Command, Output};

fn tessera(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .output()
        .expect("spawn tessera")
}

#[test]
fn list_names_every_scenario() {
    for args in [&["cc", "sim"][..], &["cc", "sim", "list"]] {
        let o = tessera(args);
        assert!(o.status.success());
        let s = String::from_utf8_lossy(&o.stdout);
        for name in [
            "fig61", "tab71", "fairness", "ch5", "sweep-a", "scale", "all",
        ] {
            assert!(
                s.lines().any(|l| l.starts_with(name)),
                "{name} missing in {s}"
            );
        }
    }
}

#[test]
fn fig61_writes_csv_svg_and_the_table() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cc_cli_fig61");
    let _ = std::fs::remove_dir_all(&dir);
    let o = tessera(&["cc", "sim", "fig61", "--out", dir.to_str().expect("utf-8")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        out.contains("| Eq 6.7 K=1e5 R=1.5e11 (Fig 6.5) | unstable |"),
        "{out}"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("fig61 grid: 100%"));
    for f in ["fig61.csv", "fig61_heat.svg", "fig64_rates.svg", "fig61.md"] {
        let p = dir.join(f);
        assert!(
            std::fs::metadata(&p)
                .map(|m| m.len() > 100)
                .unwrap_or(false),
            "{}",
            p.display()
        );
    }
    let csv = std::fs::read_to_string(dir.join("fig61.csv")).expect("csv");
    assert_eq!(csv.lines().count(), 1 + 26 * 31);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unknown_scenario_is_an_error() {
    let o = tessera(&["cc", "sim", "fig99", "--out", "/nonexistent/never-created"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown scenario \"fig99\""));
}

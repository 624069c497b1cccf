//! `tessera bench` end to end at tiny scale: two network namespaces, every
//! DUT (tesserad, BIRD, FRR, GoBGP, OpenBGPD) fed 2 peers x 2000 shared
//! prefixes, one repetition. Asserts each DUT converged to exactly 2000
//! prefixes at the monitor, the generator ceiling was measured, and the
//! CSV, JSON and SVG outputs are complete and well-formed. Plain
//! `tesserad` is the daemon's default pipeline (`tesserad-sharded`); every
//! mode named explicitly (sequential, sharded at 1 and 2 threads, per-peer,
//! worker-pool, and per-peer and worker-pool with every `router.locks` and
//! `router.streams` value besides the defaults) must run and converge:
//! `not-supported` is a failure, since tesserad implements them all.
//!
//! Needs root (namespaces) and the Debian daemons; fails with the reason
//! when either is missing. Bounded: the command is killed after 240 s and
//! the bench removes its namespaces itself.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/bins.rs"]
mod bins;

use bins::tesserad;

const DUTS: &[&str] = &["tesserad", "bird", "frr", "gobgp", "openbgpd"];
const EXPECTED: u64 = 2000;
/// Every pipeline mode tesserad has, named explicitly.
const MODES: &[&str] = &[
    "tesserad:sequential",
    "tesserad:sharded:1",
    "tesserad:sharded:2",
    "tesserad:per-peer:2",
    "tesserad:worker-pool:2",
    // `router.locks` and `router.streams` other than the defaults
    // (stripes, per-session): the seeds' PBTS and DTS (issue 17).
    "tesserad:per-peer:2:fine",
    "tesserad:worker-pool:2:fine",
    "tesserad:worker-pool:2:stripes:per-worker",
    "tesserad:worker-pool:2:fine:per-worker",
];

fn require_root() {
    let uid = Command::new("id").arg("-u").output().expect("id -u");
    assert_eq!(
        String::from_utf8_lossy(&uid.stdout).trim(),
        "0",
        "bench_smoke needs root: tessera bench creates network namespaces (CI runs as root)"
    );
    for b in [
        "/usr/sbin/bird",
        "/usr/lib/frr/bgpd",
        "/usr/bin/gobgpd",
        "/usr/sbin/bgpd",
    ] {
        assert!(
            Path::new(b).exists(),
            "{b} missing: scripts/test installs bird2, frr, gobgpd, openbgpd"
        );
    }
}

fn run_bounded(cmd: &mut Command, limit: Duration) -> (bool, String, u32) {
    // One log per call: the tests of this file run at the same time.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("bench-smoke-log-{}-{n}", std::process::id()));
    let log = std::fs::File::create(&dir).expect("log file");
    let mut child = cmd
        .stdout(log.try_clone().expect("dup"))
        .stderr(log)
        .stdin(Stdio::null())
        .spawn()
        .expect("spawn tessera bench");
    let pid = child.id();
    let t0 = Instant::now();
    let ok = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st.success();
        }
        if t0.elapsed() > limit {
            // SIGINT lets the bench tear its namespaces down.
            let _ = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
            std::thread::sleep(Duration::from_secs(5));
            let _ = child.kill();
            let _ = child.wait();
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = std::fs::read_to_string(&dir).unwrap_or_default();
    let _ = std::fs::remove_file(&dir);
    (ok, out, pid)
}

fn check_csv(p: &Path, rows: usize) {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), rows + 1, "{}:\n{text}", p.display());
    let cols = lines[0].split(',').count();
    for l in &lines {
        assert_eq!(
            l.split(',').count(),
            cols,
            "{}: ragged row {l}",
            p.display()
        );
    }
}

fn check_svg(p: &Path) {
    let s = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(
        s.contains("<svg") && s.trim_end().ends_with("</svg>"),
        "{}",
        p.display()
    );
    // Every element opened is closed (self-closing or with an end tag).
    let opens = s.matches("<g").count() + s.matches("<text").count();
    let closes = s.matches("</g>").count() + s.matches("</text>").count();
    assert_eq!(opens, closes, "{}: unbalanced tags", p.display());
    assert!(
        !s.contains("NaN") && !s.contains("inf"),
        "{}: NaN in SVG",
        p.display()
    );
}

/// `tessera bench ARGS --tesserad TESSERAD --out OUT`, ARGS split at
/// white space.
fn bench_cmd(args: &str, out: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.arg("bench")
        .args(args.split_whitespace())
        .arg("--tesserad")
        .arg(tesserad())
        .arg("--out")
        .arg(out);
    cmd
}

/// The line of `label`'s first run of `case` in the log; it must say
/// the run converged.
fn converged_line<'a>(log: &'a str, case: &str, label: &str) -> &'a str {
    let line = log
        .lines()
        .find(|l| l.starts_with(&format!("== {case} {label} rep 1:")))
        .unwrap_or_else(|| panic!("no summary line for {label}:\n{log}"));
    assert!(line.contains(": converged "), "{line}");
    line
}

/// What the generators read from the DUT, from a run line.
fn generators_read(line: &str) -> u64 {
    line.split("generators read ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {line}"))
}

#[test]
fn bench_smoke_every_dut_converges_exactly() {
    require_root();
    let out = std::env::temp_dir().join(format!("bench-smoke-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut duts: Vec<String> = DUTS.iter().map(|s| s.to_string()).collect();
    // Every other mode, named explicitly; each must converge.
    for m in MODES {
        duts.push(m.to_string());
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.args([
        "bench",
        "--scenarios",
        "synthetic:2x2000:shared",
        "--reps",
        "1",
    ])
    .args(["--timeout", "40", "--dut", &duts.join(",")])
    .arg("--tesserad")
    .arg(tesserad())
    .arg("--out")
    .arg(&out);
    let t0 = Instant::now();
    let (ok, log, pid) = run_bounded(&mut cmd, Duration::from_secs(240));
    assert!(ok, "tessera bench failed after {:?}:\n{log}", t0.elapsed());
    let j: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("results.json")).expect("results.json"),
    )
    .expect("results.json parses");
    let runs = j["runs"].as_array().expect("runs");
    let ceiling = runs
        .iter()
        .find(|r| r["dut"] == "generator-ceiling")
        .expect("ceiling run");
    assert_eq!(ceiling["status"], "converged", "{ceiling}");
    assert_eq!(ceiling["monitor_prefixes"], 2 * EXPECTED, "sink count");
    for d in DUTS {
        // Plain `tesserad`: the daemon's default mode.
        let label = if *d == "tesserad" {
            "tesserad-sharded"
        } else {
            d
        };
        let r = runs
            .iter()
            .find(|r| r["dut"] == label)
            .unwrap_or_else(|| panic!("no run for {label}:\n{log}"));
        assert_eq!(r["status"], "converged", "{label}: {}\n{log}", r["detail"]);
        assert_eq!(r["monitor_prefixes"], EXPECTED, "{label}");
        assert_eq!(r["expected_prefixes"], EXPECTED, "{label}");
        assert_eq!(r["prefixes_sent"], 2 * EXPECTED, "{label}");
        let conv = r["convergence_s"].as_f64().expect("convergence_s");
        assert!(conv > 0.0 && conv < 40.0, "{label}: {conv}");
        assert!(
            r["dut_peak_rss_kib"].as_u64().unwrap_or(0) > 1000,
            "{label}: {r}"
        );
        assert!(r["dut_cpu_s"].as_f64().is_some(), "{label}");
        let series = r["series"]["monitor_prefixes"].as_array().expect("series");
        assert_eq!(
            series.last().and_then(|v| v.as_u64()),
            Some(EXPECTED),
            "{label}"
        );
    }
    let row = |spec: &str| {
        let label = spec.replace(':', "-");
        runs.iter()
            .find(|r| r["dut"] == label.as_str())
            .unwrap_or_else(|| panic!("no run for {label}:\n{log}"))
            .clone()
    };
    for spec in MODES {
        let r = row(spec);
        assert_eq!(r["status"], "converged", "{spec}: {}\n{log}", r["detail"]);
        assert_eq!(r["monitor_prefixes"], EXPECTED, "{spec}");
    }
    // 1 ceiling + 5 DUTs + the tesserad modes named explicitly.
    let rows = 1 + DUTS.len() + MODES.len();
    check_csv(&out.join("runs.csv"), rows);
    check_csv(&out.join("summary.csv"), rows);
    let md = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
    assert!(md.contains("| 2x2000-shared | bird | 1/1 |"), "{md}");
    for f in [
        "prefixes-2x2000-shared.svg",
        "convergence-2x2000-shared.svg",
    ] {
        check_svg(&out.join(f));
    }
    let prefixes =
        std::fs::read_to_string(out.join("prefixes-2x2000-shared.svg")).unwrap_or_default();
    for d in [
        "bird",
        "frr",
        "gobgp",
        "openbgpd",
        "tesserad-sharded",
        "tesserad-sequential",
    ] {
        assert!(prefixes.contains(d), "{d} line missing in prefixes chart");
    }
    // The namespaces are gone.
    let ns = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip");
    let ns = String::from_utf8_lossy(&ns.stdout);
    assert!(
        !ns.contains(&format!("tb{pid}-")),
        "namespaces left behind: {ns}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// `--export all`: every generator peer in its own AS, so every DUT sends
/// each generator the other's routes (2 peers x 2000 unique prefixes: 2000
/// to each). With one shared generator AS, GoBGP sent the generators
/// nothing (it sends no route to a peer whose AS is on its path). What
/// the generators read is counted in messages; a DUT that exported
/// nothing would send at most End-of-RIBs (2 families x 2 peers) within
/// the run (KEEPALIVEs come every 80 s), so more than 20 means routes.
#[test]
fn bench_smoke_export_all_reaches_every_generator() {
    require_root();
    let out = std::env::temp_dir().join(format!("bench-smoke-ea-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let duts = DUTS.join(",");
    let mut cmd = bench_cmd(
        &format!("--scenarios synthetic:2x2000:unique --reps 1 --export all --no-ceiling --timeout 40 --dut {duts}"),
        &out,
    );
    let (ok, log, _) = run_bounded(&mut cmd, Duration::from_secs(240));
    assert!(ok, "tessera bench --export all failed:\n{log}");
    for d in DUTS {
        let label = if *d == "tesserad" {
            "tesserad-sharded"
        } else {
            d
        };
        let line = converged_line(&log, "2x2000-unique-export-all", label);
        assert!(
            generators_read(line) > 20,
            "{label} exported nothing to the generators: {line}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// `--dut-cpus`: the DUTs start on the CPU named, the bench keeps the
/// others. The bench checks each DUT's mask in `/proc/PID/status` after
/// the start and fails the run when it differs, so "converged" below
/// means the kernel had the DUT on that CPU; the report says where each
/// side ran. A CPU this process may not use is refused before anything
/// starts.
#[test]
fn bench_smoke_dut_cpus_pins_the_dut() {
    require_root();
    let allowed = bench::cpus::allowed().expect("this process's CPUs");
    let last = *allowed.last().expect("a CPU");
    let out = std::env::temp_dir().join(format!("bench-smoke-cpus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let cpu = last.to_string();
    let mut cmd = bench_cmd(
        &format!("--scenarios synthetic:2x2000:shared --reps 1 --no-ceiling --timeout 40 --dut tesserad,bird --dut-cpus {cpu}"),
        &out,
    );
    let (ok, log, _) = run_bounded(&mut cmd, Duration::from_secs(120));
    assert!(ok, "tessera bench --dut-cpus failed:\n{log}");
    for label in ["tesserad-sharded", "bird"] {
        converged_line(&log, "2x2000-shared", label);
    }
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
    let want = if allowed.len() == 1 {
        format!("DUT CPUs: {last}; the generator shares them")
    } else {
        format!("DUT CPUs: {last}; the generator on ")
    };
    assert!(summary.contains(&want), "{want:?} not in:\n{summary}");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("results.json")).expect("results.json"),
    )
    .expect("json");
    assert!(
        json["placement"]
            .as_str()
            .is_some_and(|p| p.starts_with(&want)),
        "{}",
        json["placement"]
    );
    let _ = std::fs::remove_dir_all(&out);

    // A CPU beyond this process's mask: a clear error, nothing started.
    let mut bad = bench_cmd(
        "--scenarios synthetic:2x20:shared --dut bird --reps 1 --no-ceiling --dut-cpus 1023",
        &out,
    );
    let (ok, log, _) = run_bounded(&mut bad, Duration::from_secs(30));
    assert!(!ok, "CPU 1023 was accepted:\n{log}");
    assert!(
        log.contains("--dut-cpus: CPU 1023 is not one this process may use"),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// Scenario (g) at a small size: a route server with 2 feeders and 4
/// clients (2 of them through export policies of their own), tesserad
/// and BIRD; both converge and send the clients routes (what the
/// generators read: more than End-of-RIBs and KEEPALIVEs).
#[test]
fn bench_smoke_route_server_scenario() {
    require_root();
    let out = std::env::temp_dir().join(format!("bench-smoke-rs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut cmd = bench_cmd(
        "--scenarios g:2x2000x4 --reps 1 --no-ceiling --timeout 40 --dut tesserad,bird",
        &out,
    );
    let (ok, log, _) = run_bounded(&mut cmd, Duration::from_secs(180));
    assert!(ok, "tessera bench g failed:\n{log}");
    for label in ["tesserad-sharded", "bird"] {
        let line = converged_line(&log, "g-rs-2x2000-4c", label);
        assert!(
            generators_read(line) > 40,
            "{label} sent the clients nothing: {line}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// The shared MRT data (scenarios f and h read the jinx table and the
/// RIS trace from it).
fn mrt_dir() -> std::path::PathBuf {
    let d = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mrt");
    assert!(
        d.join("routeviews.route-views.jinx.ribs.1401487200.bz2")
            .exists(),
        "shared MRT data missing: expected {} (see /work/shared/data/mrt/README.md)",
        d.display()
    );
    d
}

/// The value of column `col` in the summary.csv row of (`case`, `dut`).
fn summary_field(csv: &str, case: &str, dut: &str, col: &str) -> String {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let i = header
        .iter()
        .position(|h| *h == col)
        .unwrap_or_else(|| panic!("no column {col} in {header:?}"));
    let row = lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|r| r.first() == Some(&case) && r.get(1) == Some(&dut))
        .unwrap_or_else(|| panic!("no row {case}/{dut} in\n{csv}"));
    row.get(i).map(|s| s.to_string()).unwrap_or_default()
}

/// Scenario (f) at a tiny size: 3 full feeds of the jinx table's first
/// 2000 prefixes (6000 paths), tesserad and BIRD. Both converge to all
/// 2000 prefixes and report bytes per path (peak RSS above the idle
/// daemon's over the paths) above zero, and the convergence chart exists.
#[test]
fn bench_smoke_full_feeds_scenario() {
    require_root();
    let out = std::env::temp_dir().join(format!("bench-smoke-f-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.args([
        "bench",
        "--scenarios",
        "f:3",
        "--scale",
        "0.004",
        "--reps",
        "1",
        "--no-ceiling",
        "--timeout",
        "20",
        "--dut",
        "tesserad,bird",
    ])
    .arg("--tesserad")
    .arg(tesserad())
    .arg("--mrt-dir")
    .arg(mrt_dir())
    .arg("--out")
    .arg(&out);
    let (ok, log, _) = run_bounded(&mut cmd, Duration::from_secs(30));
    assert!(ok, "tessera bench f failed:\n{log}");
    let case = "f-3-full-feeds-scale0.004";
    assert!(
        log.contains("2000 prefixes each, 6000 paths"),
        "workload size:\n{log}"
    );
    let csv = std::fs::read_to_string(out.join("summary.csv")).expect("summary.csv");
    for dut in ["tesserad-sharded", "bird"] {
        let at = summary_field(&csv, case, dut, "status");
        assert_eq!(at, "converged", "{dut}:\n{csv}");
        let held = summary_field(&csv, case, dut, "prefixes_per_s");
        assert!(!held.is_empty(), "{dut}: no rate\n{csv}");
        let bpp: f64 = summary_field(&csv, case, dut, "bytes_per_path")
            .parse()
            .unwrap_or_else(|_| panic!("{dut}: no bytes/path\n{csv}"));
        assert!(bpp > 0.0 && bpp.is_finite(), "{dut}: bytes/path {bpp}");
        let rss: f64 = summary_field(&csv, case, dut, "rss_median_mib")
            .parse()
            .unwrap_or(0.0);
        // Bytes per path cannot exceed the whole peak RSS over the paths.
        assert!(
            bpp * 6000.0 <= rss * 1048576.0,
            "{dut}: {bpp} B/path, {rss} MiB"
        );
    }
    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    assert!(json.contains("\"monitor_prefixes\": 2000"), "{json}");
    check_svg(&out.join(format!("convergence-{case}.svg")));
    let _ = std::fs::remove_dir_all(&out);
}

/// Scenario (h) at a tiny size: the jinx table's first 2000 prefixes,
/// then 500 UPDATEs of the RIS trace looped at 1000/s for 4 s, 10
/// monitors, tesserad and BIRD. Every monitor gets the whole table,
/// latency samples exist with p50 <= p99 <= max, the keepalive time is
/// the negotiated 3 s and the largest gap is reported, and both SVGs
/// (latency CDF, timeline) are written.
#[test]
fn bench_smoke_churn_scenario() {
    require_root();
    let out = std::env::temp_dir().join(format!("bench-smoke-h-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tessera"));
    cmd.args([
        "bench",
        "--scenarios",
        "h",
        "--scale",
        "0.004",
        "--rate",
        "1000",
        "--duration",
        "4",
        "--reps",
        "1",
        "--no-ceiling",
        "--timeout",
        "20",
        "--dut",
        "tesserad,bird",
    ])
    .arg("--tesserad")
    .arg(tesserad())
    .arg("--mrt-dir")
    .arg(mrt_dir())
    .arg("--out")
    .arg(&out);
    let (ok, log, _) = run_bounded(&mut cmd, Duration::from_secs(30));
    assert!(ok, "tessera bench h failed:\n{log}");
    let case = "h-churn-1000ups-4s-10mon-scale0.004";
    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("results.json parses");
    let runs = v["runs"].as_array().expect("runs");
    for dut in ["tesserad-sharded", "bird"] {
        let r = runs
            .iter()
            .find(|r| r["dut"] == dut && r["case"] == case)
            .unwrap_or_else(|| panic!("no run of {dut}:\n{json}"));
        assert_eq!(r["status"], "converged", "{dut}: {r}");
        let c = &r["churn"];
        assert_eq!(c["table_prefixes"], 2000, "{dut}: {c}");
        assert!(
            c["table_s"].as_f64().is_some(),
            "{dut}: table not at every monitor"
        );
        assert_eq!(c["updates_sent"], 4000, "{dut}: {c}");
        assert!(c["samples"].as_u64().unwrap_or(0) > 1000, "{dut}: {c}");
        let (p50, p99, max) = (
            c["p50_ms"].as_f64().unwrap_or(-1.0),
            c["p99_ms"].as_f64().unwrap_or(-1.0),
            c["max_ms"].as_f64().unwrap_or(-1.0),
        );
        assert!(0.0 <= p50 && p50 <= p99 && p99 <= max, "{dut}: {c}");
        assert_eq!(c["keepalive_s"].as_f64(), Some(3.0), "{dut}: {c}");
        let gap = c["max_gap_s"].as_f64().unwrap_or(-1.0);
        assert!(gap > 0.0 && gap < 60.0, "{dut}: {c}");
        assert!(c["late_gaps"].as_u64().is_some(), "{dut}: {c}");
    }
    check_svg(&out.join(format!("latency-cdf-{case}.svg")));
    check_svg(&out.join(format!("timeline-{case}.svg")));
    let _ = std::fs::remove_dir_all(&out);
}

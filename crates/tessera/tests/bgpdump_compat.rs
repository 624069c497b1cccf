//! `tessera mrt dump -m` must print exactly what Debian's `bgpdump -m` prints
//! (see docs/bgpdump-format.md). For every shared MRT file both programs run
//! side by side; their stdout is compared line by line as it streams, so the
//! 600k-line files are never held in memory twice.
//!
//! When `bgpdump` is not installed each test prints `SKIP` and passes, unless
//! `TESSERA_REQUIRE_TOOLS=1` is set, in which case it fails.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

fn data_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mrt");
    assert!(
        d.is_dir(),
        "shared MRT data missing: expected {} (see /work/shared/data/mrt/README.md)",
        d.display()
    );
    d
}

fn bgpdump_available() -> bool {
    match Command::new("bgpdump")
        .arg("-T")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(_) => true,
        Err(_) => {
            if std::env::var("TESSERA_REQUIRE_TOOLS").as_deref() == Ok("1") {
                panic!("bgpdump is not installed and TESSERA_REQUIRE_TOOLS=1");
            }
            eprintln!("SKIP: bgpdump is not installed; bgpdump_compat not checked");
            false
        }
    }
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn")
}

/// Drains a child's stderr on a thread so a chatty child cannot block.
fn drain_stderr(child: &mut Child) -> std::thread::JoinHandle<String> {
    let mut err = child.stderr.take().expect("stderr piped");
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    })
}

/// Outcome of one comparison.
struct Diff {
    lines: u64,
    first: Vec<String>,
    ours_stderr: String,
    ours_ok: bool,
}

fn compare(file: &str) -> Diff {
    let path = data_dir().join(file);
    assert!(path.is_file(), "missing shared file {}", path.display());

    let mut theirs = spawn(Command::new("bgpdump").arg("-m").arg(&path));
    let mut ours = spawn(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["mrt", "dump", "-m"])
            .arg(&path),
    );
    let their_err = drain_stderr(&mut theirs);
    let our_err = drain_stderr(&mut ours);

    let mut a = BufReader::with_capacity(1 << 16, theirs.stdout.take().expect("stdout"));
    let mut b = BufReader::with_capacity(1 << 16, ours.stdout.take().expect("stdout"));
    let (mut la, mut lb) = (Vec::new(), Vec::new());
    let mut n = 0u64;
    let mut first = Vec::new();
    loop {
        la.clear();
        lb.clear();
        let ra = a.read_until(b'\n', &mut la).expect("read bgpdump");
        let rb = b.read_until(b'\n', &mut lb).expect("read tessera");
        if ra == 0 && rb == 0 {
            break;
        }
        n += 1;
        if la != lb && first.len() < 5 {
            first.push(format!(
                "line {n}:\n  bgpdump: {}\n  tessera: {}",
                String::from_utf8_lossy(&la).trim_end(),
                String::from_utf8_lossy(&lb).trim_end()
            ));
        }
    }
    let _ = theirs.wait();
    let status = ours.wait().expect("wait tessera");
    let _ = their_err.join();
    Diff {
        lines: n,
        first,
        ours_stderr: our_err.join().unwrap_or_default(),
        ours_ok: status.success(),
    }
}

/// Complete files: identical stdout and a successful exit.
fn check(file: &str, expect_lines: u64) {
    if !bgpdump_available() {
        return;
    }
    let d = compare(file);
    assert!(
        d.first.is_empty(),
        "{file}: output differs from bgpdump -m:\n{}",
        d.first.join("\n")
    );
    assert_eq!(d.lines, expect_lines, "{file}: line count");
    assert!(d.ours_ok, "{file}: tessera failed: {}", d.ours_stderr);
}

/// Truncated files: identical stdout; unlike bgpdump (exit 0) tessera reports
/// the error with its byte offset and exits non-zero.
fn check_truncated(file: &str, expect_lines: u64) {
    if !bgpdump_available() {
        return;
    }
    let d = compare(file);
    assert!(
        d.first.is_empty(),
        "{file}: output differs from bgpdump -m:\n{}",
        d.first.join("\n")
    );
    assert_eq!(d.lines, expect_lines, "{file}: line count");
    assert!(!d.ours_ok, "{file}: truncated input must exit non-zero");
    assert!(
        d.ours_stderr.contains("offset"),
        "{file}: stderr must name the byte offset, got: {}",
        d.ours_stderr
    );
}

#[test]
fn jinx_rib() {
    check("routeviews.route-views.jinx.ribs.1401487200.bz2", 503_590);
}

#[test]
fn rib_v6() {
    check("rib.bz2", 609_246);
}

#[test]
fn rib_first_mb_truncated() {
    check_truncated("rib.20140523.0600_firstMB.bz2", 270_005);
}

#[test]
fn rib6_first_mb_truncated() {
    check_truncated("rib6.20151101.0600_firstMB.bz2", 149_578);
}

#[test]
fn bview_table_dump_v1() {
    check("bview.20020722.2337.gz", 115_521);
}

#[test]
fn bview_add_path_v4() {
    check("bview.ipv4_unicast_add_path.gz", 62);
}

#[test]
fn bview_add_path_v6() {
    check("bview.ipv6_unicast_add_path.gz", 62);
}

#[test]
fn updates_2019() {
    check("updates.20190101.0000.gz", 162_617);
}

#[test]
fn updates_2016() {
    check("updates.20160811.1600.gz", 41_234);
}

#[test]
fn update_v6() {
    check("update.bz2", 25_642);
}

#[test]
fn jinx_updates() {
    check("routeviews.route-views.jinx.updates.1401493500.bz2", 1_354);
}

#[test]
fn updates_et_header() {
    check("updates.et-header.2015.gz", 577_744);
}

//! `tessera mrt dump --json`, `mrt stats` and `mrt write` on every shared
//! MRT file (see /work/shared/data/mrt/README.md for the expected numbers).

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::thread::JoinHandle;

/// A shared MRT file, `$CARGO_MANIFEST_DIR/../../../shared/data/mrt/NAME`;
/// panics with a clear message when it is missing (these tests are about
/// real data and must not pass vacuously).
fn mrt_file(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mrt");
    assert!(
        dir.is_dir(),
        "shared MRT data missing: expected {} (see /work/shared/data/mrt/README.md)",
        dir.display()
    );
    let p = dir.join(name);
    assert!(p.is_file(), "shared MRT file missing: {}", p.display());
    p
}

/// A running `tessera` whose stdout is read line by line.
struct Run {
    child: Child,
    out: BufReader<ChildStdout>,
    err: JoinHandle<String>,
}

impl Run {
    fn start(args: &[&str], file: &Path) -> Run {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(args)
            .arg(file)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tessera");
        let mut e = child.stderr.take().expect("stderr piped");
        // Drained on a thread so that a chatty stderr cannot block the child.
        let err = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = e.read_to_string(&mut s);
            s
        });
        let out = BufReader::with_capacity(1 << 16, child.stdout.take().expect("stdout piped"));
        Run { child, out, err }
    }

    /// The next line without its newline; `false` at the end.
    fn line(&mut self, buf: &mut String) -> bool {
        buf.clear();
        let n = self.out.read_line(buf).expect("read tessera stdout");
        if buf.ends_with('\n') {
            buf.pop();
        }
        n > 0
    }

    /// Waits; returns (exit success, stderr).
    fn finish(mut self) -> (bool, String) {
        let ok = self.child.wait().expect("wait tessera").success();
        (ok, self.err.join().unwrap_or_default())
    }
}

/// Checks that a truncated file's run failed with the offset on stderr and
/// that a complete file's run succeeded.
fn check_exit(file: &str, truncated: bool, ok: bool, stderr: &str) {
    if truncated {
        assert!(!ok, "{file}: truncated input must exit non-zero");
        assert!(stderr.contains("offset"), "{file}: stderr: {stderr}");
    } else {
        assert!(ok, "{file}: tessera failed: {stderr}");
    }
}

fn s<'a>(v: &'a Value, key: &str, line: &str) -> &'a str {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{key} is not a string in {line}"))
}

fn n(v: &Value, key: &str, line: &str) -> u64 {
    v.get(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{key} is not an unsigned integer in {line}"))
}

/// A number, or `null` read as the `-m` default 0.
fn n_or_zero(v: &Value, key: &str, line: &str) -> u64 {
    match v.get(key) {
        Some(Value::Null) => 0,
        _ => n(v, key, line),
    }
}

fn str_list(v: &Value, key: &str, line: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{key} is not an array in {line}"))
        .iter()
        .map(|x| x.as_str().expect("string element").to_owned())
        .collect()
}

/// Compares one JSON object with the `-m` line of the same entry, field by
/// field (docs/bgpdump-format.md). Returns the number of large and
/// extended communities the object carries (which `-m` does not show).
fn same_entry(m: &str, j: &str) -> (usize, usize) {
    let v: Value = serde_json::from_str(j).unwrap_or_else(|e| panic!("bad JSON ({e}): {j}"));
    assert!(v.is_object(), "not an object: {j}");
    let f: Vec<&str> = m.split('|').collect();
    let ctx = || format!("\n  -m:   {m}\n  json: {j}");
    let get = |i: usize| *f.get(i).unwrap_or_else(|| panic!("short -m line{}", ctx()));
    let ty = s(&v, "type", j);
    assert_eq!(get(0), ty, "type{}", ctx());
    let (ts, us) = (n(&v, "timestamp", j), n(&v, "microseconds", j));
    let time = if ty.starts_with("BGP4MP_ET") {
        format!("{ts}.{us:06}")
    } else {
        assert_eq!(us, 0, "microseconds outside BGP4MP_ET{}", ctx());
        ts.to_string()
    };
    assert_eq!(get(1), time, "time{}", ctx());
    let entry = s(&v, "entry", j);
    assert_eq!(get(2), entry, "entry{}", ctx());
    assert_eq!(get(3), s(&v, "peer_ip", j), "peer_ip{}", ctx());
    assert_eq!(get(4), n(&v, "peer_as", j).to_string(), "peer_as{}", ctx());
    if entry == "STATE" {
        assert_eq!(get(5), n(&v, "old_state", j).to_string(), "{}", ctx());
        assert_eq!(get(6), n(&v, "new_state", j).to_string(), "{}", ctx());
        assert_eq!(f.len(), 7, "{}", ctx());
        return (0, 0);
    }
    assert_eq!(get(5), s(&v, "prefix", j), "prefix{}", ctx());
    let mut i = 6;
    if ty.ends_with("_AP") {
        assert_eq!(get(6), n(&v, "path_id", j).to_string(), "path_id{}", ctx());
        i = 7;
    } else {
        assert_eq!(v.get("path_id"), Some(&Value::Null), "path_id{}", ctx());
    }
    if entry == "W" {
        assert_eq!(f.len(), i, "{}", ctx());
        return (0, 0);
    }
    assert!(entry == "A" || entry == "B", "entry{}", ctx());
    assert_eq!(get(i), s(&v, "as_path", j), "as_path{}", ctx());
    assert_eq!(get(i + 1), s(&v, "origin", j), "origin{}", ctx());
    let nh = match v.get("next_hop") {
        Some(Value::Null) => "",
        _ => s(&v, "next_hop", j),
    };
    assert_eq!(get(i + 2), nh, "next_hop{}", ctx());
    let lp = n_or_zero(&v, "local_pref", j).to_string();
    assert_eq!(get(i + 3), lp, "local_pref{}", ctx());
    let med = n_or_zero(&v, "med", j).to_string();
    assert_eq!(get(i + 4), med, "med{}", ctx());
    let comms = str_list(&v, "communities", j).join(" ");
    assert_eq!(get(i + 5), comms, "communities{}", ctx());
    let ag = match v.get("atomic_aggregate") {
        Some(Value::Bool(true)) => "AG",
        Some(Value::Bool(false)) => "NAG",
        _ => panic!("atomic_aggregate{}", ctx()),
    };
    assert_eq!(get(i + 6), ag, "{}", ctx());
    let aggr = match v.get("aggregator") {
        Some(Value::Null) => String::new(),
        Some(a) => format!("{} {}", n(a, "as", j), s(a, "ip", j)),
        None => panic!("aggregator missing{}", ctx()),
    };
    assert_eq!(get(i + 7), aggr, "aggregator{}", ctx());
    assert_eq!(f.len(), i + 9, "{}", ctx());
    let large = str_list(&v, "large_communities", j);
    for c in &large {
        let parts: Vec<&str> = c.split(':').collect();
        assert_eq!(parts.len(), 3, "large community {c}{}", ctx());
        assert!(parts.iter().all(|p| p.parse::<u32>().is_ok()), "{c}");
    }
    let ext = str_list(&v, "extended_communities", j);
    for c in &ext {
        assert!(
            c.len() == 16 && c.bytes().all(|b| b.is_ascii_hexdigit()),
            "{c}"
        );
    }
    (large.len(), ext.len())
}

/// Runs `dump -m` and `dump --json` side by side and compares every line.
/// Returns (lines, large communities, extended communities).
fn json_vs_m(file: &str, lines: u64, truncated: bool) -> (u64, usize, usize) {
    let path = mrt_file(file);
    let mut m = Run::start(&["mrt", "dump", "-m"], &path);
    let mut j = Run::start(&["mrt", "dump", "--json"], &path);
    let (mut lm, mut lj) = (String::new(), String::new());
    let (mut count, mut large, mut ext) = (0u64, 0, 0);
    loop {
        let (a, b) = (m.line(&mut lm), j.line(&mut lj));
        assert_eq!(a, b, "{file}: line counts differ after {count} lines");
        if !a {
            break;
        }
        count += 1;
        let (l, e) = same_entry(&lm, &lj);
        large += l;
        ext += e;
    }
    for r in [m.finish(), j.finish()] {
        check_exit(file, truncated, r.0, &r.1);
    }
    assert_eq!(count, lines, "{file}: object count");
    (count, large, ext)
}

macro_rules! json_tests {
    ($($name:ident: $file:expr, $lines:expr, $trunc:expr;)*) => {$(
        #[test]
        fn $name() {
            json_vs_m($file, $lines, $trunc);
        }
    )*};
}

json_tests! {
    json_jinx_rib: "routeviews.route-views.jinx.ribs.1401487200.bz2", 503_590, false;
    json_rib_v6: "rib.bz2", 609_246, false;
    json_rib_first_mb: "rib.20140523.0600_firstMB.bz2", 270_005, true;
    json_rib6_first_mb: "rib6.20151101.0600_firstMB.bz2", 149_578, true;
    json_bview_v1: "bview.20020722.2337.gz", 115_521, false;
    json_add_path_v4: "bview.ipv4_unicast_add_path.gz", 62, false;
    json_add_path_v6: "bview.ipv6_unicast_add_path.gz", 62, false;
    json_updates_2016: "updates.20160811.1600.gz", 41_234, false;
    json_update_v6: "update.bz2", 25_642, false;
    json_jinx_updates: "routeviews.route-views.jinx.updates.1401493500.bz2", 1_354, false;
    json_et_header: "updates.et-header.2015.gz", 577_744, false;
}

/// The 2019 RIS file carries large communities (RFC 8092), which only the
/// JSON output shows.
#[test]
fn json_updates_2019_has_large_communities() {
    let (_, large, ext) = json_vs_m("updates.20190101.0000.gz", 162_617, false);
    assert!(large > 0, "no large communities found");
    assert!(ext > 0, "no extended communities found");
}

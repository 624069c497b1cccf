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

/// What the data README lists for one file.
struct Expect {
    file: &'static str,
    records: u64,
    /// (type/subtype name, count); together they cover every record.
    by_type: &'static [(&'static str, u64)],
    peers: u64,
    peer_table: u64,
    prefixes: (u64, u64),
    /// First and last header timestamps (epoch seconds).
    span: (u64, u64),
    truncated: bool,
}

const EXPECT: &[Expect] = &[
    Expect {
        file: "routeviews.route-views.jinx.ribs.1401487200.bz2",
        records: 497_408,
        by_type: &[
            ("TABLE_DUMP_V2/PEER_INDEX_TABLE", 1),
            ("TABLE_DUMP_V2/RIB_IPV4_UNICAST", 497_323),
            ("TABLE_DUMP_V2/RIB_IPV6_UNICAST", 84),
        ],
        peers: 14,
        peer_table: 14,
        prefixes: (497_323, 84),
        span: (1_401_487_200, 1_401_487_201),
        truncated: false,
    },
    Expect {
        file: "rib.bz2",
        records: 25_879,
        by_type: &[
            ("TABLE_DUMP_V2/PEER_INDEX_TABLE", 1),
            ("TABLE_DUMP_V2/RIB_IPV6_UNICAST", 25_878),
        ],
        peers: 27,
        peer_table: 29,
        prefixes: (0, 25_878),
        span: (1_442_923_200, 1_442_923_201),
        truncated: false,
    },
    Expect {
        file: "rib.20140523.0600_firstMB.bz2",
        records: 9_073,
        by_type: &[
            ("TABLE_DUMP_V2/PEER_INDEX_TABLE", 1),
            ("TABLE_DUMP_V2/RIB_IPV4_UNICAST", 9_072),
        ],
        peers: 35,
        peer_table: 47,
        prefixes: (9_072, 0),
        span: (1_400_824_800, 1_400_824_800),
        truncated: true,
    },
    Expect {
        file: "rib6.20151101.0600_firstMB.bz2",
        records: 6_871,
        by_type: &[
            ("TABLE_DUMP_V2/PEER_INDEX_TABLE", 1),
            ("TABLE_DUMP_V2/RIB_IPV6_UNICAST", 6_870),
        ],
        peers: 27,
        peer_table: 29,
        prefixes: (0, 6_870),
        span: (1_446_357_600, 1_446_357_600),
        truncated: true,
    },
    Expect {
        file: "bview.20020722.2337.gz",
        records: 115_521,
        by_type: &[("TABLE_DUMP/AFI_IPV4", 115_521)],
        peers: 36,
        peer_table: 0,
        prefixes: (112_988, 0),
        span: (1_027_381_055, 1_027_381_057),
        truncated: false,
    },
    Expect {
        file: "bview.ipv4_unicast_add_path.gz",
        records: 32,
        by_type: &[
            ("TABLE_DUMP_V2/PEER_INDEX_TABLE", 1),
            ("TABLE_DUMP_V2/RIB_IPV4_UNICAST_ADDPATH", 31),
        ],
        peers: 3,
        peer_table: 3,
        prefixes: (31, 0),
        span: (1_452_168_107, 1_452_168_107),
        truncated: false,
    },
    Expect {
        file: "bview.ipv6_unicast_add_path.gz",
        records: 32,
        by_type: &[
            ("TABLE_DUMP_V2/PEER_INDEX_TABLE", 1),
            ("TABLE_DUMP_V2/RIB_IPV6_UNICAST_ADDPATH", 31),
        ],
        peers: 3,
        peer_table: 3,
        prefixes: (0, 31),
        span: (1_452_169_448, 1_452_169_448),
        truncated: false,
    },
    Expect {
        file: "updates.20190101.0000.gz",
        records: 54_514,
        by_type: &[
            ("BGP4MP/MESSAGE_AS4", 54_471),
            ("BGP4MP/STATE_CHANGE_AS4", 43),
        ],
        peers: 76,
        peer_table: 0,
        prefixes: (18_251, 249),
        span: (1_546_300_800, 1_546_301_099),
        truncated: false,
    },
    Expect {
        file: "updates.20160811.1600.gz",
        records: 17_406,
        by_type: &[
            ("BGP4MP/MESSAGE_AS4", 17_384),
            ("BGP4MP/STATE_CHANGE_AS4", 22),
        ],
        peers: 40,
        peer_table: 0,
        prefixes: (1_623, 94),
        span: (1_470_931_200, 1_470_931_499),
        truncated: false,
    },
    Expect {
        file: "update.bz2",
        records: 15_044,
        by_type: &[("BGP4MP/MESSAGE", 165), ("BGP4MP/MESSAGE_AS4", 14_879)],
        peers: 27,
        peer_table: 0,
        prefixes: (0, 392),
        span: (1_444_393_800, 1_444_394_700),
        truncated: false,
    },
    Expect {
        file: "routeviews.route-views.jinx.updates.1401493500.bz2",
        records: 644,
        by_type: &[("BGP4MP/MESSAGE_AS4", 644)],
        peers: 3,
        peer_table: 0,
        prefixes: (525, 1),
        span: (1_401_493_511, 1_401_494_382),
        truncated: false,
    },
    Expect {
        file: "updates.et-header.2015.gz",
        records: 89_686,
        by_type: &[
            ("BGP4MP_ET/MESSAGE", 1),
            ("BGP4MP_ET/MESSAGE_AS4", 89_681),
            ("BGP4MP_ET/STATE_CHANGE_AS4", 4),
        ],
        peers: 1,
        peer_table: 0,
        prefixes: (577_706, 0),
        span: (1_445_565_678, 1_445_565_715),
        truncated: false,
    },
];

fn expect(file: &str) -> &'static Expect {
    EXPECT
        .iter()
        .find(|e| e.file == file)
        .unwrap_or_else(|| panic!("no expectation for {file}"))
}

/// `mrt stats --json` against the README numbers.
fn stats_match_readme(file: &str) {
    let e = expect(file);
    let mut r = Run::start(&["mrt", "stats", "--json"], &mrt_file(file));
    let mut line = String::new();
    assert!(r.line(&mut line), "{file}: no stats output");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|err| panic!("{err}: {line}"));
    let mut rest = String::new();
    assert!(!r.line(&mut rest), "{file}: more than one line: {rest}");
    let (ok, stderr) = r.finish();
    // Stats report the error in the JSON instead of on stderr.
    assert_eq!(ok, !e.truncated, "{file}: exit status; stderr: {stderr}");
    let num = |k: &str| n(&v, k, &line);
    assert_eq!(num("records"), e.records, "{file}: records");
    assert_eq!(num("peers"), e.peers, "{file}: peers");
    assert_eq!(num("peer_table_size"), e.peer_table, "{file}: PIT");
    let (v4, v6) = e.prefixes;
    assert_eq!(num("prefixes"), v4 + v6, "{file}: prefixes");
    assert_eq!((num("prefixes_v4"), num("prefixes_v6")), (v4, v6), "{file}");
    assert_eq!((num("unknown"), num("malformed")), (0, 0), "{file}");
    let by_type = v["by_type"].as_object().expect("by_type object");
    assert_eq!(by_type.len(), e.by_type.len(), "{file}: {by_type:?}");
    for (name, count) in e.by_type {
        assert_eq!(
            by_type.get(*name).and_then(Value::as_u64),
            Some(*count),
            "{file}: {name}"
        );
    }
    let first = n(&v["first_time"], "epoch", &line);
    let last = n(&v["last_time"], "epoch", &line);
    assert_eq!((first, last), e.span, "{file}: time span");
    let compression = if file.ends_with(".bz2") {
        "bzip2"
    } else {
        "gzip"
    };
    assert_eq!(s(&v, "compression", &line), compression);
    assert!(
        num("bytes") > num("file_bytes"),
        "{file}: decompressed size"
    );
    if e.truncated {
        let off = n(&v["error"], "offset", &line);
        assert_eq!(off, num("bytes"), "{file}: error offset ends the records");
        assert!(s(&v["error"], "message", &line).contains("truncated"));
    } else {
        assert_eq!(v["error"], Value::Null, "{file}");
    }
}

macro_rules! stats_tests {
    ($($name:ident: $file:expr;)*) => {$(
        #[test]
        fn $name() {
            stats_match_readme($file);
        }
    )*};
}

stats_tests! {
    stats_jinx_rib: "routeviews.route-views.jinx.ribs.1401487200.bz2";
    stats_rib_v6: "rib.bz2";
    stats_rib_first_mb: "rib.20140523.0600_firstMB.bz2";
    stats_rib6_first_mb: "rib6.20151101.0600_firstMB.bz2";
    stats_bview_v1: "bview.20020722.2337.gz";
    stats_add_path_v4: "bview.ipv4_unicast_add_path.gz";
    stats_add_path_v6: "bview.ipv6_unicast_add_path.gz";
    stats_updates_2019: "updates.20190101.0000.gz";
    stats_updates_2016: "updates.20160811.1600.gz";
    stats_update_v6: "update.bz2";
    stats_jinx_updates: "routeviews.route-views.jinx.updates.1401493500.bz2";
    stats_et_header: "updates.et-header.2015.gz";
}

/// The human-readable form names types and shows the ET microseconds.
#[test]
fn stats_text_form() {
    let mut r = Run::start(&["mrt", "stats"], &mrt_file("updates.et-header.2015.gz"));
    let mut all = String::new();
    let mut line = String::new();
    while r.line(&mut line) {
        all.push_str(&line);
        all.push('\n');
    }
    let (ok, stderr) = r.finish();
    assert!(ok, "{stderr}");
    for want in [
        "records: 89686\n",
        "  BGP4MP_ET/MESSAGE_AS4: 89681\n",
        "peers: 1 with routes",
        "prefixes: 577706 (IPv4 577706, IPv6 0)\n",
        "time span: 2015-10-23T02:01:18.509481Z - 2015-10-23T02:01:55.574100Z \
         (epoch 1445565678 - 1445565715)\n",
        "compression: gzip, 3116363 bytes stored",
        "error: none\n",
    ] {
        assert!(all.contains(want), "missing {want:?} in:\n{all}");
    }
}

/// A temporary file removed on drop.
struct Temp(PathBuf);

impl Temp {
    fn new(tag: &str) -> Temp {
        let name = format!("tessera-mrt-cli-{}-{tag}", std::process::id());
        Temp(std::env::temp_dir().join(name))
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `tessera mrt write IN OUT [--compress C]`; returns (success, stdout,
/// stderr).
fn mrt_write(input: &Path, output: &Path, compress: &str) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["mrt", "write", "--compress", compress])
        .arg(input)
        .arg(output)
        .output()
        .expect("run tessera mrt write");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Decompresses a shared file, keeping the bytes decoded before a
/// truncation error; returns them and whether an error ended the stream.
fn decompress(path: &Path) -> (Vec<u8>, bool) {
    let f = std::fs::File::open(path).expect("open input");
    let mut r: Box<dyn Read> = if path.extension().is_some_and(|e| e == "bz2") {
        Box::new(bzip2::read::MultiBzDecoder::new(f))
    } else {
        Box::new(flate2::read::MultiGzDecoder::new(f))
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return (out, false),
            Ok(k) => out.extend_from_slice(&buf[..k]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return (out, true),
        }
    }
}

/// Decode -> encode -> decode: `dump -m` of the rewritten file equals
/// `dump -m` of the input (up to the damage for truncated input), and the
/// rewritten file is the decompressed input byte for byte (its complete
/// records, for truncated input).
fn write_roundtrip(file: &str) {
    let e = expect(file);
    let input = mrt_file(file);
    let out = Temp::new(&format!("{file}.mrt"));
    let (ok, stdout, stderr) = mrt_write(&input, &out.0, "none");
    assert_eq!(ok, !e.truncated, "{file}: write exit status: {stderr}");
    assert!(
        stdout.contains(&format!("{} records written", e.records)),
        "{file}: summary: {stdout}"
    );
    assert_eq!(stdout.lines().count(), 1, "{file}: one-line summary");

    let mut a = Run::start(&["mrt", "dump", "-m"], &input);
    let mut b = Run::start(&["mrt", "dump", "-m"], &out.0);
    let (mut la, mut lb) = (String::new(), String::new());
    let mut lines = 0u64;
    loop {
        let (ra, rb) = (a.line(&mut la), b.line(&mut lb));
        assert_eq!(ra, rb, "{file}: line counts differ after {lines} lines");
        if !ra {
            break;
        }
        lines += 1;
        assert_eq!(la, lb, "{file}: line {lines} differs after mrt write");
    }
    assert!(lines > 0, "{file}: no output");
    let (ok_in, err_in) = a.finish();
    check_exit(file, e.truncated, ok_in, &err_in);
    let (ok_out, err_out) = b.finish();
    assert!(
        ok_out,
        "{file}: the rewritten file must read cleanly: {err_out}"
    );

    let written = std::fs::read(&out.0).expect("read output");
    let (original, damaged) = decompress(&input);
    assert_eq!(damaged, e.truncated, "{file}: decompressor verdict");
    if e.truncated {
        // Only whole records are written: a strict prefix of the input.
        assert!(written.len() < original.len(), "{file}");
        assert!(original.starts_with(&written), "{file}: not a prefix");
    } else {
        assert_eq!(written.len(), original.len(), "{file}: length");
        assert!(written == original, "{file}: bytes differ");
    }
}

macro_rules! write_tests {
    ($($name:ident: $file:expr;)*) => {$(
        #[test]
        fn $name() {
            write_roundtrip($file);
        }
    )*};
}

write_tests! {
    write_jinx_rib: "routeviews.route-views.jinx.ribs.1401487200.bz2";
    write_rib_v6: "rib.bz2";
    write_rib_first_mb: "rib.20140523.0600_firstMB.bz2";
    write_rib6_first_mb: "rib6.20151101.0600_firstMB.bz2";
    write_bview_v1: "bview.20020722.2337.gz";
    write_add_path_v4: "bview.ipv4_unicast_add_path.gz";
    write_add_path_v6: "bview.ipv6_unicast_add_path.gz";
    write_updates_2019: "updates.20190101.0000.gz";
    write_updates_2016: "updates.20160811.1600.gz";
    write_update_v6: "update.bz2";
    write_jinx_updates: "routeviews.route-views.jinx.updates.1401493500.bz2";
    write_et_header: "updates.et-header.2015.gz";
}

/// Compressed output reads back to the same records, for both codecs.
#[test]
fn write_compressed_outputs() {
    let input = mrt_file("routeviews.route-views.jinx.updates.1401493500.bz2");
    let (plain, _) = decompress(&input);
    for (codec, magic) in [("gzip", &[0x1f, 0x8b][..]), ("bzip2", b"BZh")] {
        let out = Temp::new(&format!("compressed.{codec}"));
        let (ok, stdout, stderr) = mrt_write(&input, &out.0, codec);
        assert!(ok, "{codec}: {stderr}");
        assert!(
            stdout.contains(&format!("({codec}): 644 records written")),
            "{stdout}"
        );
        let bytes = std::fs::read(&out.0).expect("read output");
        assert!(bytes.starts_with(magic), "{codec}: magic");
        let renamed = Temp::new(&format!(
            "compressed.{}",
            if codec == "gzip" { "gz" } else { "bz2" }
        ));
        std::fs::rename(&out.0, &renamed.0).expect("rename");
        let (back, damaged) = decompress(&renamed.0);
        assert!(!damaged && back == plain, "{codec}: round trip differs");
    }
}

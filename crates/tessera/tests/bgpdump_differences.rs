//! Proves each row of docs/bgpdump-format.md, "Differences from bgpdump
//! (documented, tested)": for every case a tiny MRT file is written to a
//! temporary directory, both `bgpdump -m FILE` (Debian 1.6.2) and
//! `tessera mrt dump -m FILE` run on it, and the test asserts
//!
//! * tessera's line, written out literally: the RFC-correct reading;
//! * bgpdump's output, wrong in exactly the documented way. Where bgpdump's
//!   behaviour is undefined (it reads out of bounds), only what is stable is
//!   asserted, and a comment says so.
//!
//! A control case, on which both programs agree byte for byte, shows the
//! harness itself works.
//!
//! The truncated-input row is proven by `bgpdump_compat.rs` on the shared
//! `_firstMB` files and is not repeated here.
//!
//! When `bgpdump` is not installed each test prints `SKIPPED: ...` and
//! passes, unless `TESSERA_REQUIRE_TOOLS=1` is set, in which case it fails.
//! Every child process is killed after [`CHILD_LIMIT`].

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use base::{Asn, Prefix, Safi};
use bgp_wire::{
    AsPath, AttrValue, Community, MpReach, NextHop, Nlri, Origin, ParseCtx, PathAttr, UpdateMessage,
};
use mrt::{Compression, MrtWriter, Peer, Peering, RibEntry};

/// A hung child (bgpdump looping on bad input) is killed after this long.
const CHILD_LIMIT: Duration = Duration::from_secs(20);

const TS: u32 = 1_700_000_000;

// ---------------------------------------------------------------- harness

/// A temporary directory, removed on drop (also when a test fails).
struct TempDir(PathBuf);

impl TempDir {
    fn new(case: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!(
            "tessera-bgpdump-diff-{}-{case}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("create temp dir");
        TempDir(d)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn bgpdump_available(case: &str) -> bool {
    let found = Command::new("bgpdump")
        .arg("-T")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !found {
        if std::env::var("TESSERA_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("bgpdump is not installed and TESSERA_REQUIRE_TOOLS=1");
        }
        eprintln!("SKIPPED: bgpdump is not installed; {case} not checked");
    }
    found
}

/// What one child did.
struct Run {
    status: ExitStatus,
    timed_out: bool,
    stdout: Vec<u8>,
    stderr: String,
}

impl Run {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// The signal that ended the child, if one did.
    fn signal(&self) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        self.status.signal()
    }
}

/// Runs `cmd` with pipes drained on threads (so a chatty child cannot
/// block), killing it after [`CHILD_LIMIT`].
fn run_bounded(cmd: &mut Command) -> Run {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn child");
    let mut out = child.stdout.take().expect("stdout piped");
    let mut err = child.stderr.take().expect("stderr piped");
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        String::from_utf8_lossy(&v).into_owned()
    });
    let deadline = Instant::now() + CHILD_LIMIT;
    let (status, timed_out) = loop {
        match child.try_wait().expect("wait child") {
            Some(s) => break (s, false),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                break (child.wait().expect("wait killed child"), true);
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    Run {
        status,
        timed_out,
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
    }
}

fn bgpdump(file: &Path) -> Run {
    let r = run_bounded(Command::new("bgpdump").arg("-m").arg(file));
    assert!(!r.timed_out, "bgpdump ran past {CHILD_LIMIT:?}");
    r
}

fn tessera(file: &Path) -> Run {
    let r = run_bounded(
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["mrt", "dump", "-m"])
            .arg(file),
    );
    assert!(!r.timed_out, "tessera ran past {CHILD_LIMIT:?}");
    r
}

/// Field `i` (0-based) of a `-m` line.
fn field(line: &str, i: usize) -> &str {
    line.split('|')
        .nth(i)
        .unwrap_or_else(|| panic!("no field {i} in {line:?}"))
}

// ----------------------------------------------------------- MRT builders

fn v4(a: u8, b: u8, c: u8, d: u8) -> Ipv4Addr {
    Ipv4Addr::new(a, b, c, d)
}

fn prefix(s: &str) -> Prefix {
    s.parse().expect("prefix literal")
}

fn peering() -> Peering {
    Peering {
        peer_as: Asn(65001),
        local_as: Asn(65000),
        interface_index: 0,
        peer_ip: IpAddr::V4(v4(192, 0, 2, 1)),
        local_ip: IpAddr::V4(v4(192, 0, 2, 2)),
    }
}

fn as_path() -> PathAttr {
    PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(vec![
        Asn(65001),
        Asn(65002),
    ])))
}

/// Writes one BGP4MP MESSAGE_AS4 record holding `u` (4-octet AS_PATH, as
/// RFC 6396 §4.4.3 requires for MESSAGE_AS4).
fn write_update(path: &Path, u: &UpdateMessage) {
    let mut msg = Vec::new();
    u.encode(ParseCtx::modern(), &mut msg)
        .expect("encode UPDATE");
    let mut w = MrtWriter::create(path, Compression::None).expect("create MRT file");
    w.write_bgp4mp_message(TS, None, &peering(), &msg)
        .expect("write BGP4MP");
    w.finish().expect("finish MRT file");
}

/// RIB-entry attribute bytes: 4-octet AS_PATH (RFC 6396 §4.3.4).
fn rib_attrs(attrs: &[PathAttr]) -> Vec<u8> {
    let mut b = Vec::new();
    for a in attrs {
        a.encode(ParseCtx::modern(), &mut b);
    }
    b
}

fn one_peer() -> Peer {
    Peer::new(v4(192, 0, 2, 1), IpAddr::V4(v4(192, 0, 2, 1)), Asn(65001))
}

/// PEER_INDEX_TABLE with one peer (index 0), then one RIB_IPV4_UNICAST
/// record for `pfx` with one entry naming `peer_index`.
fn write_rib_file(path: &Path, pfx: &str, peer_index: u16, attrs: &[u8], with_table: bool) {
    let mut w = MrtWriter::create(path, Compression::None).expect("create MRT file");
    if with_table {
        w.write_peer_index_table(TS, v4(192, 0, 2, 254), "", &[one_peer()])
            .expect("write PEER_INDEX_TABLE");
    }
    let e = RibEntry {
        peer_index,
        originated_time: TS,
        path_id: None,
        attributes: attrs,
    };
    w.write_rib(TS, 0, prefix(pfx), Safi::Unicast, false, &[e])
        .expect("write RIB");
    w.finish().expect("finish MRT file");
}

/// The attributes every case shares: ORIGIN, AS_PATH, NEXT_HOP.
fn base_attrs() -> Vec<PathAttr> {
    vec![
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        as_path(),
        PathAttr::new(AttrValue::NextHop(v4(192, 0, 2, 1))),
    ]
}

fn communities(n: u32) -> Vec<Community> {
    (0..n).map(|i| Community((65001 << 16) | i)).collect()
}

// ------------------------------------------------------------------ tests

/// Control: a well-formed UPDATE and a well-formed RIB entry; both
/// programs print the same lines and succeed. If this fails, the harness,
/// not the differences below, is at fault.
#[test]
fn control_both_agree() {
    if !bgpdump_available("control_both_agree") {
        return;
    }
    let dir = TempDir::new("control");
    let mut attrs = base_attrs();
    attrs.push(PathAttr::new(AttrValue::Med(50)));
    attrs.push(PathAttr::new(AttrValue::LocalPref(100)));
    attrs.push(PathAttr::new(AttrValue::Communities(communities(2))));
    let u = UpdateMessage {
        withdrawn: vec![],
        attributes: attrs.clone(),
        nlri: vec![Nlri::new(prefix("10.1.0.0/16"))],
    };
    let f = dir.file("update.mrt");
    write_update(&f, &u);
    let expect = "BGP4MP|1700000000|A|192.0.2.1|65001|10.1.0.0/16|65001 65002|IGP|\
                  192.0.2.1|100|50|65001:0 65001:1|NAG||\n";
    let (t, b) = (tessera(&f), bgpdump(&f));
    assert!(t.status.success(), "tessera failed: {}", t.stderr);
    assert!(b.status.success(), "bgpdump failed: {:?}", b.status);
    assert_eq!(t.text(), expect);
    assert_eq!(b.text(), expect);

    let f = dir.file("rib.mrt");
    write_rib_file(&f, "10.2.0.0/16", 0, &rib_attrs(&attrs), true);
    let expect = "TABLE_DUMP2|1700000000|B|192.0.2.1|65001|10.2.0.0/16|65001 65002|IGP|\
                  192.0.2.1|100|50|65001:0 65001:1|NAG||\n";
    let (t, b) = (tessera(&f), bgpdump(&f));
    assert!(t.status.success(), "tessera failed: {}", t.stderr);
    assert!(b.status.success(), "bgpdump failed: {:?}", b.status);
    assert_eq!(t.text(), expect);
    assert_eq!(b.text(), expect);
}

/// RFC 4271 §4.3 (and §5.1.4, §5.1.5): MULTI_EXIT_DISC and LOCAL_PREF are
/// unsigned 32-bit. bgpdump prints them with `%d` on `A` lines built from an
/// IPv4 MP_REACH_NLRI, so values >= 2^31 come out negative; on plain NLRI
/// lines (the second half) it prints them unsigned and both agree, which
/// pins the difference to exactly the documented path.
#[test]
fn local_pref_med_high_bit_from_ipv4_mp_reach() {
    if !bgpdump_available("local_pref_med_high_bit_from_ipv4_mp_reach") {
        return;
    }
    let dir = TempDir::new("high-bit");
    let big = |mut attrs: Vec<PathAttr>| {
        attrs.push(PathAttr::new(AttrValue::Med(3_000_000_001)));
        attrs.push(PathAttr::new(AttrValue::LocalPref(3_000_000_000)));
        attrs
    };
    let mp = MpReach::new(
        base::AfiSafi::IPV4_UNICAST,
        NextHop::V4(v4(192, 0, 2, 9)),
        vec![Nlri::new(prefix("10.3.0.0/16"))],
    );
    let u = UpdateMessage {
        withdrawn: vec![],
        attributes: big(vec![
            PathAttr::new(AttrValue::Origin(Origin::Igp)),
            as_path(),
            PathAttr::new(AttrValue::MpReach(mp)),
        ]),
        nlri: vec![],
    };
    let f = dir.file("mp-reach.mrt");
    write_update(&f, &u);
    let (t, b) = (tessera(&f), bgpdump(&f));
    assert!(t.status.success(), "tessera failed: {}", t.stderr);
    assert_eq!(
        t.text(),
        "BGP4MP|1700000000|A|192.0.2.1|65001|10.3.0.0/16|65001 65002|IGP|\
         192.0.2.9|3000000000|3000000001||NAG||\n"
    );
    // 3000000000 - 2^32 = -1294967296: the documented `%d` reading.
    assert_eq!(3_000_000_000u32 as i32, -1_294_967_296);
    assert!(b.status.success(), "bgpdump failed: {:?}", b.status);
    assert_eq!(
        b.text(),
        "BGP4MP|1700000000|A|192.0.2.1|65001|10.3.0.0/16|65001 65002|IGP|\
         192.0.2.9|-1294967296|-1294967295||NAG||\n",
        "bgpdump no longer prints LOCAL_PREF/MED signed: update the doc table"
    );

    // Control: the same values on plain IPv4 NLRI, where bgpdump is right.
    let u = UpdateMessage {
        withdrawn: vec![],
        attributes: big(base_attrs()),
        nlri: vec![Nlri::new(prefix("10.4.0.0/16"))],
    };
    let f = dir.file("nlri.mrt");
    write_update(&f, &u);
    let expect = "BGP4MP|1700000000|A|192.0.2.1|65001|10.4.0.0/16|65001 65002|IGP|\
                  192.0.2.1|3000000000|3000000001||NAG||\n";
    let (t, b) = (tessera(&f), bgpdump(&f));
    assert_eq!(t.text(), expect);
    assert_eq!(b.text(), expect);
}

/// RFC 6396 §4.3.4: a RIB entry's peer index refers to the
/// PEER_INDEX_TABLE. An index past its end names no peer: tessera skips
/// that entry only (the valid entry of the same record is printed), says
/// so on stderr, and exits 0. Debian's bgpdump 1.6.2 is built with
/// assertions on, so it aborts (SIGABRT) in
/// `process_mrtd_table_dump_v2_ipv4_unicast`; a build without them would
/// read past the peer array (undefined behaviour), so the test requires
/// only that bgpdump does not print tessera's output and exit cleanly.
#[test]
fn rib_peer_index_outside_peer_table() {
    if !bgpdump_available("rib_peer_index_outside_peer_table") {
        return;
    }
    let dir = TempDir::new("peer-index");
    let mut attrs = base_attrs();
    attrs.push(PathAttr::new(AttrValue::LocalPref(100)));
    let attrs = rib_attrs(&attrs);
    let entry = |peer_index| RibEntry {
        peer_index,
        originated_time: TS,
        path_id: None,
        attributes: &attrs,
    };
    let f = dir.file("rib.mrt");
    let mut w = MrtWriter::create(&f, Compression::None).expect("create MRT file");
    w.write_peer_index_table(TS, v4(192, 0, 2, 254), "", &[one_peer()])
        .expect("write PEER_INDEX_TABLE");
    // Index 5 of a one-peer table, then the valid index 0.
    w.write_rib(
        TS,
        0,
        prefix("10.6.0.0/16"),
        Safi::Unicast,
        false,
        &[entry(5), entry(0)],
    )
    .expect("write RIB");
    w.finish().expect("finish MRT file");

    let (t, b) = (tessera(&f), bgpdump(&f));
    assert!(t.status.success(), "tessera failed: {}", t.stderr);
    assert_eq!(
        t.text(),
        "TABLE_DUMP2|1700000000|B|192.0.2.1|65001|10.6.0.0/16|65001 65002|IGP|\
         192.0.2.1|100|0||NAG||\n"
    );
    assert!(
        t.stderr
            .contains("1 RIB entries name a peer missing from the PEER_INDEX_TABLE"),
        "tessera stderr: {}",
        t.stderr
    );
    assert!(
        !(b.status.success() && b.stdout == t.stdout),
        "bgpdump handled the bad peer index like tessera: update the doc table"
    );
    assert_eq!(
        b.signal(),
        Some(6),
        "expected bgpdump 1.6.2 to abort (SIGABRT); status {:?}, stderr {}",
        b.status,
        b.stderr
    );
    assert!(
        b.stderr.contains("peer_count"),
        "bgpdump stderr: {}",
        b.stderr
    );
}

/// A RIB record before any PEER_INDEX_TABLE. Not a difference: bgpdump
/// 1.6.2 checks for the missing table, logs `missing peer index table` (to
/// syslog) and skips the record; tessera skips its entries, reports them on stderr, exits 0.
/// Both print nothing. Kept so that the doc table stays accurate.
#[test]
fn rib_record_before_any_peer_table() {
    if !bgpdump_available("rib_record_before_any_peer_table") {
        return;
    }
    let dir = TempDir::new("no-peer-table");
    let f = dir.file("rib.mrt");
    write_rib_file(&f, "10.7.0.0/16", 0, &rib_attrs(&base_attrs()), false);
    let (t, b) = (tessera(&f), bgpdump(&f));
    assert!(t.status.success(), "tessera failed: {}", t.stderr);
    assert_eq!(t.text(), "");
    assert!(
        t.stderr
            .contains("1 RIB entries name a peer missing from the PEER_INDEX_TABLE"),
        "tessera stderr: {}",
        t.stderr
    );
    assert!(b.status.success(), "bgpdump status {:?}", b.status);
    assert_eq!(b.text(), "");
}

/// RFC 7606 §3 (g): when an attribute other than MP_REACH/MP_UNREACH
/// appears more than once, all but the first occurrence are discarded.
/// tessera prints the first occurrence; bgpdump asserts that the value it
/// stores is still unset (e.g. `assert(-1 == attr->local_pref)`) and aborts
/// with SIGABRT, printing nothing for the record. That holds for the
/// attributes bgpdump stores a value for; a repeated ATOMIC_AGGREGATE (a
/// flag only) or unknown attribute are the controls on which both agree.
#[test]
fn duplicate_attribute_aborts_bgpdump() {
    if !bgpdump_available("duplicate_attribute_aborts_bgpdump") {
        return;
    }
    let dir = TempDir::new("duplicate");
    let head = "BGP4MP|1700000000|A|192.0.2.1|65001|10.8.0.0/16|65001 65002|IGP|192.0.2.1|";
    let cases: [(&str, [AttrValue; 2], &str); 6] = [
        (
            "LOCAL_PREF",
            [AttrValue::LocalPref(100), AttrValue::LocalPref(200)],
            "100|0||NAG||\n",
        ),
        (
            "MULTI_EXIT_DISC",
            [AttrValue::Med(7), AttrValue::Med(8)],
            "0|7||NAG||\n",
        ),
        (
            "COMMUNITIES",
            [
                AttrValue::Communities(vec![Community(0x0001_0001)]),
                AttrValue::Communities(vec![Community(0x0002_0002)]),
            ],
            "0|0|1:1|NAG||\n",
        ),
        (
            "AS_PATH",
            [
                AttrValue::AsPath(AsPath::from_sequence(vec![Asn(7)])),
                AttrValue::AsPath(AsPath::from_sequence(vec![Asn(8)])),
            ],
            "0|0||NAG||\n",
        ),
        (
            "NEXT_HOP",
            [
                AttrValue::NextHop(v4(198, 51, 100, 1)),
                AttrValue::NextHop(v4(198, 51, 100, 2)),
            ],
            "0|0||NAG||\n",
        ),
        // Two more ORIGINs after the first (IGP, from base_attrs).
        (
            "ORIGIN",
            [
                AttrValue::Origin(Origin::Incomplete),
                AttrValue::Origin(Origin::Egp),
            ],
            "0|0||NAG||\n",
        ),
    ];
    for (name, dups, rest) in cases {
        let mut attrs = base_attrs();
        attrs.extend(dups.into_iter().map(PathAttr::new));
        let u = UpdateMessage {
            withdrawn: vec![],
            attributes: attrs,
            nlri: vec![Nlri::new(prefix("10.8.0.0/16"))],
        };
        let f = dir.file(&format!("dup-{name}.mrt"));
        write_update(&f, &u);
        let (t, b) = (tessera(&f), bgpdump(&f));
        assert!(t.status.success(), "{name}: tessera failed: {}", t.stderr);
        assert_eq!(t.text(), format!("{head}{rest}"), "{name}");
        assert_eq!(
            b.signal(),
            Some(6),
            "{name}: expected bgpdump to abort (SIGABRT); status {:?}, stdout {:?}, stderr {}",
            b.status,
            b.text(),
            b.stderr
        );
        assert!(
            b.stderr.contains("Assertion"),
            "{name}: bgpdump stderr: {}",
            b.stderr
        );
        assert_eq!(b.text(), "", "{name}");
    }

    // Controls: ATOMIC_AGGREGATE twice (bgpdump only sets a flag bit) and
    // an unknown optional transitive type twice (bgpdump keeps a list).
    let cases = [
        (AttrValue::AtomicAggregate, "0|0||AG||\n"),
        (
            AttrValue::Raw {
                type_code: 99,
                value: vec![1],
            },
            "0|0||NAG||\n",
        ),
    ];
    for (value, rest) in cases {
        let mut attrs = base_attrs();
        attrs.push(PathAttr::new(value.clone()));
        attrs.push(PathAttr::new(value));
        let u = UpdateMessage {
            withdrawn: vec![],
            attributes: attrs,
            nlri: vec![Nlri::new(prefix("10.8.0.0/16"))],
        };
        let f = dir.file("dup-accepted.mrt");
        write_update(&f, &u);
        let expect = format!("{head}{rest}");
        let (t, b) = (tessera(&f), bgpdump(&f));
        assert_eq!(t.text(), expect);
        assert!(b.status.success(), "bgpdump status {:?}", b.status);
        assert_eq!(b.text(), expect);
    }
}

/// RFC 1997: COMMUNITIES is a list of 4-octet values; a zero-length
/// attribute is an empty list (RFC 7606 §7.8 only requires a multiple of
/// four), so tessera prints an empty field. bgpdump builds an empty string
/// and prints it from its second byte, i.e. past the terminating NUL:
/// whatever follows on the heap (undefined behaviour). Observed: bytes of
/// an ASLR-dependent pointer, different on every run, and in about one run
/// in twelve nothing at all. So the garbage itself is not asserted; the
/// test asserts tessera's line, that bgpdump's fields before the community
/// field are right in every run, and that at least one of [`RUNS`] runs
/// prints something other than tessera's line (all of them printing the
/// empty field has odds of about 1e-21 on the observed rate).
#[test]
fn empty_communities_attribute() {
    const RUNS: usize = 20;
    if !bgpdump_available("empty_communities_attribute") {
        return;
    }
    let dir = TempDir::new("empty-communities");
    let mut attrs = base_attrs();
    attrs.push(PathAttr::new(AttrValue::Communities(vec![])));
    let u = UpdateMessage {
        withdrawn: vec![],
        attributes: attrs,
        nlri: vec![Nlri::new(prefix("10.9.0.0/16"))],
    };
    let f = dir.file("empty.mrt");
    write_update(&f, &u);
    let t = tessera(&f);
    assert!(t.status.success(), "tessera failed: {}", t.stderr);
    assert_eq!(
        t.text(),
        "BGP4MP|1700000000|A|192.0.2.1|65001|10.9.0.0/16|65001 65002|IGP|\
         192.0.2.1|0|0||NAG||\n"
    );
    // The eleven fields before the community field do not depend on the
    // out-of-bounds read.
    let head = "BGP4MP|1700000000|A|192.0.2.1|65001|10.9.0.0/16|65001 65002|IGP|\
                192.0.2.1|0|0|";
    let mut differs = 0;
    for _ in 0..RUNS {
        let b = bgpdump(&f);
        assert!(
            b.stdout.starts_with(head.as_bytes()),
            "bgpdump status {:?}, stdout {:?}",
            b.status,
            b.text()
        );
        if b.stdout != t.stdout {
            differs += 1;
        }
    }
    assert!(
        differs > 0,
        "bgpdump printed an empty community field in all {RUNS} runs: update the doc table"
    );
}

/// RFC 1997 sets no limit on the number of communities. bgpdump formats
/// them into one `BUFSIZ` (8192-byte) buffer with `snprintf`, so the text
/// stops at 8191 bytes, mid-community if it falls there, and the rest is
/// dropped without a word. 1000 communities `65534:60000`..`65534:60999`
/// (12 bytes each with the separator) need 12000 bytes; bgpdump prints the
/// first 8190 (it drops the leading space), i.e. 682 whole communities and
/// part of the next. tessera prints all 1000.
#[test]
fn many_communities_truncated_by_bgpdump() {
    if !bgpdump_available("many_communities_truncated_by_bgpdump") {
        return;
    }
    let dir = TempDir::new("many-communities");
    let comms: Vec<Community> = (0..1000)
        .map(|i| Community((65534 << 16) | (60000 + i)))
        .collect();
    let mut attrs = base_attrs();
    attrs.push(PathAttr::new(AttrValue::Communities(comms)));
    let u = UpdateMessage {
        withdrawn: vec![],
        attributes: attrs,
        nlri: vec![Nlri::new(prefix("10.10.0.0/16"))],
    };
    let f = dir.file("many.mrt");
    write_update(&f, &u);
    let (t, b) = (tessera(&f), bgpdump(&f));
    assert!(t.status.success(), "tessera failed: {}", t.stderr);

    let all: Vec<String> = (60000..61000).map(|v| format!("65534:{v}")).collect();
    let all = all.join(" ");
    let head = "BGP4MP|1700000000|A|192.0.2.1|65001|10.10.0.0/16|65001 65002|IGP|\
                192.0.2.1|0|0|";
    let tail = "|NAG||\n";
    assert_eq!(t.text(), format!("{head}{all}{tail}"));
    assert_eq!(field(&t.text(), 11).split(' ').count(), 1000);

    assert!(b.status.success(), "bgpdump status {:?}", b.status);
    let bt = b.text();
    assert!(bt.starts_with(head) && bt.ends_with(tail), "bgpdump: {bt}");
    let theirs = &bt[head.len()..bt.len() - tail.len()];
    assert_eq!(theirs.len(), 8190, "bgpdump community text length");
    assert_eq!(
        theirs,
        &all[..8190],
        "bgpdump's text is not a prefix of ours"
    );
    assert!(theirs.starts_with("65534:60000 ") && theirs.contains(" 65534:60681 "));
    assert!(
        !theirs.contains("65534:60682"),
        "bgpdump printed past 8 KiB"
    );
}

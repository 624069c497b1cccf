//! `tessera replay --mrt` end to end, on a trace `tessera sim` made:
//!
//! 1. `tessera sim topo` (60 ASes, degree 3-6), `tessera sim pick` (the
//!    most central AS of degree 5), `tessera sim run` (500 prefixes; the
//!    link to one neighbour fails and comes back, the link to another
//!    fails for good) with the BGP4MP_ET trace at that AS and a
//!    TABLE_DUMP_V2 snapshot after the simulation has settled;
//! 2. Debian's `bgpdump` reads both files without complaint and finds as
//!    many records (trace) and routes (snapshot) as the simulator wrote,
//!    and one `-m` line per prefix and state change that our reader finds;
//! 3. the trace replayed into a real BIRD and a real tesserad (each
//!    configured with the traced AS's number, so both drop looped paths as
//!    the simulated AS did; the trace's session events close and reopen the
//!    replayed sessions) converges at each monitor session to the same
//!    prefix count, the distinct prefixes of the simulator's snapshot; the
//!    snapshot itself replayed as a RIB dump into both (and into tesserad
//!    followed by the trace) converges to that count too.
//!
//! A second test checks the `--csv`, `--summary-csv` and `--json` files of
//! a replay into `tessera replay --sink` (mix2, paced at 50 times the
//! recorded speed; then at 20 UPDATEs/s), and a third that damaged or missing MRT input is a
//! one-line error, not a panic.
//!
//! Loopback only (127.14.0.0/16, local on Linux), ephemeral ports, no
//! root, no namespaces. Bounded: every command has a timeout, and a guard
//! kills the daemons and removes the work directory, also on failure.
//! `bird` and `bgpdump` are Debian packages that scripts/test installs;
//! missing, the test prints SKIP and passes unless TESSERA_REQUIRE_TOOLS=1
//! (scripts/test), where it fails.

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "support/bins.rs"]
mod bins;

use bins::tesserad;

const DUT_AS_GEN: u32 = 4_200_000_001;
const MONITOR_AS: u32 = 4_200_000_002;

fn tessera() -> &'static str {
    env!("CARGO_BIN_EXE_tessera")
}

/// Whether `tool` runs; fails the test under TESSERA_REQUIRE_TOOLS=1.
fn have(tool: &str, arg: &str) -> bool {
    let ok = Command::new(tool)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if !ok {
        if std::env::var("TESSERA_REQUIRE_TOOLS").as_deref() == Ok("1") {
            panic!("{tool} is not installed and TESSERA_REQUIRE_TOOLS=1");
        }
        eprintln!("SKIP: {tool} is not installed");
    }
    ok
}

/// Kills the children and removes the directory, whatever happened.
struct Guard {
    dir: PathBuf,
    children: Vec<Child>,
}

impl Guard {
    fn new(name: &str) -> Guard {
        let dir = std::env::temp_dir().join(format!("tessera-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Guard {
            dir,
            children: Vec::new(),
        }
    }

    fn path(&self, f: &str) -> PathBuf {
        self.dir.join(f)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The daemons die with the test thread that started them, even if the
/// test process is killed before its guard runs.
fn die_with_parent(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl(2) is async-signal-safe and touches no memory of the
    // parent; it is all the closure does.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        })
    }
}

/// Runs a command with a time bound; returns its output.
fn run(cmd: &mut Command, secs: u64) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let (out, err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let (o, e) = (read(Box::new(out)), read(Box::new(err)));
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} ran longer than {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: o.join().unwrap(),
        stderr: e.join().unwrap(),
    }
}

fn ok(cmd: &mut Command, secs: u64) -> String {
    let o = run(cmd, secs);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).to_string(),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(o.status.success(), "{cmd:?} failed:\n{out}\n{err}");
    out
}

/// A port free on `ip` now (the kernel's choice).
fn free_port(ip: Ipv4Addr) -> u16 {
    TcpListener::bind(SocketAddr::from((ip, 0)))
        .and_then(|l| l.local_addr())
        .expect("bind an ephemeral port")
        .port()
}

/// The number after `prefix` in `text`.
fn number_after(text: &str, prefix: &str) -> u64 {
    let i = text
        .find(prefix)
        .unwrap_or_else(|| panic!("no {prefix:?} in\n{text}"));
    text[i + prefix.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("no number after {prefix:?} in\n{text}"))
}

/// What the simulation wrote.
struct SimOut {
    asn: u32,
    /// The neighbour whose link failed and came back, and the one whose
    /// link failed for good.
    flapped: u32,
    cut: u32,
    trace: PathBuf,
    rib: PathBuf,
    records: u64,
    routes: u64,
    peers: u64,
}

/// `tessera sim topo`, `pick`, `run`: the trace and snapshot at the
/// most central AS of degree 5.
fn simulate(g: &Guard) -> SimOut {
    let topo = g.path("topo.txt");
    ok(
        Command::new(tessera())
            .args(["sim", "topo", "--nodes", "60", "--min-degree", "3"])
            .args(["--max-degree", "6", "--seed", "3", "--out"])
            .arg(&topo),
        60,
    );
    let pick = ok(
        Command::new(tessera())
            .args(["sim", "pick", "--degree", "5"])
            .arg(&topo),
        60,
    );
    let asn = number_after(&pick, "AS") as u32;
    let peers = number_after(&pick, "degree ");
    // Two of its neighbours: the link to the first fails and comes back,
    // the link to the second fails for good.
    let text = std::fs::read_to_string(&topo).unwrap();
    let nbs: Vec<u32> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<u32> = l
                .split('|')
                .take(2)
                .filter_map(|x| x.parse().ok())
                .collect();
            match f[..] {
                [a, b] if a == asn => Some(b),
                [a, b] if b == asn => Some(a),
                _ => None,
            }
        })
        .collect();
    assert_eq!(nbs.len() as u64, peers, "{text}");
    let (trace, rib) = (g.path("trace.mrt"), g.path("rib.mrt"));
    let out = ok(
        Command::new(tessera())
            .args(["sim", "run", "--import"])
            .arg(&topo)
            .args(["--total-prefixes", "500", "--seed", "3", "--quiet", "--at"])
            .arg(asn.to_string())
            .arg("--mrt")
            .arg(&trace)
            // Long after the initial announcement has settled (about
            // two minutes of simulated time with MRAI 30 s).
            .arg("--snapshot")
            .arg(format!("100000:{}", rib.display()))
            .arg("--link-down")
            .arg(format!("200:{asn}:{}", nbs[0]))
            .arg("--link-up")
            .arg(format!("300:{asn}:{}", nbs[0]))
            .arg("--link-down")
            .arg(format!("400:{asn}:{}", nbs[1])),
        120,
    );
    SimOut {
        flapped: nbs[0],
        cut: nbs[1],
        asn,
        trace,
        rib,
        records: number_after(&out, "trace: "),
        routes: number_after(&out, "100000.0s: "),
        peers,
    }
}

/// `bgpdump` output, asserting its stderr holds nothing but its banner.
fn bgpdump(args: &[&str], file: &Path) -> String {
    let o = run(Command::new("bgpdump").args(args).arg(file), 60);
    assert!(o.status.success(), "bgpdump {args:?} failed");
    let err = String::from_utf8_lossy(&o.stderr);
    for l in err.lines() {
        assert!(
            l.contains("logging to syslog"),
            "bgpdump {args:?} {}: {l}",
            file.display()
        );
    }
    String::from_utf8(o.stdout).expect("bgpdump prints text")
}

/// Distinct prefixes and routes of a TABLE_DUMP_V2 file, by our reader.
fn rib_counts(p: &Path) -> (u64, u64) {
    let mut rd = mrt::MrtReader::open(p).unwrap();
    let (mut prefixes, mut routes) = (HashSet::new(), 0u64);
    while let Some(r) = rd.next_record() {
        if let mrt::Body::Rib(r) = r.unwrap().body {
            prefixes.insert(r.prefix);
            routes += u64::from(r.entry_count);
        }
    }
    (prefixes.len() as u64, routes)
}

/// A DUT on loopback: its address, port and session addresses.
struct Dut {
    addr: Ipv4Addr,
    port: u16,
    /// Peer i is 127.14.x.(2 + i); the monitor 127.14.x.254.
    net: u8,
    pid: u32,
}

impl Dut {
    fn peer(&self, i: u64) -> Ipv4Addr {
        Ipv4Addr::new(127, 14, self.net, 2 + i as u8)
    }
    fn monitor(&self) -> Ipv4Addr {
        Ipv4Addr::new(127, 14, self.net, 254)
    }
}

/// The generator ASes the DUTs declare: one for every peer (the default
/// replay speaks as --local-as), or each recorded peer's own.
enum GenAs<'a> {
    One(u64),
    Recorded(&'a [u32]),
}

impl GenAs<'_> {
    fn list(&self) -> Vec<u32> {
        match self {
            GenAs::One(n) => vec![DUT_AS_GEN; *n as usize],
            GenAs::Recorded(l) => l.to_vec(),
        }
    }
}

fn start_tesserad(g: &mut Guard, asn: u32, peers: GenAs<'_>, net: u8) -> Dut {
    let addr = Ipv4Addr::new(127, 14, net, 1);
    let mut d = Dut {
        addr,
        port: free_port(addr),
        net,
        pid: 0,
    };
    let mut c = format!(
        "[router]\nid = \"{addr}\"\nasn = {asn}\nlisten = [\"{addr}:{}\"]\nhold_time = 90\n\
         pipeline = \"sequential\"\n[control]\nsocket = \"{}\"\n",
        d.port,
        g.path(&format!("ctl{net}.sock")).display()
    );
    for (i, gen_as) in peers.list().into_iter().enumerate() {
        let i = i as u64;
        c += &format!(
            "\n[[neighbor]]\nname = \"g{i}\"\naddress = \"{}\"\nremote_as = {gen_as}\n\
             passive = true\nfamilies = [\"ipv4-unicast\", \"ipv6-unicast\"]\nimport = \"accept\"\nexport = \"reject\"\n",
            d.peer(i)
        );
    }
    c += &format!(
        "\n[[neighbor]]\nname = \"monitor\"\naddress = \"{}\"\nremote_as = {MONITOR_AS}\n\
         passive = true\nfamilies = [\"ipv4-unicast\"]\nimport = \"reject\"\nexport = \"accept\"\n",
        d.monitor()
    );
    let conf = g.path(&format!("tesserad{net}.toml"));
    std::fs::write(&conf, c).unwrap();
    let log = std::fs::File::create(g.path(&format!("tesserad{net}.log"))).unwrap();
    let child = die_with_parent(&mut Command::new(tesserad()))
        .arg("-c")
        .arg(&conf)
        .args(["--log", "warn"])
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("start tesserad");
    d.pid = child.id();
    g.children.push(child);
    d
}

/// `enforce_first_as`: BIRD's check that a path starts with the
/// neighbour's AS (off by default in BIRD 2), turned on.
fn start_bird(g: &mut Guard, asn: u32, peers: GenAs<'_>, net: u8, enforce_first_as: bool) -> Dut {
    let addr = Ipv4Addr::new(127, 14, net, 1);
    let mut d = Dut {
        addr,
        port: free_port(addr),
        net,
        pid: 0,
    };
    // Loopback sessions are multihop for BIRD; next hops (the sessions'
    // own addresses) resolve recursively over lo's 127/8. Both families,
    // as the traced AS's neighbours send IPv6 End-of-RIB too.
    let common = format!(
        "  local {addr} port {} as {asn};\n  strict bind on;\n  passive on;\n  multihop 2;\n  hold time 90;\n{}",
        d.port,
        if enforce_first_as {
            "  enforce first as on;\n"
        } else {
            ""
        }
    );
    let mut c = format!(
        "router id {addr};\nlog \"{}\" all;\nprotocol device {{ }}\n\
         template bgp gen {{\n{common}  ipv4 {{ import all; export none; gateway recursive; }};\n\
         \x20 ipv6 {{ import all; export none; gateway recursive; next hop address ::1; }};\n}}\n",
        g.path(&format!("bird{net}.log")).display()
    );
    for (i, gen_as) in peers.list().into_iter().enumerate() {
        c += &format!(
            "protocol bgp g{i} from gen {{ neighbor {} as {gen_as}; }}\n",
            d.peer(i as u64)
        );
    }
    c += &format!(
        "protocol bgp monitor {{\n{common}  neighbor {} as {MONITOR_AS};\n  ipv4 {{ import none; export all; }};\n}}\n",
        d.monitor()
    );
    let conf = g.path(&format!("bird{net}.conf"));
    std::fs::write(&conf, c).unwrap();
    ok(Command::new("bird").arg("-p").arg("-c").arg(&conf), 10);
    let child = die_with_parent(&mut Command::new("bird"))
        .arg("-f")
        .arg("-c")
        .arg(&conf)
        .arg("-s")
        .arg(g.path(&format!("bird{net}.ctl")))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start bird");
    d.pid = child.id();
    g.children.push(child);
    d
}

/// `tessera replay --mrt FILES` into `d` with a monitor; its JSON result.
/// `recorded`: `--peer-as recorded` instead of `--local-as`.
fn replay_into(
    g: &Guard,
    d: &Dut,
    target_as: u32,
    files: &[&Path],
    tag: &str,
) -> serde_json::Value {
    replay_as(g, d, target_as, files, tag, false)
}

fn replay_as(
    g: &Guard,
    d: &Dut,
    target_as: u32,
    files: &[&Path],
    tag: &str,
    recorded: bool,
) -> serde_json::Value {
    let json = g.path(&format!("{tag}.json"));
    let mut cmd = Command::new(tessera());
    cmd.arg("replay");
    for f in files {
        cmd.arg("--mrt").arg(f);
    }
    if recorded {
        cmd.args(["--peer-as", "recorded"]);
    } else {
        cmd.args(["--local-as", &DUT_AS_GEN.to_string()]);
    }
    // The replay retries refused connects for --connect-timeout seconds,
    // which covers the daemon's start.
    let out = ok(
        cmd.arg("--target")
            .arg(format!("{}:{}", d.addr, d.port))
            .args(["--target-as", &target_as.to_string()])
            .arg("--source-base")
            .arg(d.peer(0).to_string())
            .arg("--monitor")
            .arg(d.monitor().to_string())
            .args(["--monitor-as", &MONITOR_AS.to_string()])
            .args(["--quiet", "1", "--timeout", "60", "--hold-after", "0"])
            .args(["--connect-timeout", "15"])
            .args(["--dut-pid", &d.pid.to_string()])
            .arg("--json")
            .arg(&json),
        120,
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["converged"], true, "{tag}: {out}\n{j:#}");
    assert_eq!(j["peers_failed"], 0, "{tag}: {out}");
    j
}

#[test]
fn sim_trace_reads_in_bgpdump_and_converges_in_bird_and_tesserad_to_the_sims_rib() {
    let has_tools = have("bgpdump", "-T") && have("bird", "--version");
    if !has_tools {
        return;
    }
    let mut g = Guard::new("replay-mrt");
    let s = simulate(&g);
    assert!(s.records > s.peers && s.routes > 0, "nothing simulated");

    // bgpdump reads the trace: one record per record written, one -m line
    // per announced and withdrawn prefix and per state change that our
    // reader finds.
    let full = bgpdump(&[], &s.trace);
    let records = full.lines().filter(|l| l.starts_with("TYPE:")).count() as u64;
    assert_eq!(records, s.records, "bgpdump records vs sim");
    let (w, sum) = replay::update_workload(&s.trace, &replay::UpdateOptions::default()).unwrap();
    assert_eq!(sum.malformed, 0);
    assert_eq!(
        sum.peers.len() as u64,
        s.peers,
        "one MRT peer per neighbour"
    );
    let state_changes: u64 = sum.peers.iter().map(|p| p.state_changes).sum();
    // Up at the start, down and up again; up, then down for good.
    let changes = |asn: u32| {
        sum.peers
            .iter()
            .find(|p| p.asn.0 == asn)
            .unwrap()
            .state_changes
    };
    assert_eq!(changes(s.flapped), 3);
    assert_eq!(changes(s.cut), 2);
    assert_eq!(w.total_messages() + state_changes, s.records);
    let m = bgpdump(&["-m"], &s.trace);
    assert_eq!(
        m.lines().count() as u64,
        w.total_prefixes() + w.total_withdrawn() + state_changes,
        "bgpdump -m lines vs our reader"
    );
    assert!(m.lines().all(|l| l.starts_with("BGP4MP_ET|")));

    // bgpdump reads the snapshot: one line per route.
    let (rib_prefixes, rib_routes) = rib_counts(&s.rib);
    assert_eq!(rib_routes, s.routes, "our reader vs sim");
    let m = bgpdump(&["-m"], &s.rib);
    assert_eq!(
        m.lines().count() as u64,
        s.routes,
        "bgpdump -m lines vs sim"
    );
    let distinct: HashSet<&str> = m.lines().filter_map(|l| l.split('|').nth(5)).collect();
    assert_eq!(distinct.len() as u64, rib_prefixes);
    assert!(rib_prefixes > 100, "a real table: {rib_prefixes}");

    // The trace into BIRD and into tesserad, each as the traced AS.
    let bird = start_bird(&mut g, s.asn, GenAs::One(s.peers), 1, false);
    let tsd = start_tesserad(&mut g, s.asn, GenAs::One(s.peers), 2);
    let jb = replay_into(&g, &bird, s.asn, &[&s.trace], "bird");
    let jt = replay_into(&g, &tsd, s.asn, &[&s.trace], "tesserad");
    assert_eq!(
        jb["monitor_prefixes"], rib_prefixes,
        "BIRD vs the sim's RIB"
    );
    assert_eq!(
        jt["monitor_prefixes"], rib_prefixes,
        "tesserad vs the sim's RIB"
    );
    assert_eq!(jt["updates_sent"], w.total_messages());
    for j in [&jb, &jt] {
        // One session reopened (the flapped link's), as the trace said.
        assert_eq!(j["sessions_opened"], s.peers + 1, "{j:#}");
        // --dut-pid: the daemon's cost is in the summary.
        assert!(j["dut_cpu_s"].as_f64().is_some(), "{j:#}");
        assert!(j["dut_peak_rss_kib"].as_u64().is_some_and(|k| k > 1000));
    }
    assert_eq!(jt["input"]["files"][0]["kind"], "update trace");

    // The snapshot as a RIB dump: the monitor reaches its prefix count;
    // then the snapshot followed by the trace, merged by peer. A fresh
    // daemon each, so that no route of an earlier run is still there.
    let tsd = start_tesserad(&mut g, s.asn, GenAs::One(s.peers), 3);
    let j = replay_into(&g, &tsd, s.asn, &[&s.rib], "rib");
    assert_eq!(j["expected_prefixes"], rib_prefixes);
    assert_eq!(j["monitor_prefixes"], rib_prefixes);
    assert_eq!(j["input"]["files"][0]["kind"], "RIB dump");
    let bird = start_bird(&mut g, s.asn, GenAs::One(s.peers), 5, false);
    let j = replay_into(&g, &bird, s.asn, &[&s.rib], "bird-rib");
    assert_eq!(j["monitor_prefixes"], rib_prefixes, "BIRD, the snapshot");
    let tsd = start_tesserad(&mut g, s.asn, GenAs::One(s.peers), 4);
    let j = replay_into(&g, &tsd, s.asn, &[&s.rib, &s.trace], "both");
    assert_eq!(j["monitor_prefixes"], rib_prefixes);
    assert_eq!(j["peers"], s.peers, "the files' peers merged");
    assert_eq!(j["input"]["files"][1]["kind"], "update trace");

    // --peer-as recorded: each session speaks as its recorded neighbour
    // and the DUTs declare one neighbour per recorded AS (the sessions'
    // order: the trace's first-seen order). tesserad at its defaults;
    // BIRD with its first-AS check on (BIRD 2 has it off by default), so
    // a path that did not start with the session's AS would be rejected
    // (and the count would fall short). The snapshot and the trace
    // together: paths of the RIB dump go out as recorded, not prepended.
    let ases_of = |files: &[PathBuf]| -> Vec<u32> {
        let p: replay::mrt_input::ParamsFn = std::sync::Arc::new(|i| replay::FeedParams {
            as_recorded: true,
            ..// The readers put each recorded peer's AS in place of 0.
            replay::FeedParams::ebgp(base::Asn(0), Ipv4Addr::new(127, 0, 0, i as u8))
        });
        let (_, sums) =
            replay::mrt_input::load(files, &replay::InputOptions::default(), &p).unwrap();
        replay::mrt_input::recorded_ases(&sums)
            .iter()
            .map(|a| a.0)
            .collect()
    };
    let trace_ases = ases_of(std::slice::from_ref(&s.trace));
    let both_ases = ases_of(&[s.rib.clone(), s.trace.clone()]);
    assert_eq!(trace_ases.len() as u64, s.peers);
    assert!(!trace_ases.contains(&s.asn));
    let bird = start_bird(&mut g, s.asn, GenAs::Recorded(&trace_ases), 6, true);
    let tsd = start_tesserad(&mut g, s.asn, GenAs::Recorded(&both_ases), 7);
    let jb = replay_as(&g, &bird, s.asn, &[&s.trace], "bird-recorded", true);
    let jt = replay_as(
        &g,
        &tsd,
        s.asn,
        &[&s.rib, &s.trace],
        "tesserad-recorded",
        true,
    );
    for (j, ases) in [(&jb, &trace_ases), (&jt, &both_ases)] {
        assert_eq!(j["monitor_prefixes"], rib_prefixes, "{j:#}");
        assert_eq!(j["peers_failed"], 0, "{j:#}");
        for (i, a) in ases.iter().enumerate() {
            assert_eq!(j["input"]["sessions"][i]["local_as"], *a, "{j:#}");
        }
    }
    assert_eq!(jb["sessions_opened"], s.peers + 1, "{jb:#}");
}

/// AS 1 on top, 2 and 3 its customers and peers of each other, 4 a
/// customer of 2 and 3, 5 a customer of 4 (as in sim_run.rs).
const CAIDA: &str = "1|2|-1\n1|3|-1\n2|3|0\n2|4|-1\n3|4|-1\n4|5|-1\n";

#[test]
fn replay_writes_the_per_second_report_and_summary_as_csv_and_json() {
    let mut g = Guard::new("replay-csv");
    let caida = g.path("rel.txt");
    std::fs::write(&caida, CAIDA).unwrap();
    let trace = g.path("t.mrt");
    ok(
        Command::new(tessera())
            .args(["sim", "run", "--import"])
            .arg(&caida)
            .args(["--total-prefixes", "40", "--at", "4", "--quiet", "--mrt"])
            .arg(&trace),
        60,
    );
    let sink_addr = Ipv4Addr::new(127, 14, 8, 1);
    let port = free_port(sink_addr);
    let sink = die_with_parent(&mut Command::new(tessera()))
        .args(["replay", "--sink", "--local-as", "4"])
        .arg("--listen")
        .arg(format!("{sink_addr}:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the sink");
    g.children.push(sink);
    let (csv, scsv, json) = (g.path("r.csv"), g.path("s.csv"), g.path("r.json"));
    let out = ok(
        Command::new(tessera())
            .args(["replay", "--mrt"])
            .arg(&trace)
            .arg("--target")
            .arg(format!("{sink_addr}:{port}"))
            .args(["--target-as", "4", "--local-as", "65001"])
            .args(["--source-base", "127.14.8.2", "--mix", "mix2"])
            .args(["--pace", "50x"])
            .args(["--hold-after", "1", "--connect-timeout", "15"])
            .arg("--csv")
            .arg(&csv)
            .arg("--summary-csv")
            .arg(&scsv)
            .arg("--json")
            .arg(&json),
        60,
    );
    let (w, _) = replay::update_workload(&trace, &replay::UpdateOptions::default()).unwrap();
    assert!(out.contains("update trace, 3 peers"), "{out}");
    assert!(out.contains("converged in"), "{out}");

    // Per second: a header and at least one row (the run holds 1 s after
    // it converged), every row with as many fields, counts not falling.
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header[0], "t_s");
    assert!(header.contains(&"prefixes_per_s") && header.contains(&"monitor_prefixes"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(!rows.is_empty(), "{text}");
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let mut last = 0u64;
    for r in &rows {
        assert_eq!(r.len(), header.len(), "{text}");
        let sent: u64 = r[col("updates_sent")].parse().unwrap();
        assert!(sent >= last, "{text}");
        last = sent;
        assert_eq!(r[col("monitor_prefixes")], "", "no monitor, no count");
    }
    assert_eq!(last, w.total_messages(), "{text}");

    // The summary row: bench's runs.csv columns.
    let s = std::fs::read_to_string(&scsv).unwrap();
    let s: Vec<Vec<&str>> = s.lines().map(|l| l.split(',').collect()).collect();
    assert_eq!(s.len(), 2);
    assert_eq!(s[0].len(), s[1].len());
    let field = |n: &str| s[1][s[0].iter().position(|h| *h == n).unwrap()];
    assert_eq!(field("peers"), "3");
    assert_eq!(field("updates_sent"), w.total_messages().to_string());
    assert_eq!(field("prefixes_sent"), w.total_prefixes().to_string());
    assert_eq!(field("converged"), "true");

    // JSON: the summary, the input, the per-second report, the series.
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["updates_sent"], w.total_messages());
    assert_eq!(j["prefixes_sent"], w.total_prefixes());
    assert_eq!(j["withdrawn_sent"], w.total_withdrawn());
    assert_eq!(j["final_prefixes"], w.final_prefixes());
    assert_eq!(j["converged"], true);
    assert!(j["convergence_s"].as_f64().unwrap() >= 0.0);
    // Paced at 50 times the recorded speed: the last UPDATE cannot go
    // out before its recorded time / 50 (the trace spans about 25 s).
    let times = w.feeds.iter().flat_map(|f| f.times_us.iter().copied());
    let (first, last) = times.fold((u64::MAX, 0), |(a, b), t| (a.min(t), b.max(t)));
    let min_send = (last - first) as f64 / 50.0 / 1e6;
    assert!(min_send > 0.1, "the trace spans {} us", last - first);
    let send = j["send_s"].as_f64().unwrap();
    assert!(
        send >= min_send * 0.99,
        "sent in {send} s, paced {min_send} s"
    );
    assert_eq!(j["per_second"].as_array().unwrap().len(), rows.len());
    assert_eq!(j["input"]["sessions"].as_array().unwrap().len(), 3);
    assert_eq!(j["input"]["sessions"][0]["source"], "127.14.8.2");
    assert_eq!(j["input"]["files"][0]["kind"], "update trace");
    assert!(!j["series"]["t_s"].as_array().unwrap().is_empty());

    // --pace rate:20, one thread in the trace's order: n UPDATEs take at
    // least (n - 1) / 20 s.
    let json2 = g.path("rate.json");
    ok(
        Command::new(tessera())
            .args(["replay", "--mrt"])
            .arg(&trace)
            .arg("--target")
            .arg(format!("{sink_addr}:{port}"))
            .args(["--target-as", "4", "--local-as", "65001"])
            .args(["--source-base", "127.14.8.2", "--variant", "trace-order"])
            .args(["--pace", "rate:20", "--hold-after", "0"])
            .arg("--json")
            .arg(&json2),
        60,
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json2).unwrap()).unwrap();
    assert_eq!(j["updates_sent"], w.total_messages());
    let min_send = (w.total_messages() - 1) as f64 / 20.0;
    let send = j["send_s"].as_f64().unwrap();
    assert!(send >= min_send * 0.99, "sent in {send} s at 20/s");
}

#[test]
fn damaged_or_missing_mrt_input_is_a_clean_error() {
    let g = Guard::new("replay-bad");
    let text = g.path("text.mrt");
    std::fs::write(&text, "not MRT at all\n".repeat(20)).unwrap();
    let empty = g.path("empty.mrt");
    std::fs::write(&empty, "").unwrap();
    // A BGP4MP_ET header claiming more bytes than the file has.
    let short = g.path("short.mrt");
    std::fs::write(&short, [0, 0, 0, 1, 0, 17, 0, 4, 0, 0, 1, 0, 0, 0]).unwrap();
    let gz = g.path("bad.mrt.gz");
    std::fs::write(&gz, [0x1f, 0x8b, 8, 0, 1, 2, 3]).unwrap();
    let missing = g.path("missing.mrt");
    for f in [&text, &empty, &short, &gz, &missing] {
        let o = run(
            Command::new(tessera())
                .args(["replay", "--mrt"])
                .arg(f)
                .args(["--target", "127.14.9.1:9", "--target-as", "1"])
                .args(["--local-as", "2", "--connect-timeout", "1"]),
            30,
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{}: {err}", f.display());
        assert!(!err.contains("panicked"), "{}: {err}", f.display());
        assert!(err.starts_with("tessera: "), "{}: {err}", f.display());
        assert!(
            err.contains(&*f.display().to_string()),
            "the error names the file: {err}"
        );
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
    // Per-session ASes: refused up front, before any connection.
    for (args, want) in [
        (
            &["--synthetic", "2x10", "--peer-as", "recorded"][..],
            "needs --mrt",
        ),
        (
            &["--synthetic", "3x10", "--local-as", "4294967294"][..],
            "past 4294967295",
        ),
    ] {
        let mut cmd = Command::new(tessera());
        cmd.arg("replay")
            .args(args)
            .args(["--target", "127.14.9.1:9", "--target-as", "1"]);
        if args.contains(&"--local-as") {
            cmd.args(["--local-as-step", "1"]);
        }
        let o = run(cmd.args(["--connect-timeout", "1"]), 30);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

//! `tessera sim run` end to end: a CAIDA file in, a trace that `tessera
//! replay` reads (one session per neighbour of the traced AS), a snapshot,
//! the per-event table; the same seed gives the same trace.

use std::path::{Path, PathBuf};
use std::process::Command;

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-sim-run-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// AS 1 on top, 2 and 3 its customers and peers of each other, 4 a
/// customer of 2 and 3, 5 a customer of 4.
const CAIDA: &str = "# test\n1|2|-1\n1|3|-1\n2|3|0\n2|4|-1\n3|4|-1\n4|5|-1\n";

fn sim_run(d: &Path, out: &str, seed: &str) -> String {
    let caida = d.join("rel.txt");
    std::fs::write(&caida, CAIDA).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["sim", "run", "--import"])
        .arg(&caida)
        .args([
            "--total-prefixes",
            "40",
            "--v6-share",
            "0.25",
            "--at",
            "4",
            "--mrai",
            "5",
            "--seed",
            seed,
        ])
        .arg("--mrt")
        .arg(d.join(out))
        .arg("--snapshot")
        .arg(format!("50:{}", d.join(format!("{out}.rib")).display()))
        .args([
            "--link-down",
            "100:2:4",
            "--link-up",
            "200:2:4",
            "--announce",
            "250:5:198.18.4.0/24",
            "--flap",
            "300:5:198.18.4.0/24:20:2",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8(o.stdout).unwrap();
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

#[test]
fn sim_run_writes_a_trace_replay_reads_and_counts_each_event() {
    let d = dir();
    let out = sim_run(&d, "a.mrt", "1");
    for want in [
        "topology: 5 ASes, 6 links, 40 prefixes (",
        "IPv6); 4 scenario events",
        "initial announcement",
        "link-down 2-4",
        "link-up 2-4",
        "flap 198.18.4.0/24 at AS5 x2",
        "realism",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    // A quarter of the prefixes (binomially) are IPv6.
    let v6: u32 = out
        .split("40 prefixes (")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!((1..40).contains(&v6), "{v6} IPv6 prefixes");
    // Every event caused UPDATEs.
    for line in out.lines().filter(|l| {
        ["link-", "flap", "announce"]
            .iter()
            .any(|k| l.starts_with(k))
    }) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let updates: u64 = f[f.len() - 3].parse().unwrap();
        assert!(updates > 0, "{line}");
    }
    // tessera replay's reader: one recorded peer per neighbour of AS 4
    // (2, 3 and 5), with their ASNs and addresses.
    let (w, sum) =
        replay::update_workload(&d.join("a.mrt"), &replay::UpdateOptions::default()).unwrap();
    let mut asns: Vec<u32> = sum.peers.iter().map(|p| p.asn.0).collect();
    asns.sort();
    assert_eq!(asns, vec![2, 3, 5]);
    assert!(sum.peers.iter().all(|p| p.messages > 0));
    assert_eq!(sum.malformed, 0);
    assert_eq!(w.feeds.len(), 3);
    // AS 2's session came up at 0, failed at 100 and came back at 200:
    // STATE_CHANGE records that replay turns into session events.
    let p2 = sum.peers.iter().find(|p| p.asn.0 == 2).unwrap();
    assert_eq!(p2.state_changes, 3);
    let p5 = sum.peers.iter().find(|p| p.asn.0 == 5).unwrap();
    assert_eq!(p5.state_changes, 1);
    // The snapshot holds what AS 4 learned from its three neighbours.
    let rib = std::fs::read(d.join("a.mrt.rib")).unwrap();
    assert!(rib.len() > 100);

    // The same seed again: the same bytes.
    sim_run(&d, "b.mrt", "1");
    assert!(std::fs::read(d.join("a.mrt")).unwrap() == std::fs::read(d.join("b.mrt")).unwrap());
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn sim_run_refuses_unknown_ases_and_bad_flags() {
    let d = dir().join("x");
    std::fs::create_dir_all(&d).unwrap();
    let caida = d.join("rel.txt");
    std::fs::write(&caida, CAIDA).unwrap();
    for bad in [
        vec!["--at", "99"],
        vec!["--link-down", "10:1:5"],
        vec!["--flap", "10:5"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["sim", "run", "--import"])
            .arg(&caida)
            .args(&bad)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{bad:?} accepted");
        assert!(!o.stderr.is_empty());
    }
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn sim_run_origin_classes_counts_routes_and_writes_the_stable_rib() {
    let d = dir().join("classes");
    std::fs::create_dir_all(&d).unwrap();
    let caida = d.join("rel.txt");
    std::fs::write(&caida, CAIDA).unwrap();
    let rib = d.join("stable.mrt");
    let o = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["sim", "run", "--origin-classes", "--import"])
        .arg(&caida)
        .args(["--prefixes", "per-origin", "--at", "4", "--threads", "2"])
        .arg("--snapshot")
        .arg(format!("0:{}", rib.display()))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Everyone reaches everyone (5 x 5 routes). AS 4 holds, per origin:
    // 1 via 2 and 3; 2 via 2 and via 3 (3's peer route, sent down to its
    // customer); 3 likewise; 5 via 5 only (2's and 3's paths go through
    // 4): 7 paths.
    for want in [
        "5 origin classes (5 prefixes)",
        "25 (AS, prefix) routes",
        "0 (AS, prefix) pairs without a route",
        "AS4: best routes for 5 origins (5 prefixes)",
        "snapshot of the stable state: 7 routes",
    ] {
        assert!(out.contains(want), "missing {want:?} in\n{out}");
    }
    // The snapshot reads back: a peer index and 4 prefixes with 7 paths.
    let mut r = mrt::MrtReader::open(&rib).unwrap();
    let (mut ribs, mut entries) = (0, 0);
    while let Some(x) = r.next_record() {
        if let mrt::Body::Rib(rib) = &x.unwrap().body {
            ribs += 1;
            entries += rib.entries().len();
        }
    }
    assert_eq!((ribs, entries), (4, 7));
    // No time and no messages: a trace, events and timers are refused.
    for bad in [
        vec!["--mrt", "x.mrt"],
        vec!["--link-down", "10:1:2"],
        vec!["--mrai", "5"],
    ] {
        let o = Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["sim", "run", "--origin-classes", "--import"])
            .arg(&caida)
            .args(&bad)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{bad:?} accepted");
        assert!(String::from_utf8_lossy(&o.stderr).contains("not supported"));
    }
    std::fs::remove_dir_all(&d).ok();
}

/// `tessera sim run ... | head -1`: the reader closes the pipe after one
/// line; the simulator ends on SIGPIPE like a Unix filter, without a
/// panic message (it panicked in `println!` before).
#[test]
fn sim_run_into_a_closed_pipe_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["sim", "run", "--nodes", "60", "--total-prefixes", "200"])
        .args(["--quiet", "--seed", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("topology:"), "{first}");
    // The reader is dropped here: the pipe is closed before the rest.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            child.kill().ok();
            panic!("sim run kept running after its stdout closed");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!err.contains("panicked"), "{err}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc_sigpipe()), "{status:?} {err}");
}

fn libc_sigpipe() -> i32 {
    13 // SIGPIPE on Linux
}

//! `tessera bench` stopped by a signal mid-run cleans up like Ctrl-C: the
//! first SIGTERM (or SIGHUP, SIGINT) stops the run, stops the DUT and
//! removes both `tb<pid>-*` namespaces; a second signal exits at once
//! (128 + signal) but still removes the namespaces and kills what ran in
//! them.
//!
//! Needs root (namespaces) and BIRD (the DUT used here); fails with the
//! reason when either is missing. Each test bounds itself (60 s) and
//! removes leftover namespaces itself when the bench did not.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn require_root_and_bird() {
    let uid = Command::new("id").arg("-u").output().expect("id -u");
    assert_eq!(
        String::from_utf8_lossy(&uid.stdout).trim(),
        "0",
        "bench_signal needs root: tessera bench creates network namespaces (CI runs as root)"
    );
    assert!(
        Path::new("/usr/sbin/bird").exists(),
        "/usr/sbin/bird missing: scripts/test installs bird2"
    );
}

fn namespaces(pid: u32) -> Vec<String> {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    let prefix = format!("tb{pid}-");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

fn ns_pids(ns: &str) -> Vec<i32> {
    let out = Command::new("ip")
        .args(["netns", "pids", ns])
        .output()
        .expect("ip netns pids");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The DUT's processes in `ns`: BIRD's. `ip netns pids` also lists the
/// short commands the bench runs there (`ip` while it sets the namespace
/// up, `ss` while it waits for port 179): on a loaded machine these live
/// long enough to be seen and are gone 500 ms later, before BIRD started
/// ("DUT gone before the signal" with the bench right, 2 runs of 2 at
/// load 7).
fn bird_pids(ns: &str) -> Vec<i32> {
    ns_pids(ns)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "bird")
        })
        .collect()
}

fn alive(pid: i32) -> bool {
    // A zombie still has /proc/PID; its state is 'Z'.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().to_string()))
        .is_some_and(|r| !r.starts_with('Z'))
}

fn signal(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .expect("kill");
    assert!(st.success(), "kill -{sig} {pid}");
}

/// Removes what a failed bench left (so a failing test cleans up too).
struct Cleanup(u32);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for ns in namespaces(self.0) {
            for p in ns_pids(&ns) {
                let _ = Command::new("kill")
                    .args(["-KILL", &p.to_string()])
                    .status();
            }
            let _ = Command::new("ip").args(["netns", "del", &ns]).status();
        }
    }
}

/// Starts a bench that takes tens of seconds (BIRD, 3 repetitions) and
/// waits until the DUT runs in its namespace. Returns the child and the
/// DUT namespace's processes.
fn start_bench(out: &Path) -> (Child, Cleanup, Vec<i32>) {
    let log = std::fs::File::create(out.with_extension("log")).expect("log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args([
            "bench",
            "--scenarios",
            "synthetic:10x100000:shared",
            "--dut",
            "bird",
            "--reps",
            "3",
            "--no-ceiling",
            "--timeout",
            "60",
        ])
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("dup"))
        .stderr(log)
        .spawn()
        .expect("spawn tessera bench");
    let guard = Cleanup(child.id());
    let dut_ns = format!("tb{}-d", child.id());
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().expect("wait") {
            panic!(
                "bench ended before the DUT ran ({st}):\n{}",
                std::fs::read_to_string(out.with_extension("log")).unwrap_or_default()
            );
        }
        let pids = bird_pids(&dut_ns);
        if !pids.is_empty() {
            // Let the replay get under way.
            std::thread::sleep(Duration::from_millis(500));
            let pids = bird_pids(&dut_ns);
            assert!(!pids.is_empty(), "DUT gone before the signal");
            return (child, guard, pids);
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no DUT process in {dut_ns} after 30 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(st) = child.try_wait().expect("wait") {
            return Some(st);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn sigterm_mid_run_removes_namespaces_and_daemons() {
    require_root_and_bird();
    let out = std::env::temp_dir().join(format!("bench-sigterm-{}", std::process::id()));
    let (mut child, _guard, dut_pids) = start_bench(&out);
    let pid = child.id();
    signal(pid, "TERM");
    let st = wait_exit(&mut child, Duration::from_secs(30));
    let log = std::fs::read_to_string(out.with_extension("log")).unwrap_or_default();
    let st = st.unwrap_or_else(|| panic!("no exit 30 s after SIGTERM:\n{log}"));
    // Interrupted runs did not converge: exit status 1, not a kill.
    assert_eq!(st.code(), Some(1), "{st}:\n{log}");
    assert!(
        log.contains("interrupted"),
        "run marked interrupted:\n{log}"
    );
    assert_eq!(
        namespaces(pid),
        Vec::<String>::new(),
        "namespaces left:\n{log}"
    );
    for p in dut_pids {
        assert!(!alive(p), "DUT process {p} still runs after SIGTERM");
    }
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_file(out.with_extension("log"));
}

#[test]
fn second_signal_exits_at_once_and_still_removes_namespaces() {
    require_root_and_bird();
    let out = std::env::temp_dir().join(format!("bench-sig2-{}", std::process::id()));
    let (mut child, _guard, dut_pids) = start_bench(&out);
    let pid = child.id();
    signal(pid, "HUP");
    signal(pid, "INT");
    let st = wait_exit(&mut child, Duration::from_secs(30));
    let log = std::fs::read_to_string(out.with_extension("log")).unwrap_or_default();
    let st = st.unwrap_or_else(|| panic!("no exit 30 s after two signals:\n{log}"));
    // 128 + the signal taken second: the second signal ended it, not the
    // orderly path (exit 1). Sent back to back, both can be pending when
    // the signal thread wakes, and it takes ready signals in any order, so
    // the second may be the HUP (129) as well as the INT (130).
    assert!(matches!(st.code(), Some(129 | 130)), "{st}:\n{log}");
    assert_eq!(
        namespaces(pid),
        Vec::<String>::new(),
        "namespaces left:\n{log}"
    );
    // What ran in the DUT namespace was killed with it (SIGKILL: give
    // the kernel a moment to reap; a daemon freeing a large RIB on a
    // loaded machine can take seconds, so the bound is generous).
    let t0 = Instant::now();
    while dut_pids.iter().any(|p| alive(*p)) && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    for p in dut_pids {
        assert!(
            !alive(p),
            "DUT process {p} ({}) still runs after two signals:\n{log}",
            std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default()
        );
    }
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_file(out.with_extension("log"));
}

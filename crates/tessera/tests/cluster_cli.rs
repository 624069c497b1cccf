//! `tessera cluster up 3`, `status`, `down` (issue 14): three tesserads
//! in network namespaces on a bridged fabric, BIRD as each node's eBGP
//! neighbour; status shows every BFD and BGP session up, a host behind
//! node 1 reaches a prefix announced behind node 3, and `down` leaves no
//! namespace and no process, also with a crashed node and after an
//! interrupted `up` (a state file listing a half-built cluster). Needs
//! root, `ip`, `ping`, `bird`; every step is bounded and a failing test
//! still takes the cluster down.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

#[path = "support/bins.rs"]
mod bins;

use bins::{namespaces, tesserad};

fn tessera(args: &[&str]) -> (bool, String) {
    bins::tessera_bounded(args, 120, 5)
}

/// Takes the cluster down when dropped (also when the test fails).
struct Down(PathBuf);
impl Drop for Down {
    fn drop(&mut self) {
        let d = self.0.display().to_string();
        let _ = tessera(&["cluster", "down", "--dir", &d]);
    }
}

/// The pids the state file lists.
fn pids(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("state"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("pid "))
        .filter_map(|l| l.split(' ').next()?.parse().ok())
        .collect()
}

/// Whether `pid` is gone (or a zombie, waiting for init to reap it).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with('Z')),
    }
}

fn dir_for(tag: &str) -> (String, PathBuf) {
    let name = format!("tc{}{tag}", std::process::id() % 100_000);
    let dir = std::env::temp_dir().join(format!("tessera-cluster-test-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    (name, dir)
}

#[test]
fn up_three_nodes_status_all_up_then_down_leaves_nothing() {
    bins::require_root_and("the cluster test", &["ip", "ping", "bird", "birdc"]);
    let (name, dir) = dir_for("a");
    let d = dir.display().to_string();
    let bin = tesserad().display().to_string();
    let _guard = Down(dir.clone());
    let (ok, out) = tessera(&[
        "cluster",
        "up",
        "3",
        "--name",
        &name,
        "--dir",
        &d,
        "--tesserad",
        &bin,
        "--wait",
        "60",
    ]);
    assert!(ok, "cluster up failed:\n{out}");
    assert_eq!(
        namespaces(&name).len(),
        1 + 3 * 2,
        "{:?}",
        namespaces(&name)
    );
    let (ok, st) = tessera(&["cluster", "status", "--dir", &d]);
    assert!(ok, "status says not all up:\n{st}");
    for k in 1..=3 {
        let line = st
            .lines()
            .find(|l| l.starts_with(&format!("n{k} ")))
            .unwrap_or_else(|| panic!("no line for n{k}:\n{st}"));
        // Two BFD peers Up, two iBGP + one eBGP sessions Established.
        assert!(
            line.contains(" 2/2 ") && line.contains(" 3/3 "),
            "{line}\n{st}"
        );
    }
    // H1-1 (behind node 1) reaches 198.19.103.1, announced by BIRD on
    // H3-1 (behind node 3): eBGP at node 3, iBGP to node 1, the fabric.
    let h = format!("{name}-h1-1");
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let ok = Command::new("ip")
            .args([
                "netns", "exec", &h, "ping", "-c", "3", "-i", "0.1", "-W", "1",
            ])
            .arg("198.19.103.1")
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            break;
        }
        assert!(Instant::now() < end, "no ping across the cluster");
    }
    let (_, st) = tessera(&["cluster", "status", "--dir", &d]);
    let fab_rx: u64 = st
        .lines()
        .find(|l| l.starts_with("n3 "))
        .and_then(|l| l.split_whitespace().nth(6)?.parse().ok())
        .unwrap_or(0);
    assert!(fab_rx > 0, "node 3's fabric counters did not move:\n{st}");

    // A crashed node: down still removes everything.
    let listed = pids(&dir);
    assert_eq!(listed.len(), 3 + 3, "tesserads and BIRDs: {listed:?}");
    // SAFETY: kill(2) on a pid the cluster started and still runs.
    unsafe {
        libc::kill(listed[0] as i32, libc::SIGKILL);
    }
    let (ok, out) = tessera(&["cluster", "down", "--dir", &d]);
    assert!(ok, "down failed: {out}");
    assert!(namespaces(&name).is_empty(), "{:?}", namespaces(&name));
    // Generous: processes killed on a loaded machine take a while to go.
    let end = Instant::now() + Duration::from_secs(30);
    while !listed.iter().all(|&p| gone(p)) {
        assert!(
            Instant::now() < end,
            "processes left after down: {listed:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!dir.exists(), "{} left", dir.display());
    let (ok, st) = tessera(&["cluster", "status", "--dir", &d]);
    assert!(!ok, "status of a cluster that is down: {st}");
}

#[test]
fn down_removes_a_half_built_cluster_from_its_state_file() {
    bins::require_root_and("the cluster test", &["ip", "ping", "bird", "birdc"]);
    let (name, dir) = dir_for("b");
    std::fs::create_dir_all(&dir).expect("dir");
    let ns = format!("{name}-fab");
    assert!(Command::new("ip")
        .args(["netns", "add", &ns])
        .status()
        .expect("ip")
        .success());
    // An interrupted `up`: the second namespace was listed, not created,
    // and the last line was cut.
    std::fs::write(
        dir.join("state"),
        format!("ns {ns}\nns {name}-n1\npid 1234"),
    )
    .expect("state");
    let d = dir.display().to_string();
    let (ok, out) = tessera(&["cluster", "down", "--dir", &d]);
    let _ = Command::new("ip").args(["netns", "del", &ns]).status();
    assert!(ok, "down failed: {out}");
    assert!(namespaces(&name).is_empty());
    assert!(!dir.exists());
    // Nothing to take down is not an error.
    let (ok, out) = tessera(&["cluster", "down", "--dir", &d]);
    assert!(ok && out.contains("no cluster"), "{out}");
}

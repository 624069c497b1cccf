//! The binaries and loopback ports of the tessera integration tests that
//! run a daemon (`#[path = "support/bins.rs"] mod bins;`, so that a test
//! pulls in only this file, not the whole `support` module).
//!
//! tesserad is not a dependency of tessera, so Cargo does not build it for
//! these tests: [`tesserad`] takes the one next to tessera in the target
//! directory (under `scripts/test` the workspace build made it), and
//! builds it only when it is missing. After changing tesserad, run
//! `cargo build -p tesserad` before one of these tests alone, or it runs
//! the older daemon.

#![allow(dead_code)] // Each test binary uses a different subset.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;

/// The tessera binary under test.
pub const TESSERA: &str = env!("CARGO_BIN_EXE_tessera");

/// tesserad next to tessera; built with `cargo build -p tesserad` when
/// missing.
pub fn tesserad() -> PathBuf {
    let p = PathBuf::from(TESSERA).with_file_name("tesserad");
    if !p.exists() {
        let st = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "tesserad"])
            .status()
            .expect("run cargo build -p tesserad");
        assert!(st.success(), "cargo build -p tesserad failed");
    }
    assert!(p.exists(), "{} missing after the build", p.display());
    p
}

/// Runs tessera with `args`: (success, stdout then stderr).
pub fn tessera(args: &[&str]) -> (bool, String) {
    finish(Command::new(TESSERA).args(args))
}

/// Runs `cmd` to its end: (success, stdout then stderr).
fn finish(cmd: &mut Command) -> (bool, String) {
    let o = cmd.output().expect("run tessera");
    let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&o.stderr));
    (o.status.success(), s)
}

/// [`tessera`] under `timeout -k KILL SECS`: killed when it runs longer.
pub fn tessera_bounded(args: &[&str], secs: u32, kill: u32) -> (bool, String) {
    finish(
        Command::new("timeout")
            .args(["-k", &kill.to_string(), &secs.to_string(), TESSERA])
            .args(args),
    )
}

/// The network namespaces named `<prefix>-...` (`ip netns list`).
pub fn namespaces(prefix: &str) -> Vec<String> {
    let o = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("{prefix}-")))
        .map(str::to_string)
        .collect()
}

/// A TCP port on 127.0.0.1 that nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Fails unless this runs as root and every tool in `tools` is installed.
pub fn require_root_and(what: &str, tools: &[&str]) {
    let uid = Command::new("id").arg("-u").output().expect("id -u");
    assert_eq!(
        String::from_utf8_lossy(&uid.stdout).trim(),
        "0",
        "{what} needs root"
    );
    for t in tools {
        let ok = Command::new("which")
            .arg(t)
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(ok, "{what} needs `{t}` installed");
    }
}

/// A tesserad config in `dir` for a loopback lab: BGP on 127.0.0.1:`bgp`,
/// `/metrics` (and the web view) on 127.0.0.1:`metrics`, one passive eBGP
/// neighbour `gen0` at 127.0.0.2 (AS 65001) for [`paced_feed`]. Returns
/// (config file, control socket).
pub fn loopback_conf(dir: &std::path::Path, bgp: u16, metrics: u16) -> (PathBuf, PathBuf) {
    let sock = dir.join("ctl.sock");
    let conf = dir.join("tesserad.toml");
    std::fs::write(
        &conf,
        format!(
            "[router]\nid = \"198.18.0.1\"\nasn = 65000\nlisten = [\"127.0.0.1:{bgp}\"]\n\
             [control]\nsocket = \"{}\"\nmetrics = \"127.0.0.1:{metrics}\"\n\
             [log]\nlevel = \"warn\"\n\
             [[neighbor]]\nname = \"gen0\"\naddress = \"127.0.0.2\"\n\
             local_address = \"127.0.0.1\"\nremote_as = 65001\npassive = true\n\
             import = \"accept\"\nexport = \"accept\"\n",
            sock.display()
        ),
    )
    .expect("write tesserad.toml");
    (conf, sock)
}

/// `tesserad -c conf`, its output discarded.
pub fn spawn_tesserad(conf: &std::path::Path) -> std::process::Child {
    Command::new(tesserad())
        .arg("-c")
        .arg(conf)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("tesserad")
}

/// `tessera replay` as [`loopback_conf`]'s `gen0`: `prefixes` unique
/// routes at 200 UPDATEs/s into 127.0.0.1:`bgp`, the session kept up 60 s
/// after.
pub fn paced_feed(bgp: u16, prefixes: u64) -> std::process::Child {
    Command::new(TESSERA)
        .args([
            "replay",
            "--synthetic",
            &format!("1x{prefixes}"),
            "--unique",
        ])
        .args(["--target", &format!("127.0.0.1:{bgp}")])
        .args(["--target-as", "65000", "--local-as", "65001"])
        .args(["--source-base", "127.0.0.2", "--pace", "rate:200"])
        .args(["--hold-after", "60"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("tessera replay")
}

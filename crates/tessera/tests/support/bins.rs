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
    let o = Command::new(TESSERA)
        .args(args)
        .output()
        .expect("run tessera");
    let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&o.stderr));
    (o.status.success(), s)
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

//! Helpers shared by the tessera integration tests (`mod support;`).

#![allow(dead_code)] // Each test binary uses a different subset.

pub mod bgp_cases;
pub mod pcap;
pub mod tshark;

use std::path::PathBuf;

/// The shared real-data folder, `$CARGO_MANIFEST_DIR/../../../shared/data/mrt/`.
/// Panics with a clear message when it is missing: these tests are about
/// real data and must not pass vacuously.
pub fn mrt_data_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mrt");
    assert!(
        dir.is_dir(),
        "shared MRT data missing: expected {} (see the project README)",
        dir.display()
    );
    dir
}

/// Path of one shared MRT file; panics with its name when it is missing.
pub fn mrt_file(name: &str) -> PathBuf {
    let p = mrt_data_dir().join(name);
    assert!(p.is_file(), "shared MRT file missing: {}", p.display());
    p
}

/// Lower-case hex of `b`, for failure messages.
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

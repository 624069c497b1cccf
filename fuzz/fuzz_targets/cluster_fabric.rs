//! The cluster fabric decoder (GENEVE + the cluster option, packed data
//! and BECN) and the in-place transit-flag edit on arbitrary datagrams,
//! through the walk shared with `crates/cluster/tests/roundtrip.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/cluster/tests/support/walk.rs"]
mod walk;

fuzz_target!(|data: &[u8]| {
    walk::walk(data);
});

//! The ESP decapsulator (outer IPv4, ESP header, SA lookup, replay and ICV
//! checks, trailer, inbound policy) on arbitrary packets, and seal/open
//! round trips, through the walk shared with
//! `crates/ipsec/tests/never_panics.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/ipsec/tests/support/walk.rs"]
mod walk;

fuzz_target!(|data: &[u8]| {
    walk::walk(data);
});

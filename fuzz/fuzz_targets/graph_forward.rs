//! Arbitrary frames through the element graph's IPv4 paths, compared: the
//! chain (`Classifier(ip) -> CheckIpHeader -> IcmpEcho -> own/local ->
//! DecIpTtl -> Ip4Lookup`), `Classifier(ip) -> Ip4Forward`, and the fused
//! `Classifier(ip checked) -> Ip4Forward` must never panic and must send
//! the same frames and drop the same by reason, through the walk shared
//! with `crates/elements/tests/forward.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crates/elements/tests/support/fused.rs"]
mod fused;

fuzz_target!(|data: &[u8]| {
    fused::walk(data);
});

//! One BGP message (RFC 4271 §4 and extensions) through the full decoder
//! under legacy, modern and ADD-PATH contexts; whatever converts to the
//! owned form must re-encode to the same bytes (checked by bgp-wire).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bgp_wire::fuzz_support::decode_message(data);
});

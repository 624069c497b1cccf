//! MRT stream decoder (RFC 6396, RFC 6397, RFC 8050): every record of the
//! input is decoded, every field visited and the record re-encoded. Any
//! panic, overflow or hang is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    std::hint::black_box(mrt::fuzz_support::decode_records(data));
});

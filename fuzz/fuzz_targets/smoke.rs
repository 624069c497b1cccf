//! Placeholder target: parses the input as `ADDR/LEN` text with the shared
//! prefix type. Proves the toolchain works before the codecs land.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = s.parse::<base::Prefix>();
    }
});

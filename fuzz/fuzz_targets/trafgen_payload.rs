//! The traffic generator's frame decoder (`trafgen::parse`) on any bytes:
//! it must not panic, and what it accepts re-encodes to the same payload
//! bytes and is counted by the receiver's accounting without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trafgen::{parse, Payload, RxStats};

fuzz_target!(|data: &[u8]| {
    let mut rx = RxStats::new(0, 1_000_000);
    if let Ok(p) = parse(data) {
        let e = p.encode();
        assert_eq!(Payload::decode(&e), Ok(p));
        rx.on_packet(p.ts_ns, &p);
    }
    if let Ok(p) = Payload::decode(data) {
        rx.on_packet(u64::from(p.seq), &p);
    }
    let _ = rx.seq_gaps();
});

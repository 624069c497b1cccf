//! The BFD control packet decoder (RFC 5880 §4, §6.8.6 checks) on any
//! bytes; what decodes re-encodes to the same mandatory section and is fed
//! to a session, which must not panic either. The input is also cut into
//! 24-byte packets fed in turn with advancing time.
#![no_main]

use std::time::Duration;

use base::Instant;
use bfd::packet::ControlPacket;
use bfd::session::{Session, SessionConfig};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut s = Session::new(SessionConfig::default(), 7, 1);
    let mut now = Instant::from_secs(1);
    if let Ok(p) = ControlPacket::decode(data) {
        let e = p.encode();
        assert_eq!(&e[4..24], &data[4..24]);
        s.receive(now, &p);
    }
    for chunk in data.chunks(24) {
        now = now + Duration::from_micros(u64::from(chunk[0]) * 997);
        if s.next_deadline() <= now {
            s.poll(now);
        }
        if let Ok(p) = ControlPacket::decode(chunk) {
            s.receive(now, &p);
        }
    }
});

//! One walk over arbitrary bytes through everything the ESP decapsulator
//! does with untrusted input, shared by `tests/never_panics.rs` and the
//! fuzz target `fuzz/fuzz_targets/esp_decap.rs`: the outer IPv4 header,
//! the ESP header, SA lookup, replay check, ICV check, trailer and
//! policy. The bytes are also sealed as an inner packet and opened again,
//! which must give them back.

use ipsec::{trailer_len, wire, InboundSa, Key, OutboundSa, Sad, FRONT};

const SPI: u32 = 0x0000_1001;

fn key() -> Key {
    Key::new([7; 16], [1, 2, 3, 4])
}

/// The walk; panics only when a round trip breaks.
pub fn walk(data: &[u8]) {
    let mut sad = Sad::new();
    let any = vec![
        "0.0.0.0/0".parse().unwrap_or(ipsec::Selector::V4(0, 0)),
        "::/0".parse().unwrap_or(ipsec::Selector::V6(0, 0)),
    ];
    if let Some(sa) = InboundSa::new(SPI, &key(), 64, any) {
        sad.add(sa);
    }
    // As received: an outer IPv4 packet.
    let mut buf = data.to_vec();
    if let Ok(o) = wire::outer4(&buf) {
        if let Some(esp) = buf.get_mut(o.hdr_len..o.total_len) {
            let _ = sad.open(esp);
        }
    }
    // As the ESP part alone, with the SPI forced to the known SA, so the
    // sequence and ICV checks are reached.
    let mut esp = data.to_vec();
    if let Some(s) = esp.get_mut(..4) {
        s.copy_from_slice(&SPI.to_be_bytes());
    }
    let _ = sad.open(&mut esp);
    // Sealed and opened: the bytes come back when they look like IP.
    let next = match data.first().map(|b| b >> 4) {
        Some(4) => ipsec::NEXT_IPV4,
        Some(6) => ipsec::NEXT_IPV6,
        _ => return,
    };
    if data.len() > 60_000 {
        return;
    }
    let mut out = OutboundSa::new(SPI, &key(), [198, 18, 2, 1], [198, 18, 2, 2]);
    let mut b = vec![0u8; FRONT + data.len() + trailer_len(data.len())];
    if let Some(s) = b.get_mut(FRONT..FRONT + data.len()) {
        s.copy_from_slice(data);
    }
    if out.seal(&mut b, data.len(), next, 0, 0).is_err() {
        return;
    }
    let mut rx = Sad::new();
    let any = vec![ipsec::Selector::V4(0, 0), ipsec::Selector::V6(0, 0)];
    if let Some(sa) = InboundSa::new(SPI, &key(), 64, any) {
        rx.add(sa);
    }
    let esp = &mut b[wire::IP4_LEN..];
    match rx.open(esp) {
        Ok(o) => assert_eq!(esp.get(o.inner), Some(data)),
        // Too short to hold an IP header's addresses: malformed inside.
        Err(ipsec::OpenError::Malformed) => {
            let need = if next == ipsec::NEXT_IPV4 { 20 } else { 40 };
            assert!(data.len() < need, "a whole inner packet was refused");
        }
        Err(e) => panic!("round trip failed: {e:?}"),
    }
}

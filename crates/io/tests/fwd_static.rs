//! Unit tests of the static forwarder of the `fwd` example
//! (`examples/fwd/forwarder.rs`): header checks, TTL with the incremental
//! checksum, route lookup, MAC rewrite and the drop counters.

#[allow(dead_code)]
#[path = "../examples/fwd/forwarder.rs"]
mod forwarder;

use base::Prefix4;
use forwarder::*;

fn frame(ttl: u8, dst: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20];
    f[12] = 0x08;
    f[14] = 0x45;
    f[16..18].copy_from_slice(&20u16.to_be_bytes());
    f[22] = ttl;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, 0, 1, 2]);
    f[30..34].copy_from_slice(&dst);
    let ck = pkt::checksum::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&ck.to_be_bytes());
    f
}

fn fwd() -> StaticForwarder {
    let p = |a, l| Prefix4::new(a, l).unwrap();
    StaticForwarder::new(
        vec![[2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]],
        vec![
            Route4 {
                prefix: p(0x0a00_0000, 8),
                port: 0,
                next_hop_mac: [0xaa; 6],
            },
            Route4 {
                prefix: p(0x0a00_0200, 24),
                port: 1,
                next_hop_mac: [0xbb; 6],
            },
        ],
    )
    .unwrap()
}

#[test]
fn forwards_with_ttl_and_checksum_update() {
    let mut f = fwd();
    let mut fr = frame(64, [10, 0, 2, 9]);
    assert_eq!(f.process(&mut fr), Some(1), "longest match wins");
    assert_eq!(fr[22], 63);
    assert_eq!(
        pkt::checksum::checksum(&fr[14..34]),
        0,
        "checksum still verifies"
    );
    assert_eq!(&fr[0..6], &[0xbb; 6]);
    assert_eq!(&fr[6..12], &[2, 0, 0, 0, 0, 2]);
    let mut fr = frame(9, [10, 7, 0, 1]);
    assert_eq!(f.process(&mut fr), Some(0));
    assert_eq!(f.counters.forwarded, 0, "process does not count sends");
}

#[test]
fn drops_are_counted_by_reason() {
    let mut f = fwd();
    assert_eq!(f.process(&mut frame(1, [10, 0, 2, 9])), None);
    assert_eq!(f.process(&mut frame(64, [192, 0, 2, 1])), None);
    let mut arp = frame(64, [10, 0, 2, 9]);
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert_eq!(f.process(&mut arp), None);
    let mut short = frame(64, [10, 0, 2, 9]);
    short.truncate(20);
    assert_eq!(f.process(&mut short), None);
    assert_eq!(f.process(&mut []), None);
    let c = f.counters;
    assert_eq!(
        (c.ttl_expired, c.no_route, c.not_ipv4, c.bad_header),
        (1, 1, 1, 2)
    );
}

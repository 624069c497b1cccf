//! The virtual routers' demultiplexer (`graph::vr_class`) on arbitrary
//! frames and ports, under each rule kind: VLAN, ingress port, and IPv4
//! and IPv6 destination prefixes (`classify`, and `target` with ARP and
//! ND). The first two bytes pick the port; a result, when there is one,
//! must be a VR index the rules name.
#![no_main]

use graph::vr_class::{VrClassifier, VrRule};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let port = match data {
        [a, b, ..] => u16::from_be_bytes([*a, *b]),
        _ => 0,
    };
    let frame = data.get(2..).unwrap_or_default();
    for rules in [
        vec![(VrRule::Vlan(1), 0), (VrRule::Vlan(10), 1)],
        vec![(VrRule::Ingress(0), 0), (VrRule::Ingress(1), 1)],
        vec![
            (VrRule::Prefix4(0xc612_0000, 24), 0),
            (VrRule::Prefix4(0x0a00_0000, 1), 1),
            (VrRule::Prefix6(0x2001_0db8 << 96, 32), 1),
        ],
    ] {
        let c = VrClassifier::new(rules).expect("disjoint rules");
        if let Some(v) = c.classify(frame, port) {
            assert!(v <= 1);
        }
        if let graph::vr_class::Target::One(v) = c.target(frame, port) {
            assert!(v <= 1);
        }
    }
});

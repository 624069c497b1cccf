//! The dataplane's VR demultiplexer (`fib::dataplane::vr::target`) on
//! arbitrary frames and ports, under ingress, VLAN and prefix rules.
//! The first two bytes pick the port. Ingress: neighbour answers (ARP
//! replies, Neighbor Advertisements) to every VR, else the port's VR,
//! else none. VLAN: never to every VR (a VLAN is its own layer-2
//! domain). Prefix: only neighbour answers to every VR. A VR, when there
//! is one, is one the rules name.
#![no_main]

use fib::dataplane::vr::{neigh_answer, target, Target, VrClassifier, VrRule};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let port = match data {
        [a, b, ..] => u16::from_be_bytes([*a, *b]) % 4,
        _ => 0,
    };
    let frame = data.get(2..).unwrap_or_default();
    let c = VrClassifier::new(vec![(VrRule::Ingress(0), 0), (VrRule::Ingress(2), 1)])
        .expect("disjoint rules");
    match target(&c, frame, port) {
        Target::Every => assert!(neigh_answer(frame)),
        Target::One(v) => assert!(v <= 1 && (port == 0 || port == 2)),
        Target::Nowhere => assert!(port == 1 || port == 3),
    }
    let c = VrClassifier::new(vec![(VrRule::Vlan(10), 0), (VrRule::Vlan(20), 1)])
        .expect("disjoint rules");
    match target(&c, frame, port) {
        Target::Every => panic!("a VLAN frame to every VR"),
        Target::One(v) => assert!(v <= 1),
        Target::Nowhere => {}
    }
    let c = VrClassifier::new(vec![
        (VrRule::Prefix4(0xc612_0000, 24), 0),
        (VrRule::Prefix6(0x2001_0db8 << 96, 32), 1),
    ])
    .expect("disjoint rules");
    match target(&c, frame, port) {
        Target::Every => assert!(neigh_answer(frame)),
        Target::One(v) => assert!(v <= 1),
        Target::Nowhere => {}
    }
});

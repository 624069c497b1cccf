//! The dataplane's VR demultiplexer (`fib::dataplane::vr::target`) on
//! arbitrary frames and ports: neighbour answers (ARP replies, Neighbor
//! Advertisements) to every VR, else the ingress classifier's VR, else
//! none. The first two bytes pick the port; a VR, when there is one, must
//! be one the rules name, and only frames the classifier alone would not
//! place go to every VR as neighbour answers.
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
});

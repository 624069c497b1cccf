//! Virtual routers end to end in process: frames from two ingress ports
//! (and, second case, two VLANs) are demultiplexed by
//! `graph::vr_class::VrClassifier` into two virtual routers that share a
//! core under `graph::VrScheduler`; each has its own graph and FIB, and
//! the same destination leaves through different next hops. Replacing
//! one VR's graph (a reload with a new FIB) leaves the other's running.

use elements::{AnyElement, Env};
use graph::vr_class::{VrClassifier, VrRule};
use graph::{Charge, Graph, Runner, VrConfig, VrScheduler};
use pkt::{build, Mac, MemDevice, Pool};

const R: Mac = Mac([2, 0, 0, 0, 0, 1]);
const H: Mac = Mac([2, 0, 0, 0, 1, 2]);
const DST: [u8; 4] = [198, 18, 5, 7];

/// A VR whose FIB sends 198.18.5.0/24 to `nh`, a neighbour with MAC
/// 02:00:00:00:09:`mac_last`.
fn vr_graph(nh: &str, mac_last: u8) -> Graph<AnyElement> {
    let cfg = format!(
        "in0 :: FromDevice(eth0); out0 :: ToDevice(eth0);
         in0 -> CheckIpHeader -> Ip4Lookup(ROUTE 198.18.5.0/24 {nh} 0) -> DecIpTtl
             -> EtherRewrite(MAC 02:00:00:00:00:01, NEIGH {nh} 02:00:00:00:09:{mac_last:02x}) -> out0;"
    );
    let mut env = Env::new();
    Graph::from_str(&cfg, "vr.click", &mut env, Pool::new(256)).expect("valid")
}

fn vr(nh: &str, mac_last: u8) -> Runner<AnyElement, MemDevice> {
    Runner::new(
        vr_graph(nh, mac_last),
        vec![MemDevice::new("eth0", vec![])],
        32,
    )
    .expect("bind")
}

fn frame() -> Vec<u8> {
    build::udp4(R, H, [198, 19, 0, 2], DST, 64, 1000, 2000, b"vr")
}

fn tagged(mut f: Vec<u8>, vlan: u16) -> Vec<u8> {
    let mut t = vec![0x81, 0x00];
    t.extend_from_slice(&vlan.to_be_bytes());
    f.splice(12..12, t);
    f
}

/// The neighbour MACs (last byte) of the frames VR `i` sent.
fn next_hops(s: &mut VrScheduler<AnyElement, MemDevice>, i: usize) -> Vec<u8> {
    s.runner_mut(i).expect("vr").devices_mut()[0]
        .take_sent()
        .iter()
        .map(|f| f[5])
        .collect()
}

/// Offers `frames` (frame, ingress port) through the classifier and runs
/// the scheduler until idle (bounded). Returns frames no VR took.
fn offer(
    c: &VrClassifier,
    s: &mut VrScheduler<AnyElement, MemDevice>,
    frames: &[(Vec<u8>, u16)],
    untag: bool,
) -> usize {
    let mut unmatched = 0;
    for (f, port) in frames {
        match c.classify(f, *port) {
            Some(v) => {
                let mut f = f.clone();
                if untag && f.len() > 16 && f[12..14] == [0x81, 0x00] {
                    // The VR's graph sees the frame as on an access port.
                    f.drain(12..16);
                }
                s.runner_mut(v).expect("vr").devices_mut()[0].inject(f)
            }
            None => unmatched += 1,
        }
    }
    for _ in 0..1000 {
        if !s.step() {
            break;
        }
    }
    unmatched
}

fn two_vrs() -> VrScheduler<AnyElement, MemDevice> {
    let mut s = VrScheduler::new(64, Charge::Packets);
    s.add(vr("198.18.1.2", 0xa1), VrConfig::default());
    s.add(vr("198.18.2.2", 0xb2), VrConfig::default());
    s
}

#[test]
fn same_destination_two_next_hops_by_ingress_port() {
    let c = VrClassifier::new(vec![(VrRule::Ingress(0), 0), (VrRule::Ingress(1), 1)]).unwrap();
    let mut s = two_vrs();
    let frames: Vec<(Vec<u8>, u16)> = (0..40).map(|i| (frame(), (i % 2) as u16)).collect();
    let lost = offer(&c, &mut s, &[frames, vec![(frame(), 7)]].concat(), false);
    assert_eq!(lost, 1, "port 7 belongs to no VR");
    assert_eq!(next_hops(&mut s, 0), vec![0xa1; 20]);
    assert_eq!(next_hops(&mut s, 1), vec![0xb2; 20]);

    // A reload changes VR 1's FIB (new next hop); VR 0 keeps its own and
    // forwards on, and packets keep flowing through both.
    let old = s
        .runner_mut(1)
        .expect("vr")
        .replace_graph(vr_graph("198.18.3.2", 0xc3))
        .expect("rebind");
    drop(old);
    let frames: Vec<(Vec<u8>, u16)> = (0..10).map(|i| (frame(), (i % 2) as u16)).collect();
    assert_eq!(offer(&c, &mut s, &frames, false), 0);
    assert_eq!(next_hops(&mut s, 0), vec![0xa1; 5]);
    assert_eq!(next_hops(&mut s, 1), vec![0xc3; 5]);
    for i in 0..2 {
        assert_eq!(s.runner(i).expect("vr").graph.total_drops(), 0);
    }
}

#[test]
fn same_destination_two_next_hops_by_vlan() {
    let c = VrClassifier::new(vec![(VrRule::Vlan(10), 0), (VrRule::Vlan(20), 1)]).unwrap();
    let mut s = two_vrs();
    let frames = vec![
        (tagged(frame(), 10), 0),
        (tagged(frame(), 20), 0),
        (tagged(frame(), 20), 1),
        (tagged(frame(), 30), 0),
        (frame(), 0),
    ];
    assert_eq!(offer(&c, &mut s, &frames, true), 2, "VLAN 30 and untagged");
    assert_eq!(next_hops(&mut s, 0), vec![0xa1]);
    assert_eq!(next_hops(&mut s, 1), vec![0xb2, 0xb2]);
}

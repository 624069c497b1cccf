//! The cluster fabric end to end on loopback: three nodes, each its own
//! thread running an element graph over a real UDP fabric socket
//! (`io::fabric::FabricDevice` on 127.0.0.1) and in-memory external
//! ports. Frames entering node 0's external port leave node 2's external
//! port 1, through `FabricEncap` (balancing, packing, GENEVE) and
//! `FabricDecap` (unpacking, or forwarding at the intermediate, node 1).
//! Each worker polls while there is traffic and sleeps in `poll(2)` on its
//! fabric socket when idle, as the dataplane workers do.
//!
//! Also: the fabric's datagrams, wrapped in UDP/IPv4 to port 6081, are
//! decoded by tshark as GENEVE with the inner frames visible.

mod common;

use elements::{AnyElement, Env};
use graph::{Graph, Runner};
use pkt::{build, Batch, Mac, MemDevice, Pool};

#[path = "common/fabric_dev.rs"]
mod fabric_dev;
use fabric_dev::Report;

fn frames(n: usize) -> Vec<Vec<u8>> {
    let (a, r) = (Mac([2, 0, 0, 0, 1, 2]), Mac([2, 0, 0, 0, 0, 1]));
    (0..n)
        .map(|i| {
            let i = i as u16;
            // 64-byte frames (60 without FCS), one flow each.
            build::udp4(
                r,
                a,
                [198, 18, 1, 2],
                [198, 18, 3, 2],
                64,
                1000 + i,
                9,
                &i.to_be_bytes().repeat(9),
            )
        })
        .collect()
}

/// [`fabric_dev::run_cluster`] over [`frames`]`(n)`.
fn run_cluster(
    mode: &str,
    packing: usize,
    affinity: bool,
    n: usize,
) -> (Vec<Vec<u8>>, [Report; 3]) {
    let input = frames(n);
    (
        input.clone(),
        fabric_dev::run_cluster(mode, packing, affinity, input),
    )
}

fn sorted(mut v: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    v.sort();
    v
}

#[test]
fn vlb_with_packing_delivers_every_frame_at_the_egress_port() {
    let (input, [r0, r1, r2]) = run_cluster("vlb", 8, false, 300);
    assert_eq!(r2.sent_on("ext0").len(), 0, "nothing on the wrong port");
    assert_eq!(sorted(r2.sent_on("ext1").to_vec()), sorted(input.clone()));
    // VLB over 3 nodes: node 1 is the intermediate for about a third.
    let (direct, via) = (r0.counter("e", "direct"), r0.counter("e", "via"));
    assert_eq!(direct + via, 300);
    assert!((50..150).contains(&via), "via {via}");
    assert!(r1.counter("d", "forwarded") > 0, "node 1 forwarded nothing");
    assert_eq!(
        r1.sent_on("ext0").len(),
        0,
        "the intermediate never delivers"
    );
    // Packing: 32-frame RX bursts become datagrams of up to 8 frames.
    let (packets, packed) = (r0.counter("e", "packets"), r0.counter("e", "frames"));
    assert_eq!(packed, 300);
    assert!(packets < 300 / 2, "{packets} datagrams for 300 frames");
    // Per-link load: every datagram went to node 1 (the intermediate)
    // or node 2 (the egress), none to itself.
    let (to1, to2) = (r0.counter("e", "to1"), r0.counter("e", "to2"));
    assert!(to1 > 0 && to2 > 0, "to1 {to1} to2 {to2}");
    assert_eq!(to1 + to2, packets);
    assert!(r0.counters.iter().all(|(e, n, _)| *e != "e" || *n != "to0"));
    assert!(r0.counter("e", "bytes_to2") > to2 * 60);
    for r in [&r0, &r1, &r2] {
        for (e, n, v) in &r.counters {
            assert!(*n != "drops" || *v == 0, "{e} dropped {v}");
        }
    }
    // Idle workers sleep on their socket: node 1 saw a few hundred
    // datagrams at most; a spinning loop would poll millions of times.
    assert!(r1.polls < 5_000, "node 1 polled {} times", r1.polls);
}

#[test]
fn direct_without_packing_is_one_datagram_per_frame_in_order() {
    let (input, [r0, r1, r2]) = run_cluster("direct", 1, true, 100);
    assert_eq!(
        r2.sent_on("ext1"),
        input.as_slice(),
        "direct over one socket keeps order"
    );
    assert_eq!(r0.counter("e", "packets"), 100);
    assert_eq!(r0.counter("e", "via"), 0);
    assert_eq!((r0.counter("e", "to2"), r0.counter("e", "to1")), (100, 0));
    assert_eq!(r1.counter("d", "forwarded"), 0);
}

/// What FabricEncap emits, captured on an in-memory "fabric" device.
fn encap_datagrams(cfg_args: &str, input: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let cfg = format!("FromDevice(ext0) -> e :: FabricEncap({cfg_args}) -> ToDevice(fabric);");
    let mut env = Env::new();
    let g = Graph::from_str(&cfg, "encap.click", &mut env, Pool::new(512)).expect("graph");
    let devs = vec![
        MemDevice::new("ext0", input),
        MemDevice::new("fabric", vec![]),
    ];
    let mut r = Runner::new(g, devs, 32).expect("runner");
    r.run_until_idle(100);
    r.devices_mut()[1].take_sent()
}

#[test]
fn tshark_decodes_the_fabric_as_geneve() {
    let dgrams = encap_datagrams(
        "NODE 0, NODES 2, PACKING 4, TO 1, PORT 0, QUEUE 5",
        frames(6),
    );
    assert_eq!(dgrams.len(), 2, "6 frames of one RX burst: 4 + 2");
    let (m0, m1) = (Mac([2, 0, 0, 0, 9, 1]), Mac([2, 0, 0, 0, 9, 2]));
    let wrapped: Vec<Vec<u8>> = dgrams
        .iter()
        .map(|d| build::udp4(m1, m0, [198, 19, 0, 1], [198, 19, 0, 2], 64, 40000, 6081, d))
        .collect();
    let path = common::write_pcap("fabric_geneve.pcap", &wrapped);
    let Some(text) = common::tshark(&path) else {
        return;
    };
    assert_eq!(
        text.matches("Generic Network Virtualization Encapsulation")
            .count(),
        2,
        "{text}"
    );
    // Our option, the Ethernet payload, and the first inner frame's UDP.
    assert!(
        text.contains("Class: 0xfff1") || text.contains("0xfff1"),
        "{text}"
    );
    assert!(text.contains("Transparent Ethernet bridging"), "{text}");
    assert!(text.contains("Src: 198.18.1.2"), "{text}");
    assert!(!text.contains("[Malformed"), "{text}");
}

#[test]
fn decap_refuses_garbage_and_foreign_traffic_by_reason() {
    // Node 1 receives: garbage, a datagram for node 0 without the transit
    // flag (a loop), a frame tagged for port 7 (it has 1 port), and one
    // good frame.
    let good = encap_datagrams("NODE 0, NODES 2, PACKING 1, TO 1, PORT 0", frames(1));
    let bad_port = encap_datagrams("NODE 0, NODES 2, PACKING 1, TO 1, PORT 7", frames(1));
    let for_zero = encap_datagrams("NODE 1, NODES 2, PACKING 1, TO 0, PORT 0", frames(1));
    let mut input = vec![vec![0xffu8; 40]];
    input.extend(for_zero);
    input.extend(bad_port);
    input.extend(good.clone());
    let cfg = "FromDevice(fabric) -> d :: FabricDecap(NODE 1, PORTS 1); d[0] -> ToDevice(ext0); d[1] -> ToDevice(fwd);";
    let mut env = Env::new();
    let g = Graph::from_str(cfg, "decap.click", &mut env, Pool::new(64)).expect("graph");
    let devs = vec![
        MemDevice::new("fabric", input),
        MemDevice::new("ext0", vec![]),
        MemDevice::new("fwd", vec![]),
    ];
    let mut r = Runner::new(g, devs, 32).expect("runner");
    r.run_until_idle(10);
    let s = r.graph.stats_of("d").expect("stats");
    let names = elements::fabric::DECAP_DROP_NAMES;
    let by = |n: &str| {
        let i = names.iter().position(|x| *x == n).expect("reason");
        s.dropped(graph::DropReason::own(i as u8))
    };
    assert_eq!(
        (by("bad_geneve"), by("not_for_us"), by("bad_port")),
        (1, 1, 1)
    );
    let out = r.devices_mut()[1].take_sent();
    assert_eq!(out, frames(1), "the good frame, header pulled off in place");
    assert!(r.devices_mut()[2].take_sent().is_empty());
}

#[test]
fn encap_drops_by_reason_and_skips_a_dead_node() {
    // Tags from anno.nh (no TO), as a lookup would set them: the test
    // sets them on the packets and injects them at FabricEncap.
    let cfg = "FromDevice(ext0) -> e :: FabricEncap(NODE 0, NODES 3, MODE vlb, PACKING 1, AFFINITY false, LIMIT 2) -> ToDevice(fabric);";
    let mut env = Env::new();
    let pool = Pool::new(256);
    let g = Graph::from_str(cfg, "encap.click", &mut env, pool.clone()).expect("graph");
    let devs = vec![
        MemDevice::new("ext0", vec![]),
        MemDevice::new("fabric", vec![]),
    ];
    let mut r = Runner::new(g, devs, 32).expect("runner");
    let ei = r.graph.find("e").expect("e");
    let inject = |r: &mut Runner<AnyElement, MemDevice>, tags: &[u32]| {
        let mut b = Batch::new();
        for (i, t) in tags.iter().enumerate() {
            let mut p = pool.alloc_from(&frames(i + 1)[i]).expect("buffer");
            p.anno.nh = *t;
            b.push(p).expect("room");
        }
        r.graph.inject(r.graph.find("e").expect("e"), 0, &mut b);
        r.process();
    };
    use elements::fabric_tag;
    // Local egress, unknown node, a bad tag, then 3 frames for node 2 with
    // a queue limit of 2 (the third waits in vain: queue_full).
    inject(&mut r, &[fabric_tag(0, 0, 0), fabric_tag(7, 0, 0), 1 << 31]);
    // Node 1 dies: VLB towards node 2 now never goes through it.
    if let Some(AnyElement::FabricEncap(e)) = r.graph.element_mut(ei) {
        e.balancer_mut().set_live(base::Instant::ZERO, 1, false);
    }
    inject(&mut r, &[fabric_tag(2, 0, 0); 40]);
    // Node 2 dies too: unreachable.
    if let Some(AnyElement::FabricEncap(e)) = r.graph.element_mut(ei) {
        e.balancer_mut().set_live(base::Instant::ZERO, 2, false);
    }
    inject(&mut r, &[fabric_tag(2, 0, 0)]);
    let s = r.graph.stats_of("e").expect("stats").clone();
    let by = |n: &str| {
        let i = elements::fabric::ENCAP_DROP_NAMES
            .iter()
            .position(|x| *x == n)
            .expect("reason");
        s.dropped(graph::DropReason::own(i as u8))
    };
    assert_eq!(
        (by("local"), by("unreachable"), by("bad_tag")),
        (1, 1, 2),
        "local: node 0 itself; unreachable: node 2 dead; bad tags: node 7 of 3, bits above the node id"
    );
    assert_eq!(by("queue_full"), 38, "40 frames into a queue of 2 per tick");
    let sent = r.devices_mut()[1].take_sent();
    assert_eq!(sent.len(), 2);
    match r.graph.element(ei) {
        Some(AnyElement::FabricEncap(e)) => {
            assert_eq!((e.lb_stats().via, e.lb_stats().direct), (0, 40));
        }
        _ => panic!("no encap"),
    }
}

#[test]
fn encap_never_draws_an_id_that_is_not_a_peer() {
    // Nodes 0 and 2 only (ids are 0..3): VLB may draw 0 or 2, both
    // meaning direct; never the missing node 1.
    let cfg = "FromDevice(ext0) -> e :: FabricEncap(NODE 0, NODES 3, MODE vlb, AFFINITY false, PEER 2 198.18.100.3) -> ToDevice(fabric);";
    let mut env = Env::new();
    let pool = Pool::new(256);
    let g = Graph::from_str(cfg, "encap.click", &mut env, pool.clone()).expect("graph");
    let devs = vec![
        MemDevice::new("ext0", vec![]),
        MemDevice::new("fabric", vec![]),
    ];
    let mut r = Runner::new(g, devs, 32).expect("runner");
    let ei = r.graph.find("e").expect("e");
    let mut b = Batch::new();
    for f in frames(50) {
        let mut p = pool.alloc_from(&f).expect("buffer");
        p.anno.gw[..4].copy_from_slice(&[198, 18, 100, 3]);
        b.push(p).expect("room");
    }
    r.graph.inject(ei, 0, &mut b);
    r.process();
    match r.graph.element(ei) {
        Some(AnyElement::FabricEncap(e)) => {
            assert_eq!((e.lb_stats().direct, e.lb_stats().via), (50, 0));
        }
        _ => panic!("no encap"),
    }
}

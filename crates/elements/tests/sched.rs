//! Schedulers (seed 002), virtual routers under proportional share, and
//! NICBalance under overload (seed 004 §4.4).

mod common;

use common::bus::overload;
use common::*;
use elements::{AnyElement, Env};
use graph::{Charge, Graph, Runner, VrConfig, VrScheduler};
use pkt::{build, Device, MemDevice, Pool};

fn frames_to(dst_net: u8, n: u8) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| build::udp4(R0, A, A4, [10, 0, dst_net, i], 64, 1, 2, b"x"))
        .collect()
}

/// Two sources, both always backlogged, into one scheduler that releases
/// `BURST 40` per poll; returns packets sent per input.
fn two_inputs(sched: &str) -> (u64, u64, Runner<AnyElement, MemDevice>) {
    let cfg = format!(
        "a :: FromDevice(a); b :: FromDevice(b); out :: ToDevice(o);
         s :: {sched};
         a -> [0] s; b -> [1] s; s -> out;"
    );
    let mut env = Env::new();
    let g = Graph::from_str(&cfg, "s.click", &mut env, Pool::new(4096)).unwrap();
    let mut r = Runner::new(
        g,
        vec![
            MemDevice::cycling("a", frames_to(1, 4)),
            MemDevice::cycling("b", frames_to(2, 4)),
            MemDevice::cycling("o", vec![]),
        ],
        32,
    )
    .unwrap();
    for _ in 0..1000 {
        r.poll();
    }
    let mut sent = [0u64; 2];
    let i = r.graph.find("s").unwrap();
    r.graph.element(i).unwrap().counters(&mut |k, v| match k {
        "sent_0" => sent[0] = v,
        "sent_1" => sent[1] = v,
        _ => {}
    });
    (sent[0], sent[1], r)
}

use graph::Element;

#[test]
fn round_robin_alternates() {
    let (a, b, r) = two_inputs("RoundRobinSched(INPUTS 2, BURST 10, CAPACITY 64)");
    assert_eq!(a + b, 10 * 1000);
    assert!(a.abs_diff(b) <= 1, "{a} {b}");
    // Offered 64 per poll, sent 10: the rest overflowed the FIFOs, counted.
    assert!(r.graph.dropped_at("s", "queue_full").unwrap() > 15_000);
    assert_eq!(r.devices()[2].stats().tx, a + b);
}

#[test]
fn stride_divides_by_tickets() {
    let (a, b, _) = two_inputs("StrideSched(TICKETS 3 1, BURST 40, CAPACITY 64)");
    assert_eq!(a + b, 40 * 1000);
    let ratio = a as f64 / b as f64;
    assert!((2.95..=3.05).contains(&ratio), "{a}:{b}");
}

#[test]
fn proportional_share_with_quantum() {
    let (a, b, _) = two_inputs("PsSched(TICKETS 1 1, QUANTUM 8, BURST 40, CAPACITY 64)");
    assert_eq!(a + b, 40 * 1000);
    assert!(a.abs_diff(b) <= 8, "{a} {b}");
}

#[test]
fn batching_throttle_waits_for_the_batch() {
    // Input 1 is not active until it holds 8 packets (no delay bound):
    // 5 packets stay queued; 3 more release all 8.
    let cfg = "a :: FromDevice(a); out :: ToDevice(o);
         s :: PsSched(TICKETS 1 1, BATCH 1 8, DELAY_US 0 1000000000, BURST 64);
         a -> [1] s; s -> out;";
    let mut env = Env::new();
    let g = Graph::from_str(cfg, "t.click", &mut env, Pool::new(64)).unwrap();
    let mut r = Runner::new(
        g,
        vec![
            MemDevice::new("a", frames_to(1, 5)),
            MemDevice::new("o", vec![]),
        ],
        16,
    )
    .unwrap();
    for _ in 0..10 {
        r.poll();
    }
    assert_eq!(r.devices()[1].sent().len(), 0, "below the batch threshold");
    for f in frames_to(1, 3) {
        r.devices_mut()[0].inject(f);
    }
    r.poll();
    assert_eq!(r.devices()[1].sent().len(), 8);
}

fn vr(net: u8) -> Runner<AnyElement, MemDevice> {
    let cfg = format!(
        "in0 :: FromDevice(eth0); out0 :: ToDevice(eth0);
         in0 -> CheckIpHeader -> Ip4Lookup(ROUTE 10.0.{net}.0/24 10.0.1.3 0) -> DecIpTtl
             -> EtherRewrite(MAC 02:00:00:00:00:01, NEIGH 10.0.1.3 02:00:00:00:01:03) -> out0;"
    );
    let mut env = Env::new();
    let g = Graph::from_str(&cfg, "vr.click", &mut env, Pool::new(1024)).unwrap();
    Runner::new(g, vec![MemDevice::cycling("eth0", frames_to(net, 16))], 32).unwrap()
}

#[test]
fn virtual_routers_share_by_tickets() {
    let mut s = VrScheduler::new(64, Charge::Packets);
    let a = s.add(
        vr(5),
        VrConfig {
            tickets: 300,
            ..VrConfig::default()
        },
    );
    let b = s.add(
        vr(6),
        VrConfig {
            tickets: 100,
            ..VrConfig::default()
        },
    );
    for _ in 0..4000 {
        assert!(s.step());
    }
    let (sa, sb) = (s.stats(a).unwrap(), s.stats(b).unwrap());
    let ratio = sa.charged as f64 / sb.charged as f64;
    assert!((2.8..=3.2).contains(&ratio), "{sa:?} {sb:?}");
    // Each router forwarded through its own FIB: every packet sent.
    for i in [a, b] {
        let r = s.runner(i).unwrap();
        assert!(r.devices()[0].stats().tx > 10_000);
        assert_eq!(r.graph.total_drops(), 0);
    }
}

#[test]
fn virtual_router_cpu_share_by_time() {
    // Charged by measured time, on this thread's CPU clock rather than
    // the wall clock: on shared CI cores a run that the OS preempted would
    // otherwise be charged for another process's time (the test failed
    // once at load 13 with the wall clock). Still a loose bound.
    assert!(base::thread_cpu_time().is_some(), "CLOCK_THREAD_CPUTIME_ID");
    let mut s = VrScheduler::with_clock(20_000, Charge::Time, Box::new(base::thread_cpu_ns));
    let a = s.add(
        vr(5),
        VrConfig {
            tickets: 200,
            ..VrConfig::default()
        },
    );
    let b = s.add(
        vr(6),
        VrConfig {
            tickets: 100,
            ..VrConfig::default()
        },
    );
    for _ in 0..3000 {
        s.step();
    }
    let (sa, sb) = (s.stats(a).unwrap(), s.stats(b).unwrap());
    let ratio = sa.charged as f64 / sb.charged as f64;
    assert!((1.5..=2.7).contains(&ratio), "{sa:?} {sb:?}");
}

#[test]
fn vr_batch_threshold_delays_a_trickle() {
    let mut s = VrScheduler::new(64, Charge::Packets);
    let mk = || {
        let cfg = "in0 :: FromDevice(eth0); in0 -> Counter -> ToDevice(eth0);";
        let mut env = Env::new();
        let g = Graph::from_str(cfg, "t.click", &mut env, Pool::new(256)).unwrap();
        Runner::new(g, vec![MemDevice::new("eth0", vec![])], 32).unwrap()
    };
    let v = s.add(
        mk(),
        VrConfig {
            tickets: 1,
            batch: 16,
            delay_ns: u64::MAX,
        },
    );
    for f in frames_to(1, 10) {
        s.runner_mut(v).unwrap().devices_mut()[0].inject(f);
    }
    assert!(!s.step(), "10 < 16 packets: not eligible");
    assert_eq!(s.runner(v).unwrap().devices()[0].sent().len(), 0);
    for f in frames_to(1, 6) {
        s.runner_mut(v).unwrap().devices_mut()[0].inject(f);
    }
    assert!(s.step());
    assert_eq!(s.runner(v).unwrap().devices()[0].sent().len(), 16);
    assert_eq!(s.stats(v).unwrap().runs, 1, "one run for the whole batch");
}

#[test]
fn nicbalance_raises_throughput_under_overload() {
    let polls = 20_000;
    let off = overload(false, polls);
    let on = overload(true, polls);
    eprintln!("without: {off:?}\nwith:    {on:?}");
    // Without: the receiver takes 64 of 96 slots every poll, leaving 32
    // for transmission; the transmit ring stays full and drops.
    assert!(off.tx <= polls * 33, "{off:?}");
    assert!(off.tx_full > polls * 25);
    // With: receptions are suspended while the queue drains.
    assert!(on.suspended > 0);
    assert!(on.tx as f64 >= off.tx as f64 * 1.3, "{on:?} vs {off:?}");
    assert!(on.tx_full * 2 < off.tx_full);
}

#[test]
fn nicbalance_config_errors() {
    let mut env = Env::new();
    let bad = [
        ("NICBalance(TX out0);", "needs TX, RX and QUEUES"),
        (
            "NICBalance(TX out0, RX in0, QUEUES q, RTHRESHOLD 2 1);",
            "MIN < MAX",
        ),
    ];
    for (cfg, want) in bad {
        let e = Graph::<AnyElement>::from_str(cfg, "b.click", &mut env, Pool::new(8)).unwrap_err();
        assert!(e.to_string().contains(want), "{e}");
    }
    // A name that is not in the graph fails at bind time.
    let g = Graph::from_str(
        "in0 :: FromDevice(eth0); out0 :: ToDevice(eth0); q :: Queue; in0 -> q -> out0;
         NICBalance(TX out0, RX nope, QUEUES q);",
        "b.click",
        &mut env,
        Pool::new(8),
    )
    .unwrap();
    let e = Runner::new(g, vec![MemDevice::new("eth0", vec![])], 8)
        .err()
        .unwrap();
    assert_eq!(e.device, "nope");
}

#[test]
fn a_preempted_run_is_not_charged_in_full() {
    // A virtual clock: 1 us per reading, and one 50 ms jump (the thread
    // descheduled in the middle of a run on a shared core).
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let t = Arc::new(AtomicU64::new(0));
    let reads = Arc::new(AtomicU64::new(0));
    let (tc, rc) = (Arc::clone(&t), Arc::clone(&reads));
    let clock = Box::new(move || {
        let jump = if rc.fetch_add(1, Ordering::Relaxed) == 500 {
            50_000_000
        } else {
            1_000
        };
        tc.fetch_add(jump, Ordering::Relaxed) + jump
    });
    let mut s = VrScheduler::with_clock(20_000, Charge::Time, clock);
    let a = s.add(vr(5), VrConfig::default());
    let b = s.add(vr(6), VrConfig::default());
    for _ in 0..200 {
        s.step();
    }
    assert!(reads.load(Ordering::Relaxed) > 500, "the jump happened");
    let (sa, sb) = (s.stats(a).unwrap(), s.stats(b).unwrap());
    // Charged at most 2 G + 50 us for the preempted run, not 50 ms: the
    // two routers keep alternating instead of one starving for 50 ms.
    assert!(sa.charged.max(sb.charged) < 10_000_000, "{sa:?} {sb:?}");
    assert!(sa.runs.abs_diff(sb.runs) <= 4, "{sa:?} {sb:?}");
}

#[test]
fn virtual_time_never_goes_back() {
    // A router that stayed active with an old, low pass (throttled below
    // its batch) runs late; a router that rejoins after it must start
    // from the current virtual time, not from that old pass, or it would
    // run alone for as long as the credit it was wrongly given.
    let mk = |frames: Vec<Vec<u8>>, cycling: bool| {
        let cfg = "in0 :: FromDevice(eth0); in0 -> Counter -> ToDevice(eth0);";
        let mut env = Env::new();
        let g = Graph::from_str(cfg, "t.click", &mut env, Pool::new(1024)).unwrap();
        let dev = if cycling {
            MemDevice::cycling("eth0", frames)
        } else {
            MemDevice::new("eth0", frames).with_tx_mode(pkt::TxMode::Discard)
        };
        Runner::new(g, vec![dev], 32).unwrap()
    };
    let mut s = VrScheduler::new(8, Charge::Packets);
    let throttled = VrConfig {
        tickets: 100,
        batch: 16,
        delay_ns: u64::MAX,
    };
    let plain = VrConfig {
        tickets: 100,
        ..VrConfig::default()
    };
    let a = s.add(mk(frames_to(1, 16), false), throttled);
    let b = s.add(mk(frames_to(2, 16), true), plain);
    let c = s.add(mk(Vec::new(), false), plain);
    assert!(s.step());
    assert_eq!(s.stats(a).unwrap().runs, 1, "a ran first (tie, index 0)");
    // a keeps 5 packets (below its batch: active, not eligible) while b
    // runs alone and virtual time moves on.
    for f in frames_to(1, 5) {
        s.runner_mut(a).unwrap().devices_mut()[0].inject(f);
    }
    for _ in 0..100 {
        assert!(s.step());
    }
    assert_eq!(s.stats(a).unwrap().runs, 1);
    // a reaches its batch and runs with its old pass; then c rejoins.
    for f in frames_to(1, 11) {
        s.runner_mut(a).unwrap().devices_mut()[0].inject(f);
    }
    assert!(s.step());
    assert_eq!(s.stats(a).unwrap().runs, 2);
    for _ in 0..100 {
        for f in frames_to(3, 32) {
            s.runner_mut(c).unwrap().devices_mut()[0].inject(f);
        }
    }
    let b0 = s.stats(b).unwrap().runs;
    for _ in 0..20 {
        assert!(s.step());
    }
    let (rb, rc) = (s.stats(b).unwrap().runs - b0, s.stats(c).unwrap().runs);
    assert!(
        rb >= 8 && rc >= 8,
        "b {rb} and c {rc} runs of 20: they alternate"
    );
}

#[test]
fn a_decision_reads_the_clock_twice() {
    // The thread CPU clock is a system call: a decision whose run is one
    // batch (G shorter than a batch) reads it once before the run and
    // once after its batch, which is also the next decision's "now".
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let reads = Arc::new(AtomicU64::new(0));
    let rc = Arc::clone(&reads);
    let clock = Box::new(move || (rc.fetch_add(1, Ordering::Relaxed) + 1) * 1_000);
    let mut s = VrScheduler::with_clock(1, Charge::Time, clock);
    let a = s.add(vr(5), VrConfig::default());
    let b = s.add(vr(6), VrConfig::default());
    for _ in 0..100 {
        assert!(s.step());
    }
    let (sa, sb) = (s.stats(a).unwrap(), s.stats(b).unwrap());
    assert_eq!(sa.runs + sb.runs, 100);
    // 1 for the first decision's "now", then 2 per decision.
    assert_eq!(reads.load(Ordering::Relaxed), 201);
    // Each run is charged its one batch (1 us of this clock), the shares
    // stay equal.
    assert_eq!(sa.charged + sb.charged, 100_000);
    assert!(sa.runs.abs_diff(sb.runs) <= 1, "{sa:?} {sb:?}");
}

//! The congestion-control elements in a closed loop, on a virtual clock:
//! three ingress graphs (`CcIngress -> ToDevice(fabric)`) send to one
//! egress graph (`CcEgress`, shaped at C pps), whose control messages
//! (real BECN datagrams of the fabric option) go back to the ingresses'
//! control input. Offered load 3 × C. Without control the egress queue
//! sits at its limit and the fabric carries all the offered load; with
//! each scheme the queue stays bounded, the injection into the fabric
//! falls to about C, the egress still sends about C, and the three
//! ingresses share it fairly. Deterministic: time is passed in.

use elements::{source_tag, AnyElement, Env};
use graph::{Element, Graph};
use pkt::{build, Batch, Mac, Pool};

const C: u64 = 20_000;
const STEP_NS: u64 = 100_000; // 0.1 ms
const SECS: u64 = 3;

fn frame(i: u16) -> Vec<u8> {
    let (a, r) = (Mac([2, 0, 0, 0, 1, 2]), Mac([2, 0, 0, 0, 0, 1]));
    build::udp4(
        r,
        a,
        [198, 18, 1, 2],
        [198, 18, 4, 2],
        64,
        1000 + i,
        9,
        b"x",
    )
}

fn graph(text: &str) -> Graph<AnyElement> {
    let mut env = Env::new();
    Graph::from_str(text, "cc.click", &mut env, Pool::new(8192)).expect("graph builds")
}

fn drain(g: &mut Graph<AnyElement>, name: &str) -> Vec<pkt::Packet> {
    let i = g.find(name).expect("element");
    let b = g
        .element_mut(i)
        .and_then(|e| e.tx_batch())
        .expect("a ToDevice");
    b.drain().collect()
}

fn counter(g: &Graph<AnyElement>, name: &str, key: &str) -> u64 {
    let mut v = 0;
    let i = g.find(name).expect("element");
    g.element(i).expect("element").counters(&mut |k, x| {
        if k == key {
            v = x;
        }
    });
    v
}

struct Run {
    offered: u64,
    injected: u64,
    sent: u64,
    queue_mean: f64,
    queue_sd: f64,
    from: [u64; 3],
    control: u64,
}

fn jain(x: &[u64]) -> f64 {
    let s: f64 = x.iter().map(|&v| v as f64).sum();
    let q: f64 = x.iter().map(|&v| (v as f64).powi(2)).sum();
    s * s / (x.len() as f64 * q)
}

fn run(scheme: &str, ingress_extra: &str) -> Run {
    let egress = format!(
        "q :: CcEgress(NODE 3, SCHEME {scheme}, SHAPE {C}, LIMIT 1000, THRESHOLD 100, \
         R 3.4e8);\n q [0] -> ext :: ToDevice(ext); q [1] -> fab :: ToDevice(fab);"
    );
    let mut eg = graph(&egress);
    let q = eg.find("q").expect("q");
    let mut ing: Vec<Graph<AnyElement>> = (0..3)
        .map(|n| {
            graph(&format!(
                "i :: CcIngress(NODE {n}, SCHEME {scheme}, PEER 3 198.18.100.4{ingress_extra});\n\
                 i -> fab :: ToDevice(fab);"
            ))
        })
        .collect();
    let f = frame(1);
    let mut gw = [0u8; 16];
    gw[..4].copy_from_slice(&[198, 18, 100, 4]);
    let (mut offered, mut acc) = (0u64, 0u64);
    let mut control: Vec<Vec<pkt::Packet>> = vec![Vec::new(), Vec::new(), Vec::new()];
    let steps = SECS * 1_000_000_000 / STEP_NS;
    for s in 1..=steps {
        let now = s * STEP_NS;
        // 3 × C offered in total, C per ingress: C × STEP / 1 s per step.
        acc += C * STEP_NS;
        let per = acc / 1_000_000_000;
        acc %= 1_000_000_000;
        let mut to_egress = Batch::with_capacity(256);
        for (n, g) in ing.iter_mut().enumerate() {
            g.set_now_ns(now);
            let i = g.find("i").expect("i");
            let mut ctl = Batch::with_capacity(64);
            for p in control[n].drain(..) {
                ctl.push(p).expect("room");
            }
            g.inject(i, 1, &mut ctl);
            let mut b = Batch::with_capacity(64);
            for _ in 0..per {
                let mut p = g.pool().alloc_from(&f).expect("buffer");
                p.anno.gw = gw;
                b.push(p).expect("room");
                offered += 1;
            }
            g.inject(i, 0, &mut b);
            g.run();
            for mut p in drain(g, "fab") {
                p.anno.nh = source_tag(n as u16, 0);
                to_egress.push(p).expect("room");
            }
        }
        eg.set_now_ns(now);
        eg.inject(q, 0, &mut to_egress);
        eg.run();
        eg.tick();
        drop(drain(&mut eg, "ext"));
        for p in drain(&mut eg, "fab") {
            let dst = p.anno.nh as usize;
            control.get_mut(dst).expect("an ingress node").push(p);
        }
    }
    let AnyElement::CcEgress(e) = eg.element(q).expect("q") else {
        panic!("not CcEgress")
    };
    let (_, queue_mean, queue_sd) = e.queue_stats();
    Run {
        offered,
        injected: ing.iter().map(|g| counter(g, "i", "injected")).sum(),
        sent: counter(&eg, "q", "sent"),
        queue_mean,
        queue_sd,
        from: [e.from_node(0), e.from_node(1), e.from_node(2)],
        control: counter(&eg, "q", "control_sent"),
    }
}

fn check_controlled(scheme: &str, extra: &str) -> Run {
    let none = run("none", "");
    let r = run(scheme, extra);
    let cap = (C * SECS) as f64;
    eprintln!(
        "{scheme}: offered {} injected {} (none {}) sent {} / C·T {cap} queue {:.1} ± {:.1} \
         (none {:.1}) shares {:?} jain {:.3} control {}",
        r.offered,
        r.injected,
        none.injected,
        r.sent,
        r.queue_mean,
        r.queue_sd,
        none.queue_mean,
        r.from,
        jain(&r.from),
        r.control
    );
    // Without control: everything offered enters the fabric, the queue
    // sits near its limit.
    assert_eq!(none.injected, none.offered);
    assert!(none.queue_mean > 800.0, "none: queue {}", none.queue_mean);
    // With control: the egress still runs near C...
    assert!(r.sent as f64 > 0.85 * cap, "{scheme}: sent {}", r.sent);
    // ...the queue stays bounded...
    assert!(r.queue_mean < 400.0, "{scheme}: queue {}", r.queue_mean);
    // ...the fabric carries far less than offered...
    assert!(
        (r.injected as f64) < 0.6 * r.offered as f64,
        "{scheme}: injected {} of {}",
        r.injected,
        r.offered
    );
    // ...and the three ingresses share fairly.
    assert!(jain(&r.from) > 0.9, "{scheme}: shares {:?}", r.from);
    assert!(r.control > 0);
    r
}

#[test]
fn becn_with_aimd_weights_bounds_the_egress_queue() {
    check_controlled("becn-aimd-weights", "");
}

#[test]
fn price_bounds_the_egress_queue() {
    // K scaled to C (K·p must stay below 2 at the optimum p = n·W/C).
    check_controlled("price", ", K 2600");
}

#[test]
fn aimd_rate_bounds_the_egress_queue() {
    // W scaled to C: 50 kpps per ms at C = 764.5 kpps is 1300 pps at 20 kpps.
    check_controlled("aimd-rate", ", W 1300");
}

#[test]
fn bad_arguments_are_refused() {
    for bad in [
        "q :: CcEgress(SCHEME price);",
        "q :: CcEgress(NODE 1, SCHEME fast);",
        "q :: CcEgress(NODE 64);",
        "q :: CcEgress(NODE 1, U -1);",
        "i :: CcIngress(NODE 1, PEER 2 nowhere);",
        "i :: CcIngress(NODE 1, COLOUR red);",
    ] {
        let mut env = Env::new();
        assert!(
            Graph::<AnyElement>::from_str(bad, "t.click", &mut env, Pool::new(16)).is_err(),
            "{bad}"
        );
    }
}

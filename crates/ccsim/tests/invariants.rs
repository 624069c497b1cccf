//! Properties of the simulator over arbitrary small clusters: packets are
//! conserved, ports never exceed their capacity, hostile configurations
//! are refused rather than run.

use ccsim::scenario::Scheme;
use ccsim::{Config, Cpu, NodeCfg, Pattern, Sim, SourceCfg};
use proptest::prelude::*;

fn scheme(i: u8) -> Scheme {
    match i % 6 {
        0 => Scheme::None,
        1 => Scheme::a(),
        2 => Scheme::Weights(cc::Notify::All, cc::params::weight_ingress()),
        3 => Scheme::RatePrice(500_000.0),
        4 => Scheme::QueuePrice,
        _ => Scheme::Aimd,
    }
}

fn pattern(i: u8) -> Pattern {
    match i % 3 {
        0 => Pattern::Constant,
        1 => Pattern::Poisson,
        _ => Pattern::OnOff {
            on_ns: 2_000_000,
            off_ns: 1_000_000,
        },
    }
}

prop_compose! {
    fn cluster()(nodes in 2usize..5, cpu in any::<bool>(), port in 100_000.0f64..1e6,
                 srcs in prop::collection::vec((0usize..5, 0usize..5, 0.0f64..1.5e6, any::<u8>()), 1..6),
                 s in any::<u8>(), seed in any::<u64>(), lag in prop::sample::select(vec![0u64, 1_000_000]),
                 tx_ring in prop::sample::select(vec![0u32, 256]))
                -> Config {
        let mut cfg = Config::new(60_000_000, scheme(s).control(2e6));
        cfg.seed = seed;
        cfg.warmup_ns = 10_000_000;
        cfg.signal_lag_ns = lag;
        let mut node = NodeCfg::port(port);
        node.tx_ring = tx_ring;
        if cpu {
            node.cpu = Some(Cpu { rx_cost_ns: 470.0, tx_cost_ns: 950.0, rx_quota: 64, tx_quota: 32 });
            node.ring = 512;
        }
        cfg.nodes = vec![node; nodes];
        for (a, b, r, p) in srcs {
            cfg.sources.push(SourceCfg { node: a % nodes, dest: b % nodes, rate_pps: r, pattern: pattern(p), start_ns: 0 });
        }
        cfg
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn packets_are_conserved_and_ports_respected(cfg in cluster()) {
        let node = cfg.nodes[0];
        let dur_s = cfg.duration_ns as f64 * 1e-9;
        let n_nodes = cfg.nodes.len();
        let rep = Sim::new(cfg.clone()).expect("valid").run(&mut |_| {});
        let mut in_system = vec![0i64; n_nodes];
        let mut tx_by_dest = vec![0u64; n_nodes];
        for (f, s) in rep.summary.flows.iter().zip(cfg.sources.iter()) {
            let t = f.totals;
            // Ingress: what was kept either went into the fabric or waits.
            let waiting = t.offered as i64 - t.ingress_drop as i64 - t.injected as i64;
            prop_assert!((0..=i64::from(node.ingress_queue)).contains(&waiting), "{t:?}");
            // Fabric and egress: nothing leaves that did not enter.
            let left = t.hca_drop + t.egress_drop + t.tx;
            prop_assert!(left <= t.injected, "{t:?}");
            in_system[s.dest] += t.injected as i64 - left as i64;
            tx_by_dest[s.dest] += t.tx;
        }
        // What is inside an egress is bounded by its ring, its queue and one
        // fabric delay of the fastest ingresses (2 ticks of 2 Mpps each).
        let in_flight = 2 * cfg.sources.len() as i64 * 40;
        for (d, &v) in in_system.iter().enumerate() {
            prop_assert!(v >= 0);
            prop_assert!(v <= i64::from(node.ring) + i64::from(node.out_queue) + i64::from(node.tx_ring) + in_flight, "node {d}: {v}");
            // The port never sends faster than its capacity (plus one tick's rounding).
            prop_assert!(tx_by_dest[d] as f64 <= node.port_pps * dur_s + 40.0, "node {d}");
        }
    }

    #[test]
    fn hostile_configs_are_refused(rate in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(-1.0), Just(1e300)],
                                   which in 0usize..3, bad_node in 2usize..10) {
        let mut cfg = Config::new(1_000_000, Scheme::QueuePrice.control(1e6));
        cfg.nodes = vec![NodeCfg::port(1e6); 2];
        cfg.sources.push(SourceCfg { node: 0, dest: 1, rate_pps: 1e5, pattern: Pattern::Constant, start_ns: 0 });
        match which {
            0 => cfg.sources[0].rate_pps = rate,
            1 => cfg.nodes[1].port_pps = rate,
            _ => cfg.sources[0].dest = bad_node,
        }
        prop_assert!(Sim::new(cfg).is_err());
    }
}

#[test]
fn interval_must_be_a_multiple_of_the_tick() {
    let mut cfg = Config::new(1_000_000, Scheme::Aimd.control(1e6));
    cfg.nodes = vec![NodeCfg::port(1e6)];
    cfg.tick_ns = 3_000;
    assert!(Sim::new(cfg.clone()).is_err());
    cfg.tick_ns = 0;
    assert!(Sim::new(cfg).is_err());
}

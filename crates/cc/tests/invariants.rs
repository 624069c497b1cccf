//! Properties of every controller over arbitrary event sequences.

use base::Instant;
use cc::{
    params, Allowance, EgressControl, EgressSample, EgressScheme, Eq67, Increase, IngressControl,
    IngressScheme, Notify, Quantum, Signal, TokenBucket,
};
use proptest::prelude::*;
use std::time::Duration;

const MS: Duration = Duration::from_millis(1);

#[derive(Clone, Debug)]
enum Ev {
    Interval(u32),
    Becn,
    Price(f64),
}

fn ev() -> impl Strategy<Value = Ev> {
    prop_oneof![
        (0u32..2_000).prop_map(Ev::Interval),
        Just(Ev::Becn),
        prop_oneof![any::<f64>(), 0.0..1e-4].prop_map(Ev::Price),
    ]
}

fn drive(scheme: IngressScheme, evs: &[Ev]) -> Vec<Allowance> {
    let mut c = IngressControl::new(Instant::ZERO, MS, scheme);
    let mut injected = 0u64;
    let mut out = Vec::new();
    for e in evs {
        match *e {
            Ev::Interval(n) => {
                injected += u64::from(n);
                c.on_interval(0.001, injected);
                out.push(c.allowance());
            }
            Ev::Becn => out.push(c.on_signal(Signal::Becn)),
            Ev::Price(p) => out.push(c.on_signal(Signal::Price(p))),
        }
    }
    out
}

proptest! {
    #[test]
    fn weight_stays_in_bounds(incr in 0u32..2000, max in 0u32..5000, min in 0u32..100,
                              every in any::<bool>(), evs in prop::collection::vec(ev(), 0..200)) {
        let inc = if every { Increase::EveryInterval } else { Increase::IfNoBecn };
        let s = IngressScheme::Weight { incr, max, min, increase: inc };
        for a in drive(s, &evs) {
            let Allowance::Weight(w) = a else { panic!("rate from a weight scheme") };
            prop_assert!(w >= 1);
            prop_assert!(w <= max.max(1).max(min));
        }
    }

    #[test]
    fn rates_are_finite_nonnegative_and_capped(cap in 1.0f64..1e7, evs in prop::collection::vec(ev(), 0..200)) {
        for s in [params::aimd_ingress(cap), params::price_ingress(cap)] {
            for a in drive(s, &evs) {
                let Allowance::Rate(r) = a else { panic!("weight from a rate scheme") };
                prop_assert!(r.is_finite() && r >= 0.0 && r <= cap, "{r}");
            }
        }
    }

    #[test]
    fn a_becn_never_raises_an_aimd_rate(evs in prop::collection::vec(ev(), 0..100)) {
        let mut c = IngressControl::new(Instant::ZERO, Duration::from_nanos(1), params::aimd_ingress(1e6));
        let mut inj = 0;
        for e in &evs {
            match *e {
                Ev::Interval(n) => { inj += u64::from(n); c.on_interval(0.001, inj); }
                _ => {
                    let Allowance::Rate(after) = c.on_signal(Signal::Becn) else { unreachable!() };
                    // ×M of what was measured, never more than the cap.
                    prop_assert!(after <= (0.5 * c.current_rate()).min(1e6) + 1e-9);
                }
            }
        }
    }

    #[test]
    fn prices_are_finite_and_nonnegative(
        qs in prop::collection::vec((0u32..100_000, 0u64..10_000), 1..200),
        which in 0usize..2)
    {
        let scheme = if which == 0 { params::queue_price() } else { params::rate_price(764_500.0) };
        let mut e = EgressControl::new(Instant::ZERO, MS, scheme);
        let (mut now, mut tin) = (0u64, 0u64);
        for (q, n) in qs {
            now += 1_000_000;
            tin += n;
            let s = EgressSample { queue_len: q, pkts_in: tin, pkts_out: 0 };
            match e.poll(Instant::from_nanos(now), s) {
                Some(Signal::Price(p)) => prop_assert!(p.is_finite() && p >= 0.0),
                other => prop_assert!(false, "{other:?}"),
            }
        }
    }

    #[test]
    fn becn_only_above_threshold_and_once_per_interval(
        steps in prop::collection::vec((1u64..3_000_000, 0u32..300), 1..200))
    {
        let mut e = EgressControl::new(Instant::ZERO, MS, EgressScheme::Threshold { q_threshold: 100, notify: Notify::All });
        let (mut now, mut last_fire) = (0u64, None::<u64>);
        for (dt, q) in steps {
            now += dt;
            if let Some(sig) = e.poll(Instant::from_nanos(now), EgressSample { queue_len: q, ..Default::default() }) {
                prop_assert_eq!(sig, Signal::Becn);
                prop_assert!(q > 100);
                if let Some(l) = last_fire { prop_assert!(now - l >= 1_000_000); }
                last_fire = Some(now);
            }
        }
    }

    #[test]
    fn token_bucket_never_exceeds_rate_times_time_plus_burst(
        rate in 0.0f64..2e6, burst in 1.0f64..1000.0,
        steps in prop::collection::vec((0u64..1_000_000, 0u64..5000), 1..300))
    {
        let mut b = TokenBucket::new(Instant::ZERO, rate, burst);
        let (mut now, mut got) = (0u64, 0u64);
        for (dt, want) in steps {
            now += dt;
            let g = b.take(Instant::from_nanos(now), want);
            prop_assert!(g <= want);
            got += g;
            prop_assert!(got as f64 <= rate * now as f64 * 1e-9 + burst + 1e-6);
        }
    }

    #[test]
    fn quantum_serves_its_share(weight in 0u32..3000, th in 1u32..3000,
                                calls in prop::collection::vec((0u64..1000, 0u64..1000), 1..100)) {
        let mut q = Quantum::default();
        let (mut rounds, mut served) = (0u64, 0u64);
        for (r, backlog) in calls {
            let s = q.serve(weight, th, r, backlog);
            prop_assert!(s <= r && s <= backlog);
            rounds += r;
            served += s;
            // Never more than the weight's share, plus the one banked service.
            prop_assert!(served * u64::from(th) <= rounds * u64::from(weight) + u64::from(th));
        }
    }

    #[test]
    fn eq67_converges_from_any_start_inside_the_analytic_region(
        x0 in prop::collection::vec(0.0f64..2e6, 3), p0 in 0.0f64..2e-5,
        k in 40_000.0f64..200_000.0, r in 3e11f64..8e11)
    {
        let m = Eq67::fig61(k, r);
        let out = m.run(&x0, p0, 2000, 0.001);
        prop_assert!(out.error <= 0.001, "K={k} R={r} error {}", out.error);
    }
}

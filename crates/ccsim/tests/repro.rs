//! The reproductions of Ye 2010 ch. 5-7: each experiment prints the
//! thesis's value beside ours, and every judged check must hold within
//! its stated tolerance. Run with `--nocapture` to see the tables.

use ccsim::scenario::{run, Opts};

fn check(name: &str, opts: Opts) {
    let out = run(name, opts, &mut |_, _| {}).expect("runs");
    println!("## {name}\n{}", out.table());
    assert!(!out.files.is_empty());
    let failed = out.failures();
    assert!(failed.is_empty(), "{name}: {failed:#?}");
}

#[test]
fn fig61_stability_region() {
    check("fig61", Opts::default());
}

#[test]
fn fig62_eq67_in_the_simulator() {
    check("fig62", Opts::default());
}

#[test]
fn tab71_and_fig711() {
    check("tab71", Opts::default());
}

#[test]
fn fairness_max_min() {
    check("fairness", Opts::default());
}

#[test]
fn ch5_becn_aimd_weights() {
    check("ch5", Opts::default());
}

#[test]
fn sweep_a_chosen_constants_are_near_best() {
    check(
        "sweep-a",
        Opts {
            seed: 1,
            quick: true,
        },
    );
}

#[test]
fn scale_hot_egresses_at_capacity() {
    check(
        "scale",
        Opts {
            seed: 1,
            quick: true,
        },
    );
}

#[test]
fn same_seed_same_result_other_seed_other_noise() {
    use ccsim::scenario::{ch7, Scheme, C_REAL};
    use ccsim::{Pattern, Sim};
    let cfg = |seed| {
        let mut c = ch7(
            Scheme::Aimd,
            &[299e3; 3],
            C_REAL,
            Pattern::Poisson,
            200_000_000,
        );
        c.seed = seed;
        c
    };
    let a = Sim::new(cfg(7)).unwrap().run(&mut |_| {});
    let b = Sim::new(cfg(7)).unwrap().run(&mut |_| {});
    let c = Sim::new(cfg(8)).unwrap().run(&mut |_| {});
    assert_eq!(a, b);
    assert_ne!(a.summary.flows[0].totals, c.summary.flows[0].totals);
}

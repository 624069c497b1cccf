//! The cluster's internal congestion control (issue 15) in the real
//! cluster: four tesserads in network namespaces, three ingress nodes
//! sending to one egress node whose external port is emulated by a TX
//! shaper at C pps (`egress_shape_pps`), so that overload is reachable on
//! two shared cores:
//!
//! ```text
//! H0 -- N0 --+
//! H1 -- N1 --+-- br0 (fabric) -- N3 [CcEgress: queue, shaper at C] -- H3 (UDP sink)
//! H2 -- N2 --+
//! ```
//!
//! Each host H0..H2 sends UDP to H3 at C pps (3 × C offered), from a
//! thread of this test that entered the host's namespace (`setns`); a
//! thread in H3's namespace counts what arrives per source. Without
//! control the egress queue sits at its limit and the fabric carries all
//! of the offered load, to be dropped at the egress; with each scheme the
//! queue stays bounded, the ingresses inject about C in total, and they
//! share it fairly (Jain index > 0.9). The counters of the
//! congestion-control elements come from each tesserad's final report
//! (the `cluster-cc:` line printed on SIGTERM). Needs root, `ip`, `ping`;
//! every step is bounded and the namespaces are removed (also on failure).

mod cc_lab;
use e2e as common;

use cc_lab::{jain, measure, Measured};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_tesserad");
const C: u64 = 5_000;
const LOAD: Duration = Duration::from_secs(3);

fn scheme(name: &str) -> String {
    format!("congestion_control = \"{name}\"\negress_shape_pps = {C}\n")
}

fn check(scheme_name: &str, none: &Measured) {
    let m = measure(BIN, &scheme(scheme_name), C, LOAD);
    let cap = C as f64 * LOAD.as_secs_f64();
    let got: u64 = m.received.iter().sum();
    assert!(
        m.egress.queue_mean < 400.0 && m.egress.queue_mean < none.egress.queue_mean / 2.0,
        "{scheme_name}: queue {} vs none {}",
        m.egress.queue_mean,
        none.egress.queue_mean
    );
    assert!(
        (m.injected as f64) < 0.7 * m.offered as f64,
        "{scheme_name}: injected {} of {}",
        m.injected,
        m.offered
    );
    assert!(
        got as f64 > 0.6 * cap,
        "{scheme_name}: egress sent {got} of C·T {cap}"
    );
    assert!(
        jain(&m.received) > 0.9,
        "{scheme_name}: shares {:?}",
        m.received
    );
    assert!(
        m.egress.control_sent > 0,
        "{scheme_name}: no control messages"
    );
}

/// 3 × C offered: no control, then each scheme.
#[test]
fn congestion_control_bounds_the_egress_queue_in_the_cluster() {
    let none = measure(BIN, &format!("egress_shape_pps = {C}\n"), C, LOAD);
    assert!(none.offered > 0);
    assert!(
        none.injected as f64 > 0.9 * none.offered as f64,
        "none: the fabric carries what is offered: {none:?}"
    );
    assert!(
        none.egress.egress_dropped as f64 > 0.3 * none.egress.egress_in as f64,
        "none: the egress drops the excess: {none:?}"
    );
    assert!(
        none.egress.queue_mean > 500.0,
        "none: queue {}",
        none.egress.queue_mean
    );
    for s in ["becn-aimd-weights", "price", "aimd-rate"] {
        check(s, &none);
    }
}

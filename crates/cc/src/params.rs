//! The constants: the thesis's where it prints them (ch. 6-7), ours where
//! it does not (ch. 5, marked GAP in cluster-spec §4.1). `docs/cc.md` gives
//! the sweeps behind our choices.

use std::time::Duration;

use crate::{EgressScheme, Increase, IngressScheme, Notify};

/// Control interval (ch. 6-7: 1 ms; ch. 5: GAP, we use the same).
pub const INTERVAL: Duration = Duration::from_millis(1);
/// [`INTERVAL`] in ns.
pub const INTERVAL_NS: u64 = 1_000_000;
/// Egress capacity of ch. 6-7's simulation, pps.
pub const C_PPS: f64 = 764_500.0;
/// Eq 6.7 source gain K (§7.6.3).
pub const K: f64 = 100_000.0;
/// Eq 6.7 price damping R (§7.6.3).
pub const R: f64 = 5e11;
/// Utility weight W.
pub const W: f64 = 1.0;
/// Eq 7.9 target queue q_o, packets.
pub const Q_O: f64 = 100.0;
/// Eq 7.9 offset weight u.
pub const U: f64 = 0.01;
/// Scheme C additive increase, pps per interval.
pub const AIMD_W: f64 = 50_000.0;
/// Scheme C multiplicative decrease.
pub const AIMD_M: f64 = 0.5;
/// BECN queue threshold Q, packets (ch. 7; ch. 5 GAP, we use the same).
pub const Q_THRESHOLD: u32 = 100;
/// Scheme A THRESHOLD of the weighted scheduler (GAP: ours).
pub const WEIGHT_THRESHOLD: u32 = 1000;
/// Scheme A MAXWEIGHT (GAP: ours; = THRESHOLD, so a full weight is one
/// service per round).
pub const MAX_WEIGHT: u32 = 1000;
/// Scheme A Incrweight per interval (GAP: ours, from the sweep in
/// docs/cc.md: 2 % of MAXWEIGHT).
pub const INCR_WEIGHT: u32 = 20;

/// Scheme A egress: BECN above Q to the last source (or to all, the
/// "without subset notification" baseline).
pub fn becn(notify: Notify) -> EgressScheme {
    EgressScheme::Threshold {
        q_threshold: Q_THRESHOLD,
        notify,
    }
}

/// Scheme A ingress with our constants.
pub fn weight_ingress() -> IngressScheme {
    IngressScheme::Weight {
        incr: INCR_WEIGHT,
        max: MAX_WEIGHT,
        min: 1,
        increase: Increase::EveryInterval,
    }
}

/// Scheme B egress (Eq 6.7) for capacity `c` pps.
pub fn rate_price(c: f64) -> EgressScheme {
    EgressScheme::RatePrice {
        capacity_pps: c,
        r: R,
    }
}

/// Scheme B′ egress (Eq 7.9).
pub fn queue_price() -> EgressScheme {
    EgressScheme::QueuePrice {
        q_o: Q_O,
        u: U,
        r: R,
    }
}

/// Schemes B/B′ ingress, MaxRate capped at `max_rate` pps.
pub fn price_ingress(max_rate: f64) -> IngressScheme {
    IngressScheme::Price {
        k: K,
        w: W,
        max_rate,
    }
}

/// Scheme C ingress, MaxRate capped at `max_rate` pps.
pub fn aimd_ingress(max_rate: f64) -> IngressScheme {
    IngressScheme::RateAimd {
        w: AIMD_W,
        m: AIMD_M,
        max_rate,
    }
}

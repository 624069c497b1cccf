//! Internal congestion control for the cluster router (Ye 2010, ch. 5-7;
//! `../shared/docs/cluster-spec.md` §4), pure: **time and counters in,
//! decisions out**. Time is a [`base::Instant`] passed in; nothing here reads a clock, touches a socket or draws
//! a random number; the caller (a dataplane element, or the `ccsim`
//! simulator) passes the time and the counters it keeps.
//!
//! Three schemes, each an egress half and an ingress half:
//!
//! | scheme | egress ([`EgressScheme`]) | signal | ingress ([`IngressScheme`]) | applied by |
//! |---|---|---|---|---|
//! | A, ch. 5 | `Threshold`, [`Notify::LastSource`] | BECN to the source of the last packet | `Weight`: +incr per interval, ÷2 per BECN | [`Quantum`] |
//! | B, Eq 6.7 | `RatePrice`: p += (R_recv − C)/R | price, broadcast | `Price`: [x + K(W − x·p)]⁺ | [`TokenBucket`] |
//! | B′, Eq 7.9 | `QueuePrice`: p += (Δq/T + (q − q_o)u/T)/R | price, broadcast | `Price` | [`TokenBucket`] |
//! | C, Eq 7.10 | `Threshold`, [`Notify::All`] | BECN to all | `RateAimd`: +W per interval, ×M per BECN | [`TokenBucket`] |
//!
//! The per-interval contract for an element: the egress element keeps, per
//! output queue, an [`EgressControl`] and a [`LastSource`]; it calls
//! [`EgressControl::poll`] with its counters ([`EgressSample`]) and sends
//! the returned [`Signal`] to the sources [`EgressScheme::notify`] names.
//! The ingress element keeps, per egress queue, an [`IngressControl`]; it
//! calls [`IngressControl::poll`] with its injected-packet counter, and
//! [`IngressControl::on_signal`] per signal received, and applies the
//! returned [`Allowance`] to its [`Quantum`] or [`TokenBucket`].
//!
//! ```
//! use base::Instant;
//! use cc::{params, Allowance, EgressControl, EgressSample, IngressControl, Signal};
//!
//! let ms = |n: u64| Instant::from_nanos(n * 1_000_000);
//! let mut egress = EgressControl::new(ms(0), params::INTERVAL, params::queue_price());
//! let mut ingress = IngressControl::new(ms(0), params::INTERVAL, params::price_ingress(1e6));
//! // One interval later the queue grew from 0 to 400 packets.
//! let sample = EgressSample { queue_len: 400, pkts_in: 900, pkts_out: 500 };
//! let sig = egress.poll(ms(1), sample).unwrap();
//! let Signal::Price(p) = sig else { unreachable!() };
//! assert!(p > 0.0);
//! ingress.poll(ms(1), 0);
//! ingress.poll(ms(2), 300); // injected 300 packets in 1 ms: 300 kpps
//! let Allowance::Rate(r) = ingress.on_signal(sig) else { unreachable!() };
//! assert!(r < 300_000.0 + 1e5); // the price brakes the additive push K·W
//! ```
//!
//! Also here: [`Eq67`], the bare iteration of Eq 6.7 for the stability
//! map of Fig 6.1, and [`QueueMonitor`], the queue statistics of Fig 7.11.
//! We wrote this ourselves: the controllers are the thesis's equations,
//! a few lines each, and no maintained crate implements them.

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod bucket;
mod egress;
mod eq67;
mod ingress;
mod monitor;
pub mod params;
mod sched;

pub use bucket::TokenBucket;
pub use egress::{EgressControl, EgressScheme};
pub use eq67::{Eq67, Run};
pub use ingress::{Allowance, Increase, IngressControl, IngressScheme};
pub use monitor::{EgressSample, Interval, QueueMonitor};
pub use sched::Quantum;

/// What an egress sends to an ingress about one of its queues.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Signal {
    /// Backward explicit congestion notification (schemes A and C).
    Becn,
    /// The queue's price p (schemes B and B′), per pps.
    Price(f64),
}

/// Who receives an egress queue's signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notify {
    /// Subset notification (§5.4.6): only the source of the last packet
    /// that arrived for the queue, which samples the sources in proportion
    /// to their share of the arrivals.
    LastSource,
    /// Every source sending to the queue.
    All,
}

/// The source of the last packet received for one egress queue (the
/// thesis's `Lastsrc`, kept per queue: cluster-spec §4.1, our reading).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LastSource(Option<u32>);

impl LastSource {
    /// A packet from `source` arrived.
    pub fn note(&mut self, source: u32) {
        self.0 = Some(source);
    }

    /// The last source seen, if any.
    pub fn get(&self) -> Option<u32> {
        self.0
    }
}

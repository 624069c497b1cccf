//! Adaptive RX/TX scheduling: NICBalance (seed 004 §4.4, algorithm in
//! §4.7).
//!
//! Receiving and transmitting compete for the same resources (the NIC,
//! its bus, and here the core): under overload, polling receivers at full
//! rate fills the transmit-side queues with packets that are then dropped
//! after they have cost work. NICBalance watches the queues in front of one
//! transmitter; when their exponentially weighted moving average length
//! passes `QTHRESHOLD` (and their length now too: the EWMA lags a
//! draining queue), it compares each correlated receiver's rate with
//! the transmitter's. A ratio above `MaxRatio` suspends the receiver for a
//! while (at most `suspend` polls; the driver lifts it at the first
//! evaluation that finds no congestion); between `MinRatio` and
//! `MaxRatio` its scheduling tickets are cut
//! multiplicatively, `tickets >>= 10 (ratio - min) / (max - min)` (§4.7).
//! Tickets grow back additively each time the receiver is polled and
//! returns packets (§4.4.2: AIMD).
//!
//! The driver ([`crate::Runner`]) polls a receiver when its accumulated
//! credit (tickets per poll) reaches [`MAX_TICKETS`], so tickets are a
//! polling frequency. The spec comes from a `NICBalance(...)` element in
//! the config (crate `elements`), found through [`crate::Element::balance`].

/// Tickets of a receiver polled every round (its starting weight).
pub const MAX_TICKETS: u32 = 1024;
/// Tickets added back after a poll that returned packets.
pub const TICKET_STEP: u32 = 16;

/// The thresholds of one correlation (seed 004 §4.4.3): what an operator
/// sets, in a `NICBalance(...)` element or a `[[dataplane.port_group]]`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct BalanceParams {
    /// Congested when the EWMA queue length exceeds this.
    pub qthreshold: u32,
    /// EWMA weight `2^-qstability` (§4.4.3 QSTABILITY).
    pub qstability: u32,
    /// Below this receive/transmit ratio nothing is changed.
    pub min_ratio: f64,
    /// Above this ratio the receiver is suspended.
    pub max_ratio: f64,
    /// Polls between two evaluations.
    pub interval: u32,
    /// Polls a suspended receiver stays off at most: the driver lifts the
    /// suspension at the first evaluation of the same correlation that
    /// finds the queues no longer congested (cluster-spec §3.2 GAP:
    /// "suspend until the next check that finds Qema <= QTHRESHOLD"). The
    /// seed gives no value ("for some time"); a poll that skips a
    /// suspended receiver costs about a microsecond, so the default is
    /// 1024 polls: 8 made no difference on veth (docs/BENCHMARKS.md
    /// "NICBalance on veth").
    pub suspend: u32,
}

impl Default for BalanceParams {
    /// The example of §4.4.3: threshold 100, stability 3, ratios 1.3/1.6.
    fn default() -> Self {
        BalanceParams {
            qthreshold: 100,
            qstability: 3,
            min_ratio: 1.3,
            max_ratio: 1.6,
            interval: 16,
            suspend: 1024,
        }
    }
}

impl BalanceParams {
    /// Whether the ratios are usable: finite, and `0 <= min < max`.
    pub fn ratios_ok(&self) -> bool {
        self.min_ratio.is_finite()
            && self.max_ratio.is_finite()
            && self.min_ratio >= 0.0
            && self.min_ratio < self.max_ratio
    }

    /// The keyword arguments of a `NICBalance(...)` element that give
    /// these parameters (`QTHRESHOLD .., QSTABILITY .., RTHRESHOLD min
    /// max, INTERVAL .., SUSPEND ..`).
    pub fn element_args(&self) -> String {
        format!(
            "QTHRESHOLD {}, QSTABILITY {}, RTHRESHOLD {} {}, INTERVAL {}, SUSPEND {}",
            self.qthreshold,
            self.qstability,
            self.min_ratio,
            self.max_ratio,
            self.interval,
            self.suspend
        )
    }
}

/// One correlation: a transmitter, its upstream queues, its correlated
/// receivers, and the thresholds. Names are element names in the graph.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BalanceSpec {
    /// The ToDevice element.
    pub tx: String,
    /// The correlated FromDevice elements.
    pub rx: Vec<String>,
    /// The queues feeding the transmitter (elements with a queue length).
    pub queues: Vec<String>,
    /// The thresholds.
    pub params: BalanceParams,
}

/// What one evaluation decided for one receiver.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Not congested, or ratio below MinRatio.
    Keep,
    /// Tickets lowered to this value.
    Lower(u32),
    /// Suspended.
    Suspend,
}

/// The decision of §4.7 for one receiver: `ratio` is receive/transmit
/// rate, `tickets` its current tickets.
pub fn decide(spec: &BalanceParams, ratio: f64, tickets: u32) -> Action {
    if ratio > spec.max_ratio {
        Action::Suspend
    } else if ratio > spec.min_ratio {
        let span = (spec.max_ratio - spec.min_ratio).max(f64::EPSILON);
        let shift = (10.0 * (ratio - spec.min_ratio) / span) as u32;
        Action::Lower((tickets >> shift.min(10)).max(1))
    } else {
        Action::Keep
    }
}

/// Fixed-point EWMA update (8 fractional bits): `ema += (avg - ema) >>
/// stability`, the usual form of §4.7's `Q_ema += Q_avg >> QSTABILITY`.
pub fn ewma(ema_fp: u64, avg: u64, stability: u32) -> u64 {
    let avg_fp = avg << 8;
    let s = stability.min(16);
    if avg_fp >= ema_fp {
        ema_fp + ((avg_fp - ema_fp) >> s)
    } else {
        ema_fp - ((ema_fp - avg_fp) >> s)
    }
}

/// Counters of one balance (for tests, benchmarks and management).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct BalanceStats {
    /// Evaluations made.
    pub evaluations: u64,
    /// Evaluations that found the queues congested.
    pub congested: u64,
    /// Ticket cuts.
    pub lowered: u64,
    /// Suspensions.
    pub suspended: u64,
    /// Current EWMA queue length (integer part).
    pub qema: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_follow_the_thresholds() {
        let s = BalanceParams::default();
        assert_eq!(decide(&s, 1.0, 1024), Action::Keep);
        assert_eq!(decide(&s, 1.3, 1024), Action::Keep);
        // Just past half-way: shift by 5.
        assert_eq!(decide(&s, 1.46, 1024), Action::Lower(32));
        assert_eq!(decide(&s, 1.59, 1024), Action::Lower(2));
        assert_eq!(decide(&s, 1.61, 1024), Action::Suspend);
        assert_eq!(decide(&s, 1.31, 1), Action::Lower(1));
    }

    #[test]
    fn ewma_converges() {
        let mut e = 0;
        for _ in 0..200 {
            e = ewma(e, 100, 3);
        }
        assert!((e >> 8) >= 99 && (e >> 8) <= 100, "{}", e >> 8);
        for _ in 0..200 {
            e = ewma(e, 0, 3);
        }
        assert!((e >> 8) <= 1);
    }
}

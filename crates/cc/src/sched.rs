//! The weighted scheduler of §5.4.4: every round `quantum[i] += Weight[i]`;
//! queue i is served only when `quantum[i] >= THRESHOLD`, then
//! `quantum[i] -= THRESHOLD`. A weight is therefore a fraction
//! `Weight / THRESHOLD` of the ingress's pull rounds.

/// The quantum of one queue. [`Quantum::serve`] runs many rounds at once,
/// so a simulator or an element can call it per batch instead of per round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quantum {
    q: u64,
}

impl Quantum {
    /// Run `rounds` rounds with weight `weight` against `threshold` (at
    /// least 1) for a queue holding `backlog` packets; each service sends
    /// one packet. Returns the packets served. A queue that runs empty
    /// banks at most one threshold of quantum, so an idle queue cannot
    /// burst later (our choice: the thesis does not say).
    pub fn serve(&mut self, weight: u32, threshold: u32, rounds: u64, backlog: u64) -> u64 {
        let th = u64::from(threshold.max(1));
        let total = self
            .q
            .saturating_add(rounds.saturating_mul(u64::from(weight)));
        let can = (total / th).min(rounds);
        let served = can.min(backlog);
        self.q = total - served * th;
        if served < can {
            // Ran empty: keep at most one service's worth.
            self.q = self.q.min(th);
        }
        served
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weight_is_a_fraction_of_rounds() {
        let mut q = Quantum::default();
        assert_eq!(q.serve(250, 1000, 1000, 10_000), 250);
        assert_eq!(q.serve(1000, 1000, 10, 10_000), 10);
        assert_eq!(q.serve(2000, 1000, 10, 10_000), 10); // one per round at most
        let mut e = Quantum::default();
        assert_eq!(e.serve(500, 1000, 100, 0), 0);
        // Banked one threshold only: 1000 + 500, then 500 + 500, then 0 + 500.
        assert_eq!(e.serve(500, 1000, 1, 5), 1);
        assert_eq!(e.serve(500, 1000, 1, 5), 1);
        assert_eq!(e.serve(500, 1000, 1, 5), 0);
    }
}

//! Packet schedulers (seed 002 slides 30-38) and the NICBalance
//! configuration element (seed 004 §4.4).
//!
//! The graph is push-only, so a scheduler owns one FIFO per input (the
//! "source queues") and, once per driver poll (tick), releases up to
//! `BURST` packets to its single output (the link's share of the poll),
//! choosing among inputs by its discipline:
//! * [`Sched::RoundRobin`]: one packet from each non-empty input in turn.
//! * [`Sched::Stride`]: weighted stride scheduling: input `i` gets
//!   `tickets_i / sum` of the output (Waldspurger); an input that was empty
//!   rejoins at the current virtual time, so idleness banks no credit.
//! * [`Sched::Share`]: proportional share with the batching throttle of
//!   slide 37: an input is not active until it holds `BATCH_i` packets or
//!   its oldest packet has waited `DELAY_i`; the chosen input then sends as
//!   many packets as it can within the quantum `G` (packets) before the
//!   scheduler switches, and is charged for what it sent.

use std::collections::VecDeque;

use graph::{Arg, BalanceSpec, BuildError, DropReason, Output};
use pkt::{Batch, Packet};

use crate::args::{each, keyword, num};

/// The schedulers' own drop reasons (see `graph::Element::drop_names`).
pub(crate) const SCHED_DROPS: &[&str] = &["queue_full"];
const QUEUE_FULL: DropReason = DropReason::own(0);

/// Stride numerator.
const STRIDE1: u64 = 1 << 20;

/// The discipline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sched {
    /// Round-robin.
    RoundRobin,
    /// Weighted stride.
    Stride,
    /// Proportional share with batching throttle.
    Share,
}

#[derive(Debug)]
struct Input {
    q: VecDeque<(Packet, u64)>,
    stride: u64,
    pass: u64,
    batch: usize,
    delay_ns: u64,
    sent: u64,
}

/// `RoundRobinSched(INPUTS n, CAPACITY c, BURST b)`,
/// `StrideSched(TICKETS t0 t1 ..., CAPACITY c, BURST b)`,
/// `PsSched(TICKETS t0 t1 ..., BATCH b0 b1 ..., DELAY_US d0 d1 ...,
/// QUANTUM g, CAPACITY c, BURST b)`: packet schedulers over per-input
/// FIFOs (see the module docs).
///
/// * Ports: one input per FIFO (`INPUTS`, or one per ticket), output 0.
/// * Config: `CAPACITY` per input (default 256), `BURST` packets released
///   per tick (default 32), `QUANTUM` packets per turn for PsSched
///   (default 16), `BATCH`/`DELAY_US` per input (default 1 / 0).
/// * Counters: `length`, `sent_N` per input (first 8); drops `queue_full`.
///
/// ```text
/// s :: StrideSched(TICKETS 3 1, BURST 64);
/// c [0] -> [0] s; c [1] -> [1] s; s -> ToDevice(eth1);
/// ```
#[derive(Debug)]
pub struct Scheduler {
    kind: Sched,
    inputs: Vec<Input>,
    cap: usize,
    burst: usize,
    quantum: usize,
    rr: usize,
    vtime: u64,
    current: Option<usize>,
    left: usize,
}

fn list(i: usize, v: &str) -> Result<Vec<u64>, BuildError> {
    v.split_whitespace().map(|w| num(i, w)).collect()
}

impl Scheduler {
    pub(crate) fn new(kind: Sched, args: &[Arg]) -> Result<Self, BuildError> {
        let (mut n, mut tickets, mut batch, mut delay) = (None, None, Vec::new(), Vec::new());
        let (mut cap, mut burst, mut quantum) = (256usize, 32usize, 16usize);
        for (i, a) in each(args) {
            match keyword(a) {
                ("INPUTS", v) if kind == Sched::RoundRobin => n = Some(num(i, v)? as usize),
                ("TICKETS", v) if kind != Sched::RoundRobin => tickets = Some(list(i, v)?),
                ("BATCH", v) if kind == Sched::Share => batch = list(i, v)?,
                ("DELAY_US", v) if kind == Sched::Share => delay = list(i, v)?,
                ("QUANTUM", v) if kind == Sched::Share => {
                    quantum = num(i, v)?.clamp(1, 1 << 16) as usize
                }
                ("CAPACITY", v) => cap = num(i, v)?.clamp(1, 1 << 20) as usize,
                ("BURST", v) => burst = num(i, v)?.clamp(1, 1 << 16) as usize,
                (k, _) => return Err(crate::args::unknown(i, k)),
            }
        }
        let tickets =
            match (kind == Sched::RoundRobin, tickets, n) {
                (true, _, Some(n)) => vec![1; n],
                (false, Some(t), _) => t,
                _ => return Err(BuildError::elem(
                    "give INPUTS n (RoundRobinSched) or TICKETS t0 t1 ... (StrideSched, PsSched)",
                )),
            };
        if tickets.is_empty() || tickets.len() > 64 || tickets.contains(&0) {
            return Err(BuildError::elem("1 to 64 inputs, each with tickets > 0"));
        }
        let inputs = tickets
            .iter()
            .enumerate()
            .map(|(k, &t)| Input {
                q: VecDeque::with_capacity(cap),
                stride: STRIDE1 / t,
                pass: 0,
                batch: batch.get(k).map_or(1, |&b| (b as usize).max(1)),
                delay_ns: delay.get(k).map_or(0, |&d| d.saturating_mul(1000)),
                sent: 0,
            })
            .collect();
        Ok(Scheduler {
            kind,
            inputs,
            cap,
            burst,
            quantum,
            rr: 0,
            vtime: 0,
            current: None,
            left: 0,
        })
    }

    /// The discipline.
    pub fn kind(&self) -> &Sched {
        &self.kind
    }
    /// Number of inputs.
    pub fn inputs(&self) -> u16 {
        self.inputs.len() as u16
    }
    /// Packets stored over all inputs.
    pub fn len(&self) -> usize {
        self.inputs.iter().map(|i| i.q.len()).sum()
    }
    /// True when every input is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Packets sent from input `i`.
    pub fn sent(&self, i: usize) -> u64 {
        self.inputs.get(i).map_or(0, |x| x.sent)
    }

    #[inline]
    pub(crate) fn process(&mut self, input: u16, batch: &mut Batch, out: &mut Output<'_>) {
        let now = out.now_ns();
        let vtime = self.vtime;
        let Some(inp) = self.inputs.get_mut(usize::from(input)) else {
            for p in batch.drain() {
                out.drop(p, DropReason::UNCONNECTED);
            }
            return;
        };
        if inp.q.is_empty() {
            // Rejoin at the current virtual time (no banked credit).
            inp.pass = inp.pass.max(vtime);
        }
        for p in batch.drain() {
            if inp.q.len() >= self.cap {
                out.drop(p, QUEUE_FULL);
            } else {
                inp.q.push_back((p, now));
            }
        }
    }

    /// The eligible input with the smallest pass.
    fn pick_stride(&self, now: u64, throttle: bool) -> Option<usize> {
        let mut best: Option<usize> = None;
        for (k, inp) in self.inputs.iter().enumerate() {
            let Some((_, t)) = inp.q.front() else {
                continue;
            };
            if throttle && inp.q.len() < inp.batch && now.saturating_sub(*t) < inp.delay_ns {
                continue;
            }
            if best.is_none_or(|b| self.inputs[b].pass > inp.pass) {
                best = Some(k);
            }
        }
        best
    }

    fn send_one(&mut self, k: usize, out: &mut Output<'_>) -> bool {
        let Some(inp) = self.inputs.get_mut(k) else {
            return false;
        };
        let Some((p, _)) = inp.q.pop_front() else {
            return false;
        };
        inp.sent += 1;
        self.vtime = inp.pass;
        inp.pass = inp.pass.saturating_add(inp.stride);
        out.push(0, p);
        true
    }

    pub(crate) fn tick(&mut self, out: &mut Output<'_>) {
        let now = out.now_ns();
        let n = self.inputs.len();
        let mut sent = 0;
        while sent < self.burst {
            let k = match self.kind {
                Sched::RoundRobin => {
                    let k = (0..n)
                        .map(|j| (self.rr + j) % n)
                        .find(|&k| self.inputs.get(k).is_some_and(|i| !i.q.is_empty()));
                    if let Some(k) = k {
                        self.rr = (k + 1) % n;
                    }
                    k
                }
                Sched::Stride => self.pick_stride(now, false),
                Sched::Share => {
                    // Keep the current input for its quantum (fewer switches).
                    match self.current {
                        Some(c)
                            if self.left > 0
                                && self.inputs.get(c).is_some_and(|i| !i.q.is_empty()) =>
                        {
                            Some(c)
                        }
                        _ => {
                            let k = self.pick_stride(now, true);
                            self.current = k;
                            self.left = self.quantum;
                            k
                        }
                    }
                }
            };
            let Some(k) = k else { break };
            if !self.send_one(k, out) {
                break;
            }
            self.left = self.left.saturating_sub(1);
            sent += 1;
        }
    }

    pub(crate) fn counters(&self, f: &mut dyn FnMut(&'static str, u64)) {
        const NAMES: [&str; 8] = [
            "sent_0", "sent_1", "sent_2", "sent_3", "sent_4", "sent_5", "sent_6", "sent_7",
        ];
        f("length", self.len() as u64);
        for (name, inp) in NAMES.iter().zip(&self.inputs) {
            f(name, inp.sent);
        }
    }
}

/// `NICBalance(TX elem, RX e0 e1 ..., QUEUES q0 q1 ..., QTHRESHOLD n,
/// QSTABILITY s, RTHRESHOLD min max, INTERVAL polls, SUSPEND polls)`:
/// adaptive RX/TX scheduling (seed 004 §4.4, §4.7). Names are elements of
/// this graph: the ToDevice, its correlated FromDevices, and the queues in
/// front of the ToDevice. The driver (`graph::Runner`) enforces it; see
/// `graph::balance` for the algorithm.
///
/// * Ports: none.
/// * Config: defaults QTHRESHOLD 100, QSTABILITY 3, RTHRESHOLD 1.3 1.6
///   (§4.4.3's example), INTERVAL 16, SUSPEND 1024 (see
///   `graph::BalanceSpec::suspend`).
/// * Counters: `graph::Runner::balance_stats` (evaluations, congested,
///   lowered, suspended, EWMA queue length).
///
/// ```text
/// NICBalance(TX out0, RX in0 in1, QUEUES q0, QTHRESHOLD 100, RTHRESHOLD 1.3 1.6);
/// ```
#[derive(Debug)]
pub struct NicBalance {
    pub(crate) spec: BalanceSpec,
}

impl NicBalance {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let mut s = BalanceSpec::default();
        let words = |v: &str| v.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        for (i, a) in each(args) {
            match keyword(a) {
                ("TX", v) => s.tx = v.to_string(),
                ("RX", v) => s.rx = words(v),
                ("QUEUES", v) => s.queues = words(v),
                ("QTHRESHOLD", v) => {
                    s.params.qthreshold = num(i, v)?.min(u64::from(u32::MAX)) as u32
                }
                ("QSTABILITY", v) => s.params.qstability = num(i, v)?.min(16) as u32,
                ("INTERVAL", v) => s.params.interval = num(i, v)?.clamp(1, 1 << 20) as u32,
                ("SUSPEND", v) => s.params.suspend = num(i, v)?.clamp(1, 1 << 20) as u32,
                ("RTHRESHOLD", v) => {
                    let r: Vec<f64> = v
                        .split_whitespace()
                        .map(|w| w.parse::<f64>())
                        .collect::<Result<_, _>>()
                        .map_err(|_| BuildError::arg(i, "RTHRESHOLD needs two numbers"))?;
                    match r.as_slice() {
                        [lo, hi] if lo.is_finite() && hi.is_finite() && lo < hi && *lo >= 0.0 => {
                            s.params.min_ratio = *lo;
                            s.params.max_ratio = *hi;
                        }
                        _ => return Err(BuildError::arg(i, "RTHRESHOLD MIN MAX with MIN < MAX")),
                    }
                }
                (k, _) => return Err(crate::args::unknown(i, k)),
            }
        }
        if s.tx.is_empty() || s.rx.is_empty() || s.queues.is_empty() {
            return Err(BuildError::elem("NICBalance needs TX, RX and QUEUES"));
        }
        Ok(NicBalance { spec: s })
    }
}

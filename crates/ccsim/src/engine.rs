//! The event loop. Time advances in service ticks; within a tick, in
//! order: due signals reach their ingress controllers, control intervals
//! fire, sources emit, ingresses pull into the fabric, the fabric delivers
//! what was sent one delay ago, and each egress receives and transmits.
//! Signals are events in a time-ordered queue (one fabric delay after
//! they are sent). Everything random comes from one seeded generator, so
//! a run is a function of its [`Config`].

use std::collections::VecDeque;

use base::Instant;
use cc::{
    Allowance, EgressControl, EgressSample, IngressControl, LastSource, Notify, Quantum,
    QueueMonitor, Signal, TokenBucket,
};
use sim::Rng;

use crate::model::{Config, Control, Pattern};
use crate::report::{Counters, FlowStats, Report, Sample, Summary};

struct Flow {
    node: usize,
    dest: usize,
    rate: f64,
    pattern: Pattern,
    start: u64,
    on: bool,
    toggle_at: u64,
    carry: f64,
    queue: u64,
    queue_cap: u64,
    ctl: Option<IngressControl>,
    bucket: TokenBucket,
    quantum: Quantum,
    weight: u32,
    c: Counters,
}

/// FIFO of (source, packets) runs.
#[derive(Default)]
struct Runs {
    runs: VecDeque<(u32, u32)>,
    len: u64,
}

impl Runs {
    fn push(&mut self, flow: u32, n: u32) {
        if n == 0 {
            return;
        }
        match self.runs.back_mut() {
            Some((f, m)) if *f == flow => *m += n,
            _ => self.runs.push_back((flow, n)),
        }
        self.len += u64::from(n);
    }

    /// Pop up to `n` packets; `each(flow, count)` per run taken.
    fn pop(&mut self, mut n: u64, mut each: impl FnMut(u32, u32)) -> u64 {
        let mut got = 0;
        while n > 0 {
            let Some(front) = self.runs.front_mut() else {
                break;
            };
            let take = u64::from(front.1).min(n) as u32;
            each(front.0, take);
            front.1 -= take;
            if front.1 == 0 {
                self.runs.pop_front();
            }
            n -= u64::from(take);
            got += u64::from(take);
        }
        self.len -= got;
        got
    }
}

struct Egress {
    ring: Runs,
    outq: Runs,
    txr: Runs,
    budget: f64,
    tokens: f64,
    ctl: Option<EgressControl>,
    last: LastSource,
    pkts_in: u64,
    pkts_out: u64,
    arrivals: Vec<(u32, u32)>,
    flows: Vec<u32>,
    queue_stats: QueueMonitor,
    ring_stats: QueueMonitor,
}

/// A simulation in progress. Build with [`Sim::new`], then [`Sim::run`].
pub struct Sim {
    cfg: Config,
    rng: Rng,
    now: u64,
    flows: Vec<Flow>,
    egress: Vec<Egress>,
    round_carry: Vec<f64>,
    rounds: Vec<u64>,
    keyed: Vec<(f64, (u32, u32))>,
    fabric: Vec<Vec<(u32, u32)>>,
    signals: VecDeque<(u64, u32, Signal)>,
    samples: Vec<Sample>,
    at_warmup: Option<Vec<Counters>>,
    egress_tx_at_warmup: Vec<u64>,
}

impl Sim {
    /// A simulation of `cfg` at time 0.
    pub fn new(cfg: Config) -> Result<Sim, String> {
        cfg.validate()?;
        let mut rng = Rng::new(cfg.seed);
        let interval = std::time::Duration::from_nanos(cfg.interval_ns);
        let mut egress: Vec<Egress> = (0..cfg.nodes.len())
            .map(|_| Egress {
                ring: Runs::default(),
                outq: Runs::default(),
                txr: Runs::default(),
                budget: 0.0,
                tokens: 0.0,
                ctl: match cfg.control {
                    Control::Scheme { egress, .. } => {
                        Some(EgressControl::new(Instant::ZERO, interval, egress))
                    }
                    Control::None => None,
                },
                last: LastSource::default(),
                pkts_in: 0,
                pkts_out: 0,
                arrivals: Vec::new(),
                flows: Vec::new(),
                queue_stats: QueueMonitor::new(),
                ring_stats: QueueMonitor::new(),
            })
            .collect();
        let mut flows = Vec::with_capacity(cfg.sources.len());
        for (i, s) in cfg.sources.iter().enumerate() {
            let node = &cfg.nodes[s.node];
            let ctl = match cfg.control {
                Control::Scheme { ingress, .. } => {
                    Some(IngressControl::new(Instant::ZERO, interval, ingress))
                }
                Control::None => None,
            };
            let (weight, rate) = match ctl.as_ref().map(IngressControl::allowance) {
                Some(Allowance::Weight(w)) => (w, node.round_pps),
                Some(Allowance::Rate(r)) => (0, r),
                None => (0, node.round_pps),
            };
            let (on, toggle_at) = match s.pattern {
                Pattern::OnOff { on_ns, .. } => (true, s.start_ns + exp_ns(&mut rng, on_ns)),
                _ => (true, u64::MAX),
            };
            egress[s.dest].flows.push(i as u32);
            flows.push(Flow {
                node: s.node,
                dest: s.dest,
                rate: s.rate_pps,
                pattern: s.pattern,
                start: s.start_ns,
                on,
                toggle_at,
                carry: 0.0,
                queue: 0,
                queue_cap: u64::from(node.ingress_queue),
                ctl,
                bucket: TokenBucket::new(Instant::ZERO, rate, cfg.bucket_burst),
                quantum: Quantum::default(),
                weight,
                c: Counters::default(),
            });
        }
        let delay_ticks = cfg.fabric_delay_ns.div_ceil(cfg.tick_ns).max(1) as usize;
        Ok(Sim {
            round_carry: vec![0.0; cfg.nodes.len()],
            rounds: Vec::with_capacity(cfg.nodes.len()),
            keyed: Vec::new(),
            fabric: vec![Vec::new(); delay_ticks + 1],
            signals: VecDeque::new(),
            samples: Vec::new(),
            at_warmup: None,
            egress_tx_at_warmup: vec![0; cfg.nodes.len()],
            rng,
            now: 0,
            flows,
            egress,
            cfg,
        })
    }

    /// Run to the end; `progress(fraction)` is called about 100 times.
    pub fn run(mut self, progress: &mut dyn FnMut(f64)) -> Report {
        let tick = self.cfg.tick_ns;
        let end = self.cfg.duration_ns;
        let step = (end / tick / 100).max(1);
        let mut prev_sample: Vec<Counters> = vec![Counters::default(); self.flows.len()];
        let mut prev_tx = vec![0u64; self.egress.len()];
        let mut n = 0u64;
        while self.now < end {
            self.tick(tick);
            self.now += tick;
            n += 1;
            if self.at_warmup.is_none() && self.now >= self.cfg.warmup_ns {
                self.at_warmup = Some(self.flows.iter().map(|f| f.c).collect());
                self.egress_tx_at_warmup = self.egress.iter().map(|e| e.pkts_out).collect();
            }
            if self.cfg.sample_ns > 0 && self.now.is_multiple_of(self.cfg.sample_ns) {
                self.sample(&mut prev_sample, &mut prev_tx);
            }
            if n.is_multiple_of(step) {
                progress(self.now as f64 / end as f64);
            }
        }
        progress(1.0);
        self.finish()
    }

    fn tick(&mut self, tick: u64) {
        let now = self.now;
        let dt = tick as f64 * 1e-9;
        // 1. Signals due now.
        while let Some(&(t, flow, sig)) = self.signals.front() {
            if t > now {
                break;
            }
            self.signals.pop_front();
            let f = &mut self.flows[flow as usize];
            if let Some(ctl) = f.ctl.as_mut() {
                let a = ctl.on_signal(sig);
                apply(f, now, a);
            }
        }
        // 2. Control intervals (all controllers share the interval grid).
        if now > 0 && now.is_multiple_of(self.cfg.interval_ns) {
            self.control(now);
        }
        // 3. Sources emit into their ingress queues.
        for f in self.flows.iter_mut() {
            if now < f.start {
                continue;
            }
            while now >= f.toggle_at {
                if let Pattern::OnOff { on_ns, off_ns } = f.pattern {
                    f.on = !f.on;
                    let mean = if f.on { on_ns } else { off_ns };
                    f.toggle_at += exp_ns(&mut self.rng, mean).max(1);
                } else {
                    f.toggle_at = u64::MAX;
                }
            }
            if !f.on {
                continue;
            }
            let mean = f.rate * dt;
            let n = match f.pattern {
                Pattern::Constant => {
                    let v = mean + f.carry;
                    let n = v.floor();
                    f.carry = v - n;
                    n as u64
                }
                Pattern::Poisson | Pattern::OnOff { .. } => poisson(&mut self.rng, mean),
            };
            f.c.offered += n;
            let room = f.queue_cap - f.queue;
            let kept = n.min(room);
            f.queue += kept;
            f.c.ingress_drop += n - kept;
        }
        // 4. Ingresses pull into the fabric.
        let slot = (now / tick) as usize % self.fabric.len();
        let ahead = (slot + self.fabric.len() - 1) % self.fabric.len();
        let mut rounds_of = std::mem::take(&mut self.rounds);
        rounds_of.clear();
        for (i, c) in self.round_carry.iter_mut().enumerate() {
            let v = self.cfg.nodes[i].round_pps * dt + *c;
            let r = v.floor();
            *c = v - r;
            rounds_of.push(r as u64);
        }
        let weighted = matches!(
            self.cfg.control,
            Control::Scheme {
                ingress: cc::IngressScheme::Weight { .. },
                ..
            }
        );
        let th = match self.cfg.control {
            Control::Scheme { .. } if weighted => cc::params::WEIGHT_THRESHOLD,
            _ => 1,
        };
        for (i, f) in self.flows.iter_mut().enumerate() {
            if f.queue == 0 {
                continue;
            }
            let rounds = rounds_of[f.node];
            let n = match (&f.ctl, weighted) {
                (Some(_), true) => f.quantum.serve(f.weight, th, rounds, f.queue),
                (Some(_), false) => f.bucket.take(Instant::from_nanos(now), f.queue.min(rounds)),
                (None, _) => f.queue.min(rounds),
            };
            if n > 0 {
                f.queue -= n;
                f.c.injected += n;
                self.fabric[ahead].push((i as u32, n as u32));
            }
        }
        self.rounds = rounds_of;
        // 5. The fabric delivers what was sent one delay ago.
        let due = std::mem::take(&mut self.fabric[slot]);
        for &(flow, n) in &due {
            let d = self.flows[flow as usize].dest;
            self.egress[d].arrivals.push((flow, n));
        }
        let mut due = due;
        due.clear();
        self.fabric[slot] = due;
        // 6. Egresses.
        for e in 0..self.egress.len() {
            self.serve_egress(e, dt);
        }
    }

    fn serve_egress(&mut self, e: usize, dt: f64) {
        let node = &self.cfg.nodes[e];
        let eg = &mut self.egress[e];
        if eg.arrivals.is_empty() && eg.ring.len == 0 && eg.outq.len == 0 && eg.txr.len == 0 {
            // Idle: a full bucket and an idle CPU, as the loop below would leave them.
            eg.tokens = node.port_pps * dt + 1.0;
            eg.budget = dt * 1e9;
            return;
        }
        // Arrivals in a random order, weighted by size, so the last run is
        // a source drawn in proportion to its share of this tick's packets
        // (Efraimidis-Spirakis keys): the fabric interleaves, and Lastsrc
        // samples by share.
        if eg.arrivals.len() > 1 {
            // A scratch buffer kept across ticks: no allocation per tick.
            let keyed = &mut self.keyed;
            keyed.clear();
            for &a in &eg.arrivals {
                let u = unit(&mut self.rng).max(1e-300);
                keyed.push((u.powf(1.0 / f64::from(a.1.max(1))), a));
            }
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
            eg.arrivals.clear();
            eg.arrivals.extend(keyed.iter().map(|k| k.1));
        }
        let flows = &mut self.flows;
        match node.cpu {
            None => {
                for &(flow, n) in &eg.arrivals {
                    enqueue(
                        &mut eg.outq,
                        &mut eg.pkts_in,
                        &mut eg.last,
                        flows,
                        node.out_queue,
                        flow,
                        n,
                    );
                }
                eg.tokens = (eg.tokens + node.port_pps * dt).min(node.port_pps * dt + 1.0);
                let can = eg.tokens.floor() as u64;
                let sent = if node.tx_ring == 0 {
                    eg.outq
                        .pop(can, |f, k| flows[f as usize].c.tx += u64::from(k))
                } else {
                    // The NIC's descriptor ring: filled from the output queue
                    // at once, drained by the port. The monitor sees only the
                    // output queue.
                    let room = u64::from(node.tx_ring).saturating_sub(eg.txr.len);
                    let txr = &mut eg.txr;
                    eg.pkts_out += eg.outq.pop(room, |f, k| txr.push(f, k));
                    let sent = eg
                        .txr
                        .pop(can, |f, k| flows[f as usize].c.tx += u64::from(k));
                    let room = u64::from(node.tx_ring).saturating_sub(eg.txr.len);
                    let txr = &mut eg.txr;
                    eg.pkts_out += eg.outq.pop(room, |f, k| txr.push(f, k));
                    sent
                };
                eg.tokens -= sent as f64;
                if node.tx_ring == 0 {
                    eg.pkts_out += sent;
                }
            }
            Some(cpu) => {
                for &(flow, n) in &eg.arrivals {
                    let room = u64::from(node.ring).saturating_sub(eg.ring.len);
                    let kept = u64::from(n).min(room);
                    eg.ring.push(flow, kept as u32);
                    flows[flow as usize].c.hca_drop += u64::from(n) - kept;
                }
                let tick_ns = dt * 1e9;
                eg.tokens = (eg.tokens + node.port_pps * dt)
                    .min(node.port_pps * dt + f64::from(cpu.tx_quota));
                // The budget may go negative by one round (a round is not
                // split), and does not bank idle time beyond one tick.
                eg.budget = (eg.budget + tick_ns).min(tick_ns);
                while eg.budget > 0.0 {
                    let (outq, pkts_in, last) = (&mut eg.outq, &mut eg.pkts_in, &mut eg.last);
                    let rx = eg.ring.pop(u64::from(cpu.rx_quota), |f, k| {
                        enqueue(outq, pkts_in, last, flows, node.out_queue, f, k)
                    });
                    let want = u64::from(cpu.tx_quota).min(eg.tokens.floor() as u64);
                    let tx = eg
                        .outq
                        .pop(want, |f, k| flows[f as usize].c.tx += u64::from(k));
                    eg.tokens -= tx as f64;
                    eg.pkts_out += tx;
                    if rx == 0 && tx == 0 {
                        break;
                    }
                    eg.budget -= rx as f64 * cpu.rx_cost_ns + tx as f64 * cpu.tx_cost_ns;
                }
            }
        }
        eg.arrivals.clear();
    }

    fn control(&mut self, now: u64) {
        let interval_s = self.cfg.interval_ns as f64 * 1e-9;
        let delay = self
            .cfg
            .fabric_delay_ns
            .saturating_add(self.cfg.signal_lag_ns);
        for eg in self.egress.iter_mut() {
            let Some(ctl) = eg.ctl.as_mut() else { continue };
            if eg.flows.is_empty() {
                continue;
            }
            let s = EgressSample {
                queue_len: eg.outq.len.min(u64::from(u32::MAX)) as u32,
                pkts_in: eg.pkts_in,
                pkts_out: eg.pkts_out,
            };
            let Some(sig) = ctl.on_interval(interval_s, s) else {
                continue;
            };
            match ctl.scheme().notify() {
                Notify::LastSource => {
                    if let Some(f) = eg.last.get() {
                        self.signals.push_back((now + delay, f, sig));
                    }
                }
                Notify::All => {
                    for &f in &eg.flows {
                        self.signals.push_back((now + delay, f, sig));
                    }
                }
            }
        }
        for f in self.flows.iter_mut() {
            let injected = f.c.injected;
            if let Some(ctl) = f.ctl.as_mut() {
                ctl.on_interval(interval_s, injected);
                let a = ctl.allowance();
                apply(f, now, a);
            }
        }
    }

    fn sample(&mut self, prev: &mut [Counters], prev_tx: &mut [u64]) {
        let period = self.cfg.sample_ns as f64 * 1e-9;
        let rate = |a: u64, b: u64| a.saturating_sub(b) as f64 / period;
        let mut s = Sample {
            t: self.now as f64 * 1e-9,
            offered: Vec::with_capacity(self.flows.len()),
            injected: Vec::with_capacity(self.flows.len()),
            tx: Vec::with_capacity(self.flows.len()),
            limit: Vec::with_capacity(self.flows.len()),
            queue: Vec::with_capacity(self.egress.len()),
            egress_tx: Vec::with_capacity(self.egress.len()),
        };
        for (f, p) in self.flows.iter().zip(prev.iter_mut()) {
            s.offered.push(rate(f.c.offered, p.offered));
            s.injected.push(rate(f.c.injected, p.injected));
            s.tx.push(rate(f.c.tx, p.tx));
            s.limit
                .push(match f.ctl.as_ref().map(IngressControl::allowance) {
                    Some(Allowance::Rate(r)) => r,
                    Some(Allowance::Weight(w)) => {
                        self.cfg.nodes[f.node].round_pps * f64::from(w)
                            / f64::from(cc::params::WEIGHT_THRESHOLD)
                    }
                    None => f64::NAN,
                });
            *p = f.c;
        }
        let warm = self.now > self.cfg.warmup_ns;
        for (e, pt) in self.egress.iter_mut().zip(prev_tx.iter_mut()) {
            s.queue.push(e.outq.len as f64);
            s.egress_tx.push(rate(e.pkts_out, *pt));
            *pt = e.pkts_out;
            if warm && !e.flows.is_empty() {
                let q = EgressSample {
                    queue_len: e.outq.len.min(u64::from(u32::MAX)) as u32,
                    ..EgressSample::default()
                };
                e.queue_stats.sample(0.0, q);
                let r = EgressSample {
                    queue_len: e.ring.len.min(u64::from(u32::MAX)) as u32,
                    ..EgressSample::default()
                };
                e.ring_stats.sample(0.0, r);
            }
        }
        self.samples.push(s);
    }

    fn finish(self) -> Report {
        let span = (self.cfg.duration_ns.saturating_sub(self.cfg.warmup_ns)) as f64 * 1e-9;
        let base = self
            .at_warmup
            .unwrap_or_else(|| vec![Counters::default(); self.flows.len()]);
        let rate = |a: u64, b: u64| {
            if span > 0.0 {
                a.saturating_sub(b) as f64 / span
            } else {
                0.0
            }
        };
        let flows = self
            .flows
            .iter()
            .zip(base.iter())
            .map(|(f, b)| FlowStats {
                node: f.node,
                dest: f.dest,
                offered_pps: rate(f.c.offered, b.offered),
                injected_pps: rate(f.c.injected, b.injected),
                tx_pps: rate(f.c.tx, b.tx),
                ingress_drop_pps: rate(f.c.ingress_drop, b.ingress_drop),
                hca_drop_pps: rate(f.c.hca_drop, b.hca_drop),
                egress_drop_pps: rate(f.c.egress_drop, b.egress_drop),
                totals: f.c,
            })
            .collect();
        let egress_tx_pps = self
            .egress
            .iter()
            .zip(self.egress_tx_at_warmup.iter())
            .map(|(e, &b)| rate(e.pkts_out, b))
            .collect();
        let queue_mean = self.egress.iter().map(|e| e.queue_stats.mean()).collect();
        let queue_std = self
            .egress
            .iter()
            .map(|e| e.queue_stats.std_dev())
            .collect();
        let ring_mean = self.egress.iter().map(|e| e.ring_stats.mean()).collect();
        Report {
            summary: Summary {
                flows,
                egress_tx_pps,
                queue_mean,
                queue_std,
                ring_mean,
            },
            samples: self.samples,
        }
    }
}

/// Put `n` packets of `flow` into the output queue, dropping beyond `cap`.
fn enqueue(
    outq: &mut Runs,
    pkts_in: &mut u64,
    last: &mut LastSource,
    flows: &mut [Flow],
    cap: u32,
    flow: u32,
    n: u32,
) {
    *pkts_in += u64::from(n);
    let room = u64::from(cap).saturating_sub(outq.len);
    let kept = u64::from(n).min(room) as u32;
    outq.push(flow, kept);
    flows[flow as usize].c.egress_drop += u64::from(n - kept);
    last.note(flow);
}

fn apply(f: &mut Flow, now: u64, a: Allowance) {
    match a {
        Allowance::Weight(w) => f.weight = w,
        Allowance::Rate(r) => f.bucket.set_rate(Instant::from_nanos(now), r),
    }
}

/// Uniform in [0, 1).
fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

fn exp_ns(rng: &mut Rng, mean: u64) -> u64 {
    let u = unit(rng).max(1e-300);
    (-(u.ln()) * mean as f64) as u64
}

/// A Poisson draw: Knuth's product method for small means, a rounded
/// normal for large ones (mean above 30, where the two agree closely).
fn poisson(rng: &mut Rng, mean: f64) -> u64 {
    if mean <= 0.0 {
        return 0;
    }
    if mean < 30.0 {
        let l = (-mean).exp();
        let mut k = 0u64;
        let mut p = 1.0;
        loop {
            p *= unit(rng);
            if p <= l {
                return k;
            }
            k += 1;
        }
    }
    let u1 = unit(rng).max(1e-300);
    let u2 = unit(rng);
    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    (mean + z * mean.sqrt()).round().max(0.0) as u64
}

//! Virtual routers sharing a core under a proportional-share scheduler
//! with a batching throttle (seed 002, slides 30-38).
//!
//! Each virtual router is an independent [`Runner`] (its own graph, FIB and
//! devices) with a CPU share in tickets. The scheduler is stride scheduling
//! (proportional share "forms the base": each virtual router reserves a
//! cycle rate; unused capacity goes to the others because only eligible
//! routers compete). A router is *eligible* when its source has packets
//! (slide 30), and, by the batching throttle (slide 37), only once it has
//! accumulated `batch` packets or its oldest waiting packet has waited
//! `delay`: fewer, larger runs cut the per-switch overhead. The chosen
//! router runs for up to one granularity `G` (slide 37: "processes as many
//! packets as possible within G") and is charged for what it used: CPU
//! time (the default) or packets.
//!
//! Time comes from the caller's clock ([`VrScheduler::with_clock`]; the
//! wall clock by default): on a shared core, pass the thread's CPU clock so
//! that time the thread was preempted is charged to no router. A run is
//! charged at most 2 G + 50 us for the same reason.
//!
//! A decision reads the clock once before its run and once per batch in
//! it; the last reading is the run's end and the next decision's "now"
//! (a thread CPU clock is a system call of 0.16-0.4 us, docs/BENCHMARKS.md
//! "Virtual routers", on veth: the dataplane passes `base::ThreadCpuClock`,
//! the cycle counter anchored on that clock every few decisions and
//! after a gap, so that most decisions make no system call).
//!
//! Limits: one core per scheduler (run one per core); the throttle looks at
//! packets already received into the router's graph inputs, so a router
//! waiting for its batch still receives every round. That scan of every
//! router on every decision is most of the switch cost (about 1 us for 17
//! routers, docs/BENCHMARKS.md "Virtual routers"): a caller that knows
//! which routers' sources hold frames (the dataplane's demultiplexer, by
//! its queues) passes it to [`VrScheduler::step_with`], and the routers
//! known empty are not received from.

use std::time::Instant;

use pkt::Device;

use crate::driver::Runner;
use crate::element::Element;

/// What a run is charged by.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Charge {
    /// Nanoseconds of the scheduler's clock (CPU time with a thread CPU
    /// clock, see [`VrScheduler::with_clock`]; wall time by default).
    Time,
    /// Packets received and processed (deterministic; for tests).
    Packets,
}

/// Scheduling parameters of one virtual router.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct VrConfig {
    /// CPU share, relative to the other routers' tickets.
    pub tickets: u32,
    /// Batch threshold B_i: packets to accumulate before being eligible.
    pub batch: usize,
    /// Delay threshold D_i in nanoseconds: eligible anyway after waiting
    /// this long.
    pub delay_ns: u64,
}

impl Default for VrConfig {
    fn default() -> Self {
        VrConfig {
            tickets: 100,
            batch: 1,
            delay_ns: 0,
        }
    }
}

/// Per-router counters.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct VrStats {
    /// Runs (context switches to this router).
    pub runs: u64,
    /// Packets received while running or staged for a run.
    pub packets: u64,
    /// Charged units (ns or packets).
    pub charged: u64,
}

struct Vr<E: Element, D: Device> {
    runner: Runner<E, D>,
    cfg: VrConfig,
    stride: u64,
    pass: u64,
    waiting_since: Option<u64>,
    active: bool,
    stats: VrStats,
}

/// The most a time-charged run is charged beyond 2 G (see `step`).
const MAX_OVERRUN_NS: u64 = 50_000;

/// Large numerator for strides (stride = STRIDE1 / tickets).
const STRIDE1: u64 = 1 << 20;

/// The proportional-share scheduler of one core.
pub struct VrScheduler<E: Element, D: Device> {
    vrs: Vec<Vr<E, D>>,
    granularity: u64,
    charge: Charge,
    global_pass: u64,
    clock: Clock,
    /// The clock's reading at the end of the last run: the next
    /// decision's "now" (its receive pass starts right after), so that a
    /// decision reads the clock once before its run and once per batch
    /// (a thread CPU clock is a system call). `None` after an idle
    /// decision (the caller may have slept) and with [`Charge::Packets`].
    last_end: Option<u64>,
    /// What the last run was charged (0 after an idle decision).
    last_used: u64,
}

/// The scheduler's time source, in nanoseconds.
pub type Clock = Box<dyn Fn() -> u64 + Send>;

impl<E: Element, D: Device> VrScheduler<E, D> {
    /// A scheduler with granularity `granularity` (slide 37's G):
    /// nanoseconds when charging [`Charge::Time`], packets when charging
    /// [`Charge::Packets`]. Time is the wall clock since now (see
    /// [`VrScheduler::with_clock`]).
    pub fn new(granularity: u64, charge: Charge) -> Self {
        let t0 = Instant::now();
        Self::with_clock(
            granularity,
            charge,
            Box::new(move || t0.elapsed().as_nanos() as u64),
        )
    }

    /// As [`VrScheduler::new`], with time (nanoseconds, never going back)
    /// from `clock`: the thread's CPU clock on a shared core (so that
    /// time this thread was preempted is charged to no router), or a
    /// virtual clock in tests.
    pub fn with_clock(granularity: u64, charge: Charge, clock: Clock) -> Self {
        VrScheduler {
            vrs: Vec::new(),
            granularity: granularity.max(1),
            charge,
            global_pass: 0,
            clock,
            last_end: None,
            last_used: 0,
        }
    }

    /// Adds a virtual router; returns its index.
    pub fn add(&mut self, runner: Runner<E, D>, cfg: VrConfig) -> usize {
        let tickets = u64::from(cfg.tickets.max(1));
        self.vrs.push(Vr {
            runner,
            cfg,
            stride: STRIDE1 / tickets,
            pass: self.global_pass,
            waiting_since: None,
            active: false,
            stats: VrStats::default(),
        });
        self.vrs.len() - 1
    }

    /// Router `i`.
    pub fn runner(&self, i: usize) -> Option<&Runner<E, D>> {
        self.vrs.get(i).map(|v| &v.runner)
    }
    /// Router `i`, writable (e.g. to publish into its FIB).
    pub fn runner_mut(&mut self, i: usize) -> Option<&mut Runner<E, D>> {
        self.vrs.get_mut(i).map(|v| &mut v.runner)
    }
    /// Counters of router `i`.
    pub fn stats(&self, i: usize) -> Option<VrStats> {
        self.vrs.get(i).map(|v| v.stats)
    }

    fn now(&self) -> u64 {
        (self.clock)()
    }

    /// What the last decision's run was charged: nanoseconds with
    /// [`Charge::Time`], packets with [`Charge::Packets`]; 0 when it ran
    /// no router.
    pub fn last_charged(&self) -> u64 {
        self.last_used
    }

    /// One scheduling decision: tops up every router's staged input, picks
    /// the eligible router with the smallest pass and runs it for up to one
    /// granularity. Returns false when no router was eligible (idle).
    pub fn step(&mut self) -> bool {
        self.step_with(|_| true, || {})
    }

    /// [`VrScheduler::step`], receiving for router `i` only when
    /// `ready(i)` (its sources may hold frames: a ready list kept by the
    /// caller; a router with staged packets stays eligible either way),
    /// and calling `before_run` between the receive pass and the run
    /// (the run's own receives are the chosen router's, unconditional).
    pub fn step_with(
        &mut self,
        mut ready: impl FnMut(usize) -> bool,
        before_run: impl FnOnce(),
    ) -> bool {
        self.last_used = 0;
        let now = match self.last_end.take() {
            Some(t) => t,
            None => self.now(),
        };
        let mut best: Option<usize> = None;
        for i in 0..self.vrs.len() {
            let v = &mut self.vrs[i];
            // Receive only while below the batch threshold, so the graph
            // inputs (at least 2 bursts deep) never overflow.
            let mut staged = v.runner.staged();
            if staged < v.cfg.batch.max(1) && ready(i) {
                let n = v.runner.receive();
                v.stats.packets += n as u64;
                if n > 0 {
                    staged = v.runner.staged();
                }
            }
            if staged == 0 {
                v.waiting_since = None;
                v.active = false;
                continue;
            }
            let since = *v.waiting_since.get_or_insert(now);
            let eligible = staged >= v.cfg.batch || now.saturating_sub(since) >= v.cfg.delay_ns;
            if !eligible {
                continue;
            }
            if !v.active {
                // A router that was idle does not bank credit (stride
                // scheduling's rejoin rule).
                v.pass = v.pass.max(self.global_pass);
                v.active = true;
            }
            if best.is_none_or(|b| self.vrs[b].pass > self.vrs[i].pass) {
                best = Some(i);
            }
        }
        let Some(b) = best else {
            before_run();
            return false;
        };
        before_run();
        let start = self.now();
        let gran = self.granularity;
        let v = &mut self.vrs[b];
        let mut packets = v.runner.staged() as u64;
        v.stats.runs += 1;
        // The clock's last reading in the run: its end (what follows, a
        // receive that found nothing, is the next decision's overhead).
        let mut end = start;
        loop {
            v.runner.process();
            let done = match self.charge {
                Charge::Time => {
                    end = (self.clock)();
                    end.saturating_sub(start) >= gran
                }
                Charge::Packets => packets >= gran,
            };
            if done {
                break;
            }
            let n = v.runner.receive();
            if n == 0 && v.runner.staged() == 0 {
                break;
            }
            v.stats.packets += n as u64;
            packets += n as u64;
        }
        let used = match self.charge {
            // A run stops at the first batch boundary past G, so a run
            // much longer than G means this thread was preempted (a
            // shared core), which is not the router's doing: charging it
            // in full would starve it for as long again.
            Charge::Time => {
                self.last_end = Some(end);
                end.saturating_sub(start)
                    .clamp(1, gran.saturating_mul(2).saturating_add(MAX_OVERRUN_NS))
            }
            Charge::Packets => packets.max(1),
        };
        v.stats.charged += used;
        self.last_used = used;
        // The chosen pass was the smallest among eligible routers: it is
        // the virtual time a rejoining router starts from. It never goes
        // back (a router that stayed eligible with an old, low pass must
        // not drag the routers that rejoin later back with it).
        self.global_pass = self.global_pass.max(v.pass);
        v.pass = v.pass.saturating_add(v.stride.saturating_mul(used) / 1024);
        v.waiting_since = None;
        true
    }
}

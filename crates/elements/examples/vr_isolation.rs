//! Isolation of virtual routers under `graph::VrScheduler` (seed 002,
//! slides 30-38 and 43): seed 002's efficiency table, reproduced with our
//! scheduler on real element graphs driven from memory.
//!
//! Setup (slide 43, scaled to this machine): 17 virtual routers on one
//! core, each with its own graph and FIB (`CheckIpHeader -> Ip4Lookup ->
//! DecIpTtl -> EtherRewrite -> ToDevice`, a different route per router).
//! 16 "QoS" routers are offered a paced 3 % of the core each (48 %, as
//! slide 43's 16 x 10 kpps x 3 us); one "best effort" router is offered
//! 10 % for the first CPU second and is then overloaded (unbounded input;
//! slide 43 offers it 30 %, which with 48 % is already at the capacity
//! of every mode measured here).
//! Tickets: 5 per QoS router (a conservative 80 % reservation for 48 % of
//! work, slide 31), 20 for best effort.
//! The per-packet cost `c` is measured first in the same run: one router
//! alone, bursts of 32, no scheduler. Offered rates derive from it.
//!
//! Rows (the seed's, plus its throttle):
//! * `no batching`: one packet per scheduling decision (burst 1, one
//!   process per run), slide 35.
//! * `time slice 30us`: bursts of 32, a router runs up to 30 us, slide 36.
//! * `throttle T=..`: G = 100 us with the batch threshold B_i computed from
//!   the measured switch cost (slide 37: C_sw / (B_i c) < T) and delay
//!   threshold D_i (slide 43's 1 ms / 0.3 ms).
//!
//! CPU efficiency = packets forwarded x c / elapsed, over the overload
//! phase (the core is saturated then): the fraction of the core spent on
//! packet work at full-batch cost; the rest went to switches, scans and
//! small batches. Isolation: each QoS router's delivered / offered, and
//! the drops of its (256-packet) receive ring.
//!
//! Run: `cargo run --release -p elements --example vr_isolation -- [OUT_DIR]`
//! (writes `vr-share.svg`, `vr-forwarded.svg` and `vr-isolation.csv` into
//! OUT_DIR when given). All times are the thread's CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`), for the scheduler too (`with_clock`): on a
//! shared machine, time other processes take is no router's.

use std::time::Duration;

use base::thread_cpu_ns;
use elements::{AnyElement, Env};
use graph::{Charge, Graph, Runner, VrConfig, VrScheduler};
use pkt::{build, Batch, DevStats, Device, Mac, MemDevice, Pool};

const QOS: usize = 16;
const RING: u64 = 256;
const NORMAL: Duration = Duration::from_millis(1000);
const OVERLOAD: Duration = Duration::from_millis(1500);
const SAMPLE: Duration = Duration::from_millis(20);
/// Slide 31: QoS routers get a conservative share (5 % each for a 3 %
/// load: 80 % of the core for 48 % of offered work), best effort the
/// rest; unused capacity goes to whoever is eligible.
const QOS_TICKETS: u32 = 5;
/// Best effort's offered load before the overload, as a fraction of the
/// core at full-batch cost (QoS 48 % + 10 %: below capacity in every
/// mode that batches).
const BE_NORMAL: f64 = 0.10;
const BE_TICKETS: u32 = 20;

/// A memory device whose receive side is paced: `rate` packets per second
/// (until `unbounded_after`, then as many as asked), with a receive ring of
/// `RING` packets whose overflow is counted as drops.
struct Paced {
    inner: MemDevice,
    rate: f64,
    unbounded_after: Option<Duration>,
    start: u64,
    given: u64,
    dropped: u64,
}

impl Device for Paced {
    type Error = core::convert::Infallible;
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn rx_burst(&mut self, pool: &Pool, batch: &mut Batch, max: usize) -> usize {
        let t = Duration::from_nanos(NOW.with(|n| n.get()).saturating_sub(self.start));
        let max = if self.unbounded_after.is_some_and(|u| t >= u) {
            max
        } else {
            let arrived = (t.as_secs_f64() * self.rate) as u64;
            let backlog = arrived.saturating_sub(self.given);
            if backlog > RING {
                // The ring overflowed while the router was not running.
                self.dropped += backlog - RING;
                self.given += backlog - RING;
            }
            max.min((arrived - self.given) as usize)
        };
        let n = self.inner.rx_burst(pool, batch, max);
        self.given += n as u64;
        n
    }
    fn tx_burst(&mut self, batch: &mut Batch) -> usize {
        self.inner.tx_burst(batch)
    }
    fn stats(&self) -> DevStats {
        self.inner.stats()
    }
}

thread_local! {
    /// The scheduler's latest clock reading, which the paced devices
    /// read instead of the clock (one system call per scheduler reading,
    /// not one per device poll).
    static NOW: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// The scheduler's clock: this thread's CPU time, the experiment's only
/// clock, so that the time other tenants of a shared core take is neither
/// charged to a router nor seen as arrivals; remembered for the paced
/// devices.
fn sched_clock() -> u64 {
    let t = thread_cpu_ns();
    NOW.with(|n| n.set(t));
    t
}

/// Elapsed CPU time since `start` (a `thread_cpu_ns` reading).
fn since(start: u64) -> Duration {
    Duration::from_nanos(thread_cpu_ns().saturating_sub(start))
}

const RMAC: Mac = Mac([2, 0, 0, 0, 0, 1]);
const SMAC: Mac = Mac([2, 0, 0, 0, 1, 2]);

fn graph(net: u8) -> Graph<AnyElement> {
    let cfg = format!(
        "in0 :: FromDevice(eth0); out0 :: ToDevice(eth0);
         in0 -> CheckIpHeader -> Ip4Lookup(ROUTE 10.{net}.0.0/16 10.0.1.3 0) -> DecIpTtl
             -> EtherRewrite(MAC 02:00:00:00:00:01, NEIGH 10.0.1.3 02:00:00:00:01:03) -> out0;"
    );
    let mut env = Env::new();
    Graph::from_str(&cfg, "vr.click", &mut env, Pool::new(1024)).expect("valid graph")
}

fn frames(net: u8) -> Vec<Vec<u8>> {
    (0..64u8)
        .map(|i| build::udp4(RMAC, SMAC, [10, 0, 1, 2], [10, net, 0, i], 64, 1, 2, b"x"))
        .collect()
}

/// Per-packet cost (ns) of one router alone, bursts of 32, no scheduler.
fn baseline_ns() -> f64 {
    let mut r =
        Runner::new(graph(1), vec![MemDevice::cycling("eth0", frames(1))], 32).expect("bind");
    for _ in 0..2000 {
        r.poll();
    }
    let t = thread_cpu_ns();
    let mut n = 0u64;
    while since(t) < Duration::from_millis(400) {
        for _ in 0..100 {
            n += r.poll() as u64;
        }
    }
    since(t).as_nanos() as f64 / n as f64
}

#[derive(Clone, Copy)]
struct Mode {
    name: &'static str,
    burst: usize,
    charge_ns: u64,
    qos_batch: usize,
    qos_delay_us: u64,
    be_batch: usize,
    be_delay_us: u64,
}

struct Row {
    mode: Mode,
    efficiency: f64,
    qos_delivered: f64,
    qos_worst: f64,
    qos_drops: u64,
    qos_share: f64,
    be_share: f64,
    be_mpps: f64,
    /// (seconds, QoS share %, BE share %) samples.
    trace: Vec<(f64, f64, f64)>,
    /// (seconds, QoS Mpps forwarded, BE Mpps forwarded) samples.
    rates: Vec<(f64, f64, f64)>,
}

type Sched = VrScheduler<AnyElement, Paced>;

/// At the start of the measured phase: the clock, then per router packets
/// sent, ring drops and charged time.
type Snapshot = (u64, Vec<u64>, Vec<u64>, Vec<u64>);

fn build(mode: Mode, c_ns: f64) -> (Sched, u64) {
    let mut s = VrScheduler::with_clock(mode.charge_ns, Charge::Time, Box::new(sched_clock));
    let start = sched_clock();
    let qos_rate = 0.03e9 / c_ns;
    for i in 0..=QOS {
        let be = i == QOS;
        let dev = Paced {
            inner: MemDevice::cycling("eth0", frames(i as u8 + 1)),
            rate: if be { BE_NORMAL * 1e9 / c_ns } else { qos_rate },
            unbounded_after: be.then_some(NORMAL),
            start,
            given: 0,
            dropped: 0,
        };
        let r = Runner::new(graph(i as u8 + 1), vec![dev], mode.burst).expect("bind");
        let cfg = if be {
            VrConfig {
                tickets: BE_TICKETS,
                batch: mode.be_batch,
                delay_ns: mode.be_delay_us * 1000,
            }
        } else {
            VrConfig {
                tickets: QOS_TICKETS,
                batch: mode.qos_batch,
                delay_ns: mode.qos_delay_us * 1000,
            }
        };
        s.add(r, cfg);
    }
    (s, start)
}

fn sent(s: &Sched, i: usize) -> u64 {
    s.runner(i).map_or(0, |r| r.devices()[0].stats().tx)
}

fn run(mode: Mode, c_ns: f64) -> Row {
    let (mut s, start) = build(mode, c_ns);
    let n = QOS + 1;
    let charged = |s: &Sched| -> Vec<u64> {
        (0..n)
            .map(|i| s.stats(i).map_or(0, |x| x.charged))
            .collect()
    };
    let mut trace = Vec::new();
    let mut rates = Vec::new();
    let mut last = charged(&s);
    let sent_now = |s: &Sched| -> (u64, u64) { ((0..QOS).map(|i| sent(s, i)).sum(), sent(s, QOS)) };
    let mut last_sent = (sent_now(&s), 0u64);
    let mut next_sample = SAMPLE;
    let mut at_overload: Option<Snapshot> = None;
    let end = NORMAL + OVERLOAD;
    loop {
        for _ in 0..64 {
            s.step();
        }
        let t = since(start);
        if t >= next_sample {
            let now = charged(&s);
            let d: Vec<u64> = now.iter().zip(&last).map(|(a, b)| a - b).collect();
            let total = d.iter().sum::<u64>().max(1) as f64;
            let qos = d[..QOS].iter().sum::<u64>() as f64;
            trace.push((
                t.as_secs_f64(),
                100.0 * qos / total,
                100.0 * d[QOS] as f64 / total,
            ));
            last = now;
            let (now_sent, t_ns) = (sent_now(&s), t.as_nanos() as u64);
            let dt = (t_ns - last_sent.1).max(1) as f64 / 1e3;
            rates.push((
                t.as_secs_f64(),
                (now_sent.0 - last_sent.0 .0) as f64 / dt,
                (now_sent.1 - last_sent.0 .1) as f64 / dt,
            ));
            last_sent = (now_sent, t_ns);
            next_sample = t + SAMPLE;
        }
        if at_overload.is_none() && t >= NORMAL + Duration::from_millis(100) {
            let sent_v = (0..n).map(|i| sent(&s, i)).collect();
            let drops = (0..n)
                .map(|i| s.runner(i).map_or(0, |r| r.devices()[0].dropped))
                .collect();
            at_overload = Some((thread_cpu_ns(), sent_v, drops, charged(&s)));
        }
        if t >= end {
            break;
        }
    }
    let (t0, sent0, drops0, charged0) = at_overload.expect("overload phase sampled");
    let secs = since(t0).as_secs_f64();
    let fwd: Vec<u64> = (0..n).map(|i| sent(&s, i) - sent0[i]).collect();
    let drops: Vec<u64> = (0..n)
        .map(|i| s.runner(i).map_or(0, |r| r.devices()[0].dropped) - drops0[i])
        .collect();
    let ch: Vec<u64> = charged(&s)
        .iter()
        .zip(&charged0)
        .map(|(a, b)| a - b)
        .collect();
    let total_ch = ch.iter().sum::<u64>().max(1) as f64;
    let qos_offered = 0.03e9 / c_ns * secs;
    let per_qos: Vec<f64> = fwd[..QOS].iter().map(|&f| f as f64 / qos_offered).collect();
    let all: u64 = fwd.iter().sum();
    // Drops inside the routers' graphs, by element and reason.
    let mut graph_drops = Vec::new();
    for i in 0..n {
        if let Some(r) = s.runner(i) {
            for e in 0..r.graph.len() {
                for (why, k) in r.graph.drops_of(e) {
                    if k > 0 {
                        let name = r.graph.name(e).unwrap_or("?");
                        graph_drops.push(format!("vr{i} {name} {why} {k}"));
                    }
                }
            }
        }
    }
    if !graph_drops.is_empty() {
        eprintln!(
            "{}: drops inside graphs: {}",
            mode.name,
            graph_drops.join(", ")
        );
    }
    Row {
        mode,
        efficiency: 100.0 * all as f64 * c_ns / (secs * 1e9),
        qos_delivered: 100.0 * per_qos.iter().sum::<f64>() / QOS as f64,
        qos_worst: 100.0 * per_qos.iter().cloned().fold(f64::INFINITY, f64::min),
        qos_drops: drops[..QOS].iter().sum(),
        qos_share: 100.0 * ch[..QOS].iter().sum::<u64>() as f64 / total_ch,
        be_share: 100.0 * ch[QOS] as f64 / total_ch,
        be_mpps: fwd[QOS] as f64 / secs / 1e6,
        trace,
        rates,
    }
}

/// Cost of one scheduling decision with nothing to run (17 scans of an
/// empty receive ring), ns: the switch cost C_sw the throttle divides.
fn switch_ns() -> f64 {
    let mode = Mode {
        name: "idle",
        burst: 32,
        charge_ns: 30_000,
        qos_batch: 1,
        qos_delay_us: 0,
        be_batch: 1,
        be_delay_us: 0,
    };
    let (mut s, _) = build(mode, f64::INFINITY);
    let t = thread_cpu_ns();
    let mut steps = 0u64;
    while since(t) < Duration::from_millis(200) {
        for _ in 0..1000 {
            s.step();
        }
        steps += 1000;
    }
    since(t).as_nanos() as f64 / steps as f64
}

fn main() {
    let out = std::env::args().nth(1);
    let c = baseline_ns();
    let c_sw = switch_ns();
    let clock = {
        let t = thread_cpu_ns();
        for _ in 0..99_999 {
            std::hint::black_box(thread_cpu_ns());
        }
        since(t).as_nanos() as f64 / 100_000.0
    };
    // Slide 37: C_sw / (B_i c) < T.
    let b = |t: f64| ((c_sw / (t * c)).floor() as usize + 1).max(1);
    println!(
        "baseline: one router alone, bursts of 32: {c:.1} ns/packet ({:.2} Mpps); \
         scheduling decision with nothing to run (C_sw): {c_sw:.1} ns; \
         B_i = {} at T = 10 %, {} at T = 25 %; one CPU-clock read {clock:.0} ns",
        1e3 / c,
        b(0.10),
        b(0.25)
    );
    let modes = [
        Mode {
            name: "no batching",
            burst: 1,
            charge_ns: 1,
            qos_batch: 1,
            qos_delay_us: 0,
            be_batch: 1,
            be_delay_us: 0,
        },
        Mode {
            name: "time slice 30us",
            burst: 32,
            charge_ns: 30_000,
            qos_batch: 1,
            qos_delay_us: 0,
            be_batch: 1,
            be_delay_us: 0,
        },
        Mode {
            name: "throttle G=100us T=10% D=1ms",
            burst: 32,
            charge_ns: 100_000,
            qos_batch: b(0.10),
            qos_delay_us: 1000,
            be_batch: 32,
            be_delay_us: 1000,
        },
        Mode {
            name: "throttle G=100us T=25% D=0.3ms",
            burst: 32,
            charge_ns: 100_000,
            qos_batch: b(0.25),
            qos_delay_us: 300,
            be_batch: 32,
            be_delay_us: 300,
        },
    ];
    let rows: Vec<Row> = modes.iter().map(|m| run(*m, c)).collect();
    println!(
        "| mode | burst | G | B_i QoS/BE | D_i | CPU efficiency | QoS delivered (mean / worst) | \
         QoS ring drops | CPU share QoS / BE | BE Mpps |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut csv = String::from(
        "mode,efficiency_pct,qos_delivered_pct,qos_worst_pct,qos_drops,qos_share_pct,be_share_pct,be_mpps\n",
    );
    for r in &rows {
        let m = r.mode;
        println!(
            "| {} | {} | {} | {}/{} | {} | {:.1} % | {:.1} % / {:.1} % | {} | {:.1} % / {:.1} % | {:.2} |",
            m.name,
            m.burst,
            if m.charge_ns == 1 {
                "1 run".to_string()
            } else {
                format!("{} us", m.charge_ns / 1000)
            },
            m.qos_batch,
            m.be_batch,
            if m.qos_delay_us == 0 {
                "-".to_string()
            } else {
                format!("{} us", m.qos_delay_us)
            },
            r.efficiency,
            r.qos_delivered,
            r.qos_worst,
            r.qos_drops,
            r.qos_share,
            r.be_share,
            r.be_mpps
        );
        csv += &format!(
            "{},{:.2},{:.2},{:.2},{},{:.2},{:.2},{:.3}\n",
            m.name,
            r.efficiency,
            r.qos_delivered,
            r.qos_worst,
            r.qos_drops,
            r.qos_share,
            r.be_share,
            r.be_mpps
        );
    }
    if let Some(dir) = out {
        let mut chart = plot::LineChart::new(
            "CPU share over time (best effort overloaded from t = 1 s)",
            "CPU seconds of the scheduling thread",
            "CPU share, % of charged time",
        );
        for r in &rows {
            chart = chart
                .series(
                    &format!("{}: 16 QoS routers", r.mode.name),
                    r.trace.iter().map(|p| (p.0, p.1)).collect(),
                )
                .series(
                    &format!("{}: best effort", r.mode.name),
                    r.trace.iter().map(|p| (p.0, p.2)).collect(),
                );
        }
        let mut fwd = plot::LineChart::new(
            "Forwarded over time (best effort overloaded from t = 1 s)",
            "CPU seconds of the scheduling thread",
            "Mpps forwarded (per CPU second)",
        )
        .series(
            "16 QoS routers: offered",
            vec![
                (0.0, 0.48e3 / c),
                ((NORMAL + OVERLOAD).as_secs_f64(), 0.48e3 / c),
            ],
        );
        for r in &rows {
            fwd = fwd
                .series(
                    &format!("{}: 16 QoS routers", r.mode.name),
                    r.rates.iter().map(|p| (p.0, p.1)).collect(),
                )
                .series(
                    &format!("{}: best effort", r.mode.name),
                    r.rates.iter().map(|p| (p.0, p.2)).collect(),
                );
        }
        let dir = std::path::PathBuf::from(dir);
        std::fs::write(dir.join("vr-share.svg"), chart.to_svg()).expect("write svg");
        std::fs::write(dir.join("vr-forwarded.svg"), fwd.to_svg()).expect("write svg");
        std::fs::write(dir.join("vr-isolation.csv"), csv).expect("write csv");
        println!(
            "wrote {}/vr-share.svg, vr-forwarded.svg and vr-isolation.csv",
            dir.display()
        );
    }
}

//! Internal congestion control in the element graph (issue 15; crate
//! `cc`, docs/cc.md): the egress queue with its monitor and controller
//! ([`CcEgress`]), and the ingress rate enforcement per egress
//! ([`CcIngress`]). Control messages travel as BECNs in the fabric option
//! (`cluster::fabric::encode_becn`); for the price scheme the BECN's value
//! is the price as the bits of an `f32`.
//!
//! ```text
//! egress:  fdec [0] -> q :: CcEgress(NODE 2, SCHEME price, SHAPE 20000) -> ...   released frames
//!          q [1] -> ToDevice(fabric)                                              control messages
//! ingress: rt4 [k] -> i :: CcIngress(NODE 0, SCHEME price, PEER 2 198.18.100.3) -> FabricEncap(...)
//!          fdec [2] -> [1] i                                                      control messages in
//! ```
//!
//! Time is the graph's own (`Output::now_ns`, the driver's clock per
//! poll); the controllers run when an interval has passed at a packet or
//! a tick, never on a timer of their own.

use std::collections::VecDeque;

use base::Instant;
use cc::{
    Allowance, EgressControl, EgressSample, EgressScheme, Increase, IngressControl, IngressScheme,
    LastSource, Notify, Quantum, Signal, TokenBucket,
};
use cluster::fabric::{decode, encode_becn, Becn, Message, Meta};
use graph::{Arg, BuildError, DropReason, Output};
use pkt::{Batch, Packet};

use crate::args::{each, keyword, num, unknown};

/// CcEgress's own drop reasons, by index.
pub const EGRESS_DROP_NAMES: &[&str] = &["queue_full"];
const QUEUE_FULL: DropReason = DropReason::own(0);
/// CcIngress's own drop reasons, by index.
pub const INGRESS_DROP_NAMES: &[&str] = &["cc_limited", "bad_control"];
const LIMITED: DropReason = DropReason::own(0);
const BAD_CONTROL: DropReason = DropReason::own(1);

/// The source node of a frame delivered by `FabricDecap`, carried in
/// `anno.nh` above the queue tag: bit 31 set, node in bits 8..16.
pub const fn source_tag(source: u16, queue: u8) -> u32 {
    (1 << 31) | ((source as u32 & 0xff) << 8) | queue as u32
}

fn source_of(nh: u32) -> Option<u16> {
    (nh >> 31 == 1).then_some(((nh >> 8) & 0xff) as u16)
}

/// Which scheme (docs/cc.md): the `SCHEME` argument of both elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcScheme {
    /// No control: the egress queue and shaper only.
    None,
    /// Scheme A (ch. 5): BECN to the last source, AIMD scheduling weights.
    BecnWeights,
    /// Scheme B′ (Eq 7.9): queue-based price, broadcast; Eq 6.7 at the ingress.
    Price,
    /// Scheme C (ch. 7): BECN to all sources, AIMD rates.
    AimdRate,
}

fn scheme(i: usize, v: &str) -> Result<CcScheme, BuildError> {
    Ok(match v {
        "none" => CcScheme::None,
        "becn-aimd-weights" => CcScheme::BecnWeights,
        "price" => CcScheme::Price,
        "aimd-rate" => CcScheme::AimdRate,
        _ => {
            return Err(BuildError::arg(
                i,
                format!("SCHEME is none, becn-aimd-weights, price or aimd-rate, not '{v}'"),
            ))
        }
    })
}

fn float(i: usize, s: &str) -> Result<f64, BuildError> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && *f >= 0.0)
        .ok_or_else(|| BuildError::arg(i, format!("expected a non-negative number, got '{s}'")))
}

fn node(i: usize, v: &str) -> Result<u16, BuildError> {
    u16::try_from(num(i, v)?)
        .ok()
        .filter(|&n| n < 64)
        .ok_or_else(|| BuildError::arg(i, "a node is 0..=63"))
}

const SRC_NAMES: [&str; 8] = [
    "from0", "from1", "from2", "from3", "from4", "from5", "from6", "from7",
];
const INJ_NAMES: [&str; 8] = ["to0", "to1", "to2", "to3", "to4", "to5", "to6", "to7"];

/// `CcEgress(NODE n, SCHEME s, ...)`: this node's egress queue for frames
/// from the fabric, its emulated port capacity, and its controller.
///
/// * Ports: 1 input (frames from `FabricDecap`, `anno.nh` =
///   [`source_tag`]); output 0 the frames, released at most at `SHAPE`
///   pps (a token bucket: the emulated egress port capacity C; 0 = as
///   fast as they come); output 1 control datagrams for the fabric
///   (`anno.nh` = the node to send to).
/// * Per interval (at a packet or a tick once `INTERVAL_US` has passed):
///   the queue is sampled (`cc::QueueMonitor`) and `cc::EgressControl`
///   decides; a BECN goes to the last source (`becn-aimd-weights`), to
///   every source seen (`aimd-rate`), or the price to every source seen
///   (`price`).
/// * Config: `NODE`, `SCHEME none|becn-aimd-weights|price|aimd-rate`,
///   `SHAPE` pps, `BURST` packets (default SHAPE/200, at least 32: the
///   5 ms an idle dataplane sleeps in `poll(2)` between ticks),
///   `LIMIT` queue length (default 1000), `INTERVAL_US` (default 1000),
///   `THRESHOLD` Q packets (default 100), `Q_O` (default 100), `U`
///   (default 0.01), `R` (default 5e11), `VNI`.
/// * Counters: `queue`, `enqueued`, `sent`, `control_sent`, `samples`,
///   `queue_mean_milli`, `queue_sd_milli` (over intervals with traffic),
///   `from0`..`from7` (frames arrived per source node); drop `queue_full`.
#[derive(Debug)]
pub struct CcEgress {
    me: u16,
    queue: VecDeque<Packet>,
    limit: usize,
    shaper: Option<TokenBucket>,
    ctrl: Option<EgressControl>,
    /// Statistics of the queue for the `none` scheme (the controller keeps
    /// its own otherwise).
    mon: cc::QueueMonitor,
    interval_ns: u64,
    last_sample: Option<u64>,
    last_src: LastSource,
    sources: u64,
    from: [u64; 64],
    pkts_in: u64,
    pkts_out: u64,
    idle_mark: u64,
    control_sent: u64,
    vni: u32,
}

impl CcEgress {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let (mut me, mut sch, mut shape, mut burst, mut limit) =
            (None, CcScheme::None, 0u64, None, 1000usize);
        let (mut interval_us, mut q, mut q_o, mut u, mut r, mut vni) =
            (1000u64, 100u32, 100.0, 0.01, 5e11, 0u32);
        for (i, a) in each(args) {
            match keyword(a) {
                ("NODE", v) => me = Some(node(i, v)?),
                ("SCHEME", v) => sch = scheme(i, v)?,
                ("SHAPE", v) => shape = num(i, v)?,
                ("BURST", v) => burst = Some(num(i, v)?.max(1) as f64),
                ("LIMIT", v) => limit = num(i, v)?.clamp(1, 1 << 20) as usize,
                ("INTERVAL_US", v) => interval_us = num(i, v)?.max(1),
                ("THRESHOLD", v) => q = u32::try_from(num(i, v)?).unwrap_or(u32::MAX),
                ("Q_O", v) => q_o = float(i, v)?,
                ("U", v) => u = float(i, v)?,
                ("R", v) => r = float(i, v)?.max(1.0),
                ("VNI", v) => vni = (num(i, v)? & 0x00ff_ffff) as u32,
                (k, _) => return Err(unknown(i, k)),
            }
        }
        let me = me.ok_or_else(|| BuildError::elem("CcEgress needs NODE"))?;
        let now = Instant::ZERO;
        let interval = std::time::Duration::from_micros(interval_us);
        let es = match sch {
            CcScheme::None => None,
            CcScheme::BecnWeights => Some(EgressScheme::Threshold {
                q_threshold: q,
                notify: Notify::LastSource,
            }),
            CcScheme::AimdRate => Some(EgressScheme::Threshold {
                q_threshold: q,
                notify: Notify::All,
            }),
            CcScheme::Price => Some(EgressScheme::QueuePrice { q_o, u, r }),
        };
        let burst = burst.unwrap_or((shape as f64 / 200.0).max(32.0));
        Ok(CcEgress {
            me,
            queue: VecDeque::with_capacity(limit.min(4096)),
            limit,
            shaper: (shape > 0).then(|| TokenBucket::new(now, shape as f64, burst)),
            ctrl: es.map(|s| EgressControl::new(now, interval, s)),
            mon: cc::QueueMonitor::new(),
            interval_ns: interval_us * 1000,
            last_sample: None,
            last_src: LastSource::default(),
            sources: 0,
            from: [0; 64],
            pkts_in: 0,
            pkts_out: 0,
            idle_mark: 0,
            control_sent: 0,
            vni,
        })
    }

    /// Frames waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// No frame waiting.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Mean and standard deviation of the queue sampled once per interval.
    pub fn queue_stats(&self) -> (u64, f64, f64) {
        let m = self.ctrl.as_ref().map_or(&self.mon, |c| c.monitor());
        (m.count(), m.mean(), m.std_dev())
    }

    /// Frames arrived from node `n`.
    pub fn from_node(&self, n: u16) -> u64 {
        self.from.get(usize::from(n)).copied().unwrap_or(0)
    }

    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        for p in batch.drain() {
            self.pkts_in += 1;
            if let Some(s) = source_of(p.anno.nh) {
                self.last_src.note(u32::from(s));
                self.sources |= 1 << (s & 63);
                if let Some(f) = self.from.get_mut(usize::from(s)) {
                    *f += 1;
                }
            }
            if self.queue.len() >= self.limit {
                out.drop(p, QUEUE_FULL);
            } else {
                self.queue.push_back(p);
            }
        }
        self.run(out);
    }

    pub(crate) fn tick(&mut self, out: &mut Output<'_>) {
        self.run(out);
    }

    fn run(&mut self, out: &mut Output<'_>) {
        let now = Instant::from_nanos(out.now_ns());
        let n = match &mut self.shaper {
            Some(b) => b.take(now, self.queue.len() as u64) as usize,
            None => self.queue.len(),
        };
        for p in self.queue.drain(..n.min(self.queue.len())) {
            self.pkts_out += 1;
            out.push(0, p);
        }
        let sample = EgressSample {
            queue_len: u32::try_from(self.queue.len()).unwrap_or(u32::MAX),
            pkts_in: self.pkts_in,
            pkts_out: self.pkts_out,
        };
        // Idle (nothing arrived since the last sample and nothing queued):
        // no sample, so the statistics describe the loaded queue, and no
        // signal (the next busy interval spans the idle time).
        if self.queue.is_empty() && self.pkts_in == self.idle_mark {
            return;
        }
        self.idle_mark = self.pkts_in;
        let Some(ctrl) = &mut self.ctrl else {
            let t = out.now_ns();
            match self.last_sample {
                Some(l) if t.saturating_sub(l) < self.interval_ns => {}
                l => {
                    let dt = l.map_or(0.0, |l| t.saturating_sub(l) as f64 * 1e-9);
                    self.mon.sample(dt, sample);
                    self.last_sample = Some(t);
                }
            }
            return;
        };
        let Some(sig) = ctrl.poll(now, sample) else {
            return;
        };
        let value = match sig {
            Signal::Becn => 0,
            Signal::Price(p) => (p as f32).to_bits(),
        };
        let targets = match ctrl.scheme().notify() {
            Notify::LastSource => self
                .last_src
                .get()
                .map_or(0, |s| 1u64.checked_shl(s).unwrap_or(0)),
            Notify::All => self.sources,
        };
        for dst in (0..64u16).filter(|&d| targets & (1 << d) != 0 && d != self.me) {
            let b = Becn {
                meta: Meta {
                    egress: dst,
                    source: self.me,
                    flags: 0,
                },
                port: 0,
                queue: 0,
                value,
            };
            let mut buf = [0u8; 64];
            let Some(len) = encode_becn(&mut buf, self.vni, &b) else {
                continue;
            };
            match out.pool().alloc_from(buf.get(..len).unwrap_or_default()) {
                Some(mut d) => {
                    d.anno.nh = u32::from(dst);
                    self.control_sent += 1;
                    out.push(1, d);
                }
                None => out.count_drop(DropReason::NO_BUFFER),
            }
        }
    }

    pub(crate) fn counters(&self, f: &mut dyn FnMut(&'static str, u64)) {
        let (n, mean, sd) = self.queue_stats();
        f("queue", self.queue.len() as u64);
        f("enqueued", self.pkts_in);
        f("sent", self.pkts_out);
        f("control_sent", self.control_sent);
        f("samples", n);
        f("queue_mean_milli", (mean * 1000.0) as u64);
        f("queue_sd_milli", (sd * 1000.0) as u64);
        for (name, v) in SRC_NAMES.iter().zip(self.from) {
            f(name, v);
        }
    }
}

/// The default `MAX_RATE`: finite (a token bucket reads an infinite rate
/// as 0), far above any port.
const UNLIMITED: f64 = 1e9;

/// One egress as seen from an ingress.
#[derive(Debug)]
struct Lane {
    ctrl: IngressControl,
    bucket: TokenBucket,
    quantum: Quantum,
    injected: u64,
}

/// `CcIngress(NODE n, SCHEME s, PEER id ADDR, ...)`: rate enforcement per
/// egress node in front of `FabricEncap`.
///
/// * Ports: input 0 frames for the fabric (`anno.nh` = the lookup's
///   `fabric::egress_tag`, else `anno.gw` = the egress node's fabric
///   address), input 1 control datagrams
///   from `FabricDecap`; output 0 the frames admitted.
/// * Per frame for egress `e`: `cc::IngressControl` of `e` runs its
///   interval step when one has passed (the injected count in), then the
///   frame is admitted by `e`'s token bucket at the controller's rate
///   (`price`, `aimd-rate`), or by its weighted quantum (`becn-aimd-weights`:
///   one round per frame offered, so a weight `w` admits `w / MAXWEIGHT`
///   of them); the rest are dropped (`cc_limited`): the ingress queue of
///   the thesis is full. Frames for no known egress pass.
/// * Per control message for this node from egress `e`: a BECN, or for
///   `price` the price in its value, goes to `e`'s controller.
/// * Config: `NODE`, `SCHEME`, `PEER id ADDR` (each node), `INTERVAL_US`
///   (default 1000), `W` additive increase in pps per interval (aimd-rate,
///   default 50000), `M` (default 0.5), `K` (price, default 1e5), `UW`
///   the utility weight (default 1), `INCR` weight increment (default
///   20), `MAXWEIGHT` (default 1000), `MAX_RATE` pps (default 1e9),
///   `BURST` packets (default 32).
/// * Counters: `offered`, `injected`, `limited`, `signals`, `to0`..`to7`
///   (frames admitted per egress node); drops `cc_limited`, `bad_control`.
#[derive(Debug)]
pub struct CcIngress {
    me: u16,
    scheme: CcScheme,
    ischeme: Option<IngressScheme>,
    interval: std::time::Duration,
    burst: f64,
    max_weight: u32,
    peers: Vec<([u8; 16], u16)>,
    lanes: Vec<Option<Lane>>,
    offered: u64,
    limited: u64,
    signals: u64,
}

impl CcIngress {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let (mut me, mut sch, mut interval_us, mut burst) = (None, CcScheme::None, 1000u64, 32.0);
        let (mut w, mut m, mut k, mut uw, mut incr, mut maxw, mut max_rate) = (
            cc::params::AIMD_W,
            cc::params::AIMD_M,
            cc::params::K,
            cc::params::W,
            cc::params::INCR_WEIGHT,
            cc::params::MAX_WEIGHT,
            UNLIMITED,
        );
        let mut peers = Vec::new();
        for (i, a) in each(args) {
            match keyword(a) {
                ("NODE", v) => me = Some(node(i, v)?),
                ("SCHEME", v) => sch = scheme(i, v)?,
                ("INTERVAL_US", v) => interval_us = num(i, v)?.max(1),
                ("W", v) => w = float(i, v)?,
                ("M", v) => m = float(i, v)?.min(1.0),
                ("K", v) => k = float(i, v)?,
                ("UW", v) => uw = float(i, v)?,
                ("INCR", v) => incr = u32::try_from(num(i, v)?).unwrap_or(u32::MAX),
                ("MAXWEIGHT", v) => maxw = u32::try_from(num(i, v)?).unwrap_or(u32::MAX).max(1),
                ("MAX_RATE", v) => max_rate = float(i, v)?,
                ("BURST", v) => burst = num(i, v)?.max(1) as f64,
                ("PEER", v) => {
                    let (id, a) = v.split_once(char::is_whitespace).unwrap_or((v, ""));
                    let id = node(i, id)?;
                    peers.push((gw(crate::args::ip(i, a)?), id));
                }
                (k, _) => return Err(unknown(i, k)),
            }
        }
        let me = me.ok_or_else(|| BuildError::elem("CcIngress needs NODE"))?;
        let ischeme = match sch {
            CcScheme::None => None,
            CcScheme::BecnWeights => Some(IngressScheme::Weight {
                incr,
                max: maxw,
                min: 1,
                increase: Increase::EveryInterval,
            }),
            CcScheme::AimdRate => Some(IngressScheme::RateAimd { w, m, max_rate }),
            CcScheme::Price => Some(IngressScheme::Price { k, w: uw, max_rate }),
        };
        Ok(CcIngress {
            me,
            scheme: sch,
            ischeme,
            interval: std::time::Duration::from_micros(interval_us),
            burst,
            max_weight: maxw,
            peers,
            lanes: (0..64).map(|_| None).collect(),
            offered: 0,
            limited: 0,
            signals: 0,
        })
    }

    /// Frames admitted towards egress node `n`.
    pub fn injected(&self, n: u16) -> u64 {
        self.lanes
            .get(usize::from(n))
            .and_then(|l| l.as_ref())
            .map_or(0, |l| l.injected)
    }

    /// The allowance in force towards egress node `n` (none before its
    /// first frame).
    pub fn allowance(&self, n: u16) -> Option<Allowance> {
        let l = self.lanes.get(usize::from(n))?.as_ref()?;
        Some(l.ctrl.allowance())
    }

    fn lane(&mut self, now: Instant, e: u16) -> Option<&mut Lane> {
        let s = self.ischeme?;
        let (interval, burst) = (self.interval, self.burst);
        let slot = self.lanes.get_mut(usize::from(e))?;
        Some(slot.get_or_insert_with(|| {
            let ctrl = IngressControl::new(now, interval, s);
            let rate = match ctrl.allowance() {
                Allowance::Rate(r) => r,
                Allowance::Weight(_) => 0.0,
            };
            Lane {
                ctrl,
                bucket: TokenBucket::new(now, rate, burst),
                quantum: Quantum::default(),
                injected: 0,
            }
        }))
    }

    pub(crate) fn process(&mut self, input: u16, batch: &mut Batch, out: &mut Output<'_>) {
        let now = Instant::from_nanos(out.now_ns());
        if input == 1 {
            for p in batch.drain() {
                let (src, value) = match decode(p.data()) {
                    Ok(Message::Becn(b)) if b.meta.egress == self.me => (b.meta.source, b.value),
                    _ => {
                        out.drop(p, BAD_CONTROL);
                        continue;
                    }
                };
                let sig = match self.scheme {
                    CcScheme::Price => Signal::Price(f64::from(f32::from_bits(value))),
                    _ => Signal::Becn,
                };
                if let Some(l) = self.lane(now, src) {
                    l.ctrl.on_signal(sig);
                    if let Allowance::Rate(r) = l.ctrl.allowance() {
                        l.bucket.set_rate(now, r);
                    }
                }
                self.signals += 1;
            }
            return;
        }
        let maxw = self.max_weight;
        for p in batch.drain() {
            self.offered += 1;
            let tagged = crate::fabric::egress_of(p.anno.nh).map(|t| t.0);
            let Some(e) = tagged.or_else(|| {
                self.peers
                    .iter()
                    .find(|(a, _)| *a == p.anno.gw)
                    .map(|x| x.1)
            }) else {
                out.push(0, p);
                continue;
            };
            let Some(l) = self.lane(now, e) else {
                out.push(0, p); // no control
                continue;
            };
            let ok = match l.ctrl.poll(now, l.injected) {
                Allowance::Weight(w) => l.quantum.serve(w, maxw, 1, 1) == 1,
                Allowance::Rate(r) => {
                    if r != l.bucket.rate() {
                        l.bucket.set_rate(now, r);
                    }
                    l.bucket.take(now, 1) == 1
                }
            };
            if ok {
                l.injected += 1;
                out.push(0, p);
            } else {
                self.limited += 1;
                out.drop(p, LIMITED);
            }
        }
    }

    pub(crate) fn counters(&self, f: &mut dyn FnMut(&'static str, u64)) {
        f("offered", self.offered);
        f("injected", self.offered - self.limited);
        f("limited", self.limited);
        f("signals", self.signals);
        for (i, name) in INJ_NAMES.iter().enumerate() {
            f(name, self.injected(i as u16));
        }
    }
}

fn gw(a: std::net::IpAddr) -> [u8; 16] {
    match a {
        std::net::IpAddr::V4(v) => {
            let mut g = [0u8; 16];
            if let Some(s) = g.get_mut(..4) {
                s.copy_from_slice(&v.octets());
            }
            g
        }
        std::net::IpAddr::V6(v) => v.octets(),
    }
}

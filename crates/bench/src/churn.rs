//! Scenario (h) of `tessera bench` (issue 17): steady churn.
//!
//! One generator peer sends a full table (the jinx dump, [`FULL_TABLE`],
//! shrunk by `--scale`), and once every monitor holds it, the RIS update
//! trace ([`UPDATE_TRACE`], every recorded peer's UPDATEs in trace order,
//! next hops rewritten to the generator's) looped at a fixed rate
//! (`--rate`, default 10k UPDATEs/s) for `--duration`. `monitors` more
//! peers (default 10) announce nothing and receive everything the DUT
//! exports (the DUT runs with `--export all`'s configuration: every peer
//! in its own AS).
//!
//! Measured:
//! * **UPDATE in to UPDATE out latency**, per prefix: the generator
//!   stamps each prefix of an UPDATE just before writing it; a monitor
//!   that then receives the prefix (announced or withdrawn) records the
//!   time since the latest stamp it has not matched yet
//!   ([`LatencyMatcher`]). A prefix sent again before the DUT passed the
//!   earlier change on counts once (the DUT may coalesce the two); an
//!   UPDATE the DUT does not pass on at all (the trace announces a path
//!   that does not win, or withdraws what the session never announced)
//!   has no sample. p50, p99 and max over all monitors, and a CDF.
//! * **keepalive lateness**: the monitors propose a hold time of
//!   [`MONITOR_HOLD`] s (the DUTs' is 240 s, so that is what is
//!   negotiated; keepalive time one third); every message received resets
//!   the peer's hold timer (RFC 4271 §6.5), so the largest gap between
//!   two messages on a monitor session ([`GapTracker`]) must stay within
//!   the keepalive time plus [`KEEPALIVE_TOLERANCE`]. "Never late": no gap
//!   above that on any monitor.
//! * the DUT's CPU-seconds and peak RSS over the whole run, the time the
//!   monitors took to get the table, and a per-second timeline (UPDATEs
//!   sent, prefix changes received per monitor, p99 latency).
//!
//! The matching and gap bookkeeping are pure ([`LatencyMatcher`],
//! [`GapTracker`], [`latency_summary`]); the sessions are the thin edge.

use crate::daemons::{generator_as, DUT_AS, HOLD_TIME};
use crate::netns::peer_addr;
use crate::results::ChurnStats;
use crate::scenario::{scaled, FULL_TABLE, RIB_FULL_PREFIXES, TRACE_FULL_MESSAGES, UPDATE_TRACE};
use base::{Asn, Prefix};
use bgp_wire::consts::msg_type;
use bgp_wire::{encode_keepalive, Message, ParseCtx, UpdateView};
use replay::error::Phase;
use replay::mrt_updates::{update_workload, UpdateOptions};
use replay::session::{check_established, connect, handshake, send_notification, MsgReader};
use replay::workload::{end_of_rib_v4, end_of_rib_v6, send_ctx, Feed, FeedParams};
use replay::{full_feeds_workload, ReplayError, SessionConfig};
use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Hold time the monitors propose (seconds): keepalives every 3 s.
pub const MONITOR_HOLD: u16 = 9;
/// Slack on the keepalive time before a gap counts as late.
pub const KEEPALIVE_TOLERANCE: Duration = Duration::from_millis(500);

/// How the churn is driven.
#[derive(Copy, Clone, Debug)]
pub struct ChurnParams {
    /// UPDATEs per second of the looped trace.
    pub rate: f64,
    /// How long the trace is looped.
    pub duration: Duration,
    pub monitors: usize,
    /// Bound on getting the table to every monitor.
    pub table_timeout: Duration,
}

/// The prepared workload: the table, the trace and the prefix index.
pub struct ChurnWorkload {
    /// The generator's table (one feed).
    pub table: Feed,
    pub table_prefixes: u64,
    /// The trace's UPDATEs in trace order, each with the indexes of the
    /// prefixes it announces or withdraws.
    pub trace: Vec<(Vec<u8>, Vec<u32>)>,
    /// Every prefix of the table and the trace, masked.
    pub index: HashMap<Prefix, u32>,
    /// Index below this: a table prefix.
    pub table_index_end: u32,
    pub about: String,
}

fn key(p: Prefix) -> Prefix {
    match p {
        Prefix::V4(x) => Prefix::V4(x.masked()),
        Prefix::V6(x) => Prefix::V6(x.masked()),
    }
}

/// The prefixes an UPDATE announces or withdraws (both families).
fn update_prefixes(u: &UpdateView<'_>, mut f: impl FnMut(Prefix)) {
    for n in u.withdrawn().map_while(Result::ok) {
        f(n.prefix);
    }
    if let Some(Ok(mp)) = u.mp_unreach() {
        for n in mp.withdrawn().map_while(Result::ok) {
            f(n.prefix);
        }
    }
    for n in u.nlri().map_while(Result::ok) {
        f(n.prefix);
    }
    if let Some(Ok(mp)) = u.mp_reach() {
        for n in mp.nlri().map_while(Result::ok) {
            f(n.prefix);
        }
    }
}

/// Reads the table and the trace from `mrt_dir`. `gen_params`: the
/// generator session's.
pub fn build(mrt_dir: &Path, scale: f64, gen_params: FeedParams) -> Result<ChurnWorkload, String> {
    let tpath = mrt_dir.join(FULL_TABLE);
    let upath = mrt_dir.join(UPDATE_TRACE);
    for p in [&tpath, &upath] {
        if !p.exists() {
            return Err(format!(
                "{} is missing (scenario h needs the shared MRT data)",
                p.display()
            ));
        }
    }
    let cap = (scale < 1.0).then(|| scaled(RIB_FULL_PREFIXES, scale));
    let (mut w, sum) = full_feeds_workload(&tpath, cap, 1, &|_| gen_params)
        .map_err(|e| format!("{FULL_TABLE}: {e}"))?;
    let table = w.feeds.pop().ok_or("empty table")?;
    let mut index: HashMap<Prefix, u32> = HashMap::new();
    let add = |p: Prefix, index: &mut HashMap<Prefix, u32>| {
        let n = index.len() as u32;
        *index.entry(key(p)).or_insert(n)
    };
    for k in 0..table.msgs.len() {
        if let Ok((Message::Update(u), _)) = Message::parse(table.range(k, k + 1), send_ctx()) {
            update_prefixes(&u, |p| {
                add(p, &mut index);
            });
        }
    }
    let table_index_end = index.len() as u32;
    let (nh4, nh6) = (gen_params.next_hop, gen_params.next_hop6());
    let opts = UpdateOptions {
        peers: None,
        // --scale shrinks the trace as it does scenario (e)'s.
        max_messages: (scale < 1.0).then(|| scaled(TRACE_FULL_MESSAGES, scale).max(500)),
        ignore_state_changes: true,
        // Everything goes out over the one generator session.
        next_hops: Some(Arc::new(move |_| (nh4, nh6))),
    };
    let (tw, tsum) = update_workload(&upath, &opts).map_err(|e| format!("{UPDATE_TRACE}: {e}"))?;
    let mut trace = Vec::with_capacity(tw.trace.len());
    for s in &tw.trace {
        let Some(f) = tw.feeds.get(s.peer as usize) else {
            continue;
        };
        let m = s.msg as usize;
        let bytes = f.range(m, m + 1);
        let Ok((Message::Update(u), _)) = Message::parse(bytes, send_ctx()) else {
            continue;
        };
        let mut ps = Vec::new();
        update_prefixes(&u, |p| ps.push(add(p, &mut index)));
        if !ps.is_empty() {
            trace.push((bytes.to_vec(), ps));
        }
    }
    if trace.is_empty() {
        return Err(format!("{UPDATE_TRACE}: no UPDATEs with prefixes"));
    }
    let about = format!(
        "churn: the {FULL_TABLE} table ({} prefixes), then the {UPDATE_TRACE} trace \
         ({} UPDATEs of {} recorded peers, {} distinct prefixes) looped",
        sum.prefixes,
        trace.len(),
        tsum.peers.len(),
        index.len() as u32 - table_index_end
    );
    Ok(ChurnWorkload {
        table,
        table_prefixes: u64::from(table_index_end),
        trace,
        index,
        table_index_end,
        about,
    })
}

/// Per-prefix send stamps against what one monitor has matched. Times
/// are nanoseconds since a common epoch, 0 meaning none.
#[derive(Clone, Debug)]
pub struct LatencyMatcher {
    matched: Vec<u64>,
    /// Latencies in microseconds.
    pub samples: Vec<u64>,
}

impl LatencyMatcher {
    pub fn new(prefixes: usize) -> LatencyMatcher {
        LatencyMatcher {
            matched: vec![0; prefixes],
            samples: Vec::new(),
        }
    }

    /// Prefix `idx` arrived at `now_ns`; `sent_ns` is its latest stamp.
    /// Returns the latency recorded, if any: none for a prefix never
    /// stamped, for a stamp already matched, or for a stamp after the
    /// arrival (the arrival answered an earlier send that was not
    /// stamped).
    pub fn arrived(&mut self, idx: usize, sent_ns: u64, now_ns: u64) -> Option<u64> {
        let m = self.matched.get_mut(idx)?;
        if sent_ns == 0 || sent_ns <= *m || sent_ns > now_ns {
            return None;
        }
        *m = sent_ns;
        let us = (now_ns - sent_ns) / 1000;
        self.samples.push(us);
        Some(us)
    }
}

/// The largest gap between messages on one session.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct GapTracker {
    last_ns: Option<u64>,
    pub max_gap_ns: u64,
    /// Gaps above the limit.
    pub late: u64,
}

impl GapTracker {
    /// A message arrived at `now_ns`; `limit_ns` is the keepalive time
    /// plus tolerance.
    pub fn message(&mut self, now_ns: u64, limit_ns: u64) {
        if let Some(l) = self.last_ns {
            let g = now_ns.saturating_sub(l);
            self.max_gap_ns = self.max_gap_ns.max(g);
            if g > limit_ns {
                self.late += 1;
            }
        }
        self.last_ns = Some(now_ns);
    }

    /// The session ended at `now_ns`: the silence since the last message
    /// counts as a gap too (a DUT that stopped sending is late).
    pub fn close(&mut self, now_ns: u64, limit_ns: u64) {
        if self.last_ns.is_some() {
            self.message(now_ns, limit_ns);
        }
    }
}

/// p50, p99 and max latency (ms) and the CDF: (latency ms, fraction of
/// samples at or below).
pub type LatencySummary = (f64, f64, f64, Vec<(f64, f64)>);

/// The [`LatencySummary`] of `us` (sorted here), the CDF with at most
/// about `points` points.
pub fn latency_summary(us: &mut [u64], points: usize) -> Option<LatencySummary> {
    if us.is_empty() {
        return None;
    }
    us.sort_unstable();
    let n = us.len();
    let q = |f: f64| {
        let i = ((f * n as f64).ceil() as usize).clamp(1, n) - 1;
        us.get(i).map_or(0.0, |&v| v as f64 / 1000.0)
    };
    let step = (n / points.max(1)).max(1);
    let mut cdf: Vec<(f64, f64)> = (0..n)
        .step_by(step)
        .filter_map(|i| {
            us.get(i)
                .map(|&v| (v as f64 / 1000.0, (i + 1) as f64 / n as f64))
        })
        .collect();
    if let Some(&last) = us.last() {
        cdf.push((last as f64 / 1000.0, 1.0));
    }
    Some((q(0.5), q(0.99), q(1.0), cdf))
}

/// What the sessions share.
struct Shared {
    epoch: Instant,
    /// Latest send stamp per prefix index.
    sent: Vec<AtomicU64>,
    /// Table prefixes each monitor holds.
    have: Vec<AtomicU64>,
    /// Monitors established.
    up: AtomicU64,
    wake: (Mutex<()>, Condvar),
    stop: AtomicBool,
    /// When the churn began, ns since the epoch (0: not yet).
    churn_start_ns: AtomicU64,
    /// Per second of churn: UPDATEs sent, prefix arrivals (all monitors).
    sent_per_s: Vec<AtomicU64>,
    recv_per_s: Vec<AtomicU64>,
}

impl Shared {
    fn now_ns(&self) -> u64 {
        (self.epoch.elapsed().as_nanos() as u64).max(1)
    }
    fn notify(&self) {
        let _g = self.wake.0.lock();
        self.wake.1.notify_all();
    }
    /// Waits until `done` or `timeout`, woken by [`Shared::notify`]; true
    /// when done.
    fn wait_until(&self, timeout: Duration, done: impl Fn() -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut g = match self.wake.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        loop {
            if done() {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.stop.load(Relaxed) {
                return done();
            }
            // Bounded waits: keepalives are sent by the caller between them.
            g = match self
                .wake
                .1
                .wait_timeout(g, left.min(Duration::from_secs(1)))
            {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }
}

/// One monitor's result.
struct MonitorOut {
    matcher: LatencyMatcher,
    gaps: GapTracker,
    keepalive: Option<Duration>,
    error: Option<ReplayError>,
}

fn session(source: Ipv4Addr, peer: usize, hold: u16, gr: bool) -> SessionConfig {
    SessionConfig {
        source: Some(IpAddr::V4(source)),
        target: SocketAddr::new(IpAddr::V4(crate::netns::DUT_ADDR), 179),
        local_as: Asn(generator_as(peer, true)),
        peer_as: Some(Asn(DUT_AS)),
        bgp_id: source,
        hold_time: hold,
        connect_timeout: Duration::from_secs(30),
        open_timeout: Duration::from_secs(30),
        graceful_restart: gr,
    }
}

fn monitor(peer: usize, sh: &Shared, w: &ChurnWorkload, slot: usize) -> MonitorOut {
    let mut out = MonitorOut {
        matcher: LatencyMatcher::new(w.index.len()),
        gaps: GapTracker::default(),
        keepalive: None,
        error: None,
    };
    if let Err(e) = monitor_inner(peer, sh, w, slot, &mut out) {
        out.error = Some(e);
    }
    out
}

fn monitor_inner(
    peer: usize,
    sh: &Shared,
    w: &ChurnWorkload,
    slot: usize,
    out: &mut MonitorOut,
) -> Result<(), ReplayError> {
    let src = peer_addr(peer).ok_or(ReplayError::Config("too many peers"))?;
    let cfg = session(src, peer, MONITOR_HOLD, true);
    let mut s = connect(&cfg)?;
    let mut rd = MsgReader::new();
    let neg = handshake(&mut s, &mut rd, &cfg)?;
    sh.up.fetch_add(1, Relaxed);
    sh.notify();
    let ka_every = neg.keepalive_interval();
    out.keepalive = ka_every;
    let limit_ns = ka_every.map_or(u64::MAX, |k| (k + KEEPALIVE_TOLERANCE).as_nanos() as u64);
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| ReplayError::io(Phase::Monitor, &e))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| ReplayError::io(Phase::Monitor, &e))?;
    let mut ka = Vec::new();
    encode_keepalive(neg.ctx, &mut ka).map_err(|_| ReplayError::Encode)?;
    let mut last_ka = Instant::now();
    let mut have = vec![false; w.table_index_end as usize];
    let mut n_have = 0u64;
    out.gaps.message(sh.now_ns(), limit_ns);
    let have_slot = sh.have.get(slot);
    while !sh.stop.load(Relaxed) {
        if let Some(iv) = ka_every {
            if last_ka.elapsed() >= iv {
                s.write_all(&ka)
                    .map_err(|e| ReplayError::io(Phase::Monitor, &e))?;
                last_ka = Instant::now();
            }
        }
        let m = match rd.next(&mut s, neg.ctx, Phase::Monitor)? {
            Some(m) => m,
            None => continue,
        };
        let now = sh.now_ns();
        out.gaps.message(now, limit_ns);
        let bytes = rd.bytes(m);
        if m.msg_type != msg_type::UPDATE {
            check_established(m.msg_type, bytes, Phase::Monitor)?;
            continue;
        }
        let Ok((Message::Update(u), _)) = Message::parse(bytes, neg.ctx) else {
            continue;
        };
        let churn0 = sh.churn_start_ns.load(Relaxed);
        let mut arrivals = 0u64;
        let mut changed = false;
        update_prefixes(&u, |p| {
            let Some(&i) = w.index.get(&key(p)) else {
                return;
            };
            let i = i as usize;
            if let Some(h) = have.get_mut(i) {
                if !*h {
                    *h = true;
                    n_have += 1;
                    changed = true;
                }
            }
            if churn0 != 0 {
                let sent = sh.sent.get(i).map_or(0, |x| x.load(Relaxed));
                if out.matcher.arrived(i, sent, now).is_some() {
                    arrivals += 1;
                }
            }
        });
        if changed {
            if let Some(h) = have_slot {
                h.store(n_have, Relaxed);
            }
            if n_have == w.table_prefixes {
                sh.notify();
            }
        }
        if arrivals > 0 && churn0 != 0 {
            let sec = (now.saturating_sub(churn0) / 1_000_000_000) as usize;
            if let Some(c) = sh.recv_per_s.get(sec) {
                c.fetch_add(arrivals, Relaxed);
            }
        }
    }
    out.gaps.close(sh.now_ns(), limit_ns);
    send_notification(&mut s, 6, 2);
    Ok(())
}

/// What the generator did.
#[derive(Default)]
struct GenOut {
    table_secs: Option<f64>,
    updates_sent: u64,
    prefixes_stamped: u64,
    /// Largest delay of a write past its due time, seconds.
    max_send_lag: f64,
    churn_secs: f64,
    error: Option<String>,
}

fn generator(sh: &Shared, w: &ChurnWorkload, p: &ChurnParams) -> GenOut {
    let mut out = GenOut::default();
    if let Err(e) = generator_inner(sh, w, p, &mut out) {
        out.error = Some(e);
    }
    out
}

fn generator_inner(
    sh: &Shared,
    w: &ChurnWorkload,
    p: &ChurnParams,
    out: &mut GenOut,
) -> Result<(), String> {
    let src = peer_addr(0).ok_or("no generator address")?;
    let cfg = session(src, 0, HOLD_TIME, false);
    let mut s = connect(&cfg).map_err(|e| e.to_string())?;
    let mut rd = MsgReader::new();
    let neg = handshake(&mut s, &mut rd, &cfg).map_err(|e| e.to_string())?;
    // Read and discard what the DUT sends us (keepalives, exports).
    let mut r = s.try_clone().map_err(|e| e.to_string())?;
    let _ = r.set_read_timeout(Some(Duration::from_millis(200)));
    let ctx: ParseCtx = neg.ctx;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut rd = rd;
            while !sh.stop.load(Relaxed) {
                match rd.next(&mut r, ctx, Phase::Hold) {
                    Ok(_) => {}
                    Err(_) => break,
                }
            }
        });
        let res = generate(sh, w, p, out, &mut s, ctx);
        // Ends the reader above and the monitors.
        sh.stop.store(true, Relaxed);
        sh.notify();
        res
    })
}

fn generate(
    sh: &Shared,
    w: &ChurnWorkload,
    p: &ChurnParams,
    out: &mut GenOut,
    s: &mut TcpStream,
    ctx: ParseCtx,
) -> Result<(), String> {
    let io = |e: std::io::Error| format!("generator: {e}");
    let mut ka = Vec::new();
    encode_keepalive(ctx, &mut ka).map_err(|_| "keepalive encoding")?;
    let monitors = p.monitors as u64;
    // Every monitor up before the table goes out, so all see all of it.
    if !sh.wait_until(Duration::from_secs(60), || sh.up.load(Relaxed) >= monitors) {
        return Err(format!(
            "only {} of {monitors} monitors established",
            sh.up.load(Relaxed)
        ));
    }
    let t0 = Instant::now();
    s.write_all(&w.table.bytes).map_err(io)?;
    s.write_all(&end_of_rib_v4()).map_err(io)?;
    if w.table.has_v6 {
        s.write_all(&end_of_rib_v6()).map_err(io)?;
    }
    let all_have = || sh.have.iter().all(|h| h.load(Relaxed) >= w.table_prefixes);
    let deadline = Instant::now() + p.table_timeout;
    while !all_have() {
        if Instant::now() >= deadline || sh.stop.load(Relaxed) {
            let have: Vec<u64> = sh.have.iter().map(|h| h.load(Relaxed)).collect();
            return Err(format!(
                "table not at every monitor within {} s: {have:?} of {}",
                p.table_timeout.as_secs(),
                w.table_prefixes
            ));
        }
        // Keep our session up while the DUT works (its hold time is 240 s).
        s.write_all(&ka).map_err(io)?;
        sh.wait_until(Duration::from_secs(10), all_have);
    }
    out.table_secs = Some(t0.elapsed().as_secs_f64());
    // A short pause so that the table's export tail is not churn.
    std::thread::sleep(Duration::from_millis(500));
    let start = Instant::now();
    sh.churn_start_ns.store(sh.now_ns(), Relaxed);
    let total = (p.rate * p.duration.as_secs_f64()).floor() as u64;
    let n = w.trace.len() as u64;
    for j in 0..total {
        if sh.stop.load(Relaxed) {
            break;
        }
        let due = start + Duration::from_secs_f64(j as f64 / p.rate);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        } else {
            out.max_send_lag = out.max_send_lag.max((now - due).as_secs_f64());
        }
        let Some((bytes, ps)) = w.trace.get((j % n) as usize) else {
            continue;
        };
        let t = sh.now_ns();
        for &i in ps {
            if let Some(x) = sh.sent.get(i as usize) {
                x.store(t, Relaxed);
            }
        }
        s.write_all(bytes).map_err(io)?;
        out.updates_sent += 1;
        out.prefixes_stamped += ps.len() as u64;
        let sec = start.elapsed().as_secs() as usize;
        if let Some(c) = sh.sent_per_s.get(sec) {
            c.fetch_add(1, Relaxed);
        }
    }
    out.churn_secs = start.elapsed().as_secs_f64();
    // Let the last changes reach the monitors.
    std::thread::sleep(Duration::from_secs(2));
    Ok(())
}

/// Runs one churn measurement; call it inside the peers' namespace with
/// the DUT (pid `dut_pid`) started for `1 + monitors` peers with export
/// to all. `stop` ends it early.
pub fn run(
    w: &ChurnWorkload,
    p: &ChurnParams,
    dut_pid: u32,
    stop: &AtomicBool,
) -> Result<ChurnStats, String> {
    if !(p.rate.is_finite() && p.rate > 0.0) || p.monitors == 0 {
        return Err("churn: the rate must be positive and there must be monitors".into());
    }
    let secs = p.duration.as_secs() as usize + 4;
    let sh = Shared {
        epoch: Instant::now(),
        sent: (0..w.index.len()).map(|_| AtomicU64::new(0)).collect(),
        have: (0..p.monitors).map(|_| AtomicU64::new(0)).collect(),
        up: AtomicU64::new(0),
        wake: (Mutex::new(()), Condvar::new()),
        stop: AtomicBool::new(false),
        churn_start_ns: AtomicU64::new(0),
        sent_per_s: (0..secs).map(|_| AtomicU64::new(0)).collect(),
        recv_per_s: (0..secs).map(|_| AtomicU64::new(0)).collect(),
    };
    let before = replay::dut::sample(&[dut_pid]);
    let (gen, mons) = std::thread::scope(|scope| {
        let mons: Vec<_> = (0..p.monitors)
            .map(|k| {
                let sh = &sh;
                scope.spawn(move || monitor(k + 1, sh, w, k))
            })
            .collect();
        let g = scope.spawn(|| {
            let g = generator(&sh, w, p);
            sh.stop.store(true, Relaxed);
            g
        });
        // Ctrl-C: pass it on.
        while !g.is_finished() {
            if stop.load(Relaxed) {
                sh.stop.store(true, Relaxed);
                sh.notify();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let g = g.join().unwrap_or_default();
        let m: Vec<MonitorOut> = mons.into_iter().filter_map(|h| h.join().ok()).collect();
        (g, m)
    });
    let after = replay::dut::sample(&[dut_pid]);
    if let Some(e) = &gen.error {
        return Err(e.clone());
    }
    if let Some(e) = mons.iter().find_map(|m| m.error.as_ref()) {
        return Err(format!("monitor: {e}"));
    }
    let mut all: Vec<u64> = mons
        .iter()
        .flat_map(|m| m.matcher.samples.iter().copied())
        .collect();
    let samples = all.len() as u64;
    let lat = latency_summary(&mut all, 200);
    let keepalive = mons.iter().find_map(|m| m.keepalive);
    let max_gap = mons.iter().map(|m| m.gaps.max_gap_ns).max().unwrap_or(0);
    let late: u64 = mons.iter().map(|m| m.gaps.late).sum();
    let used = gen.churn_secs.ceil() as usize;
    let timeline = (0..used.min(secs))
        .map(|i| {
            let g = |v: &Vec<AtomicU64>| v.get(i).map_or(0, |x| x.load(Relaxed)) as f64;
            (
                i as f64,
                g(&sh.sent_per_s),
                g(&sh.recv_per_s) / p.monitors as f64,
            )
        })
        .collect();
    Ok(ChurnStats {
        monitors: p.monitors,
        rate: p.rate,
        duration_s: p.duration.as_secs_f64(),
        table_prefixes: w.table_prefixes,
        table_secs: gen.table_secs,
        updates_sent: gen.updates_sent,
        prefixes_stamped: gen.prefixes_stamped,
        churn_secs: gen.churn_secs,
        max_send_lag_s: gen.max_send_lag,
        samples,
        p50_ms: lat.as_ref().map(|l| l.0),
        p99_ms: lat.as_ref().map(|l| l.1),
        max_ms: lat.as_ref().map(|l| l.2),
        cdf: lat.map(|l| l.3).unwrap_or_default(),
        keepalive_s: keepalive.map(|k| k.as_secs_f64()),
        max_gap_s: max_gap as f64 / 1e9,
        late_gaps: late,
        timeline,
        dut_cpu_secs: match (before, after) {
            (Some(b), Some(a)) => Some(a.cpu_secs - b.cpu_secs),
            _ => None,
        },
        dut_peak_rss_kib: after.map(|a| a.peak_rss_kib),
    })
}

/// The (IPv4, IPv6) next hops of the generator session.
pub fn generator_next_hops() -> (Ipv4Addr, Ipv6Addr) {
    (
        peer_addr(0).unwrap_or(Ipv4Addr::UNSPECIFIED),
        crate::netns::PEERS_ADDR6,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matcher_counts_each_stamp_once_and_ignores_unstamped() {
        let mut m = LatencyMatcher::new(3);
        assert_eq!(m.arrived(0, 0, 100_000), None, "never sent");
        assert_eq!(m.arrived(1, 1_000_000, 3_000_000), Some(2000));
        assert_eq!(m.arrived(1, 1_000_000, 4_000_000), None, "already matched");
        assert_eq!(
            m.arrived(1, 5_000_000, 4_000_000),
            None,
            "stamp after arrival"
        );
        assert_eq!(m.arrived(1, 5_000_000, 5_500_000), Some(500));
        assert_eq!(m.arrived(7, 1, 2), None, "unknown prefix");
        assert_eq!(m.samples, vec![2000, 500]);
    }

    #[test]
    fn gaps_count_late_ones_and_the_silence_at_the_end() {
        let mut g = GapTracker::default();
        g.message(0, 10);
        g.message(5, 10);
        g.message(20, 10);
        assert_eq!((g.max_gap_ns, g.late), (15, 1));
        g.close(45, 10);
        assert_eq!((g.max_gap_ns, g.late), (25, 2));
        let mut never = GapTracker::default();
        never.close(100, 10);
        assert_eq!(never, GapTracker::default());
    }

    #[test]
    fn summary_percentiles_and_cdf() {
        let mut v: Vec<u64> = (1..=100).rev().map(|x| x * 1000).collect();
        let (p50, p99, max, cdf) = latency_summary(&mut v, 10).unwrap_or_default();
        assert_eq!((p50, p99, max), (50.0, 99.0, 100.0));
        assert!(p99 >= p50);
        assert_eq!(cdf.last(), Some(&(100.0, 1.0)));
        assert!(cdf.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        assert!(latency_summary(&mut [], 10).is_none());
    }
}

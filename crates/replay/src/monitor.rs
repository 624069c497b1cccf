//! The monitor: one session to the DUT that only receives, holding the set
//! of prefixes the DUT currently exports to it, so that convergence is
//! measured where it matters (what the DUT tells the rest of the network)
//! rather than at the DUT's socket.
//!
//! It connects to the DUT ([`MonitorMode::Connect`]) or accepts the DUT's
//! connection ([`MonitorMode::Listen`]). It advertises Graceful Restart
//! with no families (RFC 4724 §3) so that DUTs send End-of-RIB after
//! their initial update. The moment the prefix count first reaches the
//! target is stamped by the monitor thread itself, not by a poller, so
//! convergence times are exact to the read.
//!
//! Prefix sets are hash sets of packed keys with a cheap multiplicative
//! hash: one insert or remove per NLRI, no allocation per prefix.

use crate::error::{Phase, ReplayError};
use crate::session::{
    check_established, connect, handshake, send_notification, MsgReader, Negotiated, SessionConfig,
};
use base::{Asn, Prefix};
use bgp_wire::consts::msg_type;
use bgp_wire::{encode_keepalive, Message, NlriIter};
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How the monitor session comes up.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MonitorMode {
    /// We connect to the DUT from `source`.
    Connect {
        target: SocketAddr,
        source: Option<IpAddr>,
    },
    /// The DUT connects to us.
    Listen(SocketAddr),
}

#[derive(Copy, Clone, Debug)]
pub struct MonitorConfig {
    pub mode: MonitorMode,
    pub local_as: Asn,
    /// The DUT's AS, checked against its OPEN (`None`: any).
    pub peer_as: Option<Asn>,
    pub bgp_id: Ipv4Addr,
    pub hold_time: u16,
    /// Bound on connecting (or on waiting for the DUT to connect).
    pub connect_timeout: Duration,
    pub open_timeout: Duration,
}

const UNSET: u64 = u64::MAX;

/// Live monitor counters; times are nanoseconds since [`Monitor::epoch`].
#[derive(Debug)]
pub struct MonitorStats {
    /// 0 connecting, 1 established, 2 failed, 3 stopped.
    state: AtomicU8,
    pub updates: AtomicU64,
    pub announced: AtomicU64,
    pub withdrawn: AtomicU64,
    /// Prefixes the DUT currently exports to us (IPv4 + IPv6).
    pub prefixes: AtomicU64,
    pub end_of_rib: AtomicU64,
    /// When the prefix set last changed.
    last_change_ns: AtomicU64,
    /// When the first End-of-RIB arrived.
    eor_ns: AtomicU64,
    target: AtomicU64,
    /// When `prefixes` first reached `target`.
    reached_ns: AtomicU64,
    error: Mutex<Option<ReplayError>>,
}

/// A point-in-time copy of [`MonitorStats`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct MonitorSnapshot {
    pub established: bool,
    pub failed: bool,
    pub updates: u64,
    pub announced: u64,
    pub withdrawn: u64,
    pub prefixes: u64,
    pub end_of_rib: u64,
}

impl MonitorStats {
    fn new() -> MonitorStats {
        MonitorStats {
            state: AtomicU8::new(0),
            updates: AtomicU64::new(0),
            announced: AtomicU64::new(0),
            withdrawn: AtomicU64::new(0),
            prefixes: AtomicU64::new(0),
            end_of_rib: AtomicU64::new(0),
            last_change_ns: AtomicU64::new(0),
            eor_ns: AtomicU64::new(UNSET),
            target: AtomicU64::new(UNSET),
            reached_ns: AtomicU64::new(UNSET),
            error: Mutex::new(None),
        }
    }

    pub fn snapshot(&self) -> MonitorSnapshot {
        let st = self.state.load(Relaxed);
        MonitorSnapshot {
            established: st == 1,
            failed: st == 2,
            updates: self.updates.load(Relaxed),
            announced: self.announced.load(Relaxed),
            withdrawn: self.withdrawn.load(Relaxed),
            prefixes: self.prefixes.load(Relaxed),
            end_of_rib: self.end_of_rib.load(Relaxed),
        }
    }

    pub fn error(&self) -> Option<ReplayError> {
        self.error.lock().ok().and_then(|e| *e)
    }
}

/// A running monitor; dropping it closes the session.
pub struct Monitor {
    epoch: Instant,
    stats: Arc<MonitorStats>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    local: Option<SocketAddr>,
}

impl Monitor {
    /// Starts connecting (or listening) in a background thread.
    pub fn start(cfg: MonitorConfig) -> Result<Monitor, ReplayError> {
        let epoch = Instant::now();
        let stats = Arc::new(MonitorStats::new());
        let stop = Arc::new(AtomicBool::new(false));
        let listener = match cfg.mode {
            MonitorMode::Listen(a) => {
                let l = TcpListener::bind(a).map_err(|e| ReplayError::io(Phase::Bind, &e))?;
                l.set_nonblocking(true)
                    .map_err(|e| ReplayError::io(Phase::Bind, &e))?;
                Some(l)
            }
            MonitorMode::Connect { .. } => None,
        };
        let local = listener.as_ref().and_then(|l| l.local_addr().ok());
        let (st, sp) = (stats.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("replay-monitor".into())
            .spawn(move || {
                let r = run(&cfg, listener, &st, &sp, epoch);
                let failed = match r {
                    Err(e) if !sp.load(Relaxed) => {
                        if let Ok(mut g) = st.error.lock() {
                            *g = Some(e);
                        }
                        true
                    }
                    _ => false,
                };
                st.state.store(if failed { 2 } else { 3 }, Relaxed);
            })
            .map_err(|e| ReplayError::io(Phase::Monitor, &e))?;
        Ok(Monitor {
            epoch,
            stats,
            stop,
            thread: Some(thread),
            local,
        })
    }

    pub fn stats(&self) -> &Arc<MonitorStats> {
        &self.stats
    }

    /// The listening address in [`MonitorMode::Listen`] (port 0 resolved).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local
    }

    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    fn at(&self, ns: u64) -> Option<Instant> {
        (ns != UNSET).then(|| self.epoch + Duration::from_nanos(ns))
    }

    /// Waits for Established; the monitor's error if it failed first.
    pub fn wait_established(&self, timeout: Duration) -> Result<(), ReplayError> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.stats.state.load(Relaxed) {
                1 => return Ok(()),
                2 | 3 => {
                    return Err(self.stats.error().unwrap_or(ReplayError::Closed {
                        phase: Phase::Monitor,
                    }))
                }
                _ => {}
            }
            if Instant::now() >= deadline {
                return Err(ReplayError::Timeout {
                    phase: Phase::Monitor,
                    secs: timeout.as_secs() as u32,
                });
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Stamp the moment the prefix count reaches `n` (checked on every
    /// change, and now).
    pub fn set_target(&self, n: u64) {
        self.stats.target.store(n, Relaxed);
        if self.stats.prefixes.load(Relaxed) >= n {
            let ns = self.epoch.elapsed().as_nanos() as u64;
            let _ = self
                .stats
                .reached_ns
                .compare_exchange(UNSET, ns, Relaxed, Relaxed);
        }
    }

    /// When the count first reached the target.
    pub fn reached_at(&self) -> Option<Instant> {
        self.at(self.stats.reached_ns.load(Relaxed))
    }

    /// When the prefix set last changed (monitor start if never).
    pub fn last_change(&self) -> Instant {
        self.epoch + Duration::from_nanos(self.stats.last_change_ns.load(Relaxed))
    }

    /// When the prefix set last changed; `None` while it never has (the
    /// DUT sent nothing but End-of-RIB, or nothing at all).
    pub fn changed_at(&self) -> Option<Instant> {
        match self.stats.last_change_ns.load(Relaxed) {
            0 => None,
            ns => Some(self.epoch + Duration::from_nanos(ns)),
        }
    }

    /// When the DUT's first End-of-RIB arrived.
    pub fn end_of_rib_at(&self) -> Option<Instant> {
        self.at(self.stats.eor_ns.load(Relaxed))
    }

    /// Closes the session (Cease) and waits for the thread.
    pub fn stop(mut self) -> Option<ReplayError> {
        self.stop_inner();
        self.stats.error()
    }

    fn stop_inner(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

fn run(
    cfg: &MonitorConfig,
    listener: Option<TcpListener>,
    st: &MonitorStats,
    stop: &AtomicBool,
    epoch: Instant,
) -> Result<(), ReplayError> {
    let (target, source) = match cfg.mode {
        MonitorMode::Connect { target, source } => (target, source),
        MonitorMode::Listen(a) => (a, None),
    };
    let scfg = SessionConfig {
        source,
        target,
        local_as: cfg.local_as,
        peer_as: cfg.peer_as,
        bgp_id: cfg.bgp_id,
        hold_time: cfg.hold_time,
        connect_timeout: cfg.connect_timeout,
        open_timeout: cfg.open_timeout,
        graceful_restart: true,
    };
    let mut s = match listener {
        None => connect(&scfg)?,
        Some(l) => accept_one(&l, cfg.connect_timeout, stop)?,
    };
    let mut rd = MsgReader::new();
    let neg = handshake(&mut s, &mut rd, &scfg)?;
    st.state.store(1, Relaxed);
    let r = receive(&mut s, &mut rd, &neg, st, stop, epoch);
    if stop.load(Relaxed) {
        send_notification(&mut s, 6, 2);
    }
    r
}

fn accept_one(
    l: &TcpListener,
    timeout: Duration,
    stop: &AtomicBool,
) -> Result<TcpStream, ReplayError> {
    let deadline = Instant::now() + timeout;
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)
                    .map_err(|e| ReplayError::io(Phase::Accept, &e))?;
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(ReplayError::io(Phase::Accept, &e)),
        }
        if stop.load(Relaxed) || Instant::now() >= deadline {
            return Err(ReplayError::Timeout {
                phase: Phase::Accept,
                secs: timeout.as_secs() as u32,
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A multiplicative hash with a final mix. The mix matters: a product's
/// low bits depend only on the key's low bits, and the table picks buckets
/// by the low bits, while a /24's key (address << 8 | length) has 16
/// constant low bits: without it a full table landed in a few dozen
/// buckets and the monitor, not the DUT, bounded convergence.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        // splitmix64's finaliser: every output bit depends on every input bit.
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn write_u128(&mut self, v: u128) {
        self.write_u64(v as u64);
        self.write_u64((v >> 64) as u64);
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }
}

type KeySet<K> = HashSet<K, BuildHasherDefault<KeyHasher>>;

/// The prefixes the DUT exports to us, keyed by (masked address, length).
#[derive(Default)]
struct Table {
    v4: KeySet<u64>,
    v6: KeySet<(u128, u8)>,
}

impl Table {
    fn len(&self) -> u64 {
        (self.v4.len() + self.v6.len()) as u64
    }

    /// Inserts (`add`) or removes one prefix; true when the set changed.
    fn apply(&mut self, p: Prefix, add: bool) -> bool {
        match p {
            Prefix::V4(x) => {
                let x = x.masked();
                let k = (u64::from(x.addr_bits()) << 8) | u64::from(x.len());
                if add {
                    self.v4.insert(k)
                } else {
                    self.v4.remove(&k)
                }
            }
            Prefix::V6(x) => {
                let x = x.masked();
                let k = (x.addr_bits(), x.len());
                if add {
                    self.v6.insert(k)
                } else {
                    self.v6.remove(&k)
                }
            }
        }
    }

    fn apply_all(&mut self, it: NlriIter<'_>, add: bool) -> (u64, bool) {
        let (mut n, mut changed) = (0, false);
        for x in it.map_while(Result::ok) {
            n += 1;
            changed |= self.apply(x.prefix, add);
        }
        (n, changed)
    }
}

fn receive(
    s: &mut TcpStream,
    rd: &mut MsgReader,
    neg: &Negotiated,
    st: &MonitorStats,
    stop: &AtomicBool,
    epoch: Instant,
) -> Result<(), ReplayError> {
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .map_err(|e| ReplayError::io(Phase::Monitor, &e))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| ReplayError::io(Phase::Monitor, &e))?;
    let mut ka = Vec::new();
    encode_keepalive(neg.ctx, &mut ka).map_err(|_| ReplayError::Encode)?;
    let interval = neg.keepalive_interval();
    let mut last_ka = Instant::now();
    let mut table = Table::default();
    while !stop.load(Relaxed) {
        if let Some(iv) = interval {
            if last_ka.elapsed() >= iv {
                s.write_all(&ka)
                    .map_err(|e| ReplayError::io(Phase::Monitor, &e))?;
                last_ka = Instant::now();
            }
        }
        let m = match rd.next(s, neg.ctx, Phase::Monitor) {
            Ok(Some(m)) => m,
            Ok(None) => continue,
            Err(e) => return Err(e),
        };
        let bytes = rd.bytes(m);
        if m.msg_type != msg_type::UPDATE {
            check_established(m.msg_type, bytes, Phase::Monitor)?;
            continue;
        }
        st.updates.fetch_add(1, Relaxed);
        let Ok((Message::Update(u), _)) = Message::parse(bytes, neg.ctx) else {
            continue;
        };
        if u.end_of_rib().is_some() {
            st.end_of_rib.fetch_add(1, Relaxed);
            let ns = epoch.elapsed().as_nanos() as u64;
            let _ = st.eor_ns.compare_exchange(UNSET, ns, Relaxed, Relaxed);
            continue;
        }
        // Withdrawals first: an UPDATE may withdraw and re-announce.
        let (mut w, mut ch) = table.apply_all(u.withdrawn(), false);
        if let Some(Ok(mp)) = u.mp_unreach() {
            let (n, c) = table.apply_all(mp.withdrawn(), false);
            (w, ch) = (w + n, ch | c);
        }
        let (mut a, c) = table.apply_all(u.nlri(), true);
        ch |= c;
        if let Some(Ok(mp)) = u.mp_reach() {
            let (n, c) = table.apply_all(mp.nlri(), true);
            (a, ch) = (a + n, ch | c);
        }
        st.announced.fetch_add(a, Relaxed);
        st.withdrawn.fetch_add(w, Relaxed);
        if ch {
            let n = table.len();
            st.prefixes.store(n, Relaxed);
            let ns = epoch.elapsed().as_nanos() as u64;
            st.last_change_ns.store(ns, Relaxed);
            if n >= st.target.load(Relaxed) {
                let _ = st.reached_ns.compare_exchange(UNSET, ns, Relaxed, Relaxed);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_counts_distinct_prefixes_by_family_and_length() {
        let mut t = Table::default();
        let p = |s: &str| s.parse::<Prefix>().unwrap();
        assert!(t.apply(p("10.0.0.0/8"), true));
        assert!(!t.apply(p("10.0.0.0/8"), true), "re-announcement");
        assert!(t.apply(p("10.0.0.0/16"), true), "other length");
        assert!(t.apply(p("2001:db8::/32"), true));
        assert!(t.apply(p("2001:db8::/48"), true));
        assert!(t.apply(p("2001:db8::1/128"), true));
        assert_eq!(t.len(), 5);
        assert!(t.apply(p("10.0.0.0/8"), false));
        assert!(!t.apply(p("10.0.0.0/8"), false), "already gone");
        assert!(t.apply(p("2001:db8::/48"), false));
        assert_eq!(t.len(), 3);
    }

    /// The bucket bits (the low ones) of a full table of /24s are spread:
    /// 2^17 consecutive /24s give nearly as many distinct 17-bit buckets as
    /// keys (a plain product gave 2: the keys' low 16 bits are constant).
    #[test]
    fn hash_spreads_slash24_keys_over_low_bits() {
        use std::hash::BuildHasher;
        let b = BuildHasherDefault::<KeyHasher>::default();
        let n = 1u64 << 17;
        let mut seen = HashSet::new();
        for i in 0..n {
            let addr = (0x0100_0000u64 + i) << 8; // i.0.0/24 upwards
            let k = (addr << 8) | 24;
            seen.insert(b.hash_one(k) & (n - 1));
        }
        // A random function fills 1 - 1/e = 63% of the buckets.
        assert!(seen.len() as u64 > n / 2, "{} distinct of {n}", seen.len());
    }
}
